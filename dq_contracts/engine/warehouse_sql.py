"""The functions of the warehouse rows in engine/dialects.py beyond PostgreSQL and DuckDB: Snowflake
(run in the tests through fakesnow, an emulator on DuckDB), and BigQuery, Redshift, Trino and SQL
Server (compiled with their SQLAlchemy dialects and parsed by sqlglot in the tests, not run here).
Each function says what its warehouse does that the portable SQL would get wrong."""

from __future__ import annotations

import math
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement


def _text(pattern: str) -> Any:
    return sa.bindparam(None, pattern, type_=sa.String)


# -- Snowflake ----------------------------------------------------------------------------------------

# Snowflake has no read-only session or transaction a client can ask for: the operator's role is
# what keeps a check from writing (dialects: `read_only=False`, so `_READ_ONLY` is required). The
# time limit is the session's own parameter, and timestamps compare in UTC, as on PostgreSQL.
SNOWFLAKE_SESSION = sa.text("ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = :seconds TIMEZONE = 'UTC'")


def snowflake_begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """A session with STATEMENT_TIMEOUT_IN_SECONDS set (whole seconds, at least 1)."""
    connection = engine.connect()
    try:
        connection.execute(SNOWFLAKE_SESSION, {"seconds": max(1, math.ceil(timeout_seconds))})
    except BaseException:
        connection.close()
        raise
    return connection


def snowflake_timeout(exc: BaseException) -> bool:
    """Snowflake cancelled the statement at its timeout (error 000630, "Statement reached its
    statement or warehouse timeout")."""
    return getattr(getattr(exc, "orig", None), "errno", None) == 630


def snowflake_regex(column: ColumnElement, pattern: str) -> ColumnElement:
    # REGEXP_LIKE and RLIKE match the whole value on Snowflake; a JSON Schema pattern is found
    # anywhere in it (unanchored): the position of its first match, 0 where there is none
    return sa.func.regexp_instr(column, _text(pattern)) > 0


def snowflake_epoch(value: ColumnElement) -> ColumnElement:
    # EPOCH_SECOND of a TIMESTAMP_NTZ is its nominal epoch (as if UTC), of a TIMESTAMP_TZ/LTZ the
    # instant, of a date its midnight UTC: as EXTRACT(EPOCH) is on PostgreSQL and DuckDB
    return sa.extract("epoch_second", value)


def snowflake_catalog(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    """The inspector's columns, with Snowflake's NUMBER(p, 0) read as the integer it holds (INTEGER
    is NUMBER(38, 0) there: the catalog says no other name). Names are exact, as the checks quote
    them: the dialect would read a lower-case name as an unquoted one (`orders` as ORDERS)."""
    exact = [sa.sql.quoted_name(part, quote=True) for part in (*prefix, name)]
    schema = exact[0] if len(prefix) == 1 else ".".join(prefix) or None
    try:
        columns = sa.inspect(connection).get_columns(exact[-1], schema=schema)
    except sa.exc.NoSuchTableError:
        return []
    for column in columns:
        kind = column["type"]
        if isinstance(kind, sa.Numeric) and not isinstance(kind, sa.Float) and kind.scale == 0:
            column["type"] = sa.BigInteger()
            if kind.precision in (None, 38):
                column["type_text"] = "INTEGER"
        column.setdefault("type_text", column["type"].compile(dialect=connection.dialect))
    return columns


SNOWFLAKE_SPELLINGS = {"number": "decimal", "timestamp_ntz": "timestamp", "datetime": "timestamp",
                       "timestamp_tz": "timestamp with time zone", "timestamp_ltz": "timestamp with time zone",
                       "float": "double", "float4": "double", "float8": "double", "real": "double"}


# -- BigQuery -----------------------------------------------------------------------------------------

def bigquery_regex(column: ColumnElement, pattern: str) -> ColumnElement:
    return sa.func.regexp_contains(column, _text(pattern), type_=sa.Boolean)  # unanchored, RE2


def bigquery_epoch(value: ColumnElement) -> ColumnElement:
    # a DATE or DATETIME cast to TIMESTAMP is read as UTC: the same nominal epoch as elsewhere
    return sa.func.unix_seconds(sa.cast(value, sa.TIMESTAMP), type_=sa.BigInteger)


BIGQUERY_SPELLINGS = {"int64": "bigint", "float64": "double", "bool": "boolean", "string": "varchar",
                      "bignumeric": "decimal", "numeric": "decimal", "datetime": "timestamp",
                      "timestamp": "timestamp with time zone"}


# -- Trino --------------------------------------------------------------------------------------------

def trino_options(connection: Any) -> dict[str, Any]:
    # the session's time zone is UTC, so a timestamp without one is read as UTC (trino_epoch)
    return {"connect_args": {"timezone": "UTC"}}


def trino_regex(column: ColumnElement, pattern: str) -> ColumnElement:
    return sa.func.regexp_like(column, _text(pattern), type_=sa.Boolean)  # unanchored on Trino


def trino_epoch(value: ColumnElement) -> ColumnElement:
    return sa.func.to_unixtime(sa.cast(value, sa.TIMESTAMP(timezone=True)), type_=sa.Float)


# -- SQL Server ---------------------------------------------------------------------------------------

def mssql_regex(column: ColumnElement, pattern: str) -> ColumnElement:
    # REGEXP_LIKE is SQL Server 2025's (and Azure SQL's): unanchored; an older server has no regex,
    # and the clause fails with its error. A predicate, not a value: typed Boolean, SQLAlchemy's
    # mssql dialect would write its negation `regexp_like(…) = 0`, which T-SQL refuses
    return sa.func.regexp_like(column, _text(pattern))


def mssql_length(column: ColumnElement) -> ColumnElement:
    # LEN leaves out trailing spaces: one character appended, and taken off again
    return sa.func.len(sa.func.concat(column, "x")) - 1


def mssql_epoch(value: ColumnElement) -> ColumnElement:
    return sa.func.datediff_big(sa.literal_column("second"), sa.literal("1970-01-01", sa.String), value,
                                type_=sa.BigInteger)


def mssql_binary_text(value: ColumnElement) -> ColumnElement:
    # a server's default collation compares case-blind (…_CI_AS): a binary one compares code points
    return sa.cast(value, sa.NVARCHAR()).collate("Latin1_General_100_BIN2")
