"""SQLAlchemy engines from ODCS `servers` entries. Credentials and endpoints come from the operator.

A contract may be written by another team than the one whose credentials run it, so it may say
which of the operator's servers it means, never where credentials go. For a server named `prod`
(its `server` key; upper-cased, every other character turned into `_`), the operator declares:

* `DQ_CONTRACTS_PROD_URL`: the whole endpoint, a SQLAlchemy URL with its credentials; or
* `DQ_CONTRACTS_PROD_HOST` (and `_PORT`, `_DATABASE`), with `_USER` and `_PASSWORD`;
* optionally `_SSLMODE` and `_REQUIRE_AUTH` (libpq's `sslmode` and `require_auth`, e.g. `verify-full`,
  `scram-sha-256`), added to the connection.

The WarehouseResource's settings stand for the same variables. A contract whose server names a
host, port or database other than the operator's gets an error and no connection attempt; a
server the operator declared no endpoint for gets an error too: nothing is ever sent to a host
that only the contract names.

A relative DuckDB `database` path is read from the folder of the contract file that declares it,
so a contract means the same file from `dagster dev`, `dg`, the CLI and any working directory.

DuckDB check sessions (a `duckdb` server, or a file server that DuckDB reads) are bounded: at most
`DQ_CONTRACTS_<SERVER>_MEMORY_LIMIT` of memory (default 1GB, DuckDB's own default is 80 % of the
host's, per session: one per object checked in parallel), spilling to
`DQ_CONTRACTS_<SERVER>_TEMP_DIRECTORY` (default: a `dq_contracts_spill` folder in the system's temp
folder), with `DQ_CONTRACTS_<SERVER>_THREADS` threads (default DuckDB's: every core).
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any, Mapping

import sqlalchemy as sa

from dq_contracts.compiler import FILE_SERVER_TYPES, is_file_server

DRIVERS = {"postgres": "postgresql+psycopg2", "postgresql": "postgresql+psycopg2", "duckdb": "duckdb"}

# DuckDB settings of a check session: (setting, the operator's variable suffix, default)
DUCKDB_SETTINGS = (
    ("memory_limit", "MEMORY_LIMIT", lambda: "1GB"),
    ("temp_directory", "TEMP_DIRECTORY", lambda: os.path.join(tempfile.gettempdir(), "dq_contracts_spill")),
    ("threads", "THREADS", lambda: None),
)


@dataclass(frozen=True)
class Files:
    """Files of one ODCS file server, read as tables by DuckDB: `path` (a glob; `{model}` or
    `{object}` stands for the object's physical name) in `format` csv, parquet or json."""

    format: str
    path: str  # resolved: a relative local path is read from the contract's folder

    def path_of(self, physical_name: str) -> str:
        return self.path.replace("{model}", physical_name).replace("{object}", physical_name)

    def allowed(self) -> list[str]:
        """What the session may read: the folder (or bucket prefix) the glob starts in, nothing else."""
        fixed = re.split(r"[*?\[{]", self.path, maxsplit=1)[0]
        folder = fixed if fixed.endswith(("/", os.sep)) else os.path.dirname(fixed)
        return [folder.rstrip("/") + "/" if folder else "./"]


@dataclass(frozen=True)
class Connection:
    url: sa.URL
    schema: str | None
    secrets: tuple[str, ...]  # values never to show in a result, log or error
    files: Files | None = None  # set for a file server: the tables are files DuckDB reads
    duckdb: tuple[tuple[str, str], ...] = ()  # DuckDB session settings (DUCKDB_SETTINGS)


def env_prefix(server_name: str) -> str:
    return "DQ_CONTRACTS_" + re.sub(r"[^A-Za-z0-9]", "_", server_name).upper()


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # md:, s3://, https://, file: (a one-letter scheme is a drive)


def is_relative_file(database: str) -> bool:
    """A plain relative file path: not `:memory:`, not a URI or MotherDuck name, not absolute."""
    return not (database.startswith(":memory:") or _URI.match(database)
                or os.path.isabs(os.path.expanduser(database)))


def connection_for(server: Mapping[str, Any], environ: Mapping[str, str] | None = None,
                   folder: str | None = None) -> Connection:
    """The connection for one ODCS server; `folder` is the contract file's folder."""
    environ = os.environ if environ is None else environ
    name = str(server.get("server") or server.get("id") or "default")
    prefix = env_prefix(name)
    kind = str(server.get("type") or "").lower()
    schema = server.get("schema")
    if environ.get(f"{prefix}_URL"):
        url = sa.make_url(environ[f"{prefix}_URL"])
        if kind not in ("duckdb", *FILE_SERVER_TYPES):
            url = url.update_query_dict(_tls(environ, prefix))
            _agrees(server, url, name, f"{prefix}_URL")
        settings = _duckdb(environ, prefix) if url.get_backend_name() == "duckdb" else ()
        return Connection(url, schema, tuple(s for s in (url.password,) if s), None, settings)
    if is_file_server(server):
        path = str(server["path"])
        if kind == "local" and folder and is_relative_file(path):
            path = os.path.normpath(os.path.join(folder, path))
        files = Files(str(server["format"]).lower(), path)  # csv: DuckDB detects the delimiter
        return Connection(sa.URL.create("duckdb", database=":memory:"), None, (), files, _duckdb(environ, prefix))
    if kind == "duckdb":
        database = str(server.get("database") or ":memory:")
        if folder and is_relative_file(database):
            database = os.path.normpath(os.path.join(folder, database))
        return Connection(sa.URL.create("duckdb", database=database), schema, (), None, _duckdb(environ, prefix))
    if kind not in DRIVERS:
        raise ValueError(f"server {name!r}: type {kind!r} has no driver here; set {prefix}_URL to a "
                         "SQLAlchemy URL for it")
    if not environ.get(f"{prefix}_HOST"):
        raise EndpointError(f"server {name!r}: no endpoint declared by the operator; set {prefix}_URL, or "
                            f"{prefix}_HOST (with _PORT, _DATABASE, _USER, _PASSWORD). Credentials are never "
                            "sent to a host that only the contract names")
    password = environ.get(f"{prefix}_PASSWORD")
    port = environ.get(f"{prefix}_PORT")
    url = sa.URL.create(
        DRIVERS[kind],
        username=environ.get(f"{prefix}_USER"),
        password=password,
        host=environ[f"{prefix}_HOST"],
        port=int(port) if port else None,
        database=environ.get(f"{prefix}_DATABASE") or server.get("database"),
        query=_tls(environ, prefix),
    )
    _agrees(server, url, name, f"{prefix}_HOST/_PORT/_DATABASE")
    return Connection(url, schema, tuple(s for s in (password,) if s))


def _duckdb(environ: Mapping[str, str], prefix: str) -> tuple[tuple[str, str], ...]:
    chosen = ((name, environ.get(f"{prefix}_{suffix}") or default()) for name, suffix, default in DUCKDB_SETTINGS)
    return tuple((name, str(value)) for name, value in chosen if value)


class EndpointError(ValueError):
    """The contract's server and the operator's endpoint disagree, or there is no endpoint."""


def _tls(environ: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {key: environ[f"{prefix}_{key.upper()}"] for key in ("sslmode", "require_auth")
            if environ.get(f"{prefix}_{key.upper()}")}


def _agrees(server: Mapping[str, Any], url: sa.URL, name: str, declared: str) -> None:
    """A host, port or database the contract names must be the operator's: else no connection."""
    for key, ours in (("host", url.host), ("port", url.port), ("database", url.database)):
        theirs = server.get(key)
        if theirs in (None, "") or ours in (None, ""):
            continue
        if str(theirs).strip().lower() != str(ours).strip().lower():
            raise EndpointError(f"server {name!r}: the contract says {key} {theirs!r}, the operator's {declared} "
                                f"says {ours!r}; not connecting (make them agree, or leave {key} out of the "
                                "contract)")


def engine_for(connection: Connection) -> sa.Engine:
    # No ping before each checkout: an engine lives for one run, and every statement of an object
    # shares one connection (runner.Session); a connection lost mid-run fails its statements, which
    # the runner reports as the checks' errors.
    kwargs: dict[str, Any] = {}
    if connection.url.get_backend_name() == "duckdb":
        # set when the database opens: no statement, and nothing a contract's SQL could change
        kwargs["connect_args"] = {"config": dict(connection.duckdb)}
        if connection.files is None:
            kwargs["connect_args"]["read_only"] = True
    elif connection.url.get_backend_name() == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": 10}
        kwargs["use_native_hstore"] = False  # a catalog query per new connection, for a type no check reads
    engine = sa.create_engine(connection.url, **kwargs)
    if connection.url.get_backend_name() == "duckdb":
        allowed = connection.files.allowed() if connection.files is not None else None

        @sa.event.listens_for(engine, "connect")
        def confine(dbapi_connection, _record) -> None:
            # A contract may come from another team: its session reads its own database (or, for a
            # file server, the server's folder) and nothing else of the host, and no statement can
            # change that (DuckDB takes these settings only after connecting).
            if allowed is not None:
                dbapi_connection.execute("SET allowed_directories = $1", [allowed])
            dbapi_connection.execute("SET TimeZone = 'UTC'")  # timestamps compared in UTC, whatever the host's
            dbapi_connection.execute("SET enable_external_access = false")
            dbapi_connection.execute("SET lock_configuration = true")
    return engine
