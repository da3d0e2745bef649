"""Nested properties where the data lives: a path (odcs/clauses/nested.py) as a column expression.

A struct field is `(column).field`, each step quoted as an identifier by the dialect's preparer
(never spliced); the dialect row says whether it can (`field_access`) and how an array is unnested
(`unnest`). A clause on an array's items is measured over the unnested items, as a scalar subquery
of the table's one scan: it counts items. A NULL or empty array holds no items; a NULL item is an
item whose value is NULL (the items' `required` counts it). A NULL struct's fields are not judged:
the struct's own `required` judges it.

The schema check's nested part is here too (`nested_differences`): a struct's fields, and an
array's item type, declared against the type the catalog spells.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from dq_contracts.engine.nested_json import JsonAccess
from dq_contracts.odcs.clauses.nested import ITEMS
from dq_contracts.odcs.plans import CheckPlan
from dq_contracts.odcs.type_names import TEXT_TYPES

# ODCS logicalType of a leaf -> the SQLAlchemy type its expression is given, so that values bind as it
LEAF_TYPES: dict[str, Callable[[], sa.types.TypeEngine]] = {
    "string": sa.String, "integer": sa.Integer, "number": sa.Numeric, "boolean": sa.Boolean,
    "date": sa.Date, "timestamp": sa.DateTime, "time": sa.Time}


class FieldOf(ColumnElement):
    """`(expression).field`: a struct's (DuckDB, Spark) or a composite value's (PostgreSQL) field."""

    inherit_cache = True
    _traverse_internals = [("value", InternalTraversal.dp_clauseelement),
                           ("field", InternalTraversal.dp_string)]

    def __init__(self, expression: ColumnElement, field: str, type_: sa.types.TypeEngine | None = None):
        self.value = expression
        self.field = field
        self.type = type_ if type_ is not None else sa.types.NullType()

    @property
    def _from_objects(self) -> list:  # a SELECT of a field reads its value's table
        return self.value._from_objects


@compiles(FieldOf)
def _field_of(element: FieldOf, compiler: Any, **kw: Any) -> str:
    return f"({compiler.process(element.value, **kw)}).{compiler.preparer.quote_identifier(element.field)}"


def field_of(expression: ColumnElement, field: str, type_: sa.types.TypeEngine | None = None) -> ColumnElement:
    """The `field_access` of the rows that address struct fields by a dot (DuckDB, PostgreSQL, Spark)."""
    return FieldOf(expression, field, type_)


def path_of(check: CheckPlan) -> list[str]:
    return list(check.params.get("path") or [])


def through_items(check: CheckPlan) -> bool:
    return ITEMS in path_of(check)


def subject(check: CheckPlan) -> str:
    """The checked value's name in a measure's key: two clauses on `address` and `address.city` differ."""
    return ".".join([str(check.params["column"]), *path_of(check)])


def leaf_type(check: CheckPlan) -> sa.types.TypeEngine | None:
    logical = (check.params.get("leaf_type") or [None])[0]
    factory = LEAF_TYPES.get(str(logical or "").lower())
    return factory() if factory else None


def leaf_is_text(check: CheckPlan) -> bool:
    logical, physical = (list(check.params.get("leaf_type") or []) + [None, None])[:2]
    if logical:
        return str(logical).lower() == "string"
    return any(w in str(physical or "").lower() for w in TEXT_TYPES)  # as a column's (type_names.is_text)


def _json(check: CheckPlan, row: Any) -> JsonAccess | None:
    """The dialect's JSON access when the nested property's column is declared a JSON type."""
    declared = str(check.params.get("column_type") or "").strip().lower()
    access = getattr(row, "json", None)
    return access if access is not None and declared in access.types else None


def _logical(check: CheckPlan) -> str:
    return str((check.params.get("leaf_type") or [None])[0] or "").lower()


def _json_leaf(check: CheckPlan, expression: ColumnElement, access: JsonAccess) -> ColumnElement:
    """The leaf's value: text, or cast to its declared type; a number or a boolean only from a JSON
    value of its type (an integer's with no fraction), else NULL, which `_json_malformed` tells apart."""
    typed = leaf_type(check)
    text = access.text(expression)
    logical = _logical(check)
    if logical in access.exact:
        # a CASE, not an AND: the engine may evaluate an AND's sides in any order, and the text of a
        # JSON string cast as a number is an error
        return sa.case((access.kind(expression).in_(access.kinds[logical]), access.exact[logical](text)))
    return sa.cast(text, typed) if typed is not None and not isinstance(typed, sa.String) else text


def _json_malformed(check: CheckPlan, expression: ColumnElement, access: JsonAccess) -> ColumnElement | None:
    """A JSON leaf that is there but not of its declared number or boolean type; None where any is."""
    if _logical(check) not in access.exact:
        return None
    return sa.and_(access.text(expression).is_not(None), _json_leaf(check, expression, access).is_(None))


# the items' table's column saying an item is malformed (items_view): not of its declared type, or the
# "array" was not an array
MALFORMED = "dq_malformed"


def malformed(check: CheckPlan, table: Any, row: Any) -> ColumnElement | None:
    """The condition a value is there but malformed (a JSON leaf not of its declared type; an item of
    an "array" that was not one); None where no value can be."""
    flags = [table.c[MALFORMED]] if MALFORMED in table.c else []
    access = _json(check, row)
    if access is not None and path_of(check):
        expression = value(check, table, row, leaf=False)
        leaf = _json_malformed(check, expression, access)
        flags += [] if leaf is None else [sa.and_(parents_present(check, table, row), leaf)]
    return sa.or_(*flags) if flags else None


class NotAddressable(Exception):
    """The dialect cannot address a nested value: the check is not measured, and says why."""


def _access(row: Any) -> Callable[..., ColumnElement]:
    """`row`: the dialect's engine/dialects.py row."""
    if row.field_access is None:
        raise NotAddressable(f"the {row.name or 'generic'} engine here addresses no struct field")
    return row.field_access


def value(check: CheckPlan, table: Any, row: Any, *, leaf: bool = True) -> ColumnElement:
    """The checked value of a struct path (no items step): `((t.address).geo).lat`; in a JSON
    column, `CAST(t.address -> 'geo' -> 'lat' #>> '{}' AS NUMERIC)` (`leaf`: read and cast)."""
    expression = table.c[check.params["column"]]
    steps = path_of(check)
    access = _json(check, row)
    if access is not None:
        for step in steps:
            expression = access.member(expression, step)
        return _json_leaf(check, expression, access) if leaf else expression
    for i, step in enumerate(steps):
        expression = _access(row)(expression, step, leaf_type(check) if i == len(steps) - 1 else None)
    return expression


def parents_present(check: CheckPlan, table: Any, row: Any) -> ColumnElement:
    """Every struct above the leaf is there: a NULL struct's fields are not judged. IS DISTINCT FROM
    NULL, because PostgreSQL's `row IS NOT NULL` is false for a composite with one NULL field."""
    expression = table.c[check.params["column"]]
    present = [expression.is_distinct_from(None)]
    access = _json(check, row)
    for step in path_of(check)[:-1]:
        expression = access.member(expression, step) if access is not None else _access(row)(expression, step)
        # a JSON null is not SQL's NULL: read as text, it is
        present.append((access.text(expression) if access is not None else expression).is_distinct_from(None))
    return sa.and_(*present)


def is_null(check: CheckPlan, table: Any, row: Any) -> ColumnElement:
    """The leaf is NULL (itself, not each of its fields: a composite leaf too) under structs that are there;
    a JSON leaf's text, so that a malformed member (`"abc"` declared an integer) is there, not NULL."""
    access = _json(check, row)
    leaf = access.text(value(check, table, row, leaf=False)) if access is not None else value(check, table, row)
    return sa.and_(parents_present(check, table, row), leaf.is_not_distinct_from(None))


def items_view(check: CheckPlan, checked: Any, row: Any) -> tuple[CheckPlan, Any]:
    """The check as it judges one item, and the object as a table of the array's items (one row
    each, in a column named as the array's): `SELECT unnest(t.tags) AS tags FROM t`."""
    steps = path_of(check)
    at = steps.index(ITEMS)
    column = str(check.params["column"])
    above = replace(check, params=replace(check.params, path=steps[:at] or None))
    access = _json(check, row)
    array = value(above, checked.table, row, leaf=False) if at else checked.table.c[column]
    unnest = access.elements if access is not None else row.unnest
    if unnest is None:
        raise NotAddressable(f"the {row.name or 'generic'} engine here unnests no array")
    # a JSON "array" that is not one is one item, malformed (JsonAccess.elements)
    wrapped = [] if access is None else [(access.kind(array) != access.array).label(MALFORMED)]
    items = sa.select(unnest(array).label(column), *wrapped).select_from(checked.table).subquery("items")
    rest = steps[at + 1:]
    inner = replace(check, params=replace(check.params, path=rest or None))
    if access is not None and not rest:  # each item a JSON scalar: the table of its values, cast
        bad = _json_malformed(check, items.c[column], access)
        items = sa.select(_json_leaf(check, items.c[column], access).label(column),
                          (items.c[MALFORMED] if bad is None else sa.or_(items.c[MALFORMED], bad)).label(MALFORMED)
                          ).subquery("item_values")
    return inner, replace(checked, table=items)


Row = Callable[[Any], Any]  # the checked object -> its dialect's row


def itemwise(measure: Callable[[CheckPlan, Any], tuple[str, ColumnElement]], row: Row
             ) -> Callable[[CheckPlan, Any], tuple[str, ColumnElement]]:
    """A measure of the table's scan that, on an array's items, counts over the unnested items as a
    scalar subquery of that scan."""

    def measured(check: CheckPlan, checked: Any) -> tuple[str, ColumnElement]:
        if not through_items(check):
            return measure(check, checked)
        inner, items = items_view(check, checked, row(checked))
        key, expression = measure(inner, items)
        return f"items:{subject(check)}:{key}", sa.select(expression).select_from(items.table).scalar_subquery()

    return measured


def itemwise_query(query: Callable[..., Any], row: Row) -> Callable[..., Any]:
    """A kind's samples or failing-rows query that, on an array's items, reads the unnested items."""

    def queried(check: CheckPlan, checked: Any, *args: Any) -> Any:
        if not through_items(check):
            return query(check, checked, *args)
        return query(*items_view(check, checked, row(checked)), *args)

    return queried


# --- the schema check's nested part ---------------------------------------------------------------

def _split_top(text: str, sep: str = ",") -> list[str]:
    """`a INTEGER, b STRUCT(c INT, d INT)` split at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "(<"
        depth -= ch in ")>"
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_type(text: str) -> tuple[str, Any]:
    """A nested type as the catalog spells it -> ("struct", {field: type}) | ("array", item) |
    ("scalar", text). DuckDB: `STRUCT(a INTEGER, "b c" VARCHAR)[]`, `INTEGER[]`; Spark:
    `struct<a:int,b:string>`, `array<string>`."""
    text = text.strip()
    lowered = text.lower()
    if text.endswith("[]"):
        return "array", parse_type(text[:-2])
    if re.match(r"^array\s*<", lowered) and text.endswith(">"):
        return "array", parse_type(text[text.index("<") + 1:-1])
    for opener, closer, sep in (("(", ")", " "), ("<", ">", ":")):
        if re.match(rf"^struct\s*\{opener}", lowered) and text.endswith(closer):
            fields = {}
            for part in _split_top(text[text.index(opener) + 1:-1]):
                if part.startswith('"'):
                    end = part.index('"', 1)
                    name, rest = part[1:end], part[end + 1:]
                else:
                    name, _, rest = part.partition(sep if sep == ":" else " ")
                fields[name.strip().strip("`").lower()] = parse_type(rest.strip().lstrip(":").strip())
            return "struct", fields
    return "scalar", text


# logicalType -> the words of a scalar type name that are of it (a nested field's declared type is
# judged on the catalog's own spelling: there is no SQLAlchemy type to reflect inside a struct)
SCALAR_FAMILIES = {
    "integer": ("int", "long", "short", "byte", "hugeint", "serial"),
    "number": ("int", "long", "short", "byte", "decimal", "numeric", "double", "float", "real"),
    "string": ("char", "text", "string", "uuid"),
    "boolean": ("bool",),
    "date": ("date", "timestamp"),
    "timestamp": ("timestamp", "date"),
    "time": ("time",),
}


def _logical_mismatch(logical: Any, observed: tuple[str, Any]) -> str | None:
    shape, inner = observed
    logical = str(logical or "").strip().lower()
    if not logical:
        return None
    if logical == "object":
        return None if shape == "struct" else "a struct"
    if logical == "array":
        return None if shape == "array" else "an array"
    if shape != "scalar":
        return f"of logicalType {logical}"
    words = SCALAR_FAMILIES.get(logical)
    if words is None:
        return None
    name = str(inner).lower()
    if logical == "time" and "timestamp" in name:
        return "of logicalType time"
    if logical == "integer" and re.fullmatch(r"(decimal|numeric)\s*\(\s*\d+\s*,\s*0\s*\)", name):
        return None  # a decimal of scale 0 holds integers alone, as a column's (schema_check.whole_decimal)
    return None if any(w in name for w in words) else f"of logicalType {logical}"


# column types that hold nested values with no declared inner types: nothing to compare inside
UNTYPED_NESTED = ("json", "jsonb", "variant", "object", "map", "super")


# (connection, the type as the catalog spells it, a declared physicalType) -> whether they are one type
# (schema_check.is_declared_type: the engine's own names where it resolves them, else the spelling)
IsDeclared = Callable[[sa.Connection, str, str], bool]


def nested_differences(column: dict[str, Any], found: dict[str, Any], checked: Any, connection: sa.Connection,
                       parts: tuple[list[str], str], is_declared: IsDeclared | None = None
                       ) -> tuple[list[str], list[str]]:
    """(differences, notes) of a declared nested column (`properties` of an object, `items` of an
    array, at any depth) against the type the engine's catalog spells for it: each difference a
    sentence naming the path (`address.city is not of logicalType integer`); a note where the
    column's type declares no inner types (JSONB), so nothing inside is compared. `parts`: the
    table's (schema prefix, name) as the catalog knows it."""
    declared = column.get("nested")
    if not declared:
        return [], []
    observed = observed_shape(checked, connection, str(found["name"]), found, parts)
    if observed is None:
        return [], [f"{column['name']}: its nested type is not read in the {checked.dialect} catalog here"]
    if observed[0] == "scalar" and any(w in str(observed[1]).lower() for w in UNTYPED_NESTED):
        return [], [f"{column['name']}: {observed[1]} holds no declared inner types, so its nested schema is not "
                    "compared (its values are still checked through paths)"]
    notes: list[str] = []
    compared = _compare(declared, observed, str(declared.get("name") or column["name"]),
                        lambda observed_text, physical: is_declared is None or is_declared(connection, observed_text,
                                                                                          physical), notes, top=True)
    return compared, notes


def observed_shape(checked: Any, connection: sa.Connection, name: str, found: dict[str, Any],
                   parts: tuple[list[str], str]) -> tuple | None:
    """The column's nested type: from the type text the catalog read gave (DuckDB, files, lakes, Spark),
    else from the engine's own catalog (a PostgreSQL composite's fields in pg_attribute)."""
    reader = CATALOG_SHAPES.get(checked.dialect)
    if reader is not None and checked.files is None:
        return reader(connection, parts, name)
    text = found.get("type_text")
    return parse_type(str(text)) if text else None


_PG_CLASS = sa.table("pg_class", sa.column("oid"), sa.column("relname"), sa.column("relnamespace"),
                     schema="pg_catalog")
_PG_NAMESPACE = sa.table("pg_namespace", sa.column("oid"), sa.column("nspname"), schema="pg_catalog")
_PG_ATTRIBUTE = sa.table("pg_attribute", sa.column("attrelid"), sa.column("attname"), sa.column("atttypid"),
                         sa.column("attnum"), sa.column("attisdropped"), schema="pg_catalog")
_PG_TYPE = sa.table("pg_type", sa.column("oid"), sa.column("typtype"), sa.column("typrelid"),
                    sa.column("typelem"), sa.column("typcategory"), schema="pg_catalog")
_PG_DEPTH = 16  # composites may nest; a type cannot hold itself, but stop anyway


def _postgres_shape(connection: sa.Connection, parts: tuple[list[str], str], name: str) -> tuple | None:
    """A composite type's fields from pg_attribute of its relation, an array's from its element type."""
    prefix, table = parts
    cls, ns, att = _PG_CLASS.c, _PG_NAMESPACE.c, _PG_ATTRIBUTE.c
    schema = sa.bindparam(None, prefix[-1], type_=sa.String) if prefix else sa.func.current_schema()
    oid = connection.execute(
        sa.select(att.atttypid).select_from(_PG_ATTRIBUTE.join(_PG_CLASS, att.attrelid == cls.oid)
                                            .join(_PG_NAMESPACE, cls.relnamespace == ns.oid))
        .where(cls.relname == table, ns.nspname == schema, att.attname == name, att.attnum > 0,
               sa.not_(att.attisdropped))).scalar()
    return None if oid is None else _pg_type_shape(connection, oid, 0)


def _pg_type_shape(connection: sa.Connection, oid: Any, depth: int) -> tuple:
    t, att = _PG_TYPE.c, _PG_ATTRIBUTE.c
    row = connection.execute(sa.select(t.typtype, t.typrelid, t.typelem, t.typcategory,
                                       sa.func.format_type(t.oid, None).label("spelled")).where(t.oid == oid)).one()
    if depth >= _PG_DEPTH:
        return "scalar", row.spelled
    if row.typcategory == "A" and row.typelem:
        return "array", _pg_type_shape(connection, row.typelem, depth + 1)
    if row.typtype == "c":
        fields = connection.execute(sa.select(att.attname, att.atttypid).where(
            att.attrelid == row.typrelid, att.attnum > 0, sa.not_(att.attisdropped)).order_by(att.attnum)).all()
        return "struct", {str(f.attname).lower(): _pg_type_shape(connection, f.atttypid, depth + 1) for f in fields}
    return "scalar", row.spelled


# where the schema check's catalog read does not spell a column's nested type (a PostgreSQL composite is
# named, its fields are in pg_attribute); DuckDB's duckdb_columns() spells STRUCT(…)[] whole
CATALOG_SHAPES: dict[str, Callable[[sa.Connection, tuple[list[str], str], str], tuple | None]] = {
    "postgresql": _postgres_shape}


def _compare(prop: dict[str, Any], observed: tuple[str, Any], label: str, same: Callable[[str, str], bool],
             notes: list[str], top: bool = False) -> list[str]:
    """The differences of a declared nested property from its observed type; `same(observed, physical)`
    judges a field's declared physicalType against a scalar it finds, and a physicalType of a struct or
    an array (whose spelling differs per engine) is noted as not compared."""
    found: list[str] = []
    shape, inner = observed
    wrong = _logical_mismatch(prop.get("logicalType"), observed)
    if wrong:
        return [f"{label}: is not {wrong} ({_spelled(observed)})"]  # named as a column's mismatch is
    physical = None if top else prop.get("physicalType")  # the column's own: compared as a column's
    if physical and shape == "scalar" and not same(str(inner), str(physical)):
        return [f"{label}: declared {physical}, found {inner}"]
    if physical and shape != "scalar":
        notes.append(f"{label}: physicalType {physical} of a {shape} is not compared (its logicalType and "
                     "fields are)")
    if isinstance(prop.get("properties"), list) and shape == "struct":
        for field in prop["properties"]:
            if not isinstance(field, dict):
                continue
            name = str(field.get("physicalName") or field.get("name"))
            here = f"{label}.{field.get('name')}"
            if name.lower() not in inner:
                found.append(f"{here}: missing")
            else:
                found += _compare(field, inner[name.lower()], here, same, notes)
    if isinstance(prop.get("items"), dict) and shape == "array":
        found += _compare(prop["items"], inner, f"{label}[]", same, notes)
    return found


def _spelled(observed: tuple[str, Any]) -> str:
    shape, inner = observed
    if shape == "array":
        return f"{_spelled(inner)}[]"
    if shape == "struct":
        return "struct(" + ", ".join(f"{k} {_spelled(v)}" for k, v in inner.items()) + ")"
    return str(inner)
