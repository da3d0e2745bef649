"""`dq-contracts init --against FILE`: the existing contract as its tables are now, and the unified
diff from one to the other (the schema check in the other direction). Pure: it reads the measures
of engine/draft.py as plain attributes, and the verdicts on each declared type the engine gave.

What is compared, per object whose `physicalName` (else `name`) is a measured table, and per
property whose `physicalName` (else `name`) is one of its columns (exactly, else ignoring case):
a column gone drops its property; a new column is added as `init` draws it; a declared
`physicalType` the column's type no longer is, or a `logicalType` its family no longer fits, is
replaced; `required`, `unique` and a one-column `primaryKey` the data no longer bears are dropped
(a compound key: only on a NULL); a `minimum`/`maximum` of a number or date and a `maxLength` the
data passes are widened (rounded outward, as drawn); a suggested `invalidValues` rule's
`validValues` gets the new values (read only where init reads them). Everything else the author
wrote is kept as written: descriptions, ids, servers, quality rules, SLAs, nested fields, and every
object that is not measured."""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import difflib
import math
from typing import Any, Iterable

import yaml

from dq_contracts.odcs.draft import _property, _round


def table_of(obj: dict) -> str:
    """The table an object names."""
    return str(obj.get("physicalName") or obj.get("name") or "")


def key_of(prop: dict) -> str:
    return str(prop.get("physicalName") or prop.get("name") or "")


def column_of(columns: Iterable[Any], key: str) -> Any:
    """The measured column a property names: exactly, else ignoring case."""
    columns = list(columns)
    return (next((c for c in columns if c.name == key), None)
            or next((c for c in columns if c.name.lower() == key.lower()), None))


def objects_of(document: Any) -> list[dict]:
    schema = document.get("schema") if isinstance(document, dict) else None
    return [o for o in schema if isinstance(o, dict)] if isinstance(schema, list) else []


def declared_types(document: Any, table: str) -> dict[str, tuple[Any, Any]]:
    """Each property's (physicalType, logicalType) of the object naming `table`, by the column it names:
    what the engine judges against the catalog (engine/draft.py)."""
    obj = next((o for o in objects_of(document) if table_of(o) == table), None)
    properties = obj.get("properties") if obj else None
    return {key_of(p): (p.get("physicalType"), p.get("logicalType"))
            for p in (properties if isinstance(properties, list) else []) if isinstance(p, dict)}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _widened(options: dict, column: Any) -> None:
    """A bound the data passes, widened as init draws it: rounded outward, a date to its year."""
    low, high = column.minimum, column.maximum
    if column.family in ("integer", "number") and _number(low):
        if _number(options.get("minimum")) and low < options["minimum"]:
            options["minimum"] = _round(low, math.floor)
        if _number(options.get("maximum")) and high > options["maximum"]:
            options["maximum"] = _round(high, math.ceil)
    if column.family == "date" and isinstance(low, dt.date) and isinstance(options.get("minimum"), str):
        if low.isoformat() < options["minimum"]:
            options["minimum"] = dt.date(low.year, 1, 1).isoformat()
    if column.family == "date" and isinstance(high, dt.date) and isinstance(options.get("maximum"), str):
        if high.isoformat() > options["maximum"]:
            options["maximum"] = high.isoformat()
    if _number(options.get("maxLength")) and column.max_length is not None and column.max_length > options["maxLength"]:
        options["maxLength"] = int(column.max_length)


def _valid_values(prop: dict, column: Any) -> None:
    """An invalidValues rule's text validValues, with the values the column has now."""
    if not column.values:
        return
    for rule in prop.get("quality") or []:
        arguments = rule.get("arguments") if isinstance(rule, dict) else None
        valid = arguments.get("validValues") if isinstance(arguments, dict) else None
        if rule.get("metric") == "invalidValues" and isinstance(valid, list) and all(isinstance(v, str) for v in valid):
            arguments["validValues"] = valid + sorted(set(column.values) - set(valid))


def _redrawn_property(prop: dict, column: Any, rows: int, verdict: tuple[bool, bool], compound: bool) -> dict:
    prop = copy.deepcopy(prop)
    physical_differs, logical_differs = verdict
    if prop.get("physicalType") and physical_differs:
        prop["physicalType"] = column.type_text
    if prop.get("logicalType") and logical_differs and column.family:
        prop["logicalType"] = column.family
    if not rows:
        return prop  # an empty table bears every clause
    unique = column.nulls == 0 and column.distinct == rows
    if prop.get("required") is True and column.nulls:
        del prop["required"]
    if prop.get("unique") is True and column.distinct is not None and column.distinct < rows - column.nulls:
        del prop["unique"]
    if prop.get("primaryKey") is True and (column.nulls or not (compound or unique or column.distinct is None)):
        del prop["primaryKey"]
        prop.pop("primaryKeyPosition", None)
    if isinstance(prop.get("logicalTypeOptions"), dict):
        _widened(prop["logicalTypeOptions"], column)
    _valid_values(prop, column)
    return prop


def _drawn_property(column: Any, table: Any) -> dict:
    """A new column's property, as init draws it (its suggestions' comments are not kept by the diff)."""
    text = "\n".join(line[6:] for line in _property(column, table.rows, table))
    return yaml.safe_load(text)[0]


def _drawn_object(table: Any, object_type: str) -> dict:
    name = table.name.split(".")[-1]
    return {"name": name, "physicalName": table.name, "physicalType": object_type, "logicalType": "object",
            "properties": [_drawn_property(c, table) for c in table.columns]}


def redrawn(document: dict, tables: list[Any], verdicts: dict[str, dict[str, tuple[bool, bool]]],
            object_type: str = "table") -> dict:
    """The document as its tables are now. `verdicts`: per table, per property key, whether the
    declared physicalType and logicalType differ from the column's (engine/draft.py)."""
    document = copy.deepcopy(document)
    objects = objects_of(document)
    for table in tables:
        obj = next((o for o in objects if table_of(o) == table.name), None)
        if obj is None:  # a table the contract has no object for: drawn, as init draws it
            document.setdefault("schema", []).append(_drawn_object(table, object_type))
            continue
        properties = [p for p in obj.get("properties") or [] if isinstance(p, dict)]
        compound = sum(1 for p in properties if p.get("primaryKey") is True) > 1
        kept, named = [], set()
        for prop in properties:
            column = column_of(table.columns, key_of(prop))
            if column is None:
                continue  # the column is gone
            named.add(column.name)
            verdict = verdicts.get(table.name, {}).get(key_of(prop), (False, False))
            kept.append(_redrawn_property(prop, column, table.rows, verdict, compound))
        kept += [_drawn_property(c, table) for c in table.columns if c.name not in named]
        obj["properties"] = kept
    return document


def render(document: Any) -> list[str]:
    """The document's YAML as both sides of the diff are written: keys in the author's order."""
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    return text.splitlines(keepends=True)


def drift_diff(document: dict, now: dict, file: str) -> str:
    """The unified diff from the contract (as written, comments left out) to the contract now."""
    return "".join(difflib.unified_diff(render(document), render(now), fromfile=file,
                                        tofile=f"{file} (the tables now)"))
