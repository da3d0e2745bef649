"""`dq-contracts diff OLD NEW`: what changed between two versions of a contract, judged on the
compiled plans (so a v3.0 and a v3.1 spelling of one clause are no change), each change breaking or
not, what it does to each check's history in Dagster, and whether the version bump says so.

"Breaking" here means: data, or a consumer, that was fine under OLD may not be under NEW (a column
or object removed, a type narrowed, a clause added to what existed, a bound, threshold or latency
tightened, a value no longer allowed, a severity raised). A change each way, or one that cannot be
ordered (a new pattern, another SQL query), is breaking too: nothing says the old data still passes.
What a new column or object brings with it is part of its addition, not a tightening of anything.
The reading of inputs and the words of the report are in diff_report.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from dq_contracts.odcs.plans import CheckPlan, ColumnPlan, ContractPlan, ObjectPlan, Severity
from dq_contracts.odcs.type_names import type_order

SAME, TIGHTER, LOOSER, CHANGED = "same", "tightened", "relaxed", "changed"


@dataclass(frozen=True)
class ChangeKind:
    code: str
    breaking: bool
    words: str  # what happened, for people


# Every change the diff can report, and whether it breaks. A clause's family (`FAMILIES`) and its
# direction make the code of a clause change: `bound_tightened`, `enum_relaxed`, `latency_tightened`.
_FIXED = [
    ChangeKind("contract_removed", True, "contract removed"),
    ChangeKind("contract_added", False, "contract added"),
    ChangeKind("id_changed", True, "contract id changed: another contract for every consumer"),
    ChangeKind("object_removed", True, "object removed"),
    ChangeKind("object_added", False, "object added"),
    ChangeKind("object_renamed", False, "object renamed, same asset"),
    ChangeKind("asset_key_changed", True, "asset key changed: every check of the object moves to the new key"),
    ChangeKind("table_changed", True, "physicalName changed: the contract speaks of another table"),
    ChangeKind("column_removed", True, "column removed"),
    ChangeKind("column_added", False, "column added"),
    ChangeKind("type_narrowed", True, "type narrowed"),
    ChangeKind("type_widened", False, "type widened"),
    ChangeKind("severity_raised", True, "severity raised to ERROR: a failure now blocks downstream assets"),
    ChangeKind("severity_lowered", False, "severity lowered to WARN"),
    ChangeKind("other", False, "other"),
]
# family: (the clause kinds in it, its words when added / removed / tightened / relaxed / changed)
FAMILIES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "required": (("not_null",), {}),
    "unique": (("unique",), {}),
    "primary_key": (("primary_key",), {CHANGED: "key columns changed"}),
    "bound": (("range", "length", "multiple_of"), {}),
    "pattern": (("pattern",), {"added": "pattern or format added"}),
    "enum": (("accepted_values",), {TIGHTER: "value removed", LOOSER: "value added"}),
    "latency": (("freshness",), {TIGHTER: "shortened", LOOSER: "lengthened"}),
    "relationship": (("relationship",), {}),
    "quality_rule": (("null_values", "missing_values", "invalid_values", "duplicate_values", "row_count", "sql"),
                     {TIGHTER: "threshold tightened", LOOSER: "threshold relaxed"}),
}
FAMILY_OF_KIND = {kind: family for family, (kinds, _) in FAMILIES.items() for kind in kinds}
_BREAKS = {"added": True, "removed": False, TIGHTER: True, LOOSER: False, CHANGED: True}
CHANGE_KINDS: dict[str, ChangeKind] = {k.code: k for k in _FIXED}
for _family, (_, _words) in FAMILIES.items():
    for _direction, _breaks in _BREAKS.items():
        _code = f"{_family}_{_direction}"
        CHANGE_KINDS[_code] = ChangeKind(_code, _breaks, f"{_family.replace('_', ' ')} "
                                         f"{_words.get(_direction, _direction)}")


@dataclass(frozen=True)
class Change:
    code: str  # a key of CHANGE_KINDS
    where: str  # contract, object, object.column or object.check
    detail: str = ""  # old → new, in the contract's words
    location: str = ""  # file:line of the clause, in NEW (OLD for what was removed)

    @property
    def breaking(self) -> bool:
        return CHANGE_KINDS[self.code].breaking

    @property
    def words(self) -> str:
        return CHANGE_KINDS[self.code].words


@dataclass(frozen=True)
class CheckFate:
    """One Dagster check (asset key + check name: one history) and what NEW does to it."""

    asset_key: tuple[str, ...]
    name: str
    fate: str  # kept (same asset key and name: its history goes on), new, gone


@dataclass
class ContractDiff:
    old: ContractPlan | None
    new: ContractPlan | None
    changes: list[Change] = field(default_factory=list)
    checks: list[CheckFate] = field(default_factory=list)
    version_problem: str | None = None

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if c.breaking]


# --- comparing what a clause accepts ---------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """The values accepted: lo..hi, each end open (strict) or closed; None is unbounded."""

    lo: Any = None
    lo_strict: bool = False
    hi: Any = None
    hi_strict: bool = False

    def meet(self, other: "Interval") -> "Interval":
        lo, lo_strict = _tighter_end(self.lo, self.lo_strict, other.lo, other.lo_strict, lower=True)
        hi, hi_strict = _tighter_end(self.hi, self.hi_strict, other.hi, other.hi_strict, lower=False)
        return Interval(lo, lo_strict, hi, hi_strict)

    def within(self, other: "Interval") -> bool:
        """Every value this accepts, `other` accepts (TypeError when the ends cannot be ordered)."""
        return (_at_least_as_tight(self.lo, self.lo_strict, other.lo, other.lo_strict, lower=True)
                and _at_least_as_tight(self.hi, self.hi_strict, other.hi, other.hi_strict, lower=False))


def _at_least_as_tight(a, a_strict, b, b_strict, *, lower: bool) -> bool:
    if b is None:
        return True
    if a is None:
        return False
    if a == b:
        return a_strict or not b_strict
    return a > b if lower else a < b


def _tighter_end(a, a_strict, b, b_strict, *, lower: bool):
    return (a, a_strict) if _at_least_as_tight(a, a_strict, b, b_strict, lower=lower) else (b, b_strict)


# An operator as the accepted interval of the observed value; mustNotBe(-Between) accept no interval
_OPERATOR_INTERVAL = {
    "mustBe": lambda v: Interval(v, False, v, False),
    "mustBeGreaterThan": lambda v: Interval(lo=v, lo_strict=True),
    "mustBeGreaterOrEqualTo": lambda v: Interval(lo=v),
    "mustBeLessThan": lambda v: Interval(hi=v, hi_strict=True),
    "mustBeLessOrEqualTo": lambda v: Interval(hi=v),
    "mustBeBetween": lambda v: Interval(min(v), False, max(v), False),
}


def _conditions(check: CheckPlan) -> Any:
    """What the check accepts of its observed value: an Interval, or the conditions themselves."""
    if not all(c.operator in _OPERATOR_INTERVAL for c in check.conditions):
        return _exact(check.unit, [(c.operator, c.value) for c in check.conditions])
    accepted = Interval()
    for condition in check.conditions:
        accepted = accepted.meet(_OPERATOR_INTERVAL[condition.operator](condition.value))
    return ("interval", check.unit, accepted)


def _exact(*value: Any) -> tuple:
    return ("exact", json.dumps(value, sort_keys=True, default=str))


def _values(values: Iterable[Any] | None) -> frozenset[str]:
    return frozenset(json.dumps(v, sort_keys=True, default=str) for v in values or ())


def _bound(check: CheckPlan) -> Interval:
    bound, strict = check.params["bound"], bool(check.params.get("strict"))
    return Interval(lo=bound, lo_strict=strict) if check.params["lower"] else Interval(hi=bound, hi_strict=strict)


def _multiple(check: CheckPlan) -> tuple:
    return ("divisor", check.params["divisor"])


def _query(check: CheckPlan) -> tuple:
    return _exact(re.sub(r"\s+", " ", check.params["query"].strip()))


# What each kind's clause says beyond its conditions, as aspects compared one by one: an Interval
# (narrower is tighter), ("allowed", values) (fewer is tighter), ("counted", values) (values that
# count against the data: more is tighter), ("divisor", d) (a multiple of d is tighter), ("exact", …)
ASPECTS = {
    "schema": lambda c: {},  # its columns are compared as columns
    "not_null": lambda c: {},
    "unique": lambda c: {"columns": _exact(c.params["columns"])},
    "primary_key": lambda c: {"columns": _exact(c.params["columns"])},
    "duplicate_values": lambda c: {"columns": _exact(c.params["columns"])},
    "range": lambda c: {"bound": _bound(c)},
    "length": lambda c: {"bound": _bound(c)},
    "multiple_of": lambda c: {"divisor": _multiple(c)},
    "pattern": lambda c: {"pattern": _exact(c.params["pattern"], c.params["format"])},
    "accepted_values": lambda c: {"values": ("allowed", _values(c.params["values"]))},
    "missing_values": lambda c: {"values": ("counted", _values(c.params["values"]))},
    "invalid_values": lambda c: {"values": ("allowed", _values(c.params["valid_values"]))
                                 if c.params["valid_values"] is not None else _exact(None),
                                 "pattern": _exact(c.params["pattern"])},
    "null_values": lambda c: {},
    "row_count": lambda c: {},
    "freshness": lambda c: {},  # its latency is its condition: age ≤ max
    "relationship": lambda c: {"target": _exact(c.params["columns"], c.params["target_table"],
                                                c.params["target_columns"])},
    "sql": lambda c: {"query": _query(c)},
}


def _compare_aspect(old: Any, new: Any) -> str:
    if old == new:
        return SAME
    try:
        if isinstance(old, Interval) and isinstance(new, Interval):
            return TIGHTER if new.within(old) else LOOSER if old.within(new) else CHANGED
        if old[0] == new[0] == "interval" and old[1] == new[1]:
            return _compare_aspect(old[2], new[2])
        if old[0] == new[0] == "allowed":
            return TIGHTER if new[1] < old[1] else LOOSER if new[1] > old[1] else CHANGED
        if old[0] == new[0] == "counted":
            return TIGHTER if new[1] > old[1] else LOOSER if new[1] < old[1] else CHANGED
        if old[0] == new[0] == "divisor" and old[1] and new[1]:
            ratio = new[1] / old[1]  # every multiple of 10 is a multiple of 5
            return TIGHTER if _whole(ratio) else LOOSER if _whole(1 / ratio) else CHANGED
    except TypeError:  # ends that cannot be ordered (a date against a number)
        return CHANGED
    return CHANGED


def _whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9


def _combine(directions: Iterable[str]) -> str:
    seen = set(directions) - {SAME}
    if not seen:
        return SAME
    return seen.pop() if len(seen) == 1 else CHANGED


def _aspects(checks: list[CheckPlan]) -> dict[str, Any]:
    """One slot's aspects; several checks on one slot (a minimum and an exclusiveMinimum) meet."""
    merged: dict[str, Any] = {"conditions": _conditions(checks[0])}
    for check in checks:
        for name, value in ASPECTS[check.kind](check).items():
            merged[name] = merged[name].meet(value) if isinstance(value, Interval) and name in merged else value
    return merged


def _slot(check: CheckPlan) -> tuple:
    """Which clause of its object a check is, whatever its name: one side of a range or a length
    (`minimum` and `exclusiveMinimum` are one lower bound), a pattern or a format, else its name."""
    path = tuple(check.params.get("path") or ())
    if check.kind in ("range", "length"):
        return (check.kind, check.property, path, bool(check.params["lower"]))
    if check.kind == "pattern":
        return (check.kind, check.property, path, bool(check.params["format"]))
    return ("name", check.name)


_SHOWN_PARAMS = ("bound", "strict", "values", "valid_values", "pattern", "format", "divisor", "columns",
                 "target_table", "target_columns", "query", "max_age_seconds")


def _describe(checks: list[CheckPlan]) -> str:
    """What a slot's clauses say: their parameters, and the threshold of a rule (a row-level clause's
    threshold is always "no offending row")."""
    parts = []
    for check in checks:
        said = [f"{k} {v}" for k, v in check.params.items()
                if k in _SHOWN_PARAMS and v is not None and v is not False and v != []]
        if FAMILY_OF_KIND[check.kind] == "quality_rule":
            said.append(check.threshold_text())
        parts.append(", ".join(said) or check.kind)
    return "; ".join(parts)


def _type_change(old: ColumnPlan, new: ColumnPlan) -> tuple[str, str] | None:
    """(code, detail) of a column's type change; a logicalType change narrows, except integer → number."""
    if old.logical_type != new.logical_type:
        widened = (old.logical_type, new.logical_type) in {("integer", "number")} or new.logical_type is None
        return ("type_widened" if widened else "type_narrowed",
                f"logicalType {old.logical_type} → {new.logical_type}")
    if old.physical_type == new.physical_type:
        return None
    if old.physical_type is None or new.physical_type is None:  # declared now: the schema check demands it
        return ("type_narrowed" if new.physical_type else "type_widened",
                f"physicalType {old.physical_type} → {new.physical_type}")
    direction = type_order(old.physical_type, new.physical_type)
    if direction == "same":
        return None
    return ("type_widened" if direction == "widened" else "type_narrowed",
            f"physicalType {old.physical_type} → {new.physical_type}")


# --- one contract against its next version ---------------------------------------------------------

def compare_plans(old: ContractPlan | None, new: ContractPlan | None) -> ContractDiff:
    found = ContractDiff(old, new)
    found.checks = check_fates([old] if old else [], [new] if new else [])
    if old is None or new is None:
        plan = old or new
        found.changes.append(Change("contract_removed" if new is None else "contract_added", plan.id,
                                    f"{plan.file} {plan.version}"))
        return found
    if old.id != new.id:
        found.changes.append(Change("id_changed", new.id, f"{old.id} → {new.id}"))
    for label, before, after in (("name", old.name, new.name), ("status", old.status, new.status),
                                 ("domain", old.domain, new.domain), ("description", old.description, new.description),
                                 ("tags", old.tags, new.tags), ("owners", old.owners, new.owners)):
        if before != after:
            found.changes.append(Change("other", new.id, f"{label} {_short(before)} → {_short(after)}"))
    found.changes.extend(_object_changes(old, new))
    found.version_problem = version_problem(old.version, new.version, found.changes)
    return found


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _pair_objects(old: ContractPlan, new: ContractPlan) -> tuple[list[tuple[ObjectPlan, ObjectPlan]], list, list]:
    """Objects by name, then what is left by asset key (an object renamed is the same asset)."""
    pairs = [(o, new.object(o.name)) for o in old.objects if new.object(o.name) is not None]
    paired_new = {n.name for _, n in pairs}
    gone = [o for o in old.objects if new.object(o.name) is None]
    came = [n for n in new.objects if n.name not in paired_new]
    for obj in list(gone):
        twin = next((n for n in came if n.asset_key == obj.asset_key), None)
        if twin is not None:
            pairs.append((obj, twin))
            gone.remove(obj)
            came.remove(twin)
    return pairs, gone, came


def _object_changes(old: ContractPlan, new: ContractPlan) -> list[Change]:
    changes: list[Change] = []
    pairs, gone, came = _pair_objects(old, new)
    changes += [Change("object_removed", o.name, "/".join(o.asset_key), _at(old.file, o.line)) for o in gone]
    changes += [Change("object_added", o.name, "/".join(o.asset_key), _at(new.file, o.line)) for o in came]
    for before, after in pairs:
        where = after.name
        if before.name != after.name:
            changes.append(Change("object_renamed", where, f"{before.name} → {after.name}", _at(new.file, after.line)))
        if before.asset_key != after.asset_key:
            changes.append(Change("asset_key_changed", where, f"{'/'.join(before.asset_key)} → "
                                  f"{'/'.join(after.asset_key)}", _at(new.file, after.line)))
        if before.physical_name != after.physical_name:
            changes.append(Change("table_changed", where, f"{before.physical_name} → {after.physical_name}",
                                  _at(new.file, after.line)))
        for label in ("description", "tags"):
            if getattr(before, label) != getattr(after, label):
                changes.append(Change("other", where, f"{label} {_short(getattr(before, label))} → "
                                      f"{_short(getattr(after, label))}", _at(new.file, after.line)))
        changes += _column_changes(old, new, before, after)
    return changes


def _column_changes(old: ContractPlan, new: ContractPlan, before: ObjectPlan, after: ObjectPlan) -> list[Change]:
    changes: list[Change] = []
    old_columns = {c.name: c for c in before.columns}
    new_columns = {c.name: c for c in after.columns}
    removed = [c for name, c in old_columns.items() if name not in new_columns]
    added = [c for name, c in new_columns.items() if name not in old_columns]
    for column in removed:
        twins = [a.name for a in added if (a.logical_type, a.physical_type) == (column.logical_type, column.physical_type)]
        note = f"; renamed? to {', '.join(twins)} (same type)" if twins else ""
        changes.append(Change("column_removed", f"{before.name}.{column.name}",
                              f"{column.logical_type or column.physical_type or 'untyped'}{note}"))
    for column in added:
        changes.append(Change("column_added", f"{after.name}.{column.name}",
                              column.logical_type or column.physical_type or "untyped"))
    for name, column in old_columns.items():
        if name not in new_columns:
            continue
        change = _type_change(column, new_columns[name])
        if change:
            changes.append(Change(change[0], f"{after.name}.{name}", change[1]))
        if (column.classification, column.description) != (new_columns[name].classification,
                                                           new_columns[name].description):
            changes.append(Change("other", f"{after.name}.{name}", "classification or description changed"))
    # a removed or added column's clauses are part of its removal or addition
    skip = {c.name for c in removed} | {c.name for c in added}
    changes += _clause_changes(old, new, before, after, skip)
    return changes


def _slots(obj: ObjectPlan, skip: set[str]) -> dict[tuple, list[CheckPlan]]:
    found: dict[tuple, list[CheckPlan]] = {}
    for check in obj.checks:
        if check.kind != "schema" and check.property not in skip:
            found.setdefault(_slot(check), []).append(check)
    return found


def _clause_changes(old: ContractPlan, new: ContractPlan, before: ObjectPlan, after: ObjectPlan,
                    skip: set[str]) -> list[Change]:
    changes: list[Change] = []
    old_slots, new_slots = _slots(before, skip), _slots(after, skip)
    for slot in [*old_slots, *(s for s in new_slots if s not in old_slots)]:
        was, now = old_slots.get(slot), new_slots.get(slot)
        first = (now or was)[0]
        family = FAMILY_OF_KIND[first.kind]
        where = f"{after.name}.{first.name}"
        if was is None or now is None:
            direction = "added" if was is None else "removed"
            location = _at(new.file, now[0].line) if now else _at(old.file, was[0].line)
            changes.append(Change(f"{family}_{direction}", where, _describe(now or was), location))
            continue
        olds, news = _aspects(was), _aspects(now)
        direction = _combine(_compare_aspect(olds.get(k), news.get(k)) for k in {*olds, *news})
        if direction != SAME:
            changes.append(Change(f"{family}_{direction}", where, f"{_describe(was)} → {_describe(now)}",
                                  _at(new.file, now[0].line)))
        old_severity = max(c.severity == Severity.ERROR for c in was)
        new_severity = max(c.severity == Severity.ERROR for c in now)
        if old_severity != new_severity:
            changes.append(Change("severity_raised" if new_severity else "severity_lowered", where,
                                  "WARN → ERROR" if new_severity else "ERROR → WARN", _at(new.file, now[0].line)))
    return changes


def _at(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file


# --- Dagster history, and the version ------------------------------------------------------------

def check_fates(old: Iterable[ContractPlan], new: Iterable[ContractPlan]) -> list[CheckFate]:
    """Each check's history: Dagster keeps one per (asset key, check name), whatever its clause says."""
    before = {(o.asset_key, c.name): None for plan in old for o in plan.objects for c in o.checks}
    after = {(o.asset_key, c.name): None for plan in new for o in plan.objects for c in o.checks}
    fates = [CheckFate(key, name, "kept" if (key, name) in after else "gone") for key, name in before]
    return fates + [CheckFate(key, name, "new") for key, name in after if (key, name) not in before]


_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?")


def version_problem(old: str, new: str, changes: list[Change]) -> str | None:
    """A breaking change needs a major bump (in 0.y.z, where anything may change, a minor one); any
    change a greater version; a version never goes down."""
    a, b = _SEMVER.fullmatch(str(old).strip()), _SEMVER.fullmatch(str(new).strip())
    if not changes:
        return None
    if not (a and b):
        return (f"{old} → {new} is not semantic versioning (MAJOR.MINOR.PATCH): the bump cannot be "
                "checked against the changes")
    va, vb = tuple(map(int, a.groups())), tuple(map(int, b.groups()))
    if vb < va:
        return f"{old} → {new} goes down"
    if vb == va:
        return f"{old} unchanged, but the contract changed"
    breaking = any(c.breaking for c in changes)
    major = vb[0] > va[0] or (va[0] == 0 and vb[0] == 0 and vb[1] > va[1])
    if breaking and not major:
        return (f"{old} → {new}: breaking changes need a major version bump (to {va[0] + 1}.0.0"
                f"{'; in 0.y.z a minor one' if va[0] == 0 else ''})")
    return None


def pair_contracts(old: list[ContractPlan], new: list[ContractPlan]) -> list[tuple[ContractPlan | None,
                                                                                   ContractPlan | None]]:
    """Contracts by id; one contract on each side is compared whatever its id says."""
    if len(old) == 1 and len(new) == 1:
        return [(old[0], new[0])]
    by_id = {p.id: p for p in new}
    pairs: list[tuple[ContractPlan | None, ContractPlan | None]] = [(p, by_id.pop(p.id, None)) for p in old]
    return pairs + [(None, p) for p in by_id.values()]
