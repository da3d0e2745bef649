"""What ODCS says about a server, one row per server type (`SERVER_TYPES`): its type names, SQL or
files, the sqlglot dialect its SQL rules are compiled and judged in, the schema a bare table name
means, whether names are case-sensitive, and the SQLAlchemy dialect the engine reaches it by (its
row in engine/dialects.py), and how its checks are handled here (run, emulated, compiled, untested
or not enforced, and why). Every server type of every ODCS schema version has a row
(test_servers checks it). How two contracts' servers are told apart is here too."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from dq_contracts.odcs.closed_sets import StrEnum


class Handling(StrEnum):
    """How the checks of a server type are handled here: the README's warehouse table says the same."""

    RUN = "run"  # checked, and tested here against a real server or real files
    EMULATED = "emulated"  # checked; tested against an emulator of the warehouse, not the warehouse
    COMPILED = "compiled"  # each clause compiled in the dialect and parsed by sqlglot in tests; not run here
    # reached only through what the operator declares (a `_URL` on `_READ_ONLY`, a `_REMOTE` prefix):
    # the portable clauses in generic SQL; nothing here runs or compiles it
    UNTESTED = "untested"
    NOT_ENFORCED = "not enforced"  # no check runs against it: `how` says why, in ODCS words


@dataclass(frozen=True)
class ServerType:
    """One ODCS server type. Every field is given in every row (test_servers checks it)."""

    names: tuple[str, ...]  # the ODCS type names, lower case; the first is the one a URI says
    files: bool  # files read as tables (a `format` and a `path`; Iceberg: through a catalog), not a SQL database
    dialect: str | None  # the SQLAlchemy dialect the engine builds a connection in from `_HOST`…, its
    # engine/dialects.py row; None: no row here, reached only through the operator's `_URL`
    sqlglot: str | None  # the dialect SQL rules are parsed, judged and rendered in; None: generic SQL
    default_schema: str | None  # the schema a bare table name means, where the server declares none
    # whether "Orders" and "orders" are two names: every name is quoted as written (sql.quoted), so
    # on PostgreSQL a name is exactly what it says; DuckDB matches quoted names ignoring case
    case_sensitive: bool
    database_file: bool  # `database` is a local file, confined to the operator's roots
    handling: Handling
    how: str  # what `plan` says of it: how it runs and where that is tested, or why it is not enforced
    extra: str | None  # the pyproject extra of its driver (`pip install dq_contracts[<extra>]`); None: none here
    # the server's ODCS fields that name the endpoint, each compared with a part of the operator's
    # (`host`, `port`, `database`): a contract naming another is refused (declaration.endpoint_disagreements)
    endpoint: tuple[tuple[str, str], ...]
    # the server's ODCS field naming the schema a bare table name is in: an ODCS Hive server has no
    # `schema`, its `database` is Spark's database (a schema)
    schema_key: str
    # the schemas, catalogs and databases a contract's server may not choose unless the operator lists
    # them (`_SCHEMAS`): the server's own catalog and system schemas (fnmatch patterns, lower case),
    # whose tables show functions, settings, users or other sessions' objects (chosen_names.py)
    system_names: tuple[str, ...]


ENDPOINT = (("host", "host"), ("port", "port"), ("database", "database"))


def _sql(names: tuple[str, ...], sqlglot: str | None, how: str, *, handling: Handling = Handling.UNTESTED,
         dialect: str | None = None, default_schema: str | None = None, case_sensitive: bool = False,
         database_file: bool = False, extra: str | None = None,
         endpoint: tuple[tuple[str, str], ...] = ENDPOINT, schema_key: str = "schema",
         system_names: tuple[str, ...] = ()) -> ServerType:
    return ServerType(names, False, dialect, sqlglot, default_schema, case_sensitive, database_file, handling,
                      how, extra, endpoint, schema_key, system_names)


def _not_enforced(name: str, why: str) -> ServerType:
    return ServerType((name,), False, None, None, None, False, False, Handling.NOT_ENFORCED, why, None, ENDPOINT,
                      "schema", ())


# The system schemas and catalogs of each engine (PostgreSQL reserves every `pg_` schema name: pg_catalog,
# pg_toast, pg_temp_N, pg_toast_temp_N). DuckDB's `system` and `temp` catalogs, Spark's global_temp
# (another session's global views)
_POSTGRES_SYSTEM = ("pg_*", "information_schema")
_DUCKDB_SYSTEM = ("pg_catalog", "information_schema", "system", "temp")
_SYSTEM_NAMES = {
    "vertica": ("v_*", "information_schema"), "db2": ("sys*",), "athena": ("information_schema",),
    "synapse": ("sys", "information_schema"), "impala": ("_impala_builtins", "information_schema", "sys"),
    "exasol": ("sys", "exa_*"), "teradata": ("dbc", "sys_*", "syslib", "sysudtlib", "td_sysfnlib", "tdstats"),
    "hana": ("sys", "_sys_*"), "informix": ("sysmaster", "sysadmin", "sysutils", "sysuser"),
}


_URL_ONLY = "through the operator's `_URL` on `_READ_ONLY`, generic SQL; not tested here"
# the compiled-only warehouses: run on the operator's read-only credentials (`_READ_ONLY`), no timeout of ours
_COMPILED = ("compiled and parsed, not run here: every check kind's SQL compiled in the dialect and parsed by "
             "sqlglot in tests (engine/test_compiled_dialects.py); on the operator's `_READ_ONLY` credentials")

SERVER_TYPES: tuple[ServerType, ...] = (
    _sql(("postgresql", "postgres"), "postgres", "PostgreSQL 15, a cluster the tests start", handling=Handling.RUN,
         dialect="postgresql", default_schema="public", case_sensitive=True, extra="postgres",
         system_names=_POSTGRES_SYSTEM),
    _sql(("duckdb",), "duckdb", "an embedded DuckDB file, opened read-only", handling=Handling.RUN,
         dialect="duckdb", default_schema="main", database_file=True, extra="duckdb", system_names=_DUCKDB_SYSTEM),
    # files DuckDB reads as tables: csv, parquet or json (FILE_FORMATS)
    ServerType(("local",), True, "duckdb", "duckdb", None, False, False, Handling.RUN,
               "csv, parquet or json files read by DuckDB", "duckdb", ENDPOINT, "schema", _DUCKDB_SYSTEM),
    *(ServerType((name,), True, "duckdb", "duckdb", None, False, False, Handling.UNTESTED,
                 "csv, parquet or json files read by DuckDB under a prefix the operator declares in `_REMOTE`; "
                 "not tested here", "duckdb", ENDPOINT, "schema", _DUCKDB_SYSTEM) for name in ("s3", "gcs", "azure")),
    # Iceberg tables through the operator's catalog, scanned by DuckDB as Arrow (engine/lake.py)
    ServerType(("iceberg",), True, "duckdb", "duckdb", None, False, False, Handling.RUN,
               "Iceberg tables through the operator's catalog (pyiceberg), scanned by DuckDB as Arrow", "iceberg",
               ENDPOINT, "schema", ()),
    # PostgreSQL's SQL, but which engine Google runs is not said by the type: reached through `_URL`
    _sql(("cloudsql",), "postgres", _URL_ONLY, case_sensitive=True, system_names=_POSTGRES_SYSTEM),
    # not an ODCS type: SQLAlchemy's built-in dialect, on which the `_URL` + `_READ_ONLY` path is tested
    _sql(("sqlite",), "sqlite", "through the operator's `_URL` on `_READ_ONLY`, generic SQL: the path every "
         "dialect without a row takes, tested on SQLite", handling=Handling.RUN, system_names=("temp",)),
    _sql(("redshift",), "redshift", _COMPILED + " (sqlalchemy-redshift)", handling=Handling.COMPILED,
         dialect="redshift", default_schema="public", extra="redshift", system_names=_POSTGRES_SYSTEM),
    # MySQL and MariaDB (ODCS has one type for both; sqlglot one dialect): a table is `database`.`table`,
    # and a bare name means the connection's database. Column names match in any case
    _sql(("mysql",), "mysql", "MariaDB 10.11, a server the tests start, as a user granted SELECT alone "
         "(`_READ_ONLY`); MySQL 8 not tested here", handling=Handling.RUN, dialect="mysql", extra="mysql",
         system_names=("mysql", "sys", "performance_schema", "information_schema")),
    _sql(("sqlserver",), "tsql", _COMPILED + " (SQLAlchemy's own mssql)", handling=Handling.COMPILED,
         dialect="mssql", default_schema="dbo", extra="sqlserver",
         system_names=("sys", "information_schema", "master", "msdb", "tempdb", "model")),
    # a quoted name is exact on Snowflake; a name created unquoted is stored in upper case
    # (its URL's host is the account: snowflake://user@account/database?schema=…&warehouse=…)
    _sql(("snowflake",), "snowflake", "fakesnow (Snowflake's SQL emulated on DuckDB) in the tests, not Snowflake: "
         "on the operator's read-only role (`_READ_ONLY`), each session's STATEMENT_TIMEOUT_IN_SECONDS set",
         handling=Handling.EMULATED, dialect="snowflake", default_schema="PUBLIC", case_sensitive=True,
         extra="snowflake", endpoint=(("account", "host"), *ENDPOINT),
         system_names=("information_schema", "snowflake")),
    # a dataset is the schema; its URL's host is the project (bigquery://project/dataset)
    _sql(("bigquery",), "bigquery", _COMPILED + " (sqlalchemy-bigquery)", handling=Handling.COMPILED,
         dialect="bigquery", extra="bigquery", endpoint=(("project", "host"),),
         system_names=("information_schema", "region-*")),
    # Spark SQL: names are case-blind, a bare name is in the session's schema (`default` unless the
    # server says one); a Databricks table is catalog.schema.table, its catalog the operator's URL's
    _sql(("databricks",), "databricks", "compiled by databricks-sqlalchemy and run on the Spark Thrift server the "
         "tests start, not on a Databricks SQL warehouse (engine/test_spark.py, test_compiled_dialects.py); "
         "time-limited, not read-only: a contract's SQL rule runs only on `_READ_ONLY`",
         handling=Handling.COMPILED, dialect="databricks",
         default_schema="default", extra="databricks",
         system_names=("system", "information_schema", "__databricks_internal")),
    _sql(("trino",), "trino", _COMPILED + " (trino's SQLAlchemy dialect)", handling=Handling.COMPILED,
         dialect="trino", extra="trino", system_names=("system", "information_schema")),  # catalog.schema.table
    _sql(("presto",), "presto", _URL_ONLY, system_names=("system", "information_schema")),
    _sql(("oracle",), "oracle", _URL_ONLY,
         system_names=("sys", "system", "audsys", "ctxsys", "dbsnmp", "mdsys", "outln", "xdb")),
    _sql(("clickhouse",), "clickhouse", _URL_ONLY, system_names=("system", "information_schema")),
    # a Spark (or Hive) server reached through its Thrift server, in Spark's SQL
    _sql(("hive",), "spark", "Spark 4 (pyspark's Thrift server, PyHive), a server the tests start: time-limited "
         "by its query timeout, not read-only, so a contract's SQL rule runs only on `_READ_ONLY`",
         handling=Handling.RUN, dialect="hive", default_schema="default", extra="spark", schema_key="database",
         system_names=("system", "information_schema", "global_temp", "sys")),  # Hive 3's metastore: `sys`
    *(_sql((name,), None, _URL_ONLY, system_names=_SYSTEM_NAMES.get(name, ())) for name in ("vertica", "db2", "athena", "synapse", "impala", "exasol",
                                                  "teradata", "hana", "denodo", "dremio", "informix", "ingres",
                                                  "vectorwise", "zen")),
    # Btrieve is Zen's record interface; ODCS gives it Zen's SQL endpoint (ZenServer)
    _sql(("btrieve",), None, "Actian Zen's SQL endpoint (ODCS's ZenServer), " + _URL_ONLY),
    _not_enforced("api", "an API, not a table: no SQL reaches its rows"),
    _not_enforced("kafka", "a stream, not a table"),
    _not_enforced("kinesis", "a stream, not a table"),
    _not_enforced("pubsub", "a stream, not a table"),
    _not_enforced("sftp", "files we cannot reach here: DuckDB reads no sftp:// location"),
    _not_enforced("glue", "a catalog, not an engine that runs SQL: declare the engine that reads its tables "
                          "(athena, databricks, …) or its files (s3) as the server"),
    _not_enforced("fastobjects", "an object database, not SQL tables"),
    _not_enforced("poet", "an object database (FastObjects), not SQL tables"),
    _not_enforced("versant", "an object database (Actian NoSQL), not SQL tables"),
    _not_enforced("custom", "a custom server: ODCS does not say what it is or how to reach it"),
)

_BY_NAME = {name: row for row in SERVER_TYPES for name in row.names}
# the first SQL row of each dialect (rows sharing a dialect agree: test_servers)
_BY_DIALECT = {row.dialect: row for row in reversed(SERVER_TYPES) if row.dialect and not row.files}
# SQLAlchemy's name for a dialect that speaks another's SQL (a `mariadb://` URL's): that one's row
DIALECT_SPELLINGS = {"mariadb": "mysql"}

FILE_FORMATS = {"csv", "parquet", "json"}
# table formats read through their own library as Arrow, scanned by DuckDB (engine/lake.py): a
# `format: delta` folder on a file server type, or an `iceberg` server's tables in its catalog
LAKE_FORMATS = {"delta", "iceberg"}
LAKE_READERS = {"delta": "deltalake", "iceberg": "pyiceberg"}
# What a file of each format is named: in the default binding (no roots declared) a file server
# reads only such files, so that a contract cannot read the project's other files (`.env`,
# `dagster.yaml`, …) as a table
FORMAT_EXTENSIONS = {"csv": (".csv", ".tsv", ".csv.gz", ".tsv.gz"), "parquet": (".parquet",),
                     "json": (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz", ".ndjson.gz")}


def server_type(name: object) -> ServerType | None:
    """The row of an ODCS type name, in any case; None for a name that is no ODCS type (every ODCS
    type has a row, even those no check runs against: its `handling` says so)."""
    return _BY_NAME.get(str(name or "").strip().lower())


def schema_of_server(server: Any) -> Any:
    """The schema a server entry names for its bare table names (its type's `schema_key`), or None."""
    row = server_type(server.get("type"))
    return server.get(row.schema_key if row is not None else "schema")


def local(server_type_name: object) -> bool:
    """A server the engine opens itself (a DuckDB file, files): no endpoint, credentials or TLS."""
    row = server_type(server_type_name)
    return row is not None and (row.files or row.database_file)


def server_type_of_dialect(dialect: str | None) -> ServerType | None:
    """The SQL server type whose connections speak SQLAlchemy dialect `dialect` (`postgresql`, `duckdb`)."""
    name = str(dialect or "").lower()
    return _BY_DIALECT.get(DIALECT_SPELLINGS.get(name, name))


def sqlglot_dialect(name: str | None) -> str | None:
    """sqlglot's dialect for a server type (ODCS) or an engine's dialect (SQLAlchemy); None (generic
    SQL) when unknown. The one map for compiling a SQL rule and for judging it again where it runs."""
    row = server_type(name) or server_type_of_dialect(name)
    return row.sqlglot if row is not None else None


def is_file_server(server: dict) -> bool:
    row = server_type(server.get("type"))
    return (row is not None and row.files and str(server.get("format", "")).lower() in FILE_FORMATS
            and bool(server.get("path")))


def lake_format(server: dict) -> str | None:
    """`delta` for a file server type's Delta folder (`path`, or an s3/azure `location`), `iceberg`
    for an iceberg server; None for any other server."""
    row = server_type(server.get("type"))
    if row is None or not row.files:
        return None
    if row.names[0] == "iceberg":
        return "iceberg"
    fmt = str(server.get("format", "")).lower()
    return fmt if fmt in LAKE_FORMATS and (server.get("path") or server.get("location")) else None


def lake_location(server: dict) -> str:
    """Where a Delta server's tables are: its `path` (local) or `location` (s3, azure)."""
    return str(server.get("path") or server.get("location") or "")


def checkable(server: dict) -> bool:
    """A server the checks can run against: a SQL database, or files DuckDB reads."""
    return server_handling(server)[0] is not Handling.NOT_ENFORCED


def server_handling(server: dict) -> tuple[Handling, str]:
    """How one declared server's checks are handled, and a sentence saying so in ODCS words
    ("kafka: a stream, not a table"): its type's row, unless its files are not ones DuckDB reads."""
    kind = str(server.get("type") or "").strip().lower()
    row = server_type(kind)
    if row is None:
        return Handling.NOT_ENFORCED, f"{kind or 'no type'}: not an ODCS server type"
    if row.files and lake_format(server) is not None:
        return Handling.RUN, f"{kind}: {lake_format(server)} tables read by {LAKE_READERS[lake_format(server)]}, scanned by DuckDB as Arrow"
    if row.files and not is_file_server(server):
        fmt = str(server.get("format") or "").lower()
        if fmt not in FILE_FORMATS:
            why = f"format {fmt!r} is not read here" if fmt else "no `format`"
        else:
            why = "no `path`" + (" (a `location` is not read here)" if server.get("location") else "")
        return Handling.NOT_ENFORCED, f"{kind}: {why}; a file server reads {' or '.join(sorted(FILE_FORMATS))} at a `path`"
    return row.handling, f"{kind}: {row.how}"


def servers_handling(servers: tuple[dict, ...] | list[dict], name: str | None = None) -> list[dict]:
    """What `plan` says of a contract's servers: each one's name, type, handling and why, and which
    one its checks use (the one named `name`, else the first that can be checked, as `check` and
    Dagster choose without a name)."""
    names = [str(s.get("server") or s.get("id") or "default") for s in servers]
    used = (names.index(name) if name in names else None) if name is not None else next(
        (i for i, s in enumerate(servers) if checkable(s)), None)
    said = []
    for i, server in enumerate(servers):
        handling, how = server_handling(server)
        said.append({"server": str(server.get("server") or server.get("id") or "default"),
                     "type": str(server.get("type") or ""), "handling": str(handling), "how": how,
                     "used": i == used})
    return said


def engine_type(server: dict) -> str:
    """The SQL engine of a server: its type, or DuckDB for files and lake tables."""
    return "duckdb" if is_file_server(server) or lake_format(server) else str(server.get("type")).lower()


def same_type(contract_type: str, declared: str) -> bool:
    """Whether two type names are one server type (`postgres` and `postgresql` are)."""
    a, b = server_type(contract_type), server_type(declared)
    return a is b if a is not None and b is not None else contract_type.strip().lower() == declared.strip().lower()


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # md:, s3://, … (as connections reads a DuckDB database)


def server_identity(server: dict, folder: str) -> tuple:
    """What makes two contracts' servers one database: engine, host, port, database (a relative
    DuckDB file resolved from the contract's folder), schema, a file server's path and format, a lake
    server's location and namespace."""
    kind = engine_type(server)
    database = server.get("database")
    row = server_type(kind)
    if row is not None and row.database_file and isinstance(database, str) and database not in ("", ":memory:") \
            and not _URI.match(database):
        database = os.path.normpath(os.path.join(folder, os.path.expanduser(database)))
    return (kind, *(str(server.get(k) or "").lower() if k in ("host",) else server.get(k)
                    for k in ("host", "port")), database, server.get("schema"), server.get("path"),
            server.get("format"), server.get("location"), server.get("namespace"))
