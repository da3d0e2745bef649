"""What ODCS says about a server: its type names, which are SQL and which are files, and how two
contracts' servers are told apart."""

from __future__ import annotations

import os
import re



SQL_SERVER_TYPES = {
    "duckdb", "postgres", "postgresql", "mysql", "snowflake", "sqlserver", "redshift", "bigquery",
    "databricks", "trino", "presto", "oracle", "clickhouse", "vertica", "db2", "athena", "synapse",
    "cloudsql", "hive", "impala", "sqlite", "exasol", "teradata", "hana", "denodo", "dremio",
}



# Files that DuckDB reads as tables: ODCS server types and the formats with a reader
FILE_SERVER_TYPES = {"local", "s3", "gcs", "azure"}



FILE_FORMATS = {"csv", "parquet", "json"}



def is_file_server(server: dict) -> bool:
    return (str(server.get("type", "")).lower() in FILE_SERVER_TYPES
            and str(server.get("format", "")).lower() in FILE_FORMATS and bool(server.get("path")))



def checkable(server: dict) -> bool:
    """A server the checks can run against: a SQL database, or files DuckDB reads."""
    return str(server.get("type", "")).lower() in SQL_SERVER_TYPES or is_file_server(server)



def engine_type(server: dict) -> str:
    """The SQL engine of a server: its type, or DuckDB for files."""
    return "duckdb" if is_file_server(server) else str(server.get("type")).lower()



_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # md:, s3://, … (as connections reads a DuckDB database)



def server_identity(server: dict, folder: str) -> tuple:
    """What makes two contracts' servers one database: engine, host, port, database (a relative
    DuckDB file resolved from the contract's folder), schema, and a file server's path and format."""
    kind = engine_type(server)
    database = server.get("database")
    if kind == "duckdb" and isinstance(database, str) and database not in ("", ":memory:") \
            and not _URI.match(database):
        database = os.path.normpath(os.path.join(folder, os.path.expanduser(database)))
    return (kind, *(str(server.get(k) or "").lower() if k in ("host",) else server.get(k)
                    for k in ("host", "port")), database, server.get("schema"), server.get("path"),
            server.get("format"))



# Engines that tell "Orders" from "orders": every name is quoted as written (sql.quoted), so on
# PostgreSQL a name is exactly what it says; the others (DuckDB and files first) ignore case even
# quoted, and an engine not listed is taken to ignore it too, which can only classify more.
CASE_SENSITIVE_NAMES = {"postgres", "postgresql", "cloudsql"}



# the schema a bare table name means, where the server declares none
DEFAULT_SCHEMA = {"duckdb": "main", "postgres": "public", "postgresql": "public", "cloudsql": "public"}
