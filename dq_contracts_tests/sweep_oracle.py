"""The corpus sweep's oracle (test_sweep.py): what a check must observe and whether it passes,
computed in plain Python from the rows a warehouse holds, under the semantics the README decides
("Semantics decided here"). Nothing here calls the engine: a bug there cannot hide here too."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import math
import re
import sqlite3
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from dq_contracts.odcs.plans import CheckPlan, ObjectPlan

# --- the oracle's own semantics (README "Semantics decided here"), never the engine's functions ---

OPERATORS = {
    "mustBe": lambda x, v: x == v,
    "mustNotBe": lambda x, v: x != v,
    "mustBeGreaterThan": lambda x, v: x > v,
    "mustBeGreaterOrEqualTo": lambda x, v: x >= v,
    "mustBeLessThan": lambda x, v: x < v,
    "mustBeLessOrEqualTo": lambda x, v: x <= v,
    "mustBeBetween": lambda x, v: min(v) <= x <= max(v),  # inclusive, bounds sorted
    "mustNotBeBetween": lambda x, v: not min(v) <= x <= max(v),
}
SECONDS = {**dict.fromkeys(["ms"], 0.001), **dict.fromkeys(["s", "sec", "second", "seconds"], 1),
           **dict.fromkeys(["min", "minute", "minutes"], 60), **dict.fromkeys(["h", "hr", "hour", "hours"], 3600),
           **dict.fromkeys(["d", "day", "days"], 86400), **dict.fromkeys(["w", "week", "weeks"], 7 * 86400),
           **dict.fromkeys(["mo", "month", "months"], 30 * 86400), **dict.fromkeys(["y", "yr", "year", "years"], 365 * 86400)}
COUNTS = {"not_null", "null_values", "unique", "primary_key", "duplicate_values", "range", "length", "pattern",
          "accepted_values", "missing_values", "invalid_values", "multiple_of", "relationship", "schema"}
RULE_TYPES = {"library", "sql", "custom", "text"}
# what the oracle cannot predict, and why; the sweep asserts that nothing else goes unpredicted
UNPREDICTABLE_SCHEMA = ("a declared physicalType DuckDB would not build (or fill with the generated values): the "
                        "column is built from its logicalType, and whether the engine finds the two alike is the "
                        "schema check's own business (test_verdicts, test_engine)")
UNPREDICTABLE = {UNPREDICTABLE_SCHEMA}


def verdict(conditions: list[tuple[str, Any]], observed: Any) -> bool:
    """Every condition holds; a NULL or NaN observation never passes, nor a check with no condition."""
    if observed is None or (isinstance(observed, float) and math.isnan(observed)):
        return False
    return bool(conditions) and all(OPERATORS[op](observed, value) for op, value in conditions)


def percent(count: int, rows: int) -> float:
    return 0.0 if rows == 0 else 100.0 * count / rows


def resolve(document: Any, pointer: str) -> Any:
    node = document
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def conditions_of(document: dict, pointer: str, kind: str) -> tuple[list[tuple[str, Any]], bool]:
    """The clause's conditions and whether it counts in percent, read from the document itself."""
    node = resolve(document, pointer)
    if isinstance(node, dict) and any(k in OPERATORS for k in node):
        return [(k, node[k]) for k in OPERATORS if k in node], node.get("unit") == "percent"
    if kind == "freshness":  # an SLA latency: the newest value at most that old
        return [("mustBeLessOrEqualTo", float(node["value"]) * SECONDS[str(node.get("unit", "d")).lower()])], False
    is_rule = isinstance(node, dict) and ("metric" in node or "rule" in node or "query" in node or
                                          node.get("type") in RULE_TYPES)
    if is_rule and kind not in COUNTS:
        return [], False  # no operator and no count of offending rows: nothing to hold, never passes
    return [("mustBe", 0)], isinstance(node, dict) and node.get("unit") == "percent"


class Unpredicted(Exception):
    """The oracle cannot say; its message must be one of UNPREDICTABLE."""


@dataclass
class Expect:
    value: Any = None  # what the check must observe (None with error=True: it must fail with an error)
    error: bool = False
    approx: float = 1e-6  # a freshness age is known to the second the run took
    rel: float = 1e-9  # a SQL rule's arithmetic is the warehouse's (its DECIMAL keeps the column's scale)


def _tuples(rows: list[dict], columns: list[str]) -> list[tuple]:
    return [tuple(r.get(c) for c in columns) for r in rows]


def _extra_copies(keys: list[tuple]) -> int:
    complete = [k for k in keys if None not in k]
    return len(complete) - len(set(complete))


def outside(value: Any, bound: Any, lower: bool, strict: bool) -> bool:
    if isinstance(value, str):  # a mistyped column's text, read as the bound's type (ValueError: it cannot be)
        value = dt.time.fromisoformat(value) if re.fullmatch(r"\d\d:\d\d(:\d\d)?", str(bound)) else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return True  # NaN and ±Infinity are outside any bound (issue 25, item 2)
    if isinstance(value, dt.time):
        bound = dt.time.fromisoformat(str(bound).removesuffix("Z"))
    elif isinstance(value, dt.datetime):
        bound = dt.datetime.fromisoformat(str(bound).replace("Z", "+00:00"))
        bound = bound.astimezone(dt.timezone.utc).replace(tzinfo=None) if bound.tzinfo else bound
    elif isinstance(value, dt.date):
        bound = dt.date.fromisoformat(str(bound))
    else:
        value, bound = float(value), float(bound)
    if lower:
        return value <= bound if strict else value < bound
    return value >= bound if strict else value > bound


FORMATS = {  # the formats' meaning, by Python's own parsers where it has them
    "email": lambda s: re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", s) is not None,
    "uuid": lambda s: re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", s) is not None
    and uuid.UUID(s) is not None,
    "ipv4": lambda s: _parses(ipaddress.IPv4Address, s),
    "hostname": lambda s: re.fullmatch(r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
                                       r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?", s) is not None,
    "uri": lambda s: re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:\S+", s) is not None,
}


def _parses(parse: Any, text: str) -> bool:
    try:
        parse(text)
        return True
    except ValueError:
        return False


def _text(value: Any) -> str:
    return str(value)


def measure(check: CheckPlan, rows: list[dict], tables: dict[str, list[dict]]) -> Any:
    """What the check must count, from the rows as they were written."""
    p, kind = check.params, check.kind
    values = [r.get(p.get("column")) for r in rows] if p.get("column") else []
    present = [v for v in values if v is not None]
    if kind in ("not_null", "null_values"):
        return values.count(None)
    if kind in ("unique", "duplicate_values", "primary_key"):
        keys = _tuples(rows, p.get("columns") or [p["column"]])
        return _extra_copies(keys) + (sum(None in k for k in keys) if kind == "primary_key" else 0)
    if kind == "accepted_values":
        return sum(v not in [x for x in p["values"] if x is not None] for v in present)
    if kind == "missing_values":
        listed = [x for x in p["values"] if x is not None]
        return sum(v in listed for v in present) + (values.count(None) if None in p["values"] else 0)
    if kind == "invalid_values":
        valid = None if p.get("valid_values") is None else [x for x in p["valid_values"] if x is not None]
        return sum((valid is not None and v not in valid) or
                   (p.get("pattern") is not None and re.search(p["pattern"], _text(v)) is None) for v in present)
    if kind == "range":
        return sum(outside(v, p["bound"], p["lower"], p["strict"]) for v in present)
    if kind == "length":
        return sum(len(_text(v)) < p["bound"] if p["lower"] else len(_text(v)) > p["bound"] for v in present)
    if kind == "pattern":
        ok = FORMATS[p["format"]] if p.get("format") else (lambda s: re.search(p["pattern"], s) is not None)
        return sum(not ok(_text(v)) for v in present)
    if kind == "multiple_of":  # as DECIMAL(38, 10), where a float's last binary digits are gone
        divisor = Decimal(str(p["divisor"]))
        return sum(Decimal(float(v)).quantize(Decimal("1e-10")) % divisor != 0 for v in present)
    if kind == "row_count":
        return len(rows)
    if kind == "relationship":
        target = tables.get(p["target_table"].lower())
        if target is None or any(c not in (target[0] if target else {}) for c in p["target_columns"]):
            raise LookupError("the relationship's target table or column is not in the warehouse")
        pointed = set(_tuples(target, p["target_columns"]))
        return sum(None not in k and k not in pointed for k in _tuples(rows, p["columns"]))
    raise AssertionError(f"the oracle has no rule for kind {kind!r}")  # a new kind must get one here


# --- SQL rules: SQLite runs them on the same rows --------------------------------------------------

class _Aggregate:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def step(self, *args: Any) -> None:
        self.values.append(args)


class CountIf(_Aggregate):
    def finalize(self) -> int:
        return sum(bool(a[0]) for a in self.values)


class QuantileCont(_Aggregate):
    """DuckDB's quantile_cont: linear interpolation between the two nearest ranks."""

    def finalize(self) -> float | None:
        xs = sorted(float(a[0]) for a in self.values if a[0] is not None)
        if not xs:
            return None
        q = self.values[0][1]
        position = q * (len(xs) - 1)
        low = math.floor(position)
        high = min(low + 1, len(xs) - 1)
        return xs[low] + (xs[high] - xs[low]) * (position - low)


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (dict, list)):  # a STRUCT or LIST: SQLite holds it as JSON text
        return json.dumps(value, default=str)
    return value


def rule_answer(check: CheckPlan, obj: ObjectPlan, tables: dict[str, list[dict]]) -> Any:
    """The SQL rule's one value as SQLite computes it, or LookupError where SQLite cannot run it."""
    db = sqlite3.connect(":memory:")
    db.create_aggregate("count_if", 1, CountIf)
    db.create_aggregate("quantile_cont", 2, QuantileCont)
    for name, rows in tables.items():
        if rows is None:
            continue
        columns = list(rows[0]) if rows else []
        if not columns:
            continue
        quoted = ", ".join(f'"{c}"' for c in columns)
        db.execute(f'CREATE TABLE "{name}" ({quoted})')  # the test's own scratch database, its own names
        db.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(columns))})',
                       [[_sqlite_value(r[c]) for c in columns] for r in rows])
    table = obj.physical_name.split(".")[-1]
    query = re.sub(r"\{(object|table|model)\}", f'"{table}"', str(check.params["query"]))
    query = re.sub(r"\{(property|column|field)\}", f'"{check.params.get("column")}"', query)
    try:
        answer = db.execute(query).fetchall()
    except sqlite3.Error as exc:
        raise LookupError(f"SQLite cannot run it: {exc}") from exc
    if len(answer) != 1 or len(answer[0]) != 1:
        raise LookupError("not one row of one column")
    return answer[0][0]


def nested_path(document: dict, pointer: str) -> list[str]:
    """The names from a top-level property down to the nested one a clause sits in ([] if not nested);
    a LIST's items are the name "[]"."""
    parts = pointer.split("/")
    if "properties" not in parts:
        return []
    start = parts.index("properties")
    path, node = [], resolve(document, "/".join(parts[:start]))
    for i, part in enumerate(parts[start:], start):
        if part == "items":
            path.append("[]")
            node = node["items"]
        elif parts[i - 1] == "properties" and part.isdigit():
            node = node["properties"][int(part)]
            path.append(node.get("physicalName") or node["name"])
    return path if len(path) > 1 else []


def dig(row: dict, path: list[str]) -> list[Any]:
    """The values a nested path holds in one row (a LIST gives each item). A NULL struct's fields and
    a NULL array's items are not there (README: the struct's or array's own `required` judges it);
    a NULL item is there, a NULL value. A JSON column's value is read as its text: parsed here."""
    values = [row.get(path[0])]
    for name in path[1:]:
        values = [json.loads(v) if isinstance(v, str) else v for v in values]
        if name == "[]":
            values = [item for v in values if v is not None for item in v]
        else:
            values = [v.get(name) for v in values if v is not None]
    return values
