"""DuckDB's catalog and type names, as the `duckdb` row of engine/dialects.py reads them for the
schema check (the rest of DuckDB's row is in dialects.py): columns from `duckdb_columns()`, types as
DuckDB spells them, and a declared type resolved by DuckDB itself; and its statements' values sent
as literals (`literal_values`)."""

from __future__ import annotations

import functools
import math
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql import sqltypes

from dq_contracts.odcs.type_names import split_arguments

# read through `system.main`, which no warehouse file can shadow (REDEFINITIONS)
COLUMNS = sa.func.system.main.duckdb_columns().table_valued(
    "database_name", "schema_name", "table_name", "column_name", "data_type", "is_nullable", "column_index")


def catalog_columns(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    """The table's (or view's) columns as DuckDB names their types (`VARCHAR`, `DECIMAL(12,2)`,
    `BIGINT[]`, `UUID`); names match in any case, as DuckDB's do."""
    c = COLUMNS.c
    database = sa.bindparam(None, prefix[-2], type_=sa.String) if len(prefix) == 2 else sa.func.current_database()
    schema = sa.bindparam(None, prefix[-1], type_=sa.String) if prefix else sa.func.current_schema()
    rows = connection.execute(sa.select(c.column_name, c.data_type, c.is_nullable).where(
        sa.func.lower(c.database_name) == sa.func.lower(database), sa.func.lower(c.schema_name) == sa.func.lower(schema),
        sa.func.lower(c.table_name) == sa.func.lower(sa.bindparam(None, name, type_=sa.String)))
        .order_by(c.column_index)).fetchall()
    return [{"name": n, "type_text": t, "resolved": t, "nullable": bool(nullable)} for n, t, nullable in rows]


class TypeName(sa.types.UserDefinedType):
    """A type name judged by odcs.type_names (words, numbers, argument brackets only), written as is."""

    cache_ok = True

    def __init__(self, name: str) -> None:
        self.name = name

    def get_col_spec(self, **kw: Any) -> str:
        return self.name


def resolve_types(connection: sa.Connection, names: list[str]) -> dict[str, str | None]:
    """`typeof(CAST(NULL AS <name>))` of each name's type (its numeric arguments kept from the name:
    a bare DECIMAL is DECIMAL(18,3) there); all in one statement, each alone if one is unknown. DuckDB
    keeps its transaction through a binder error."""
    parts = {n: split_arguments(n) for n in names}

    def typeof(base: str) -> Any:
        return sa.func.typeof(sa.cast(sa.null(), TypeName(base)))

    try:
        row = connection.execute(sa.select(*(typeof(b).label(f"t{i}") for i, (b, _) in enumerate(parts.values())))).one()
        found = dict(zip(parts, row))
    except sa.exc.DBAPIError:
        found = {}
        for n, (base, _) in parts.items():
            try:
                found[n] = connection.execute(sa.select(typeof(base))).scalar()
            except sa.exc.DBAPIError:
                found[n] = None
    return {n: None if found[n] is None else split_arguments(found[n])[0] + args for n, (_, args) in parts.items()}


def literal_values(engine: sa.Engine) -> None:
    """The engine's statements carry their values as literals, so none binds a parameter: DuckDB's
    Python client imports pandas and numpy (0.3 s) at the first statement that does. Its dialect
    compiles every bound value as `literal_execute`, SQLAlchemy's own post-compile rendering: a
    statement is compiled once (and cached) and its values rendered at execution by their types'
    literal forms (quotes doubled), as values given at execution are too. Only this engine's
    dialect instance is changed, never DuckDB's dialect for the process."""
    engine.dialect.statement_compiler = _literal_compiler(type(engine.dialect).statement_compiler)


@functools.cache
def _literal_compiler(base: type) -> type:
    class LiteralValues(base):  # type: ignore[misc, valid-type]
        def visit_bindparam(self, bindparam: Any, literal_execute: bool = False, **kw: Any) -> str:
            return super().visit_bindparam(bindparam, literal_execute=True, **kw)

        def render_literal_value(self, value: Any, type_: Any) -> str:
            if isinstance(value, float) and not math.isfinite(value):  # repr `nan` would be a name
                return f"CAST('{value!r}' AS DOUBLE)"
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                type_ = sa.ARRAY(sa.String)  # a file server's paths, bound as one String: DuckDB's list
            elif type_._isnull and value is not None:  # a text's value given at execution: typed by itself
                type_ = sqltypes._resolve_value_to_type(value)
            return super().render_literal_value(value, type_)

    return LiteralValues
