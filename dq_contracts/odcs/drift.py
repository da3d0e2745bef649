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

from dq_contracts.odcs.draft import _round, object_lines, property_lines
from dq_contracts.odcs.visible import one_line


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


def classified_keys(document: Any, table: str) -> set[str]:
    """The columns the object naming `table` classifies (its own `classification`, or a field's or
    item's below it, as plans.ColumnPlan.classified judges): init reads and writes no value of them."""
    from dq_contracts.odcs.plans import CLASSIFIED

    def classifies(node: Any) -> bool:
        if isinstance(node, list):
            return any(map(classifies, node))
        return isinstance(node, dict) and (str(node.get("classification") or "").strip().lower() in CLASSIFIED
                                           or any(classifies(node.get(k)) for k in ("properties", "items")))

    obj = next((o for o in objects_of(document) if table_of(o) == table), None)
    properties = obj.get("properties") if obj else None
    return {key_of(p) for p in (properties if isinstance(properties, list) else []) if classifies(p)}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


class Edits(list):
    """The changes made to the document, each at its path in the document as written: ("set", path,
    value), ("delete", path), ("drop", path of a list item), ("append", path of a list, lines drawn,
    the indent of those lines' item dash): drift_lines.py makes them to the file's own lines."""

    def set(self, container: dict, key: str, value: Any, path: list) -> None:
        container[key] = value
        self.append(("set", [*path, key], value))

    def delete(self, container: dict, key: str, path: list) -> None:
        del container[key]
        self.append(("delete", [*path, key]))


def _widened(options: dict, column: Any, edits: Edits, path: list) -> None:
    """A bound the data passes, widened as init draws it: rounded outward, a date to its year."""
    low, high = column.minimum, column.maximum
    if column.family in ("integer", "number") and _number(low):
        if _number(options.get("minimum")) and low < options["minimum"]:
            edits.set(options, "minimum", _round(low, math.floor), path)
        if _number(options.get("maximum")) and high > options["maximum"]:
            edits.set(options, "maximum", _round(high, math.ceil), path)
    if column.family == "date" and isinstance(low, dt.date) and isinstance(options.get("minimum"), str):
        if low.isoformat() < options["minimum"]:
            edits.set(options, "minimum", dt.date(low.year, 1, 1).isoformat(), path)
    if column.family == "date" and isinstance(high, dt.date) and isinstance(options.get("maximum"), str):
        if high.isoformat() > options["maximum"]:
            edits.set(options, "maximum", high.isoformat(), path)
    if _number(options.get("maxLength")) and column.max_length is not None and column.max_length > options["maxLength"]:
        edits.set(options, "maxLength", int(column.max_length), path)


def _valid_values(prop: dict, column: Any, edits: Edits, path: list) -> None:
    """An invalidValues rule's text validValues, with the values the column has now."""
    rules = prop.get("quality")
    if not column.values or not isinstance(rules, list):
        return
    for k, rule in enumerate(rules):
        arguments = rule.get("arguments") if isinstance(rule, dict) else None
        valid = arguments.get("validValues") if isinstance(arguments, dict) else None
        if rule.get("metric") == "invalidValues" and isinstance(valid, list) and all(isinstance(v, str) for v in valid):
            new = sorted(set(column.values) - set(valid))
            if new:
                edits.set(arguments, "validValues", valid + new, [*path, "quality", k, "arguments"])


def _redrawn_property(prop: dict, column: Any, rows: int, verdict: tuple[bool, bool], compound: bool,
                      edits: Edits, path: list) -> dict:
    prop = copy.deepcopy(prop)
    physical_differs, logical_differs = verdict
    if prop.get("physicalType") and physical_differs:
        edits.set(prop, "physicalType", column.type_text, path)
    if prop.get("logicalType") and logical_differs and column.family:
        edits.set(prop, "logicalType", column.family, path)
    if not rows:
        return prop  # an empty table bears every clause
    unique = column.nulls == 0 and column.distinct == rows
    if prop.get("required") is True and column.nulls:
        edits.delete(prop, "required", path)
    if prop.get("unique") is True and column.distinct is not None and column.distinct < rows - column.nulls:
        edits.delete(prop, "unique", path)
    if prop.get("primaryKey") is True and (column.nulls or not (compound or unique or column.distinct is None)):
        edits.delete(prop, "primaryKey", path)
        if "primaryKeyPosition" in prop:
            edits.delete(prop, "primaryKeyPosition", path)
    if isinstance(prop.get("logicalTypeOptions"), dict):
        _widened(prop["logicalTypeOptions"], column, edits, [*path, "logicalTypeOptions"])
    _valid_values(prop, column, edits, path)
    return prop


def _loaded(lines: list[str], indent: int) -> Any:
    """Lines drawn as a list item whose dash is at `indent`, as data."""
    return yaml.safe_load("\n".join(line[indent:] for line in lines))[0]


def redrawn(document: dict, tables: list[Any], verdicts: dict[str, dict[str, tuple[bool, bool]]],
            object_type: str = "table", edits: Edits | None = None) -> dict:
    """The document as its tables are now, each change recorded in `edits`. `verdicts`: per table,
    per property key, whether the declared physicalType and logicalType differ from the column's
    (engine/draft.py)."""
    edits = Edits() if edits is None else edits
    document = copy.deepcopy(document)
    schema = document.get("schema")
    objects = list(enumerate(schema)) if isinstance(schema, list) else []
    for table in tables:
        found = next(((i, o) for i, o in objects if isinstance(o, dict) and table_of(o) == table.name), None)
        if found is None:  # a table the contract has no object for: drawn, as init draws it
            drawn = object_lines(table, object_type)
            document.setdefault("schema", []).append(_loaded(drawn, 2))
            edits.append(("append", ["schema"], drawn, 2))
            continue
        i, obj = found
        properties = obj.get("properties") if isinstance(obj.get("properties"), list) else []
        compound = sum(1 for p in properties if isinstance(p, dict) and p.get("primaryKey") is True) > 1
        kept, named = [], set()
        for j, prop in enumerate(properties):
            column = column_of(table.columns, key_of(prop)) if isinstance(prop, dict) else None
            if column is None:
                if isinstance(prop, dict):  # the column is gone
                    edits.append(("drop", ["schema", i, "properties", j]))
                else:
                    kept.append(prop)
                continue
            named.add(column.name)
            verdict = verdicts.get(table.name, {}).get(key_of(prop), (False, False))
            kept.append(_redrawn_property(prop, column, table.rows, verdict, compound, edits,
                                          ["schema", i, "properties", j]))
        for column in table.columns:
            if column.name not in named:
                drawn = property_lines(column, table)
                kept.append(_loaded(drawn, 6))
                edits.append(("append", ["schema", i, "properties"], drawn, 6))
        obj["properties"] = kept
    return document


def render(document: Any) -> list[str]:
    """The document's YAML as dq-contracts writes it: keys in the author's order."""
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    return text.splitlines(keepends=True)


def drift_diff(text: str, document: dict, tables: list[Any], verdicts: dict[str, dict[str, tuple[bool, bool]]],
               file: str, object_type: str = "table", is_json: bool = False) -> str:
    """The unified diff from the contract to the contract as its tables are now: of the file's own
    lines, each change made where it is written (drift_lines.py); where a change cannot be made so
    (JSON, a flow mapping, a key on its item's dash line), of both as dq-contracts writes them
    (comments left out). Empty when nothing changed."""
    from dq_contracts.odcs.drift_lines import edited

    edits = Edits()
    now = redrawn(document, tables, verdicts, object_type, edits)
    if not edits:
        return ""
    after = None if is_json else edited(text, edits, now)
    before, after = (text.splitlines(keepends=True), after.splitlines(keepends=True)) if after is not None \
        else (render(document), render(now))
    file = one_line(file)
    return "".join(map(_shown, difflib.unified_diff(before, after, fromfile=file, tofile=f"{file} (the tables now)")))


def _shown(line: str) -> str:
    r"""A line of the diff as it is printed: on one line (visible.one_line; a tab is kept, as in the
    file); ended by the file's own `\n` or `\r\n`, and any other line break (a `\r`
    alone, U+2028…: what `splitlines` ends a line at) written escaped, then `\n`, as is a last line
    with none: no text of the contract makes a line of its own, or writes over one."""
    end = "\r\n" if line.endswith("\r\n") else "\n" if line.endswith("\n") else ""
    return "\t".join(map(one_line, line[:len(line) - len(end)].split("\t"))) + (end or "\n")
