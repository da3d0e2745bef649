"""Partitions in ODCS words, with no Dagster: which column partitions an object, how its table is cut
for Dagster (an object-level `customProperties` entry) and what one partition key selects. Which
check kinds read one partition rather than the whole table is each kind's reach (check_kinds.py).

The declaration, on a schema object:

    customProperties:
      - property: dagsterPartitions
        value: {type: daily, start: "2026-01-01", column: day}     # hourly, weekly, monthly too
      - property: dagsterPartitions
        value: {type: static, values: [eu, us], column: region}

`column` may be left out when exactly one property says `partitioned: true` (or the lowest
`partitionKeyPosition` of several names it).
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from typing import Any

DECLARATION = "dagsterPartitions"

# How a time window's partition key is spelt (as Dagster spells it) and how long the window is.
TIME_WINDOWS: dict[str, tuple[str, str]] = {
    "hourly": ("%Y-%m-%d-%H:%M", "an hour"),
    "daily": ("%Y-%m-%d", "a day"),
    "weekly": ("%Y-%m-%d", "a week, from Sunday"),  # Dagster's weekly partitions start on Sundays
    "monthly": ("%Y-%m-%d", "a month, from its first day"),
}
STATIC = "static"
TYPES = (*TIME_WINDOWS, STATIC)

@dataclass(frozen=True)
class PartitionPlan:
    """How an object's table is partitioned for Dagster: one column, time windows or static values."""

    type: str  # daily, hourly, weekly, monthly or static
    column: str  # the physical column the partition filters on
    logical_type: str | None = None  # of that column: date compares dates, else timestamps
    start: str | None = None  # the first window's start (ISO), for time windows
    end: str | None = None  # optional: no window starts at or after it
    values: tuple[Any, ...] = ()  # static partitions, as the contract writes them
    clause: str = ""  # the declaration's pointer

    @property
    def time_window(self) -> bool:
        return self.type in TIME_WINDOWS

    def keys_text(self) -> str:
        if self.time_window:
            def short(text: str | None) -> str | None:
                return text[:-9] if text and text.endswith(" 00:00:00") else text
            return f"{self.type} from {short(self.start)}" + (f" to {short(self.end)}" if self.end else "")
        return "static: " + ", ".join(str(v) for v in self.values)


@dataclass(frozen=True)
class Partition:
    """One partition to check: its key, and the rows it selects (a time window [start, end), or the
    rows whose column equals `value`). A partition of several dimensions (Dagster's multi-partitions:
    a day and a region) selects the rows every one of its `parts` selects; its column is the first's.
    A range of partitions (a single-run backfill) is one window from the first's start to the last's
    end, or the static `values` it spans."""

    key: str
    column: str
    logical_type: str | None = None
    start: dt.datetime | None = None  # naive UTC
    end: dt.datetime | None = None
    value: Any = None
    parts: tuple[Partition, ...] = ()  # one per dimension, of a multi-dimensional partition
    values: tuple[Any, ...] = ()  # the rows whose column is any of these: a range of static partitions

    @property
    def time_window(self) -> bool:
        return self.start is not None

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the partition filters on."""
        return tuple(p.column for p in self.parts) if self.parts else (self.column,)


def multi_partition(key: str, parts: tuple[Partition, ...]) -> Partition:
    """The partition of several dimensions, each a Partition of its own column."""
    return Partition(key, parts[0].column, parts[0].logical_type, parts=parts)


class PartitionKeyError(ValueError):
    """A key that names no partition of the object (its message says why)."""


def _parse_start(text: str) -> dt.datetime:
    """A declaration's start or end: an ISO date, or a date and time (naive UTC)."""
    value = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _add_months(moment: dt.datetime, months: int) -> dt.datetime:
    month = moment.month - 1 + months
    year, month = moment.year + month // 12, month % 12 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def window_end(kind: str, start: dt.datetime) -> dt.datetime:
    if kind == "hourly":
        return start + dt.timedelta(hours=1)
    if kind == "daily":
        return start + dt.timedelta(days=1)
    if kind == "weekly":
        return start + dt.timedelta(days=7)
    return _add_months(start, 1)


def _aligned(kind: str, moment: dt.datetime) -> bool:
    """A window starts where Dagster's do: on the hour, at midnight, on a Sunday, on the 1st."""
    if kind == "hourly":
        return moment.minute == moment.second == moment.microsecond == 0
    midnight = moment.time() == dt.time()
    if kind == "weekly":
        return midnight and moment.isoweekday() == 7
    if kind == "monthly":
        return midnight and moment.day == 1
    return midnight


def partition_for(plan: PartitionPlan, key: str) -> Partition:
    """The partition `key` names (spelt as Dagster spells it: `2026-06-01` daily, weekly and monthly,
    `2026-06-01-13:00` hourly, the value itself for static partitions); PartitionKeyError if none."""
    if not plan.time_window:
        for value in plan.values:
            if str(value) == key:
                return Partition(key, plan.column, plan.logical_type, value=value)
        raise PartitionKeyError(f"{key!r} is not one of the static partitions ({', '.join(map(str, plan.values))})")
    spelling, length = TIME_WINDOWS[plan.type]
    try:
        start = dt.datetime.strptime(key, spelling)
    except ValueError:
        example = dt.datetime(2026, 6, 1, 13).strftime(spelling)
        raise PartitionKeyError(f"{key!r} is not a {plan.type} partition key (write it as {example})") from None
    if not _aligned(plan.type, start):
        raise PartitionKeyError(f"{key!r} is not the start of a {plan.type} partition ({length})")
    first = _parse_start(str(plan.start))
    if start < first or (plan.end and start >= _parse_start(plan.end)):
        raise PartitionKeyError(f"{key!r} is outside the partitions ({plan.keys_text()})")
    return Partition(key, plan.column, plan.logical_type, start=start, end=window_end(plan.type, start))


def window_partition(key: str, column: str, logical_type: str | None, start: dt.datetime,
                     end: dt.datetime) -> Partition:
    """A time-window partition given by its bounds (from Dagster's context); aware bounds in UTC."""
    def naive(moment: dt.datetime) -> dt.datetime:
        return moment.astimezone(dt.timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment

    return Partition(key, column, logical_type, start=naive(start), end=naive(end))


def partition_columns(properties: Any) -> list[str]:
    """The physical columns ODCS marks `partitioned: true`, by `partitionKeyPosition` (unset last)."""
    marked = [(i, p) for i, p in enumerate(properties if isinstance(properties, list) else [])
              if isinstance(p, dict) and p.get("partitioned") is True]
    marked.sort(key=lambda item: (not isinstance(item[1].get("partitionKeyPosition"), int)
                                  or item[1]["partitionKeyPosition"] < 1,
                                  item[1].get("partitionKeyPosition") if isinstance(
                                      item[1].get("partitionKeyPosition"), int) else 0, item[0]))
    return [str(p.get("physicalName") or p.get("name")) for _, p in marked]


def read_declaration(value: Any, properties: Any) -> tuple[PartitionPlan | None, list[tuple[list, str]]]:
    """The declaration's plan, or the problems with it as (parts below the entry's value, message)."""
    problems: list[tuple[list, str]] = []
    if not isinstance(value, dict):
        return None, [([], f"{DECLARATION} must be a mapping with type ({', '.join(TYPES)}), column, and a start "
                           "or values")]
    kind = str(value.get("type") or "").strip().lower()
    if kind not in TYPES:
        return None, [(["type"], f"partition type {value.get('type')!r} is not one of {', '.join(TYPES)}")]
    props = [p for p in properties if isinstance(p, dict)] if isinstance(properties, list) else []
    columns = {str(p.get("physicalName") or p.get("name")): p for p in props}
    by_name = {str(p.get("name")): p for p in props}
    marked = partition_columns(props)
    column = value.get("column")
    if column is None:
        if not marked:
            return None, [([], "name the partition column (column: …), or mark its property `partitioned: true`")]
        column = marked[0]
    prop = columns.get(str(column)) or by_name.get(str(column))
    if prop is None:
        return None, [(["column"], f"partition column {column!r} is not a declared property of the object")]
    physical = str(prop.get("physicalName") or prop.get("name"))
    logical = str(prop.get("logicalType") or "").lower() or None
    unknown = sorted(set(value) - {"type", "column", "start", "end", "values"})
    if unknown:
        problems.append(([unknown[0]], f"unknown key {unknown[0]!r} (known: type, column, start, end, values)"))
    if kind == STATIC:
        values = value.get("values")
        if not isinstance(values, list) or not values or any(isinstance(v, (dict, list)) or v is None
                                                             for v in values):
            problems.append((["values"], "static partitions need `values`: a non-empty list of strings or numbers"))
        elif len({str(v) for v in values}) != len(values):
            problems.append((["values"], "static partition values must be distinct"))
        if problems:
            return None, problems
        return PartitionPlan(kind, physical, logical, values=tuple(values)), []
    if logical not in (None, "date", "timestamp", "string"):
        problems.append((["column"], f"{kind} partitions need a date or timestamp column; {physical} is "
                                     f"logicalType {logical}"))
    if kind == "hourly" and logical == "date":
        problems.append((["column"], f"hourly partitions need a timestamp column; {physical} is a date"))
    bounds = {}
    for key in ("start", "end"):
        text = value.get(key)
        if text is None:
            if key == "start":
                problems.append((["start"], f"{kind} partitions need a start (an ISO date, e.g. 2026-01-01)"))
            continue
        try:
            # YAML reads an unquoted 2026-01-01 as a date
            bounds[key] = _parse_start(text.isoformat() if isinstance(text, (dt.date, dt.datetime)) else str(text))
        except ValueError:
            problems.append(([key], f"{key} {text!r} is not an ISO date or timestamp"))
            continue
        if not _aligned(kind, bounds[key]):
            problems.append(([key], f"{key} {text!r} is not the start of a {kind} partition "
                                    f"({TIME_WINDOWS[kind][1]})"))
    if "start" in bounds and "end" in bounds and bounds["end"] <= bounds["start"]:
        problems.append((["end"], "end must come after start"))
    if problems:
        return None, problems
    text = {k: v.isoformat(sep=" ") for k, v in bounds.items()}
    return PartitionPlan(kind, physical, logical, start=text["start"], end=text.get("end")), []
