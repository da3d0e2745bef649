"""How the engine reaches each SQL dialect: one row per dialect (`DIALECTS`, keyed by SQLAlchemy's
dialect name, `url.get_backend_name()`), and `GENERIC` for any other.

A row says how a connection is built and opened, how a session is made read-only and time-limited
(`begin`, `interrupt`, `server_timeout`), how a 2- or 3-part table name is quoted, the regex, length
and epoch functions the check kinds call, how text is compared byte by byte (`binary_text`), the
catalog query of the schema check, how its type names are normalised, and how many measures one
statement holds. What ODCS says about the server type (its
names, sqlglot dialect, default schema, case) is its row in odcs/servers.py.

A dialect whose row has no `begin` cannot make a session read-only and time-limited here: the engine
refuses it (connections.connection_for, sessions._begin) unless the operator declares that its
credentials can only read (`DQ_CONTRACTS_<SERVER>_READ_ONLY=true`).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.engine import spark
from dq_contracts.odcs.declaration import env_prefix


# -- quoting, functions, catalog: what every dialect shares unless its row says otherwise ------------

def qualifier(prefix: list[str], preparer: Any, physical_name: str) -> Any:
    """The schema part of a table's name, each part quoted on its own: SQLAlchemy quotes a schema as
    one identifier, so `db.schema` is joined here from parts each quoted by the dialect's preparer."""
    if not prefix:
        return None
    if len(prefix) == 1:
        return sa.sql.quoted_name(prefix[0], quote=True)
    if preparer is None:
        raise ValueError(f"{physical_name}: a name of {len(prefix) + 1} parts needs the dialect's quoting")
    return sa.sql.quoted_name(".".join(preparer.quote_identifier(p) for p in prefix), quote=False)


def _regex(column: ColumnElement, pattern: str) -> ColumnElement:
    """True when the value contains a match (JSON Schema `pattern`: not anchored); SQLAlchemy's own
    operator for the dialect, where it has one."""
    return column.regexp_match(pattern)


def _length(column: ColumnElement) -> ColumnElement:
    return sa.func.length(column)


def _epoch(value: ColumnElement) -> ColumnElement:
    # EXTRACT(EPOCH) of a timestamp without time zone is its nominal epoch (as if UTC), of a date its
    # midnight UTC, of a timestamp with time zone the instant itself: on PostgreSQL and DuckDB alike
    return sa.extract("epoch", value)


def _binary_text(text_type: type, collation: str) -> Callable[[ColumnElement], ColumnElement]:
    """Text compared byte by byte, whatever the warehouse's owner made the column compare as: a
    collation (DuckDB's NOCASE, PostgreSQL's nondeterministic ICU ones, a domain carrying one) or a
    type (citext groups and joins case-blind, an enum compares labels as its own). The value is cast
    to plain text and put under the dialect's binary collation; DuckDB keeps a column's collation
    through a cast, so the COLLATE is what drops it there."""
    return lambda value: sa.cast(value, text_type).collate(collation)


def _catalog_columns(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    """The table's columns as SQLAlchemy's inspector reads the catalog; [] when there is no table."""
    try:
        return sa.inspect(connection).get_columns(name, schema=".".join(prefix) or None)
    except sa.exc.NoSuchTableError:
        return []


def no_server_timeout(exc: BaseException) -> bool:
    """A dialect whose server has no statement timeout of ours: only a timer (`interrupt`) stops one."""
    return False


class MissingTable(Exception):
    """The table is not in the catalog."""


class RedefinitionError(ValueError):
    """A warehouse file defines functions or types (a PostgreSQL database, casts) that would change
    what the checks mean."""


# Type names spelt differently by warehouses and by people, to one spelling each
TYPE_SPELLINGS: Mapping[str, str] = {
    "int4": "integer", "int": "integer", "int32": "integer", "int8": "bigint", "int64": "bigint", "long": "bigint",
    "int2": "smallint", "float8": "double", "double precision": "double", "float4": "real", "float": "double",
    "numeric": "decimal", "bool": "boolean", "character varying": "varchar", "string": "varchar", "text": "varchar",
    "timestamp without time zone": "timestamp", "timestamptz": "timestamp with time zone",
    "timestamp with time zone": "timestamp with time zone", "timetz": "time with time zone",
    "time without time zone": "time", "character": "char", "bpchar": "char", "varbit": "bit varying",
    "bool_": "boolean",
}

DEFAULT_MEASURES_PER_STATEMENT = 2000


# -- PostgreSQL ---------------------------------------------------------------------------------------

def _postgres_settings(timeout_seconds: float) -> sa.TextClause:
    # one statement, local to the transaction: the timeout; every timestamp literal and comparison in
    # UTC whatever the role's or database's time zone; and names resolved in pg_catalog alone, since
    # PostgreSQL weighs a function of every schema on the search path equally and an exact type match
    # wins (a `public.length(varchar)` would answer our `length(code)`). Tables are always named with
    # their schema (`names_need_schema`). set_config is refused in contracts' SQL.
    return sa.text("SELECT set_config('statement_timeout', :ms, true), set_config('TimeZone', 'UTC', true), "
                   "set_config('search_path', 'pg_catalog', true)").bindparams(ms=str(int(timeout_seconds * 1000)))


def _postgres_begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """`BEGIN READ ONLY` and one settings statement."""
    connection = engine.execution_options(postgresql_readonly=True).connect()
    try:
        connection.execute(_postgres_settings(timeout_seconds))
    except BaseException:
        connection.close()
        raise
    return connection


def _postgres_timeout(exc: BaseException) -> bool:
    """PostgreSQL cancelled the statement at its statement_timeout (SQLSTATE 57014, and not an
    administrator's cancel)."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "pgcode", None) == "57014" and "statement timeout" in str(orig)


def _postgres_options(connection: Any) -> dict[str, Any]:
    # no hstore: a catalog query per new connection, for a type no check reads
    return {"connect_args": {"connect_timeout": 10}, "use_native_hstore": False}


def _postgres_catalog(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    if len(prefix) == 2:  # database.schema.table: PostgreSQL's catalog holds its own database only
        current = connection.execute(sa.select(sa.func.current_database())).scalar()
        if prefix[0] != current:
            raise MissingTable(f"table {'.'.join([*prefix, name])} is in database {prefix[0]!r}, not in "
                               f"{current!r}, the database this server connects to")
        prefix = prefix[1:]
    return _catalog_columns(connection, prefix, name)


def _postgres_regex(column: ColumnElement, pattern: str) -> ColumnElement:
    # a comparison: its type stays boolean when the column is an expression (a COLLATE) of no type
    return column.op("~", is_comparison=True)(sa.bindparam(None, pattern, type_=sa.String))


def _postgres_prepare(engine: sa.Engine, connection: Any) -> None:
    @sa.event.listens_for(engine, "connect")
    def refuse(dbapi_connection, _record) -> None:
        refuse_casts(dbapi_connection, connection.url.database)


# On PostgreSQL, the schema's owner cannot reach pg_catalog (check sessions resolve names there
# alone), but a cast is found by its source and target types, never by the search path: the owner
# of a type (an enum, a composite) may write `CREATE CAST (their_type AS text) WITH FUNCTION f AS
# IMPLICIT`, and f then answers for every comparison of that type's values as text or as another
# type. A cast with a function that no extension installed is refused; casts to or from a domain
# are never used, and WITH INOUT casts call the types' own input and output. Every name and
# operator is qualified with pg_catalog: the connection's search path is not yet the session's.
USER_CASTS = """
SELECT pg_catalog.format_type(c.castsource, NULL), pg_catalog.format_type(c.casttarget, NULL),
       pg_catalog.format('%s', c.castfunc::pg_catalog.regprocedure)
FROM pg_catalog.pg_cast AS c
JOIN pg_catalog.pg_type AS s ON s.oid OPERATOR(pg_catalog.=) c.castsource
JOIN pg_catalog.pg_type AS t ON t.oid OPERATOR(pg_catalog.=) c.casttarget
WHERE c.oid OPERATOR(pg_catalog.>=) '16384'::pg_catalog.oid AND c.castmethod OPERATOR(pg_catalog.=) 'f'
  AND s.typtype OPERATOR(pg_catalog.<>) 'd' AND t.typtype OPERATOR(pg_catalog.<>) 'd'
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                  WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_cast'::pg_catalog.regclass
                    AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
ORDER BY 1, 2
"""


def refuse_casts(dbapi_connection: Any, database: str | None) -> None:
    """Refuse a database holding a cast its owner wrote (USER_CASTS): one statement per new
    connection, outside any transaction."""
    autocommit = dbapi_connection.autocommit
    dbapi_connection.autocommit = True  # no BEGIN and ROLLBACK around a catalog read
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(USER_CASTS)
            found = cursor.fetchall()
    finally:
        dbapi_connection.autocommit = autocommit
    if found:
        shown = ", ".join(f"CAST ({s} AS {t}) WITH FUNCTION {f}" for s, t, f in found[:10]) + (
            f" and {len(found) - 10} more" if len(found) > 10 else "")
        raise RedefinitionError(f"the PostgreSQL database {database} holds {shown}: a cast its owner wrote "
                                "answers for the comparisons of its types, so none of its checks runs (drop the "
                                "cast, or use WITH INOUT)")


# -- DuckDB -------------------------------------------------------------------------------------------

# DuckDB settings of a check session: (setting, the declaration's field, default)
DUCKDB_SETTINGS = (
    ("memory_limit", "memory_limit", lambda: "1GB"),
    ("temp_directory", "temp_directory", lambda: os.path.join(tempfile.gettempdir(), "dq_contracts_spill")),
    ("threads", "threads", lambda: None),
)
# set when a DuckDB database opens, before anything is read: no extension is installed or loaded
# because of what a contract (or a warehouse file's views) call
NO_EXTENSIONS = (("autoinstall_known_extensions", False), ("autoload_known_extensions", False),
                 ("allow_community_extensions", False))
# DuckDB's readers of a file server's formats: the checks' tables and the schema check's DESCRIBE
READERS = {"csv": "read_csv", "parquet": "read_parquet", "json": "read_json"}


def _duckdb_options(connection: Any) -> dict[str, Any]:
    # set when the database opens: no statement, and nothing a contract's SQL could change; a
    # database is opened read-only (a file server's :memory: holds nothing to write)
    connect_args: dict[str, Any] = {"config": {**dict(NO_EXTENSIONS), **dict(connection.duckdb)}}
    if connection.files is None:
        connect_args["read_only"] = True
    return {"connect_args": connect_args}


def _duckdb_confine(engine: sa.Engine, connection: Any) -> None:
    allowed = connection.files.allowed() if connection.files is not None else None
    allowed_files = connection.files.allowed_files() if connection.files is not None else []

    @sa.event.listens_for(engine, "connect")
    def confine(dbapi_connection, _record) -> None:
        # A contract may come from another team: its session reads its own database (or, for a
        # file server, the server's folder) and nothing else of the host, and no statement can
        # change that (DuckDB takes these settings only after connecting).
        if allowed is not None:
            dbapi_connection.execute("SET allowed_directories = $1", [allowed])
        if allowed_files:
            dbapi_connection.execute("SET allowed_paths = $1", [allowed_files])
        dbapi_connection.execute("SET TimeZone = 'UTC'")  # timestamps compared in UTC, whatever the host's
        dbapi_connection.execute("SET enable_external_access = false")
        dbapi_connection.execute("SET lock_configuration = true")
        if allowed is None:
            refuse_redefinitions(dbapi_connection, connection.url.database)


# What a warehouse file may not hold: anything that would change what a check's SQL means. A macro
# in the file's catalog (any schema) takes the place of the built-in of its name (`length`,
# `count`, `regexp_matches`, even the `~~` behind LIKE), and a type named like a built-in one could
# take its place in a cast. The catalog is read through `system.main`, which no file can shadow.
REDEFINITIONS = """
SELECT function_type || ' ' || schema_name || '.' || function_name
FROM system.main.duckdb_functions() WHERE NOT internal AND database_name = current_database()
UNION ALL
SELECT 'type ' || schema_name || '.' || type_name
FROM system.main.duckdb_types() AS t WHERE NOT internal AND database_name = current_database()
  AND lower(type_name) IN (SELECT lower(type_name) FROM system.main.duckdb_types() WHERE internal)
ORDER BY 1
"""


# The verdicts of the files this process judged, by what each file was (file_identity): the
# catalog query costs 40 to 60 ms (duckdb_functions() lists every built-in), more than a clean
# check of 200,000 rows, and an engine opens one connection per run, so the verdict is kept for
# the process, not the engine. The oldest go first beyond VERDICTS_KEPT.
VERDICTS_KEPT = 256
_VERDICTS: dict[tuple, str | None] = {}
_VERDICTS_LOCK = threading.Lock()

# A file changed this recently may change again within the same tick of the file system's clock,
# keeping its identity: its verdict is not remembered (git's "racy" rule).
RACY_NS = 2_000_000_000


def file_identity(database: str | None) -> tuple | None:
    """What a DuckDB file is now, with its write-ahead log (DuckDB replays it when opening): device,
    inode, size, mtime and ctime of each. Any rename, link or write changes the ctime, which no
    one but root can set back. None when the file cannot be read or changed within RACY_NS: then
    nothing is remembered."""
    if not database:
        return None
    parts: list[Any] = []
    for path in (database, database + ".wal"):
        try:
            found = os.stat(path)
        except FileNotFoundError:
            parts.append(None)  # no log: a log written later is another identity
            continue
        except OSError:
            return None
        if time.time_ns() - max(found.st_ctime_ns, found.st_mtime_ns) < RACY_NS:
            return None
        parts.append((found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))
    return None if parts[0] is None else tuple(parts)


def refuse_redefinitions(dbapi_connection: Any, database: str | None) -> None:
    """Refuse the file if it redefines what the checks call (REDEFINITIONS). The verdict is kept by
    the file's real path and identity (file_identity) read after DuckDB opened it and again after
    the query: a file swapped or written in between, or just before, is judged again on its next
    connection, and a verdict is only ever reused for a file no one has touched since."""
    key = _verdict_key(database)
    if key is not None:
        with _VERDICTS_LOCK:
            known = _VERDICTS.get(key, False)
        if known is not False:
            _raise_if_found(known, database)
            return
    found = [row[0] for row in dbapi_connection.execute(REDEFINITIONS).fetchall()]
    shown = (", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")) if found else None
    if key is not None and _verdict_key(database) == key:
        with _VERDICTS_LOCK:
            _VERDICTS[key] = shown
            while len(_VERDICTS) > VERDICTS_KEPT:
                del _VERDICTS[next(iter(_VERDICTS))]
    _raise_if_found(shown, database)


def _verdict_key(database: str | None) -> tuple | None:
    identity = file_identity(database)
    return None if identity is None or not database else (os.path.realpath(database), identity)


def _raise_if_found(shown: str | None, database: str | None) -> None:
    if shown:
        raise RedefinitionError(f"the DuckDB file {database} defines {shown}: a warehouse file cannot redefine "
                                "what the checks call, so none of its checks runs (drop them from the file, or "
                                "check a copy without them)")


def _duckdb_begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """The engine opened the database read-only (`_duckdb_options`); DuckDB has no statement timeout,
    so `interrupt` stops a statement at it."""
    return engine.connect()


def _duckdb_interrupt(connection: sa.Connection) -> Callable[[], None]:
    return connection.connection.driver_connection.interrupt


def _duckdb_regex(column: ColumnElement, pattern: str) -> ColumnElement:
    return sa.func.regexp_matches(column, sa.bindparam(None, pattern, type_=sa.String), type_=sa.Boolean)


# -- the rows -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Dialect:
    """How the engine reaches one SQL dialect. Every field is given in every row (test_servers)."""

    name: str  # SQLAlchemy's dialect name
    driver: str | None  # the drivername of a URL built from `_HOST`…; None: only the operator's `_URL`
    engine_options: Callable[[Any], dict[str, Any]]  # create_engine's keywords for a connections.Connection
    prepare: Callable[[sa.Engine, Any], None] | None  # what every new connection of the engine does first
    settings: tuple[tuple[str, str, Callable[[], Any]], ...]  # (setting, declaration field, default) of a session
    # a connection in a read-only transaction with the timeout set; None: this row cannot make one
    begin: Callable[[sa.Engine, float], sa.Connection] | None
    # where the server has no statement timeout: what a timer calls to stop the statement at it
    interrupt: Callable[[sa.Connection], Callable[[], None]] | None
    server_timeout: Callable[[BaseException], bool]  # the server cancelled a statement at the timeout
    names_need_schema: bool  # the session resolves names in the catalog schema alone: tables name theirs
    qualifier: Callable[[list[str], Any, str], Any]  # the quoted schema part of a 2- or 3-part name
    regex: Callable[[ColumnElement, str], ColumnElement]
    length: Callable[[ColumnElement], ColumnElement]
    epoch: Callable[[ColumnElement], ColumnElement]
    # a text value as every check compares it, byte by byte (_binary_text); None: as the column compares
    binary_text: Callable[[ColumnElement], ColumnElement] | None
    catalog_columns: Callable[[sa.Connection, list[str], str], list[dict[str, Any]]]  # the schema check's
    type_spellings: Mapping[str, str]  # type-name normalisation (schema_check.normalise_type)
    measures_per_statement: int  # a wide table's aggregate is split into statements of at most this
    distinct_counts_per_statement: int  # the same for its distinct counts (check_kinds._keys_apart)
    # a key column's repeated rows, NULLs and 5 smallest repeated keys from one GROUP BY (a bounded
    # `min(key, 5)`), so a failing unique or primary key needs no second pass for samples
    key_groups: bool


GENERIC = Dialect(
    name="", driver=None, engine_options=lambda connection: {}, prepare=None, settings=(), begin=None,
    interrupt=None, server_timeout=no_server_timeout, names_need_schema=False, qualifier=qualifier, regex=_regex,
    length=_length, epoch=_epoch, binary_text=None, catalog_columns=_catalog_columns,
    type_spellings=TYPE_SPELLINGS, measures_per_statement=DEFAULT_MEASURES_PER_STATEMENT,
    distinct_counts_per_statement=DEFAULT_MEASURES_PER_STATEMENT, key_groups=False)

DIALECTS: dict[str, Dialect] = {
    # PostgreSQL refuses a target list of more than 1,664 entries; it has no bounded aggregate, and
    # its COUNT(DISTINCT …) is faster than its hash GROUP BY (2M rows: 0.57 s against 2.37 s)
    "postgresql": Dialect(
        name="postgresql", driver="postgresql+psycopg2", engine_options=_postgres_options,
        prepare=_postgres_prepare, settings=(), begin=_postgres_begin, interrupt=None,
        server_timeout=_postgres_timeout, names_need_schema=True, qualifier=qualifier, regex=_postgres_regex,
        length=_length, epoch=_epoch, binary_text=_binary_text(sa.Text, "C"), catalog_columns=_postgres_catalog,
        type_spellings=TYPE_SPELLINGS, measures_per_statement=1500, distinct_counts_per_statement=1500,
        key_groups=False),
    # DuckDB holds a hash table for each distinct count at once
    "duckdb": Dialect(
        name="duckdb", driver="duckdb", engine_options=_duckdb_options, prepare=_duckdb_confine,
        settings=DUCKDB_SETTINGS, begin=_duckdb_begin, interrupt=_duckdb_interrupt,
        server_timeout=no_server_timeout, names_need_schema=False, qualifier=qualifier, regex=_duckdb_regex,
        length=_length, epoch=_epoch, binary_text=_binary_text(sa.String, "binary"),
        catalog_columns=_catalog_columns, type_spellings=TYPE_SPELLINGS,
        measures_per_statement=DEFAULT_MEASURES_PER_STATEMENT, distinct_counts_per_statement=50,
        key_groups=True),
    # Spark SQL: a Spark Thrift server through PyHive (`hive://`), and a Databricks SQL warehouse
    # through databricks-sqlalchemy (a URL built from `_HOST`… has no `http_path`: Databricks takes
    # the operator's `_URL`); both are time-limited here but never read-only (TIME_LIMITED_ONLY)
    **{name: Dialect(
        name=name, driver=driver, engine_options=lambda connection: {}, prepare=spark.prepare, settings=(),
        begin=spark.begin, interrupt=None, server_timeout=spark.server_timeout, names_need_schema=False,
        qualifier=qualifier, regex=spark.regex, length=_length, epoch=spark.epoch,
        # text as the column compares: a `CAST(… AS STRING)` would drop a UTF8_LCASE collation, but
        # Spark cannot then resolve the samples' ORDER BY over the GROUP BY of that expression
        binary_text=None,
        catalog_columns=spark.catalog_columns, type_spellings={**TYPE_SPELLINGS, **spark.SPELLINGS},
        measures_per_statement=DEFAULT_MEASURES_PER_STATEMENT, distinct_counts_per_statement=50, key_groups=False)
       for name, driver in (("hive", "hive"), ("databricks", "databricks"))},
}

# Dialects whose `begin` bounds a session's time but cannot make it read-only (Spark has no read-only
# transaction or session): the checks' own SELECTs run, and a contract's SQL rule only where the
# operator declared the credentials read-only (`_READ_ONLY`)
TIME_LIMITED_ONLY = frozenset({"hive", "databricks"})


def dialect_of(name: str | None) -> Dialect:
    """The row of SQLAlchemy dialect `name`; GENERIC (no read-only session) for any other."""
    return DIALECTS.get(str(name or "").lower(), GENERIC)


def rule_refusal(name: str, vouched: bool) -> str | None:
    """Why a contract's SQL rule is not run in dialect `name`, or None: a session that is not
    read-only runs one only on the operator's word that its credentials can only read."""
    if vouched or str(name or "").lower() not in TIME_LIMITED_ONLY:
        return None
    return (f"dialect {name!r} has no read-only session, so a contract's own SQL runs only where the operator "
            "declares the server's credentials read-only (DQ_CONTRACTS_<SERVER>_READ_ONLY=true)")


def read_only_refusal(name: str, server: str | None = None) -> str | None:
    """Why a connection in dialect `name` is refused when the operator has not declared its
    credentials read-only, or None when its row makes every session read-only and time-limited."""
    if dialect_of(name).begin is not None:
        return None
    variable = (env_prefix(server) if server is not None else "DQ_CONTRACTS_<SERVER>") + "_READ_ONLY"
    return (f"{f'server {server!r}: ' if server is not None else ''}dialect {name or '(none)'!r} has no row here "
            "that makes a check session read-only and time-limited (engine/dialects.py); not connecting (if its "
            f"credentials can only read, the operator declares {variable}=true: its statements then run with "
            "no timeout)")
