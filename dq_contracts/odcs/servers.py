"""What ODCS says about a server, one row per server type (`SERVER_TYPES`): its type names, SQL or
files, the sqlglot dialect its SQL rules are compiled and judged in, the schema a bare table name
means, whether names are case-sensitive, and the SQLAlchemy dialect the engine reaches it by (its
row in engine/dialects.py). How two contracts' servers are told apart is here too."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerType:
    """One ODCS server type. Every field is given in every row (test_servers checks it)."""

    names: tuple[str, ...]  # the ODCS type names, lower case; the first is the one a URI says
    files: bool  # files read as tables (a `format` and a `path`), not a SQL database
    dialect: str | None  # the SQLAlchemy dialect the engine builds a connection in from `_HOST`…, its
    # engine/dialects.py row; None: no row here, reached only through the operator's `_URL`
    sqlglot: str | None  # the dialect SQL rules are parsed, judged and rendered in; None: generic SQL
    default_schema: str | None  # the schema a bare table name means, where the server declares none
    # whether "Orders" and "orders" are two names: every name is quoted as written (sql.quoted), so
    # on PostgreSQL a name is exactly what it says; DuckDB matches quoted names ignoring case
    case_sensitive: bool
    database_file: bool  # `database` is a local file, confined to the operator's roots


def _sql(names: tuple[str, ...], sqlglot: str | None, *, dialect: str | None = None,
         default_schema: str | None = None, case_sensitive: bool = False,
         database_file: bool = False) -> ServerType:
    return ServerType(names, False, dialect, sqlglot, default_schema, case_sensitive, database_file)


SERVER_TYPES: tuple[ServerType, ...] = (
    _sql(("postgresql", "postgres"), "postgres", dialect="postgresql", default_schema="public",
         case_sensitive=True),
    _sql(("duckdb",), "duckdb", dialect="duckdb", default_schema="main", database_file=True),
    # files DuckDB reads as tables: csv, parquet or json (FILE_FORMATS)
    *(ServerType((name,), True, "duckdb", "duckdb", None, False, False) for name in ("local", "s3", "gcs", "azure")),
    # PostgreSQL's SQL, but which engine Google runs is not said by the type: reached through `_URL`
    _sql(("cloudsql",), "postgres", case_sensitive=True),
    _sql(("redshift",), "redshift"),
    _sql(("sqlite",), "sqlite"),
    _sql(("mysql",), "mysql"),
    _sql(("sqlserver",), "tsql"),
    _sql(("snowflake",), "snowflake"),
    _sql(("bigquery",), "bigquery"),
    # Spark SQL: names are case-blind, a bare name is in the session's schema (`default` unless the
    # server says one); a Databricks table is catalog.schema.table, its catalog the operator's URL's
    _sql(("databricks",), "databricks", dialect="databricks", default_schema="default"),
    # a Spark (or Hive) server reached through its Thrift server, in Spark's SQL
    _sql(("hive",), "spark", dialect="hive", default_schema="default"),
    _sql(("trino",), "trino"),
    _sql(("presto",), "presto"),
    _sql(("oracle",), "oracle"),
    _sql(("clickhouse",), "clickhouse"),
    *(_sql((name,), None) for name in ("vertica", "db2", "athena", "synapse", "impala", "exasol",
                                       "teradata", "hana", "denodo", "dremio")),
)

_BY_NAME = {name: row for row in SERVER_TYPES for name in row.names}
# the first SQL row of each dialect (rows sharing a dialect agree: test_servers)
_BY_DIALECT = {row.dialect: row for row in reversed(SERVER_TYPES) if row.dialect and not row.files}

FILE_FORMATS = {"csv", "parquet", "json"}
# What a file of each format is named: in the default binding (no roots declared) a file server
# reads only such files, so that a contract cannot read the project's other files (`.env`,
# `dagster.yaml`, …) as a table
FORMAT_EXTENSIONS = {"csv": (".csv", ".tsv", ".csv.gz", ".tsv.gz"), "parquet": (".parquet",),
                     "json": (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz", ".ndjson.gz")}


def server_type(name: object) -> ServerType | None:
    """The row of an ODCS type name, in any case; None for a type this project cannot check."""
    return _BY_NAME.get(str(name or "").strip().lower())


def local(server_type_name: object) -> bool:
    """A server the engine opens itself (a DuckDB file, files): no endpoint, credentials or TLS."""
    row = server_type(server_type_name)
    return row is not None and (row.files or row.database_file)


def server_type_of_dialect(dialect: str | None) -> ServerType | None:
    """The SQL server type whose connections speak SQLAlchemy dialect `dialect` (`postgresql`, `duckdb`)."""
    return _BY_DIALECT.get(str(dialect or "").lower())


def sqlglot_dialect(name: str | None) -> str | None:
    """sqlglot's dialect for a server type (ODCS) or an engine's dialect (SQLAlchemy); None (generic
    SQL) when unknown. The one map for compiling a SQL rule and for judging it again where it runs."""
    row = server_type(name) or server_type_of_dialect(name)
    return row.sqlglot if row is not None else None


def is_file_server(server: dict) -> bool:
    row = server_type(server.get("type"))
    return (row is not None and row.files and str(server.get("format", "")).lower() in FILE_FORMATS
            and bool(server.get("path")))


def checkable(server: dict) -> bool:
    """A server the checks can run against: a SQL database, or files DuckDB reads."""
    row = server_type(server.get("type"))
    return row is not None and (not row.files or is_file_server(server))


def engine_type(server: dict) -> str:
    """The SQL engine of a server: its type, or DuckDB for files."""
    return "duckdb" if is_file_server(server) else str(server.get("type")).lower()


def same_type(contract_type: str, declared: str) -> bool:
    """Whether two type names are one server type (`postgres` and `postgresql` are)."""
    a, b = server_type(contract_type), server_type(declared)
    return a is b if a is not None and b is not None else contract_type.strip().lower() == declared.strip().lower()


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # md:, s3://, … (as connections reads a DuckDB database)


def server_identity(server: dict, folder: str) -> tuple:
    """What makes two contracts' servers one database: engine, host, port, database (a relative
    DuckDB file resolved from the contract's folder), schema, and a file server's path and format."""
    kind = engine_type(server)
    database = server.get("database")
    row = server_type(kind)
    if row is not None and row.database_file and isinstance(database, str) and database not in ("", ":memory:") \
            and not _URI.match(database):
        database = os.path.normpath(os.path.join(folder, os.path.expanduser(database)))
    return (kind, *(str(server.get(k) or "").lower() if k in ("host",) else server.get(k)
                    for k in ("host", "port")), database, server.get("schema"), server.get("path"),
            server.get("format"))
