"""`dq-contracts diff OLD NEW`: what changed between two versions of a contract, judged on the
compiled plans (so a v3.0 and a v3.1 spelling of one clause are no change), each change breaking or
not, what it does to each check's history in Dagster, and whether the version bump says so.

"Breaking" here means: data, or a consumer, that was fine under OLD may not be under NEW (a column
or object removed, a type narrowed, a clause added to what existed, a bound, threshold or latency
tightened, a value no longer allowed, a severity raised). A change each way, or one that cannot be
ordered (a new pattern, another SQL query), is breaking too: nothing says the old data still passes.
What a new column or object brings with it is part of its addition, not a tightening of anything.
How one clause compares with its next version is diff_clauses.py; the reading of inputs and
the words of the report are diff_report.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from dq_contracts.odcs.check_kinds import PER_PARTITION, reach_of
from dq_contracts.odcs.diff_clauses import (CHANGED, FAMILIES, FAMILY_OF_KIND, LOOSER, SAME, TIGHTER, aspects, combine,
                                           compare_aspect, describe, slot_of, warn_level_change)
from dq_contracts.odcs.names import ASSET_KEY_PROPERTIES
from dq_contracts.odcs.partitions import DECLARATION
from dq_contracts.odcs.plans import CheckPlan, ColumnPlan, ContractPlan, ObjectPlan, Severity
from dq_contracts.odcs.type_names import type_order
from dq_contracts.odcs.visible import visible_all


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
    ChangeKind("physical_name_changed", True, "physicalName changed: another column is read"),
    ChangeKind("type_narrowed", True, "type narrowed"),
    ChangeKind("type_widened", False, "type widened"),
    ChangeKind("severity_raised", True, "severity raised to ERROR: a failure now blocks downstream assets"),
    ChangeKind("severity_lowered", False, "severity lowered to WARN"),
    # a warn level fails nothing: every change of it is told, none breaks
    ChangeKind("warn_level_added", False, "warn level added"),
    ChangeKind("warn_level_removed", False, "warn level removed"),
    ChangeKind("warn_level_tightened", False, "warn level tightened: it warns earlier"),
    ChangeKind("warn_level_relaxed", False, "warn level relaxed: it warns later"),
    ChangeKind("warn_level_changed", False, "warn level changed"),
    # a clause whose check NEW refuses (a SQL rule reading a column now classified) fails every run
    ChangeKind("check_will_fail", True, "the check is now refused and fails every run"),
    ChangeKind("check_runs_again", False, "the check is no longer refused: it runs again"),
    # the boundary: a column classified keeps its values in the database (samples, error texts);
    # unclassified, they may leave it. No data breaks, but the producer's data is disclosed: a gate
    ChangeKind("classification_added", False, "classified: its values no longer leave the database"),
    ChangeKind("classification_removed", True, "classification removed: its values may now appear in samples "
               "and error messages"),
    # a partitioned table's per-partition rules judge each partition's rows (a row count's bounds
    # apply to every day): what they judge changes with the partitioning
    ChangeKind("partitioning_changed", True, "partitioning changed: the rules judged per partition now judge "
               "other rows"),
    ChangeKind("partitioning_changed_table_wide", False, "partitioning changed; no rule is judged per "
               "partition, so every verdict is the whole table's as before"),
    ChangeKind("support_changed", False, "support channels changed: alerts go to other places"),
    ChangeKind("servers_changed", False, "servers changed: the checks run elsewhere"),
    # a clause no check enforces, changed: nothing runs for it on either side, but it is told
    ChangeKind("not_enforced_changed", False, "what is not enforced changed (no check runs for it)"),
    ChangeKind("other", False, "other"),
]
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


@dataclass(frozen=True)
class Field:
    """A column, or a field or the items of one (`person.ssn`, `tags[]`), as the contract declares it."""

    logical_type: str | None
    physical_type: str | None
    physical_name: str | None
    column: ColumnPlan | None = None  # a top-level column's plan


def _fields(obj: ObjectPlan) -> dict[str, Field]:
    """Every declared column and, below it, every field and items, by their label (as a nested
    clause's `property` says it)."""
    found = {c.name: Field(c.logical_type, c.physical_type, c.physical_name, c) for c in obj.columns}
    schema = next((c for c in obj.checks if c.kind == "schema"), None)
    for declared in (schema.params["columns"] if schema else []):
        if declared.get("nested") and declared.get("name") in found:
            _walk(declared["nested"], str(declared["name"]), found)
    return found


def _walk(node: dict, label: str, found: dict[str, Field]) -> None:
    below = [(f"{label}.{f.get('name')}", f) for f in node.get("properties") or [] if isinstance(f, dict)]
    if isinstance(node.get("items"), dict):
        below.append((f"{label}[]", node["items"]))
    for name, prop in below:
        found[name] = Field(prop.get("logicalType"), prop.get("physicalType"), prop.get("physicalName"))
        _walk(prop, name, found)


def _under(label: str | None, labels: set[str]) -> bool:
    """Whether a property's label is one of `labels` or below one (`person.ssn`, `tags[]` under
    `person`, `tags`)."""
    return label is not None and any(label == x or label.startswith((x + ".", x + "[]")) for x in labels)


def _type_change(old: Field, new: Field) -> tuple[str, str] | None:
    """(code, detail) of a type change; a logicalType change narrows, except integer → number."""
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
                                 ("tags", old.tags, new.tags), ("owners", old.owners, new.owners),
                                 ("authoritativeDefinitions", old.authoritative_definitions,
                                  new.authoritative_definitions),
                                 ("crons", sorted(c.cron for c in old.schedules),
                                  sorted(c.cron for c in new.schedules))):
        if before != after:
            found.changes.append(Change("other", new.id, f"{label} {_short(before)} → {_short(after)}"))
    for code, before, after in (("servers_changed", old.servers, new.servers),
                                ("support_changed", old.support, new.support)):
        if before != after:
            found.changes.append(Change(code, new.id, _items_changed(before, after)))
    found.changes.extend(_object_changes(old, new))
    found.changes.extend(_not_enforced_changes(old, new))
    found.version_problem = version_problem(old.version, new.version, found.changes)
    return found


def _not_enforced_changes(old: ContractPlan, new: ContractPlan) -> list[Change]:
    """Each clause whose being not enforced, or why, differs (`multipleOf: 1e-300` → `1e+300`, both
    beyond what is checked exactly): by its pointer, old reason → new reason."""
    was = {n.clause: f"[{n.code}] {n.reason}" for n in old.not_enforced}
    now = {n.clause: f"[{n.code}] {n.reason}" for n in new.not_enforced}
    return [Change("not_enforced_changed", pointer, visible_all(f"{was.get(pointer, 'enforced')} → "
                                                                f"{now.get(pointer, 'enforced')}"))
            for pointer in sorted({*was, *now}) if was.get(pointer) != now.get(pointer)]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return visible_all(text if len(text) <= 60 else text[:57] + "...")


def _items_changed(before: Iterable[dict], after: Iterable[dict]) -> str:
    """Which entries (servers, support channels) came and went, each whole: a new webhook is shown
    in full, for a person to see where alerts now go."""
    said = lambda items: [json.dumps(i, sort_keys=True, default=str) for i in items]  # noqa: E731
    was, now = said(before), said(after)
    parts = [f"+ {i}" for i in now if i not in was] + [f"- {i}" for i in was if i not in now]
    return visible_all("; ".join(parts) or "reordered")


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
        for label, was, now in (("description", before.description, after.description),
                                ("tags", before.tags, after.tags),
                                ("authoritativeDefinitions", before.authoritative_definitions,
                                 after.authoritative_definitions),
                                ("customProperties", _own_properties(before), _own_properties(after))):
            if was != now:
                changes.append(Change("other", where, f"{label} {_short(was)} → {_short(now)}",
                                      _at(new.file, after.line)))
        changes += _partitioning_changes(new, before, after)
        changes += _column_changes(old, new, before, after)
    return changes


def _column_changes(old: ContractPlan, new: ContractPlan, before: ObjectPlan, after: ObjectPlan) -> list[Change]:
    changes: list[Change] = []
    old_fields, new_fields = _fields(before), _fields(after)
    # what is below a removed or added column or field is part of its removal or addition
    removed = {n for n in old_fields if n not in new_fields}
    added = {n for n in new_fields if n not in old_fields}
    removed = {n for n in removed if not _under(n, removed - {n})}
    added = {n for n in added if not _under(n, added - {n})}
    for name in removed:
        field_, twins = old_fields[name], []
        for other in added:
            if (new_fields[other].logical_type, new_fields[other].physical_type) == (field_.logical_type,
                                                                                     field_.physical_type):
                twins.append(other)
        note = f"; renamed? to {', '.join(sorted(twins))} (same type)" if twins else ""
        changes.append(Change("column_removed", f"{before.name}.{name}",
                              f"{field_.logical_type or field_.physical_type or 'untyped'}{note}"))
    for name in added:
        changes.append(Change("column_added", f"{after.name}.{name}",
                              new_fields[name].logical_type or new_fields[name].physical_type or "untyped"))
    for name, field_ in old_fields.items():
        now = new_fields.get(name)
        if now is None:
            continue
        change = _type_change(field_, now)
        if change:
            changes.append(Change(change[0], f"{after.name}.{name}", change[1]))
        if field_.physical_name != now.physical_name:
            changes.append(Change("physical_name_changed", f"{after.name}.{name}",
                                  f"{field_.physical_name} → {now.physical_name}"))
        if field_.column and now.column:
            changes += _classification_changes(field_.column, now.column, f"{after.name}.{name}")
    changes += _clause_changes(old, new, before, after, removed | added)
    return changes


def _classification_changes(was: ColumnPlan, now: ColumnPlan, where: str) -> list[Change]:
    changes = []
    if was.classified != now.classified:
        said = [_short(c.classification_text) if c.classified else "none" for c in (was, now)]
        changes.append(Change("classification_added" if now.classified else "classification_removed", where,
                              f"{said[0]} → {said[1]}"))
    elif was.classification != now.classification:
        changes.append(Change("other", where, f"classification {_short(str(was.classification))} → "
                              f"{_short(str(now.classification))}"))
    if was.description != now.description:
        changes.append(Change("other", where, "description changed"))
    return changes


def _own_properties(obj: ObjectPlan) -> dict[str, Any]:
    """An object's customProperties but those that make its asset key and partitions (told apart)."""
    return {k: v for k, v in obj.custom_properties.items() if k not in (DECLARATION, *ASSET_KEY_PROPERTIES)}


def _partitioning_changes(new: ContractPlan, before: ObjectPlan, after: ObjectPlan) -> list[Change]:
    """A partitioning added, removed or recut (another key, type, start): breaking when a rule of
    either side is judged per partition, as its rows then are others (a row count > 1000 per day
    instead of in the whole table, a unique within a region only)."""
    shapes = [None if o.partitioning is None else dataclasses.replace(o.partitioning, clause="")
              for o in (before, after)]
    if shapes[0] == shapes[1]:
        return []
    per_partition = sorted({c.name for o in (before, after) for c in o.checks
                            if reach_of(c.kind, c.params.get("query"))[0] == PER_PARTITION})
    said = [("none" if p is None else f"{p.keys_text()} on {p.column}") for p in shapes]
    detail = f"{said[0]} → {said[1]}" + (f"; judged per partition: {', '.join(per_partition)}"
                                         if per_partition else "")
    return [Change("partitioning_changed" if per_partition else "partitioning_changed_table_wide", after.name,
                   visible_all(detail), _at(new.file, after.line))]


def _slots(obj: ObjectPlan, skip: set[str]) -> dict[tuple, list[CheckPlan]]:
    found: dict[tuple, list[CheckPlan]] = {}
    for check in obj.checks:
        if check.kind != "schema" and not _under(check.property, skip):
            found.setdefault(slot_of(check), []).append(check)
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
            changes.append(Change(f"{family}_{direction}", where, describe(now or was), location))
            continue
        olds, news = aspects(was, before), aspects(now, after)
        direction = combine(compare_aspect(olds.get(k), news.get(k)) for k in {*olds, *news})
        if direction != SAME:
            changes.append(Change(f"{family}_{direction}", where, f"{describe(was)} → {describe(now)}",
                                  _at(new.file, now[0].line)))
        refused = [next((c.params.get("refusal") for c in side if c.params.get("refusal")), None)
                   for side in (was, now)]
        if bool(refused[0]) != bool(refused[1]):
            changes.append(Change("check_will_fail" if refused[1] else "check_runs_again", where,
                                  visible_all(str(refused[1]) if refused[1] else f"was: {refused[0]}"),
                                  _at(new.file, now[0].line)))
        warn_change = warn_level_change(was[0], now[0])
        if warn_change is not None:
            changes.append(Change(f"warn_level_{warn_change}", where, f"{was[0].warn_threshold_text() or 'none'} → "
                                  f"{now[0].warn_threshold_text() or 'none'}", _at(new.file, now[0].line)))
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
