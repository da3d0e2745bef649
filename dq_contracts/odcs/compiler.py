"""Compile a validated contract into a plan: checks, freshness policies, schedules, not-enforced.

The clause table `CLAUSES` maps each kind of ODCS clause to one small function returning a
`CheckPlan` or a `NotEnforced`. `compile_contract` only finds clauses and dispatches; it has no
knowledge of what any clause means.
"""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable


from dq_contracts.odcs.partitions import DECLARATION, partition_columns, read_declaration
from dq_contracts.odcs.paths import parts_of, pointer
from dq_contracts.odcs.plans import (
    CheckPlan,
    ClauseAt,
    ColumnPlan,
    Condition,
    ContractPlan,
    FreshnessPlan,
    NotEnforced,
    ObjectPlan,
    SchedulePlan,
    Severity,
)
from dq_contracts.odcs.plans import CLASSIFIED
from dq_contracts.odcs.problems import Problem, Reach
from dq_contracts.odcs.validate import ValidatedContract
from dq_contracts.odcs.clauses import CLAUSES, levels, nested, quality_kind
from dq_contracts.odcs.clauses.nested import classified_below
from dq_contracts.odcs.clauses.context import Clause, _Compiling
from dq_contracts.odcs.clauses.vocabulary import LATENCY_PROPERTIES, Reason
from dq_contracts.odcs.folder import FolderIndex
from dq_contracts.odcs.names import _unique_names, _unique_schedule_names, asset_key_for, dagster_name

# Every name a contract's Dagster definitions take is made here, by the functions below, and the
# builder (definitions.py) calls the same functions: the names checked for clashes at load are the
# names built. Dagster keeps two namespaces that matter: ops and jobs ("node": one graph name space),
# and schedules and sensors ("instigator").


# --- compiling one contract -----------------------------------------------------------------------


def _property_clauses(props: Any, base: list, obj: dict, object_name: str, ctx: _Compiling,
                      path: tuple = ()) -> Iterable[Clause]:
    for pi, prop in enumerate(props if isinstance(props, list) else []):
        if isinstance(prop, dict):
            yield from _element_clauses(prop, [*base, "properties", pi], obj, object_name, ctx,
                                        (*path, (nested.step_of(prop), prop)))


def _element_clauses(prop: dict, here: list, obj: dict, object_name: str, ctx: _Compiling,
                     path: tuple) -> Iterable[Clause]:
    """The clauses of one property, or of an object's field or an array's items (`path` longer
    than one step: clauses/nested.py), and of every property below it."""
    below = path if len(path) > 1 else ()

    def clause(kind: str, parts: list, value: Any) -> Clause:
        return Clause(kind, parts, value, obj, object_name, prop, ctx, below)

    for why, where in levels.misplaced(prop, here):  # a warn level the flags cannot have: never silently dropped
        ctx.problem(where, why, reach=Reach.CLAUSE)
    if (unknown := nested.unknown_classification(prop)) is not None:
        ctx.problem([*here, "classification"], unknown, "warning", reach=Reach.CLAUSE)
    if below and prop.get("primaryKey") is True:  # top-level keys are gathered by _with_primary_key
        yield clause("primaryKey", [*here, "primaryKey"], True)
    if prop.get("required") is True:
        yield clause("required", [*here, "required"], True)
    if prop.get("unique") is True:
        yield clause("unique", [*here, "unique"], True)
    options = prop.get("logicalTypeOptions")
    for key, value in (options.items() if isinstance(options, dict) else []):
        kind = f"option:{key}"
        if kind not in CLAUSES:
            kind = "option:*"
        yield clause(kind, [*here, "logicalTypeOptions", key], value)
    if isinstance(prop.get("enum"), list):
        yield clause("enum", [*here, "enum"], prop["enum"])
    for ri, rel in enumerate(prop.get("relationships") or []):
        if isinstance(rel, dict):
            yield clause("relationship", [*here, "relationships", ri], rel)
    for qi, rule in enumerate(prop.get("quality") or []):
        if isinstance(rule, dict):
            yield clause(quality_kind(rule), [*here, "quality", qi], rule)
    if prop.get("properties"):
        yield from _property_clauses(prop["properties"], here, obj, object_name, ctx, path)
    if isinstance(prop.get("items"), dict):
        yield from _element_clauses(prop["items"], [*here, "items"], obj, object_name, ctx,
                                    (*path, (nested.ITEMS, prop["items"])))


@dataclass
class _Compiled:
    """What compiling a contract gathers, step by step; checks stay keyed by clause until the end,
    where their names are made unique once."""

    not_enforced: list[NotEnforced] = field(default_factory=list)
    objects: list[ObjectPlan] = field(default_factory=list)
    check_index: dict[str, list[CheckPlan]] = field(default_factory=dict)
    schedules: list[SchedulePlan] = field(default_factory=list)
    rule_schedules: list[tuple[str, str, dict]] = field(default_factory=list)  # (object, check pointer, rule)
    freshness: list[FreshnessPlan] = field(default_factory=list)


def compile_contract(validated: ValidatedContract, folder: FolderIndex | None = None
                     ) -> tuple[ContractPlan, list[Problem]]:
    """`folder`: the objects of the contracts loaded with this one, which relationships may reference.
    The steps: each schema object's clauses, the SLA properties, the rules' own crons, the v3.0
    rewrites that merged two clauses, then the final names and the plan."""
    ctx = _Compiling(validated, folder)
    out = _Compiled()
    named: set[str] = set()
    for oi, obj in enumerate(ctx.document.get("schema") or []):
        if isinstance(obj, dict):
            _compile_object(ctx, out, oi, obj, named)
    for si, sla in enumerate(ctx.document.get("slaProperties") or []):
        if isinstance(sla, dict):
            _compile_sla(ctx, out, si, sla)
    _compile_rule_schedules(ctx, out)
    _merge_rewrites(validated, ctx, out)
    return _contract_plan(validated, ctx, out), ctx.problems


def _object_clauses(obj: dict, base: list, object_name: str, ctx: _Compiling) -> list[Clause]:
    """Every clause of one schema object: the object's own, its properties', relationships', rules'."""
    clauses = [Clause("schema", base, None, obj, object_name, None, ctx)]
    clauses += list(_property_clauses(obj.get("properties"), base, obj, object_name, ctx))
    for ri, rel in enumerate(obj.get("relationships") or []):
        if isinstance(rel, dict):
            clauses.append(Clause("relationship", [*base, "relationships", ri], rel, obj, object_name, None, ctx))
    for qi, rule in enumerate(obj.get("quality") or []):
        if isinstance(rule, dict):
            clauses.append(Clause(quality_kind(rule), [*base, "quality", qi], rule, obj, object_name, None, ctx))
    return clauses


def _compile_object(ctx: _Compiling, out: _Compiled, oi: int, obj: dict, named: set[str]) -> None:
    object_name = str(obj.get("name"))
    base = ["schema", oi]
    duplicate = object_name in named  # checks, SLA elements and relationships address objects by name
    if duplicate:
        ctx.problem([*base, "name"], f"another schema object is already named {object_name!r}; "
                                     "object names must be unique in a contract")
    named.add(object_name)
    # physicalType (table, view, file, parquet, …) is free text: it never decides on its own that
    # nothing is checked; the server does
    blanket = "duplicate_object" if duplicate else ("no_sql_server" if ctx.no_sql_server else None)
    why = ctx.no_sql_server_why if blanket == "no_sql_server" else ""
    checks: list[CheckPlan] = []
    for clause in _object_clauses(obj, base, object_name, ctx):
        if blanket:
            out.not_enforced.append(clause.skip(blanket, why))
            continue
        refused = nested.refusal(clause.kind, clause.path, clause.value, *ctx.nested_engine) if clause.path else None
        if refused:
            out.not_enforced.append(clause.skip(*refused))
            continue
        outcome = CLAUSES[clause.kind](clause)
        if isinstance(outcome, NotEnforced):
            out.not_enforced.append(outcome)
        else:
            checks.append(outcome)
            rule = clause.value if isinstance(clause.value, dict) else {}
            if str(rule.get("scheduler") or "").lower() == "cron" and rule.get("schedule"):
                out.rule_schedules.append((object_name, clause.pointer, {**rule, "_parts": clause.parts}))
    if not blanket:
        checks = _with_primary_key(obj, object_name, base, ctx, checks)
    else:
        for pi, prop in enumerate(obj.get("properties") or []):
            if isinstance(prop, dict) and prop.get("primaryKey") is True:
                key = Clause("primaryKey", [*base, "properties", pi, "primaryKey"], True, obj, object_name, prop, ctx)
                out.not_enforced.append(key.skip(blanket, why))
    if duplicate:
        return  # the first object of that name keeps it
    out.check_index[object_name] = checks  # names are made unique once, at the end
    out.objects.append(replace(_object_plan(obj, object_name, base, checks, ctx.line_of(base)),
                               partitioning=_partitioning(obj, base, ctx),
                               partition_columns=tuple(partition_columns(obj.get("properties")))))


def _compile_sla(ctx: _Compiling, out: _Compiled, si: int, sla: dict) -> None:
    """One SLA property: a latency becomes a freshness check, a cron a schedule of what it names."""
    parts = ["slaProperties", si]
    prop_name = str(sla.get("property") or "").strip().lower()
    target = _sla_element(sla, parts, ctx)
    produced: CheckPlan | None = None
    if prop_name in LATENCY_PROPERTIES:
        obj_name, prop = target if target else (None, None)
        obj = ctx.object_by_name.get(obj_name) if obj_name else None
        clause = Clause("sla:latency", parts, sla, obj or {}, obj_name or "", prop, ctx)
        if ctx.no_sql_server and obj is not None:
            outcome = clause.skip("no_sql_server", ctx.no_sql_server_why)
        else:
            outcome = CLAUSES["sla:latency"](clause)
        if isinstance(outcome, CheckPlan):
            out.check_index.setdefault(obj_name, []).append(outcome)
            produced = outcome
            # checks are referred to by their clause until their names are final
            out.freshness.append(FreshnessPlan(pointer(parts), obj_name, str(clause.column),
                                               produced.conditions[0].value, produced.clause))
        elif not _sla_schedule(sla):
            out.not_enforced.append(outcome)
    scheduled = _sla_schedule(sla)
    if scheduled:
        cron = _valid_cron(scheduled, [*parts, "schedule"], ctx)
        if cron:
            if produced is not None:
                selection = [(produced.object, produced.clause)]
            elif target and target[0] in out.check_index:
                selection = [(target[0], c.clause) for c in out.check_index[target[0]]]
            else:
                selection = [(o, c.clause) for o, cs in out.check_index.items() for c in cs]
            if selection:
                label = sla.get("id") or f"sla_{prop_name}_{si}"
                out.schedules.append(SchedulePlan(dagster_name(f"{ctx.document.get('id')}__{label}"), cron,
                                                  pointer(parts), tuple(selection)))
                return
        if produced is None:
            out.not_enforced.append(CLAUSES["sla:*"](Clause("sla:*", parts, sla, {}, "", None, ctx)))
    elif produced is None and prop_name not in LATENCY_PROPERTIES:
        out.not_enforced.append(CLAUSES["sla:*"](Clause("sla:*", parts, sla, {}, "", None, ctx)))


def _compile_rule_schedules(ctx: _Compiling, out: _Compiled) -> None:
    """Rule-level crons; each rule's check found by its clause in one index (a scan per rule is quadratic)."""
    by_clause: dict[tuple[str, str], CheckPlan] = {}
    for object_name in dict.fromkeys(o for o, _, _ in out.rule_schedules):
        for c in reversed(out.check_index[object_name]):  # the first check of a clause wins, as a scan found it
            by_clause.update(dict.fromkeys(((object_name, p) for p in c.clauses), c))
    for object_name, clause_pointer, rule in out.rule_schedules:
        cron = _valid_cron(str(rule["schedule"]), [*rule["_parts"], "schedule"], ctx)
        check = by_clause.get((object_name, clause_pointer))
        if cron and check:
            out.schedules.append(SchedulePlan(f"{ctx.document.get('id')}__{object_name}__", cron, clause_pointer,
                                              ((object_name, check.clause),)))


def _clause_at(ctx: _Compiling, parts: list) -> ClauseAt:
    """A clause a check answers, with its line and named path in the document as written."""
    at, line, _, where, _ = ctx.place(parts)
    return ClauseAt(at, line, where)


def _merge_rewrites(validated: ValidatedContract, ctx: _Compiling, out: _Compiled) -> None:
    """v3.0 rewrites that merged two clauses into one: the check answers for both."""
    for rewrite in validated.rewrites:
        if not rewrite.merged:
            continue
        for checks in out.check_index.values():
            for i, check in enumerate(checks):
                if rewrite.pointer in check.clauses:
                    checks[i] = replace(check, answers=(*check.answers, _clause_at(ctx, parts_of(rewrite.merged))))
                    break
            else:
                continue
            break
        else:
            out.not_enforced.append(NotEnforced(rewrite.merged, Reason.V30_MODIFIER, Reason.V30_MODIFIER.text))


def _contract_plan(validated: ValidatedContract, ctx: _Compiling, out: _Compiled) -> ContractPlan:
    """The plan, with names made unique once, now that every check is known; references by clause
    become names."""
    doc = ctx.document
    final = {name: _unique_names(checks) for name, checks in out.check_index.items()}
    name_of = {(o, c.clause): c.name for o, checks in final.items() for c in checks}
    objects = [replace(o, checks=tuple(final.get(o.name, o.checks))) for o in out.objects]
    freshness = [replace(f, check_name=name_of[(f.object, f.check_name)]) for f in out.freshness]
    # a rule's own schedule is named after its check (its name ends in `__` until the check's is known)
    schedules = [replace(s, name=dagster_name(s.name + name_of[s.checks[0]]) if s.name.endswith("__") else s.name,
                         checks=tuple((o, name_of[(o, c)]) for o, c in s.checks)) for s in out.schedules]
    owners, dropped = _owners(doc.get("team"))
    description = doc.get("description") if isinstance(doc.get("description"), dict) else None
    return ContractPlan(
        file=validated.file,
        folder=os.path.dirname(os.path.abspath(validated.file)),
        id=str(doc.get("id")),
        version=str(doc.get("version")),
        api_version=validated.api_version,
        name=doc.get("name"),
        status=doc.get("status"),
        domain=doc.get("domain"),
        description=description,
        tags=tuple(str(t) for t in doc.get("tags") or []),
        owners=owners,
        dropped_owners=dropped,
        servers=tuple(s for s in doc.get("servers") or [] if isinstance(s, dict)),
        objects=tuple(objects),
        freshness=tuple(freshness),
        schedules=tuple(_unique_schedule_names(schedules)),
        not_enforced=tuple(out.not_enforced),
        rewrites=tuple(validated.rewrites),
        authoritative_definitions=tuple(d for d in doc.get("authoritativeDefinitions") or [] if isinstance(d, dict)),
        support=tuple(s for s in doc.get("support") or [] if isinstance(s, dict)),
    )


def _partitioning(obj: dict, base: list, ctx: _Compiling):
    """The object's `dagsterPartitions` declaration (partitions.py), its problems reported where they are."""
    for ci, entry in enumerate(obj.get("customProperties") or []):
        if isinstance(entry, dict) and entry.get("property") == DECLARATION:
            plan, problems = read_declaration(entry.get("value"), obj.get("properties"))
            for parts, message in problems:
                ctx.problem([*base, "customProperties", ci, "value", *parts], message)
            return replace(plan, clause=pointer([*base, "customProperties", ci])) if plan else None
    return None


def _sla_schedule(sla: dict) -> str | None:
    if str(sla.get("scheduler") or "").strip().lower() == "cron" and sla.get("schedule"):
        return str(sla["schedule"])
    return None


_CRON_FROM = datetime.datetime(2026, 1, 1)  # any fixed start: a cron that can fire does within years of it


def cron_refusal(expression: str) -> str | None:
    """Why a contract cron is refused, or None: croniter's rule, then the scheduler's (Dagster takes
    standard 5-field crons only, the rule of its `is_valid_cron_string`), then one that never fires
    (31 April, 30 February: Dagster's automation would fail for every contract). Pure, so that every
    command and the Dagster layer judge a cron alike; `dagster_defs` tests hold it to Dagster's."""
    from croniter import croniter  # only for a contract with a cron: `check` need not import it

    if not croniter.is_valid(expression):
        return "invalid cron expression"
    if len(croniter.expand(expression)[0]) != 5:  # seconds or a year: croniter takes them, Dagster does not
        return ("Dagster refuses this cron: it takes standard 5-field crons (minute hour day month weekday, no "
                "seconds or year) that can fire")
    try:
        croniter(expression, _CRON_FROM).get_next(datetime.datetime)
    except Exception:
        return "it never fires (a day no month has)"
    return None


def _valid_cron(expression: str, parts: list, ctx: _Compiling) -> str | None:
    refusal = cron_refusal(expression)
    if refusal is None:
        return expression
    ctx.problem(parts, f"invalid cron expression {expression!r}" if refusal == "invalid cron expression"
                else f"cron {expression!r}: {refusal}")
    return None


def _sla_element(sla: dict, parts: list, ctx: _Compiling) -> tuple[str, dict] | None:
    """(object name, property) of the SLA element's first column, or None."""
    element = sla.get("element")
    if not isinstance(element, str) or not element.strip():
        return None
    first = element.split(",")[0].strip()
    found = ctx.resolve_column(first)
    if found is None:
        return None
    object_name, column = found
    if not column:
        if "." in first:
            ctx.problem([*parts, "element"], f"SLA element {first!r}: object {object_name!r} declares no column "
                        f"{first.rsplit('.', 1)[1]!r}")
        return None
    obj = ctx.object_by_name[object_name]
    prop = next(p for p in obj.get("properties") or []
                if isinstance(p, dict) and column in (p.get("physicalName"), p.get("name")))
    return object_name, prop


def _with_primary_key(obj: dict, object_name: str, base: list, ctx: _Compiling,
                      checks: list[CheckPlan]) -> list[CheckPlan]:
    keyed = [(pi, p) for pi, p in enumerate(obj.get("properties") or [])
             if isinstance(p, dict) and p.get("primaryKey") is True]
    if not keyed:
        return checks
    keyed.sort(key=lambda item: (item[1].get("primaryKeyPosition", -1) in (-1, None),
                                 item[1].get("primaryKeyPosition") or 0, item[0]))
    first = [*base, "properties", keyed[0][0], "primaryKey"]
    answers = tuple(_clause_at(ctx, [*base, "properties", pi, "primaryKey"]) for pi, _ in keyed)
    columns = [str(p.get("physicalName") or p.get("name")) for _, p in keyed]
    names = [str(p.get("name")) for _, p in keyed]
    single = len(keyed) == 1
    return [*checks, CheckPlan(
        name=f"{dagster_name(names[0])}__primary_key" if single else "primary_key",
        kind="primary_key",
        clause=answers[0].pointer,
        answers=answers,
        object=object_name,
        property=names[0] if single else None,
        severity=Severity.ERROR,
        description=f"{object_name} primary key ({', '.join(names)}): no NULLs, no duplicate "
                    + ("values" if single else "tuples"),
        conditions=(Condition("mustBe", 0),),
        params={"columns": columns, "column": columns[0] if single else None},
        line=ctx.line_of(first),
        where=ctx.named_path(first),
    )]


def _object_plan(obj: dict, object_name: str, base: list, checks: list[CheckPlan], line: int | None = None
                 ) -> ObjectPlan:
    columns = tuple(
        ColumnPlan(
            name=str(p.get("name")),
            physical_name=str(p.get("physicalName") or p.get("name")),
            logical_type=p.get("logicalType"),
            physical_type=p.get("physicalType"),
            required=p.get("required") is True,
            unique=p.get("unique") is True,
            primary_key=p.get("primaryKey") is True,
            classification=p.get("classification"),
            description=p.get("description"),
            classified_below=classified_below(p, CLASSIFIED),
        )
        for p in obj.get("properties") or []
        if isinstance(p, dict)
    )
    custom = {str(c.get("property")): c.get("value") for c in obj.get("customProperties") or []
              if isinstance(c, dict) and c.get("property")}
    physical = str(obj.get("physicalName") or object_name)
    return ObjectPlan(
        name=object_name,
        pointer=pointer(base),
        physical_name=physical,
        asset_key=asset_key_for(physical, custom),
        description=obj.get("description"),
        columns=columns,
        checks=tuple(checks),
        tags=tuple(str(t) for t in obj.get("tags") or []),
        custom_properties=custom,
        authoritative_definitions=tuple(d for d in obj.get("authoritativeDefinitions") or [] if isinstance(d, dict)),
        line=line,
    )


# the addresses Dagster takes as owners (ASCII only: `józef@…`, or one holding a zero-width space,
# would make Dagster refuse the asset, so such a member is dropped and listed instead)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,7}")


def _owners(team: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Dagster owners are emails or `team:name`; everything else is dropped (and listed)."""
    owners: list[str] = []
    dropped: list[str] = []
    members = team if isinstance(team, list) else (team.get("members") if isinstance(team, dict) else None)
    if isinstance(team, dict) and team.get("name"):
        owners.append("team:" + re.sub(r"[^A-Za-z0-9_]", "_", str(team["name"])))
    for member in members or []:
        if not isinstance(member, dict) or member.get("dateOut"):
            continue
        username = str(member.get("username") or "")
        if _EMAIL.fullmatch(username):
            owners.append(username)
        elif username:
            dropped.append(username)
    return tuple(dict.fromkeys(owners)), tuple(dropped)


def outline_contract(data: Any, file: str) -> ContractPlan | None:
    """What can be read of a document that does not validate: its id, version and schema objects
    (with their asset keys), so that its problems can be shown on the assets it names. None when
    it names no object."""
    if not isinstance(data, dict):
        return None
    objects = []
    try:
        for oi, obj in enumerate(data.get("schema") if isinstance(data.get("schema"), list) else []):
            if isinstance(obj, dict) and isinstance(obj.get("name") or obj.get("physicalName"), (str, int)):
                name = str(obj.get("name") or obj.get("physicalName"))
                plan = _object_plan({k: v for k, v in obj.items() if k != "properties"}, name, ["schema", oi], [])
                objects.append(replace(plan, description=plan.description if isinstance(plan.description, str)
                                       else None))
    except Exception:  # a malformed document: whatever could be read before it stays
        pass
    if not objects:
        return None
    text = lambda key: str(data[key]) if isinstance(data.get(key), (str, int, float)) else "?"  # noqa: E731
    return ContractPlan(
        file=file, folder=os.path.dirname(os.path.abspath(file)), id=text("id"), version=text("version"),
        api_version=text("apiVersion"), name=None, status=None,
        domain=data["domain"] if isinstance(data.get("domain"), str) else None, description=None, tags=(),
        owners=(), dropped_owners=(), servers=(), objects=tuple(objects), freshness=(), schedules=(),
        not_enforced=())
