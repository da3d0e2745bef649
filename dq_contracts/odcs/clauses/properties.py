"""Property clauses: required, unique, bounds, lengths, patterns, formats, enums, relationships."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

from dq_contracts.odcs.clauses.context import Clause, Outcome
from dq_contracts.odcs.clauses.vocabulary import FORMAT_PATTERNS
from dq_contracts.odcs.spelling import did_you_mean
from dq_contracts.odcs.names import dagster_name, snake
from dq_contracts.odcs.plans import NotEnforced


def _required(c: Clause) -> Outcome:
    return c.check("not_null", "not_null", f"{c.where()} required: no NULL values")



def _unique(c: Clause) -> Outcome:
    return c.check("unique", "unique", f"{c.where()} unique: no duplicate non-NULL values",
                   params={"columns": [c.column]})



def _bound(key: str) -> Callable[[Clause], Outcome]:
    lower = key in ("minimum", "exclusiveMinimum")
    strict = key.startswith("exclusive")
    suffix = snake(key)

    def compile_bound(c: Clause) -> Outcome:
        logical = c.prop.get("logicalType") if c.prop else None
        if logical in ("integer", "number") and (isinstance(c.value, bool) or not isinstance(c.value, (int, float))):
            return c.skip("not_comparable", f"{key}: {c.value!r}")
        sign = (">" if strict else "≥") if lower else ("<" if strict else "≤")
        return c.check("range", suffix, f"{c.where()} {key}: every value {sign} {c.value}",
                       params={"bound": c.value, "lower": lower, "strict": strict, "logical_type": logical})

    return compile_bound



def _length(key: str) -> Callable[[Clause], Outcome]:
    suffix = snake(key)

    def compile_length(c: Clause) -> Outcome:
        lower = key == "minLength"
        sign = "≥" if lower else "≤"
        return c.check("length", suffix, f"{c.where()} {key}: every value's length {sign} {c.value}",
                       params={"bound": int(c.value), "lower": lower})
    return compile_length



def _bad_regex(c: Clause, pattern: str, parts: list) -> NotEnforced | None:
    """A pattern no regex engine accepts would fail the table's whole aggregate query: refuse it here.
    Python's `re` stands in for the warehouses' dialects; it catches the broken ones."""
    try:
        re.compile(pattern)
    except re.error as exc:
        c.contract.problem(parts, f"pattern is not a valid regular expression: {exc}")
        return c.skip("invalid_pattern", str(exc))
    return None



def _pattern(c: Clause) -> Outcome:
    bad = _bad_regex(c, str(c.value), c.parts)
    if bad:
        return bad
    return c.check("pattern", "pattern", f"{c.where()} pattern: every non-NULL value matches {c.value}",
                   params={"pattern": str(c.value)})



def _format(c: Clause) -> Outcome:
    logical = c.prop.get("logicalType") if c.prop else None
    pattern = FORMAT_PATTERNS.get(str(c.value).lower()) if logical in (None, "string") else None
    if pattern is None:
        return c.skip("unknown_format", f"{c.value!r} ({logical or 'untyped'})"
                      + (did_you_mean(str(c.value).lower(), FORMAT_PATTERNS) if logical in (None, "string") else ""))
    return c.check("pattern", "format", f"{c.where()} format {c.value}: every non-NULL value is one",
                   params={"pattern": pattern, "format": str(c.value)})



def _multiple_of(c: Clause) -> Outcome:
    if isinstance(c.value, bool) or not isinstance(c.value, (int, float)) or c.value <= 0:
        return c.skip("not_comparable", f"multipleOf: {c.value!r}")
    if c.value < 1e-10 or c.value >= 1e27:  # the engine computes remainders exactly in DECIMAL(38, 10)
        return c.skip("not_comparable", f"multipleOf: {c.value!r} is beyond the 10 decimal places (and 28 "
                      "integer digits) checked exactly")
    return c.check("multiple_of", "multiple_of", f"{c.where()} multipleOf {c.value}",
                   params={"divisor": c.value})



def _other_option(c: Clause) -> Outcome:
    return c.skip("unsupported_option", str(c.parts[-1]))



def _enum(c: Clause) -> Outcome:
    values = [e.get("value") if isinstance(e, dict) else e for e in c.value]
    description = f"{c.where()} enum: every non-NULL value is one of {len(values)} values"
    return listed_problem(c, values, c.parts, "accepted_values", "accepted_values", description,
                          {"values": values}) or \
        c.check("accepted_values", "accepted_values", description, params={"values": values})


def listed_problem(c: Clause, values: list, parts: list, kind: str, suffix: str, description: str,
                   params: dict, **kwargs: Any) -> Outcome | None:
    """A listed value no check can compare with a column's (a list, a mapping) fails its check, with a
    problem at its line. A YAML boolean listed for a string property (YAML 1.1 reads yes, no, on,
    off, true, false unquoted as one) is compared as the text `true` or `false`, and warned of."""
    for i, value in enumerate(values):
        if isinstance(value, (list, dict)):
            what = "list" if isinstance(value, list) else "mapping"
            return c.fails(kind, suffix, description, f"listed value {i} is a {what} ({value!r}): a list of "
                           "values holds single values", [*parts, i], "warning", params=params, **kwargs)
    if str((c.prop or {}).get("logicalType") or "").lower() == "string":
        for i, value in enumerate(values):
            if isinstance(value, bool):
                c.contract.problem([*parts, i], f"listed value {i} is the boolean {str(value).lower()} (YAML reads "
                                   "yes, no, on, off unquoted as booleans): it is compared as the text "
                                   f"'{str(value).lower()}'; quote it to mean the text written", "warning")
    return None



def _relationship(c: Clause) -> Outcome:
    rel = c.value
    sources = rel.get("from") if c.prop is None else c.column
    targets = rel.get("to")
    if isinstance(targets, str):
        targets = [targets]
    if isinstance(sources, str) or sources is None:
        sources = [sources] if sources else []
    resolved_sources = []
    for source in sources:
        found = c.contract.resolve_column(str(source)) if c.prop is None else (c.object_name, c.column)
        if found is None:
            return c.skip("target_elsewhere", f"source {source!r} is not a declared column")
        resolved_sources.append(found[1])
    resolved = [c.contract.resolve_column(str(t)) for t in targets or []]
    if resolved and all(r is None for r in resolved) and all("." in str(t) for t in targets):
        return _relationship_elsewhere(c, rel, [str(t) for t in targets], resolved_sources)
    if not resolved or any(r is None for r in resolved) or len({r[0] for r in resolved}) != 1:
        return c.skip("target_elsewhere", f"{rel.get('to')!r}")
    missing = [str(t) for t, r in zip(targets, resolved) if not r[1]]
    if missing or not all(resolved_sources):
        what = ", ".join(repr(m) for m in missing) if missing else "its source column"
        failing = c.fails("relationship", "references_" + dagster_name(resolved[0][0]),
                       f"{c.object_name} references {resolved[0][0]}",
                       f"relationship to {what}: {resolved[0][0]!r} declares no such column; this check "
                       "will fail", [*c.parts, "to"], "warning")
        if c.prop is None and all(resolved_sources):  # named as it would be if it could run
            failing = replace(failing, name=dagster_name("__".join(resolved_sources)) + "__" + failing.name)
        return failing
    target_object = c.contract.object_by_name[resolved[0][0]]
    if len(resolved_sources) != len(resolved):
        return c.skip("target_elsewhere", "from and to have different lengths")
    label = ", ".join(resolved_sources)
    suffix = "references_" + dagster_name(resolved[0][0])
    plan = c.check("relationship", suffix,
                   f"{c.object_name}({label}) references {resolved[0][0]}({', '.join(r[1] for r in resolved)})",
                   params={"columns": resolved_sources, "target_object": resolved[0][0],
                           "target_table": str(target_object.get("physicalName") or target_object.get("name")),
                           "target_columns": [r[1] for r in resolved]})
    if c.prop is None:
        plan = replace(plan, name=dagster_name("__".join(resolved_sources)) + "__" + suffix)
    return plan



def _relationship_elsewhere(c: Clause, rel: dict, targets: list[str], sources: list[str]) -> Outcome:
    """A relationship to a table another contract of the folder declares, on the same server."""
    object_refs = {t.rsplit(".", 1)[0] for t in targets}
    if len(object_refs) != 1:
        return c.skip("target_elsewhere", f"{rel.get('to')!r}")
    found, code = c.contract.folder.find(object_refs.pop(), str(c.contract.document.get("id")), c.contract.server)
    if found is None:
        return c.skip(code, f"{rel.get('to')!r}")
    columns = [found.columns.get(t.rsplit(".", 1)[1], "") for t in targets]
    suffix = "references_" + dagster_name(found.name)
    if not all(columns) or not all(sources) or len(sources) != len(columns):
        missing = ", ".join(repr(t) for t, col in zip(targets, columns) if not col) or "its source column"
        return c.fails("relationship", suffix, f"{c.object_name} references {found.name}",
                       f"relationship to {missing}: {found.name!r} of contract {found.contract_id!r} declares no "
                       "such column; this check will fail", [*c.parts, "to"], "warning")
    plan = c.check("relationship", suffix,
                   f"{c.object_name}({', '.join(sources)}) references {found.name}({', '.join(columns)}) "
                   f"of contract {found.contract_id}",
                   params={"columns": sources, "target_object": found.name, "target_table": found.physical_name,
                           "target_columns": columns, "target_contract": found.contract_id,
                           "target_classified": found.classified})
    if c.prop is None:
        plan = replace(plan, name=dagster_name("__".join(sources)) + "__" + suffix)
    return plan
