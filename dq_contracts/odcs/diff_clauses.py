"""What each clause of a contract accepts, and how two versions of one clause compare
(`dq-contracts diff`, diff.py): tightened (it accepts less), relaxed (more), changed (neither
contains the other, or nothing orders them: another pattern, another SQL query), or the same.

A check's slot is which clause of its object it is, whatever its name; its aspects are what it
accepts, each compared on its own: the interval of the observed value its conditions allow, a
bound's interval, a set of values, a divisor, or an exact value.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from fractions import Fraction
from dataclasses import dataclass
from typing import Any, Iterable

from dq_contracts.odcs.check_kinds import CHECK_KINDS, COUNTED
from dq_contracts.odcs.plans import CheckPlan, ObjectPlan
from dq_contracts.odcs.servers import SERVER_TYPES
from dq_contracts.odcs.sqlrules import PLACEHOLDER, RESERVED
from dq_contracts.odcs.type_names import is_text

SAME, TIGHTER, LOOSER, CHANGED = "same", "tightened", "relaxed", "changed"

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

    @property
    def empty(self) -> bool:
        if self.lo is None or self.hi is None:
            return False
        return self.lo > self.hi or (self.lo == self.hi and (self.lo_strict or self.hi_strict))


@dataclass(frozen=True)
class Intervals:
    """A union of disjoint intervals: what `mustNotBe` and `mustNotBeBetween` accept (the values on
    either side of a point or a range), met with the other conditions. Its parts never touch (a
    complement leaves at least its point out), so one interval is inside the union only when it is
    inside one of its parts."""

    parts: tuple[Interval, ...]

    def meet(self, other: "Intervals") -> "Intervals":
        met = (a.meet(b) for a in self.parts for b in other.parts)
        return Intervals(tuple(sorted({m for m in met if not m.empty}, key=_part_order)))

    def within(self, other: "Intervals") -> bool:
        return all(any(part.within(theirs) for theirs in other.parts) for part in self.parts)


def _part_order(part: Interval) -> tuple:
    return (part.lo is not None, part.lo if part.lo is not None else 0, part.lo_strict)


def _outside(lo: Any, hi: Any) -> Intervals:
    """The values outside lo..hi (both ends excluded from the range, so kept out of the parts too)."""
    return Intervals((Interval(hi=lo, hi_strict=True), Interval(lo=hi, lo_strict=True)))


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


# An operator as the accepted values of the observed value: one interval, or (mustNotBe,
# mustNotBeBetween) the two on either side, so that [0, 10] → [0, 5] orders as a relaxation
_OPERATOR_INTERVAL = {
    "mustBe": lambda v: Intervals((Interval(v, False, v, False),)),
    "mustNotBe": lambda v: _outside(v, v),
    "mustBeGreaterThan": lambda v: Intervals((Interval(lo=v, lo_strict=True),)),
    "mustBeGreaterOrEqualTo": lambda v: Intervals((Interval(lo=v),)),
    "mustBeLessThan": lambda v: Intervals((Interval(hi=v, hi_strict=True),)),
    "mustBeLessOrEqualTo": lambda v: Intervals((Interval(hi=v),)),
    "mustBeBetween": lambda v: Intervals((Interval(min(v), False, max(v), False),)),
    "mustNotBeBetween": lambda v: _outside(min(v), max(v)),
}


def _conditions(check: CheckPlan, conditions: tuple | None = None) -> Any:
    """What the check accepts of its observed value (by its fail level, or the `conditions` given):
    an Interval, or the conditions themselves."""
    conditions = check.conditions if conditions is None else conditions
    if not all(c.operator in _OPERATOR_INTERVAL for c in conditions):
        return _exact(check.unit, [(c.operator, c.value) for c in conditions])
    counted = CHECK_KINDS[check.kind].observed_unit in COUNTED and check.unit != "percent"
    accepted = Intervals((Interval(lo=0) if counted else Interval(),))
    try:
        for condition in conditions:
            accepted = accepted.meet(_OPERATOR_INTERVAL[condition.operator](condition.value))
        if counted:
            accepted = _on_whole_numbers(accepted)
    except TypeError:  # values that cannot be ordered (a text beside a number): compared as written
        return _exact(check.unit, [(c.operator, c.value) for c in conditions])
    return ("interval", check.unit, accepted)


def _on_whole_numbers(accepted: Intervals) -> Intervals:
    """What a count's conditions accept, as the whole numbers they accept (each part's closed
    integer ends): `< 1` and `= 0` accept one count, 0, and so do `≤ 0.5` and `< 0.5`; parts that
    come to touch (`not between 4.5 and 4.6`) are one."""
    parts: list[Interval] = []
    for part in accepted.parts:
        try:
            lo = None if part.lo is None else math.floor(part.lo) + 1 if part.lo_strict else math.ceil(part.lo)
            hi = None if part.hi is None else math.ceil(part.hi) - 1 if part.hi_strict else math.floor(part.hi)
        except (OverflowError, ValueError):  # an infinite or NaN end: the part as it is
            parts.append(part)
            continue
        whole = Interval(lo, False, hi, False)
        if whole.empty:
            continue
        if parts and parts[-1].hi is not None and lo is not None and not parts[-1].hi_strict \
                and lo <= parts[-1].hi + 1:
            whole = Interval(parts.pop().lo, False, hi, False)
        parts.append(whole)
    return Intervals(tuple(parts))


def warn_level_change(was: CheckPlan, now: CheckPlan) -> str | None:
    """How a rule's warn level changed (`added`, `tightened`…), None when it did not: compared as its
    accepted interval, as the fail level is."""
    if not was.warn_conditions and not now.warn_conditions:
        return None
    if not was.warn_conditions or not now.warn_conditions:
        return "added" if now.warn_conditions else "removed"
    direction = compare_aspect(*(_conditions(c, c.warn_conditions) for c in (was, now)))
    return None if direction == SAME else direction


def _exact(*value: Any) -> tuple:
    return ("exact", json.dumps(value, sort_keys=True, default=str))


def _values(values: Iterable[Any] | None, check: CheckPlan, obj: ObjectPlan | None) -> frozenset[str]:
    """A clause's values as the check tells them apart: on a column compared as text (is_text) as
    written (`1` is '1', `1.0` is '1.0'); on any other a number by its value (`1` and `1.0` are one)."""
    values = list(values or ())
    if check.params.get("path"):  # a nested field: by its leaf's declared types
        logical, physical = (list(check.params.get("leaf_type") or []) + [None, None])[:2]
        text = is_text(_Declared(logical, physical), values)
    else:
        text = is_text(obj.column(check.params["column"]) if obj is not None else None, values)
    return frozenset(_value_key(v, text) for v in values)


@dataclass(frozen=True)
class _Declared:
    logical_type: Any
    physical_type: Any


def _value_key(value: Any, text: bool) -> str:
    if not text and isinstance(value, (int, float)) and not isinstance(value, bool):
        # by its exact value, as the checks compare it (check_kinds.exact_number): 1, 1.0 and 1e0 alike, but
        # 1.152921504606847e+18 is 2^60 = 1152921504606846976, not the 1152921504606847000 its repr spells
        return format(Decimal(value).normalize(), "f")
    return json.dumps(value, sort_keys=True, default=str)


def _bound(check: CheckPlan) -> Interval:
    bound, strict = _instant(check.params["bound"], check.params.get("logical_type")), bool(check.params.get("strict"))
    return Interval(lo=bound, lo_strict=strict) if check.params["lower"] else Interval(hi=bound, hi_strict=strict)


def _instant(bound: Any, logical_type: str | None) -> Any:
    """A bound as the checks apply it (engine/check_kinds.py `_typed_bound`), so that two spellings
    order: on a `timestamp` column an instant in UTC (a naive timestamp is UTC, an offset is applied,
    a date is its day's start); on a `date` column the date written; on a `time` column a time of
    day. On any other column, and whatever does not parse, the bound as written."""
    if not isinstance(bound, str) or logical_type not in ("timestamp", "date", "time"):
        return bound
    text = bound.strip()
    try:
        if logical_type == "date":
            return dt.date.fromisoformat(text[:10])
        if logical_type == "time":
            return dt.time.fromisoformat(text.removesuffix("Z"))
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return bound
    return moment.replace(tzinfo=dt.timezone.utc) if moment.tzinfo is None else moment.astimezone(dt.timezone.utc)


def _multiple(check: CheckPlan) -> tuple:
    """The divisor as the decimal it is written as (the check is exact to 10 decimal places): 0.3 is
    three times 0.1, and 1.0000000001 is no multiple of 1."""
    divisor = check.params["divisor"]
    try:
        return ("divisor", Fraction(Decimal(str(divisor))))
    except (ArithmeticError, ValueError, TypeError):
        return _exact("divisor", divisor)


_MARK = RESERVED + "diff_"  # a query holding RESERVED is refused: no check that runs spells a placeholder so


# generic SQL first, then each server type's dialect: the first that reads the query renders it
_READERS = tuple(dict.fromkeys((None, *(row.sqlglot for row in SERVER_TYPES if row.sqlglot))))


def _query(check: CheckPlan) -> tuple:
    """A SQL rule's query as its sqlglot tree, rendered without comments: layout, keyword case and
    comments are no change, a string literal's every character is (`'a  b'` is another query than
    `'a b'`). A query no dialect reads is compared as written."""
    import sqlglot

    text = PLACEHOLDER.sub(lambda m: _MARK + m.group(1), check.params["query"])
    for dialect in _READERS:
        try:
            statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
            return _exact("sql", dialect, [s.sql(dialect=dialect, comments=False) for s in statements])
        except Exception:  # sqlglot raises several kinds on odd input: the next dialect is tried
            continue
    return _exact("text", check.params["query"].strip())


# What each kind's clause says beyond its conditions, as aspects compared one by one: an Interval
# (narrower is tighter), ("allowed", values) (fewer is tighter), ("counted", values) (values that
# count against the data: more is tighter), ("divisor", d) (a multiple of d is tighter), ("exact", …);
# each of a check and the object it is of (values are told apart as its column compares them)
ASPECTS = {
    "schema": lambda c, o: {},  # its columns are compared as columns
    "not_null": lambda c, o: {},
    "unique": lambda c, o: {"columns": _exact(c.params["columns"])},
    "primary_key": lambda c, o: {"columns": _exact(c.params["columns"])},
    "duplicate_values": lambda c, o: {"columns": _exact(c.params["columns"])},
    "range": lambda c, o: {"bound": _bound(c)},
    "length": lambda c, o: {"bound": _bound(c)},
    "multiple_of": lambda c, o: {"divisor": _multiple(c)},
    "pattern": lambda c, o: {"pattern": _exact(c.params["pattern"], c.params["format"])},
    "accepted_values": lambda c, o: {"values": ("allowed", _values(c.params["values"], c, o))},
    "missing_values": lambda c, o: {"values": ("counted", _values(c.params["values"], c, o))},
    "invalid_values": lambda c, o: {"values": ("allowed", _values(c.params["valid_values"], c, o))
                                    if c.params["valid_values"] is not None else _exact(None),
                                    "pattern": _exact(c.params["pattern"])},
    "null_values": lambda c, o: {},
    "row_count": lambda c, o: {},
    "freshness": lambda c, o: {},  # its latency is its condition: age ≤ max
    "relationship": lambda c, o: {"target": _exact(c.params["columns"], c.params["target_table"],
                                                   c.params["target_columns"])},
    "sql": lambda c, o: {"query": _query(c)},
}


def compare_aspect(old: Any, new: Any) -> str:
    if old == new:
        return SAME
    try:
        if isinstance(old, (Interval, Intervals)) and type(old) is type(new):
            return TIGHTER if new.within(old) else LOOSER if old.within(new) else CHANGED
        if old[0] == new[0] == "interval" and old[1] == new[1]:
            return compare_aspect(old[2], new[2])
        if old[0] == new[0] == "allowed":
            return TIGHTER if new[1] < old[1] else LOOSER if new[1] > old[1] else CHANGED
        if old[0] == new[0] == "counted":
            return TIGHTER if new[1] > old[1] else LOOSER if new[1] < old[1] else CHANGED
        if old[0] == new[0] == "divisor" and old[1] and new[1]:
            ratio = new[1] / old[1]  # every multiple of 10 is a multiple of 5
            return TIGHTER if ratio.denominator == 1 else LOOSER if ratio.numerator == 1 else CHANGED
    except TypeError:  # ends that cannot be ordered (a date against a number)
        return CHANGED
    return CHANGED


def combine(directions: Iterable[str]) -> str:
    seen = set(directions) - {SAME}
    if not seen:
        return SAME
    return seen.pop() if len(seen) == 1 else CHANGED


def aspects(checks: list[CheckPlan], obj: ObjectPlan | None = None) -> dict[str, Any]:
    """One slot's aspects (`obj`: the object the checks are of); several checks on one slot (a
    minimum and an exclusiveMinimum) meet."""
    merged: dict[str, Any] = {"conditions": _conditions(checks[0])}
    for check in checks:
        for name, value in ASPECTS[check.kind](check, obj).items():
            merged[name] = merged[name].meet(value) if isinstance(value, Interval) and name in merged else value
    return merged


def slot_of(check: CheckPlan) -> tuple:
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


def describe(checks: list[CheckPlan]) -> str:
    """What a slot's clauses say: their parameters, and the threshold of a rule (a row-level clause's
    threshold is always "no offending row")."""
    parts = []
    for check in checks:
        said = [f"{k} {v}" for k, v in check.params.items()
                if k in _SHOWN_PARAMS and v is not None and v is not False and v != []]
        if FAMILY_OF_KIND[check.kind] == "quality_rule":
            said.append(check.threshold_text())
        parts.append(", ".join(said))
    return "; ".join(p for p in parts if p)
