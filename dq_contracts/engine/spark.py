"""Spark SQL, as a Spark Thrift server (PyHive's `hive` dialect) and a Databricks SQL warehouse
(`databricks-sqlalchemy`) speak it: the functions of their two rows in engine/dialects.py.

Spark has no read-only transaction or session: `begin` only bounds a session's time (the Thrift
server's `spark.sql.thriftServer.queryTimeout`, Databricks' `STATEMENT_TIMEOUT`; either cancels the
statement's job), so what keeps a session read-only is the operator's credentials. The checks' own
statements are SELECTs built here (names quoted, values bound); a contract's SQL rule runs only where
the operator declared the credentials read-only (the rows' `checks_unvouched` field).

Neither driver takes bound values to the server: PyHive renders them into the text, escaping `\\`
and `'` as Spark's parser reads them (hive.HiveParamEscaper).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

# Per session, what bounds a statement's time on each: the setting's name and how its value reads
TIMEOUT_SETTINGS: Mapping[str, tuple[str, Callable[[float], int]]] = {
    # the Thrift server cancels the statement's job group at this many seconds
    "hive": ("spark.sql.thriftServer.queryTimeout", lambda seconds: max(1, int(seconds))),
    # a Databricks SQL warehouse's own parameter, whole seconds (docs: STATEMENT_TIMEOUT)
    "databricks": ("STATEMENT_TIMEOUT", lambda seconds: max(1, int(seconds))),
}
# SET takes no bound value on Spark: the setting's name is ours and its value an integer we computed
_SET = {dialect: f"SET {name} = %d" for dialect, (name, _) in TIMEOUT_SETTINGS.items()}
UTC = sa.text("SET TIME ZONE 'UTC'")  # every timestamp literal and comparison in UTC, whatever the server's


def begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """A session with its statements bounded by the server's timeout and its time zone UTC. Not
    read-only: Spark has no such mode (see the module)."""
    connection = engine.connect()
    try:
        _, seconds = TIMEOUT_SETTINGS[engine.dialect.name]
        connection.exec_driver_sql(_SET[engine.dialect.name] % seconds(timeout_seconds))
        connection.execute(UTC)
    except BaseException:
        connection.close()
        raise
    return connection


def server_timeout(exc: BaseException) -> bool:
    """The server cancelled the statement at its timeout: the Thrift server's operation state."""
    return "TIMEDOUT" in str(getattr(exc, "orig", exc))


def _exact_types(dialect: Any) -> None:
    """PyHive casts to DECIMAL (Spark's DECIMAL(10,0): 0.3 becomes 0) and to TIMESTAMP for a DATE: the
    engine's casts keep their precision and type, as Spark spells them."""
    base = type(dialect.type_compiler_instance)

    class SparkTypes(base):  # the dialect's own, so every other spelling stays PyHive's
        def visit_NUMERIC(self, type_, **kw):
            if type_.precision is None:
                return "DECIMAL"
            return f"DECIMAL({type_.precision}, {type_.scale or 0})"

        visit_DECIMAL = visit_NUMERIC

        def visit_DATE(self, type_, **kw):
            return "DATE"

    dialect.type_compiler_instance = dialect.type_compiler = SparkTypes(dialect)


def prepare(engine: sa.Engine, connection: Any) -> None:
    if engine.dialect.name == "hive":
        _exact_types(engine.dialect)

    @sa.event.listens_for(engine, "handle_error")
    def shorten(context) -> BaseException | None:
        # PyHive's error is the whole Thrift response, a Java stack trace of some 20 kB: what a person
        # reads of it is the server's own message
        orig = context.original_exception
        status = getattr(orig.args[0], "status", None) if getattr(orig, "args", None) else None
        message = getattr(status, "errorMessage", None)
        if not message or context.sqlalchemy_exception is None:
            return None
        orig.args = (message,)
        return sa.exc.DBAPIError.instance(context.statement, context.parameters, orig,
                                          engine.dialect.loaded_dbapi.Error, dialect=engine.dialect)


# POSIX bracket classes, which PostgreSQL and DuckDB read inside `[...]` (the formats' patterns use
# them) and Java reads as the characters `:`, `s`, `p`…: Java's own spelling of each
POSIX_CLASSES: Mapping[str, str] = {f"[:{name}:]": rf"\p{{{java}}}" for name, java in (
    ("space", "Space"), ("alpha", "Alpha"), ("digit", "Digit"), ("alnum", "Alnum"), ("upper", "Upper"),
    ("lower", "Lower"), ("punct", "Punct"), ("xdigit", "XDigit"), ("blank", "Blank"), ("cntrl", "Cntrl"),
    ("print", "Print"), ("graph", "Graph"))}
_POSIX = re.compile("|".join(re.escape(k) for k in POSIX_CLASSES))


def regex(column: ColumnElement, pattern: str) -> ColumnElement:
    """RLIKE: Java's regex, true when the value contains a match (JSON Schema `pattern`)."""
    java = _POSIX.sub(lambda m: POSIX_CLASSES[m.group(0)], pattern)
    return column.op("RLIKE", is_comparison=True)(sa.bindparam(None, java, type_=sa.String))


def epoch(value: ColumnElement) -> ColumnElement:
    # Spark has no EXTRACT(EPOCH); a date or a timestamp without time zone cast to TIMESTAMP in the
    # session's UTC is its nominal epoch, as on PostgreSQL and DuckDB
    return sa.func.unix_micros(sa.cast(value, sa.DateTime), type_=sa.BigInteger) / 1000000.0


# Spark's type names (DESCRIBE … AS JSON) beside the shared spellings (Spark resolves no declared name here)
SPELLINGS: Mapping[str, str] = {"float": "real", "long": "bigint", "short": "smallint", "byte": "tinyint",
                                "timestamp_ltz": "timestamp"}


def _type_text(spark_type: Mapping[str, Any]) -> str:
    name = str(spark_type.get("name"))
    # nested types as Spark spells them in DDL, which the schema check reads inside (engine/nested.py)
    if name == "struct":
        return "struct<" + ",".join(f"{f.get('name')}:{_type_text(f.get('type') or {})}"
                                    for f in spark_type.get("fields") or []) + ">"
    if name == "array":
        return f"array<{_type_text(spark_type.get('element_type') or {})}>"
    if name == "map":
        return f"map<{_type_text(spark_type.get('key_type') or {})},{_type_text(spark_type.get('value_type') or {})}>"
    if "precision" in spark_type:
        return f"{name}({spark_type['precision']},{spark_type.get('scale', 0)})"
    return f"{name}({spark_type['length']})" if "length" in spark_type else name


def catalog_columns(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    """The table's columns as Spark's catalog says (`DESCRIBE TABLE EXTENDED … AS JSON`, Spark 4 and
    Databricks): name, type, nullable; [] when there is no such table."""
    quote = connection.dialect.identifier_preparer.quote_identifier
    table = ".".join(quote(part) for part in [*prefix, name])  # every part quoted: no value is in it
    try:
        text = connection.exec_driver_sql(f"DESCRIBE TABLE EXTENDED {table} AS JSON").scalar()
    except sa.exc.DBAPIError as exc:
        if "TABLE_OR_VIEW_NOT_FOUND" in str(exc.orig):
            return []
        raise
    found = []
    for column in json.loads(text).get("columns") or []:
        found.append({"name": column["name"], "type_text": _type_text(column.get("type") or {}),
                      "nullable": column.get("nullable")})
    return found
