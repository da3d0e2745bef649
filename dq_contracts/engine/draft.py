"""What `dq-contracts init` measures of an existing table: its columns as the catalog spells their
types (the schema check's read, engine/dialects.py `catalog_columns`) and, in one aggregate scan per
table on the read-only, time-limited session `check` uses (engine/sessions.py): rows, and per column
its NULLs, exact distinct count, range (numbers, dates, timestamps) and longest text. Only a text
column with few distinct values whose name does not suggest personal data has its values read (one
bounded DISTINCT query): nothing else of the data leaves the warehouse. Files (a file server's
Files) are read as `check` reads them: their columns as DuckDB's reader types them, scanned by that
reader in the same one query. odcs/draft.py writes the document."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from dq_contracts.engine.connections import Connection, engine_for
from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine.schema_check import DESCRIBE_FILES, family_of
from dq_contracts.engine.sessions import DEFAULT_TIMEOUT_SECONDS, read_only
from dq_contracts.odcs.draft import FEW_VALUES, few_values, personal

# the families whose values compare (a range is measured) and whose distinct values can be counted
RANGED = ("integer", "number", "date", "timestamp")
COUNTED = ("integer", "number", "string", "boolean", "date", "timestamp", "time")


@dataclass
class ColumnMeasure:
    name: str
    type_text: str
    family: str | None
    nulls: int = 0
    distinct: int | None = None
    minimum: Any = None
    maximum: Any = None
    max_length: int | None = None
    values: list[str] | None = None  # a low-cardinality text column's values (never a personal one's)


@dataclass
class TableMeasure:
    name: str
    rows: int
    columns: list[ColumnMeasure] = field(default_factory=list)
    measured_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))


def _measures(column: ColumnMeasure, value: sa.ColumnElement, length) -> list[tuple[str, Any]]:
    """(what, SQL expression) of one column, as labels of the table's one scan."""
    out = [("count", sa.func.count(value))]
    if column.family in COUNTED:
        out.append(("distinct", sa.func.count(sa.distinct(value))))
    if column.family in RANGED:
        out += [("minimum", sa.func.min(value)), ("maximum", sa.func.max(value))]
    if column.family == "string":
        # as the maxLength check measures it: the value cast to text (a uuid has no length of its own)
        out.append(("max_length", sa.func.max(length(sa.cast(value, sa.String)))))
    return out


def _source(connection: sa.Connection, name: str, schema: str | None, files: Any) -> tuple[list[dict], Any]:
    """The table's columns as its catalog spells their types (files: as DuckDB's reader types them,
    as the schema check reads them), and the table to scan."""
    from dq_contracts.engine.sql import table_for

    if files is not None:
        path = files.path_of(name)
        try:
            rows = connection.execute(DESCRIBE_FILES[files.format], {"path": path}).fetchall()
        except sa.exc.DBAPIError as exc:
            raise LookupError(f"the files {files.pattern_of(name)} cannot be read as {files.format}: "
                              f"{str(exc.orig).splitlines()[0]}") from exc
        catalog = [{"name": column, "type_text": str(type_text), "resolved": str(type_text)}
                   for column, type_text, *_ in rows]
        return catalog, table_for(name, None, [str(c["name"]) for c in catalog], files=files)
    parts = name.split(".")
    *prefix, table_name = parts if len(parts) > 1 or not schema else [schema, name]
    catalog = dialect_of(connection.dialect.name).catalog_columns(connection, prefix, table_name)
    if not catalog:
        raise LookupError(f"table {name} does not exist (or has no columns)")
    return catalog, sa.table(table_name, *(sa.column(str(c["name"])) for c in catalog),
                             schema=".".join(prefix) or None)


def measure_table(connection: sa.Connection, name: str, schema: str | None, files: Any = None) -> TableMeasure:
    row = dialect_of(connection.dialect.name)
    catalog, table = _source(connection, name, schema, files)
    columns = [ColumnMeasure(str(c["name"]), str(c["type_text"]), family_of(str(c["type_text"]))) for c in catalog]
    labels: list[sa.ColumnElement] = [sa.func.count().label("rows")]
    for i, column in enumerate(columns):
        labels += [expr.label(f"c{i}_{what}") for what, expr in _measures(column, table.c[column.name], row.length)]
    found = connection.execute(sa.select(*labels).select_from(table)).mappings().one()
    measured = TableMeasure(name, int(found["rows"]), columns)
    for i, column in enumerate(columns):
        column.nulls = measured.rows - int(found[f"c{i}_count"])
        for what in ("distinct", "minimum", "maximum", "max_length"):
            if f"c{i}_{what}" in found:
                setattr(column, what, found[f"c{i}_{what}"])
        if column.family == "string" and few_values(column.distinct, measured.rows) and not personal(column.name):
            value = table.c[column.name]
            query = sa.select(value).where(value.isnot(None)).distinct().limit(FEW_VALUES + 1)
            column.values = sorted(str(v) for v in connection.execute(query).scalars())
    return measured


def url_connection(url: sa.URL, schema: str | None) -> Connection:
    """The connection of an operator's URL given on the command line."""
    return Connection(url, schema, tuple(s for s in (url.password,) if s))


def measure(connection: Connection, tables: list[str],
            timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> list[TableMeasure]:
    """Each table measured on one read-only, time-limited session of the connection's engine."""
    schema, files = connection.schema, connection.files
    engine = engine_for(connection)
    try:
        with read_only(engine, timeout_seconds) as connection:
            return [measure_table(connection, name, schema, files) for name in tables]
    finally:
        engine.dispose()
