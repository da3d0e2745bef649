"""Quality rules: library metrics, SQL rules, text and custom rules."""

from __future__ import annotations

from typing import Any, Callable

from dq_contracts.odcs.check_kinds import CHECK_KINDS
from dq_contracts.odcs.clauses.context import Clause, Outcome
from dq_contracts.odcs.clauses.levels import BadLevel, warn_conditions
from dq_contracts.odcs.clauses.properties import _bad_regex, listed_problem
from dq_contracts.odcs.clauses.vocabulary import _UNITS
from dq_contracts.odcs.names import dagster_name
from dq_contracts.odcs.normalise import OPERATORS
from dq_contracts.odcs.plans import Condition
from dq_contracts.odcs.sqlrules import judge_sql_rule


def _conditions(rule: dict[str, Any], *, numbers_only: bool = False) -> tuple[Condition, ...] | str:
    """The rule's operators; a metric counts, so with numbers_only every value must be a number."""
    out = []
    for op in OPERATORS:
        if op not in rule:
            continue
        value = rule[op]
        if op in ("mustBeBetween", "mustNotBeBetween"):
            if not (isinstance(value, list) and len(value) == 2
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
                return f"{op} needs two numbers, got {value!r}"
            value = (min(value), max(value))
        elif (numbers_only or op not in ("mustBe", "mustNotBe")) and (
                isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"{op} needs a number, got {value!r}"
        out.append(Condition(op, value))
    return tuple(out)



def _unit(rule: dict[str, Any]) -> str | None:
    unit = str(rule.get("unit") or "rows").strip().lower()
    return _UNITS.get(unit)



def _metric(kind: str, suffix: str, needs_column: bool, what: str) -> Callable[[Clause], Outcome]:
    def compile_metric(c: Clause) -> Outcome:
        rule = c.value
        conditions = _conditions(rule, numbers_only=True)
        if isinstance(conditions, str):
            return c.skip("not_comparable", conditions)
        unit = _unit(rule)
        if unit is None:
            return c.skip("unsupported_unit", repr(rule.get("unit")))
        if kind == "row_count" and unit == "percent":  # a percent of all rows would always be 100
            return c.skip("unsupported_unit", "rowCount counts rows; it has no percent")
        arguments = rule.get("arguments") if isinstance(rule.get("arguments"), dict) else {}
        params: dict[str, Any] = {}
        column = c.column
        if kind == "duplicate_values":
            names = arguments.get("properties") or ([c.property_name] if c.prop is not None else None)
            if not names:
                return c.skip("needs_property", "duplicateValues on an object needs arguments.properties")
            columns = []
            for name in names:
                found = c.contract.resolve_column(str(name), default_object=c.object_name)
                if found is None or not found[1]:
                    return c.fails("duplicate_values", "duplicate_values", f"{c.where()} duplicate values",
                                   f"duplicateValues names {name!r}, which is not a declared column of "
                                   f"{c.object_name!r}; this check will fail", [*c.parts, "arguments", "properties"],
                                   "warning", rule=rule, params={"columns": []})
                columns.append(found[1])
            params["columns"] = columns
        elif needs_column and column is None:
            return c.skip("needs_property", f"{rule.get('metric')} on an object")
        if kind == "missing_values":  # with no list, NULL; an empty list counts nothing
            listed = arguments.get("missingValues")
            params["values"] = [None] if listed is None else list(listed)
        if kind == "invalid_values":
            params["valid_values"] = arguments.get("validValues")
            params["pattern"] = arguments.get("pattern")
            if params["valid_values"] is None and params["pattern"] is None:
                return c.skip("needs_property", "invalidValues needs arguments.validValues or arguments.pattern")
            if params["pattern"] is not None:
                bad = _bad_regex(c, str(params["pattern"]), c.parts + ["arguments", "pattern"])
                if bad:
                    return bad
        for key, name in (("values", "missingValues"), ("valid_values", "validValues")):
            if isinstance(params.get(key), list):
                refused = listed_problem(c, params[key], [*c.parts, "arguments", name], kind, suffix,
                                         f"{c.where()} {what}", params, rule=rule, conditions=conditions, unit=unit)
                if refused:
                    return refused
        default_suffix = suffix if c.prop is not None or kind != "duplicate_values" else (
            "__".join(dagster_name(p) for p in params["columns"]) + "__duplicate_values")
        percent = "%" if unit == "percent" else ""
        description = f"{c.where()} {what} {_said(conditions)}{percent}"
        try:
            warn = warn_conditions(rule, c.parts, conditions, CHECK_KINDS[kind].clean)
        except BadLevel as bad:  # the check fails with why: a level meant to warn is never silently dropped
            return c.fails(kind, default_suffix, description, str(bad), bad.parts, rule=rule, conditions=conditions,
                           params=params, unit=unit)
        return c.check(kind, default_suffix, description + (f" (warn {_said(warn)}{percent})" if warn else ""),
                       rule=rule, conditions=conditions, params=params, unit=unit, warn=warn)
    return compile_metric


def _said(conditions: tuple[Condition, ...]) -> str:
    return " and ".join(x.describe() for x in conditions)



def _sql(c: Clause) -> Outcome:
    rule = c.value
    conditions = _conditions(rule)
    if isinstance(conditions, str):
        return c.skip("not_comparable", conditions)
    if not conditions:
        return c.skip("not_comparable", "a SQL rule needs an operator")
    tables = c.contract.rule_tables()
    verdict = judge_sql_rule(str(rule.get("query") or ""), dialect=c.contract.dialect,
                             own=str(c.obj.get("physicalName") or c.obj.get("name")), column=c.column, tables=tables)
    threshold = " and ".join(x.describe() for x in conditions)
    refusal = None
    if verdict.unresolved:
        refusal = (f"unresolved placeholder(s) {', '.join(verdict.unresolved)}: use {{object}} or "
                   "{property}")
    elif verdict.refusal:
        refusal = f"SQL rule refused: {verdict.refusal}"
    if refusal:
        # a table or column the contract does not declare: a warning, as for the other clauses that cannot
        # run as written in a document the official schema accepts; the check fails all the same
        return c.fails("sql", "sql", f"{c.where()} SQL rule result {threshold}", refusal, c.parts + ["query"],
                       "warning" if verdict.undeclared else "error", rule=rule, conditions=conditions,
                       params={"query": rule.get("query"), "tables": tables})
    try:
        warn = warn_conditions(rule, c.parts, conditions)
    except BadLevel as bad:
        return c.fails("sql", "sql", f"{c.where()} SQL rule result {threshold}", str(bad), bad.parts, rule=rule,
                       conditions=conditions, params={"query": rule.get("query"), "tables": tables})
    return c.check("sql", "sql", f"{c.where()} SQL rule result {threshold}"
                   + (f" (warn {_said(warn)})" if warn else ""), rule=rule, conditions=conditions,
                   params={"query": rule.get("query"), "tables": tables}, warn=warn)



def _text(c: Clause) -> Outcome:
    return c.skip("prose")



def _custom(c: Clause) -> Outcome:
    return c.skip("custom_engine", str(c.value.get("engine") or "unknown engine"))



def _v30_rule(c: Clause) -> Outcome:
    return c.skip("unknown_v30_rule", repr(c.value.get("rule")))
