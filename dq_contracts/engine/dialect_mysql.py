"""MySQL and MariaDB, as the `mysql` row of engine/dialects.py reaches them (PyMySQL).

What makes a session read-only here is the operator's SELECT-only user: MySQL's `READ ONLY`
transaction is the session's own setting, which the session could undo (`SET SESSION TRANSACTION
READ WRITE`, then a new transaction), so the row is refused unless the operator declares the
credentials read-only (`_READ_ONLY=true`). A check session still starts `READ ONLY`, so a write that
got past the SQL rules' parser is refused twice. What bounds a statement is the server's own timeout:
`max_statement_time` (seconds) on MariaDB, `max_execution_time` (ms, SELECTs only) on MySQL.

A stored function named like a built-in (`length`) never answers for it: MySQL resolves a bare name
to the built-in, and a stored one only by its schema-qualified name.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

# Pinned on every new connection (PyMySQL's init_command, before SQLAlchemy reads the server's
# settings): what the checks' SQL means does not depend on the server's sql_mode (ANSI_QUOTES would
# make a double-quoted string a name, PIPES_AS_CONCAT `||` a concatenation, NO_BACKSLASH_ESCAPES
# change literals); timestamps are read and compared in UTC, whatever the server's time zone.
INIT_COMMAND = "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'"

# the server's timeout, by server: (the statement setting it, the value's unit in seconds)
TIMEOUTS = {True: ("SET SESSION max_statement_time = :value", 1),  # MariaDB: seconds, any statement
            False: ("SET SESSION max_execution_time = :value", 1000)}  # MySQL: milliseconds, SELECTs

# the error codes of a statement stopped at that timeout: MariaDB's ER_STATEMENT_TIMEOUT, MySQL's
# ER_QUERY_TIMEOUT (MySQL 5.7: ER_QUERY_INTERRUPTED is also a KILL QUERY's, so not counted)
TIMEOUT_ERRORS = {1969, 3024}


def options(connection: Any) -> dict[str, Any]:
    return {"connect_args": {"connect_timeout": 10, "charset": "utf8mb4", "init_command": INIT_COMMAND}}


def begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """The timeout, the session's next transactions read-only, and one started `READ ONLY` now; the
    session's ROLLBACK ends it (sessions.Session)."""
    connection = engine.connect()
    try:
        statement, unit = TIMEOUTS[bool(getattr(connection.dialect, "is_mariadb", False))]
        value = timeout_seconds * unit if unit == 1 else int(timeout_seconds * unit)
        connection.execute(sa.text(statement).bindparams(value=value))
        connection.exec_driver_sql("SET SESSION TRANSACTION READ ONLY")
        connection.exec_driver_sql("START TRANSACTION READ ONLY")
    except BaseException:
        connection.close()
        raise
    return connection


def timed_out(exc: BaseException) -> bool:
    orig = getattr(exc, "orig", None)
    args = getattr(orig, "args", ())
    return bool(args) and args[0] in TIMEOUT_ERRORS


def qualifier(prefix: list[str], preparer: Any, physical_name: str) -> Any:
    """`database.table`: MySQL has no level above the database, so a name of 3 parts is refused."""
    if len(prefix) > 1:
        raise ValueError(f"{physical_name}: MySQL names a table `database`.`table`; a name of {len(prefix) + 1} "
                         "parts names nothing there")
    return sa.sql.quoted_name(prefix[0], quote=True) if prefix else None


def regex(column: ColumnElement, pattern: str) -> ColumnElement:
    # `column` is binary_text's bytes, read again as utf8mb4 text under its binary collation: REGEXP
    # then matches characters (not bytes) and counts case, as JSON Schema does (under the default
    # collations it is case-blind)
    from sqlalchemy.dialects import mysql  # imported when MySQL is in use, not by every run

    text = sa.cast(column, mysql.CHAR(charset="utf8mb4")).collate("utf8mb4_bin")
    return text.op("REGEXP", is_comparison=True)(sa.bindparam(None, pattern, type_=sa.String))


def length(column: ColumnElement) -> ColumnElement:
    return sa.func.char_length(column)  # LENGTH counts bytes


def epoch(value: ColumnElement) -> ColumnElement:
    # the nominal epoch of a DATETIME (TIMESTAMPs are read in the session's UTC); not UNIX_TIMESTAMP,
    # which is NULL before 1970 and reads a DATETIME in the session's time zone
    return sa.func.timestampdiff(sa.literal_column("MICROSECOND"), sa.literal("1970-01-01 00:00:00"), value) / 1000000


def binary_text(value: ColumnElement) -> ColumnElement:
    """The value's UTF-8 bytes, whatever the column's character set and collation: compared byte by
    byte, case and trailing spaces counting (every text collation of MariaDB 10 but the `nopad` ones
    pads, so `'a' = 'a '`; a BINARY compares without padding). Typed as text, so values compared
    with it are bound as text (the server compares them as bytes); results read them back as text."""
    from sqlalchemy.dialects import mysql

    return sa.type_coerce(sa.cast(sa.cast(value, mysql.CHAR(charset="utf8mb4")), mysql.BINARY()), sa.String)


_COLUMNS = sa.table("COLUMNS", sa.column("TABLE_SCHEMA"), sa.column("TABLE_NAME"), sa.column("COLUMN_NAME"),
                    sa.column("COLUMN_TYPE"), sa.column("IS_NULLABLE"), sa.column("ORDINAL_POSITION"),
                    schema="information_schema")


def catalog_columns(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    """The table's columns as the server names their types (information_schema's COLUMN_TYPE:
    `int(11)`, `varchar(8)`, `decimal(12,2)`, `uuid`); [] when there is no table. MySQL's BOOLEAN is
    stored as TINYINT(1), and its catalog says so: it is read as the boolean it was declared."""
    c = _COLUMNS.c
    schema = sa.bindparam(None, prefix[0], type_=sa.String) if prefix else sa.func.database()
    rows = connection.execute(sa.select(c.COLUMN_NAME, c.COLUMN_TYPE, c.IS_NULLABLE).where(
        c.TABLE_SCHEMA == schema, c.TABLE_NAME == sa.bindparam(None, name, type_=sa.String))
        .order_by(c.ORDINAL_POSITION)).fetchall()
    return [{"name": column, "type_text": "boolean" if str(shown).lower() == "tinyint(1)" else str(shown),
             "nullable": nullable == "YES"} for column, shown, nullable in rows]


# How MySQL spells types (its catalog, or a person used to it), beside the shared spellings: its
# FLOAT has 4 bytes
TYPE_SPELLINGS = {"datetime": "timestamp", "float": "real", "mediumint": "integer", "longtext": "varchar", "mediumtext": "varchar",
                  "tinytext": "varchar"}
