"""SQLAlchemy engines from ODCS `servers` entries. What a server is comes from the operator.

A contract may be written by another team than the one whose credentials run it, so it only says
which of the operator's servers it means, never where credentials go or which files open. The
operator's declaration (declaration.py: `DQ_CONTRACTS_<SERVER>_URL`, or `_HOST`/`_PORT`/`_DATABASE`
with `_USER`/`_PASSWORD`, `_SSLMODE`, `_REQUIRE_AUTH`, `_TYPE`, `_ROOTS`, `_REMOTE`, `_CONTRACTS`,
and DuckDB's `_MEMORY_LIMIT`, `_TEMP_DIRECTORY`, `_THREADS`; or the WarehouseResource's settings)
is checked when a contract loads (core.server_problems) and again here, when it connects: a host,
port or database other than the operator's, a type other than the declared one, a file outside the
roots or not a regular file, a remote location not declared: an error, and nothing is opened or
sent. A server the operator declared no endpoint for gets an error too.

A relative DuckDB `database` path is read from the folder of the contract file that declares it,
so a contract means the same file from `dagster dev`, `dg`, the CLI and any working directory.

DuckDB check sessions (a `duckdb` server, or a file server that DuckDB reads) are bounded: at most
`_MEMORY_LIMIT` of memory (default 1GB, DuckDB's own default is 80 % of the host's, per session:
one per object checked in parallel), spilling to `_TEMP_DIRECTORY` (default: a `dq_contracts_spill`
folder in the system's temp folder), with `_THREADS` threads (default DuckDB's: every core). They
install and load no extension, and a warehouse file that defines macros (or types named like
built-in ones) is refused: its objects would change what the checks' SQL means.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any, Mapping

import sqlalchemy as sa

from dq_contracts.odcs.servers import FILE_SERVER_TYPES, is_file_server
from dq_contracts.odcs.declaration import (ServerDeclaration, declaration_of, default_root, endpoint_disagreements,
                                   env_prefix, inside,
                                   is_regular, is_remote, local_path, location_refusal, real_roots, same_type, server_name)
from dq_contracts.odcs.declaration import Files

DRIVERS = {"postgres": "postgresql+psycopg2", "postgresql": "postgresql+psycopg2", "duckdb": "duckdb"}

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


@dataclass(frozen=True)
class Connection:
    url: sa.URL
    schema: str | None
    secrets: tuple[str, ...]  # values never to show in a result, log or error
    files: Files | None = None  # set for a file server: the tables are files DuckDB reads
    duckdb: tuple[tuple[str, str], ...] = ()  # DuckDB session settings (DUCKDB_SETTINGS)
    roots: tuple[str, ...] | None = None  # where a DuckDB file may be (real paths); None: not confined


def is_relative_file(database: str) -> bool:
    """A plain relative file path: not `:memory:`, not a URI or MotherDuck name, not absolute."""
    return not (database.startswith(":memory:") or is_remote(database)
                or os.path.isabs(os.path.expanduser(database)))


def connection_for(server: Mapping[str, Any], environ: Mapping[str, str] | None = None,
                   folder: str | None = None, root: str | None = None) -> Connection:
    """The connection for one ODCS server; `folder` is the contract file's folder, `root` the
    default root of what was loaded (declaration.root_of_loaded; default: the parent of `folder`).

    The operator's declaration is checked again here (the files may have changed since loading):
    a DuckDB database or a file server's files must still be regular files inside the roots."""
    declaration = declaration_of(server_name(server), environ)
    name = declaration.name
    prefix = env_prefix(name)
    kind = str(server.get("type") or "").lower()
    schema = server.get("schema")
    if root is None and folder:
        root = os.path.dirname(os.path.abspath(folder))
    root = default_root(declaration, root, environ)
    if declaration.type and kind and not same_type(kind, declaration.type):
        raise EndpointError(f"server {name!r}: the contract says type {kind!r}, the operator declared "
                            f"{declaration.type!r}; not connecting")
    if declaration.url:
        url = sa.make_url(declaration.url)
        if kind not in ("duckdb", *FILE_SERVER_TYPES):
            url = url.update_query_dict(_tls(declaration))
            _agrees(server, url, name, f"{prefix}_URL")
        settings = _duckdb(declaration) if url.get_backend_name() == "duckdb" else ()
        return Connection(url, _schema_of(url, schema), tuple(s for s in (url.password,) if s), None, settings)
    if is_file_server(server):
        path = str(server["path"])
        if root is not None or declaration.roots or is_remote(path):
            _refuse(location_refusal(path, folder, declaration, root, "path"), name)
        if not is_remote(path):
            path = os.path.normpath(local_path(path, folder))
        roots = () if is_remote(path) else real_roots(declaration, root)
        files = Files(str(server["format"]).lower(), path, roots)  # csv: DuckDB detects the delimiter
        return Connection(sa.URL.create("duckdb", database=":memory:"), None, (), files, _duckdb(declaration))
    if kind == "duckdb":
        database = str(server.get("database") or ":memory:")
        confined = root is not None or bool(declaration.roots)
        if confined or is_remote(database):
            _refuse(location_refusal(database, folder, declaration, root, "database"), name)
        if not (database.startswith(":memory:") or is_remote(database)):
            database = os.path.normpath(local_path(database, folder))
        return Connection(sa.URL.create("duckdb", database=database), schema or "main", (), None, _duckdb(declaration),
                          real_roots(declaration, root) if confined else None)
    if kind not in DRIVERS:
        raise ValueError(f"server {name!r}: type {kind!r} has no driver here; set {prefix}_URL to a "
                         "SQLAlchemy URL for it")
    if not declaration.host:
        raise EndpointError(f"server {name!r}: no endpoint declared by the operator; set {prefix}_URL, or "
                            f"{prefix}_HOST (with _PORT, _DATABASE, _USER, _PASSWORD). Credentials are never "
                            "sent to a host that only the contract names")
    url = sa.URL.create(
        DRIVERS[kind],
        username=declaration.user,
        password=declaration.password,
        host=declaration.host,
        port=int(declaration.port) if declaration.port else None,
        database=declaration.database or server.get("database"),
        query=_tls(declaration),
    )
    _agrees(server, url, name, f"{prefix}_HOST/_PORT/_DATABASE")
    return Connection(url, _schema_of(url, schema), tuple(s for s in (declaration.password,) if s))


def _schema_of(url: sa.URL, schema: Any) -> Any:
    """Tables are always named with their schema, so that a bare name never finds a catalog table
    (`pg_authid`, DuckDB's `pg_settings`) and a PostgreSQL check session can resolve names in
    pg_catalog alone (runner._settings): `public` or `main`, the engine's default, when the contract
    names none."""
    return schema or {"postgresql": "public", "duckdb": "main"}.get(url.get_backend_name(), schema)


def _refuse(problem: str | None, name: str) -> None:
    if problem:
        raise EndpointError(f"server {name!r}: {problem}; not opening it")


def _duckdb(declaration: ServerDeclaration) -> tuple[tuple[str, str], ...]:
    chosen = ((name, getattr(declaration, field) or default()) for name, field, default in DUCKDB_SETTINGS)
    return tuple((name, str(value)) for name, value in chosen if value)


class EndpointError(ValueError):
    """The contract's server and the operator's declaration disagree, or there is no endpoint."""


def _tls(declaration: ServerDeclaration) -> dict[str, str]:
    return {key: getattr(declaration, key) for key in ("sslmode", "require_auth") if getattr(declaration, key)}


def _agrees(server: Mapping[str, Any], url: sa.URL, name: str, declared: str) -> None:
    """A host, port or database the contract names must be the operator's: else no connection."""
    for key, theirs, ours in endpoint_disagreements(server, url.host, url.port, url.database):
        raise EndpointError(f"server {name!r}: the contract says {key} {theirs!r}, the operator's {declared} "
                            f"says {ours!r}; not connecting (make them agree, or leave {key} out of the "
                            "contract)")


def engine_for(connection: Connection) -> sa.Engine:
    """The engine of a connection; a DuckDB file is checked first, again (it may have changed since
    the contract was loaded): a regular file (os.stat, never open: a FIFO would block), inside the
    roots."""
    # No ping before each checkout: an engine lives for one run, and every statement of an object
    # shares one connection (runner.Session); a connection lost mid-run fails its statements, which
    # the runner reports as the checks' errors.
    kwargs: dict[str, Any] = {}
    database = connection.url.database or ":memory:"
    if connection.url.get_backend_name() == "duckdb" and connection.files is None \
            and not (database.startswith(":memory:") or is_remote(database)):
        real = os.path.realpath(database)
        if connection.roots is not None and not inside(real, connection.roots):
            raise EndpointError(f"database {database} is {real}, outside the operator's roots "
                                f"({', '.join(connection.roots)}); not opening it")
        if not is_regular(real):
            what = "is not a regular file" if os.path.lexists(real) else "does not exist"
            raise EndpointError(f"database {database} {what}; not opening it")
    if connection.url.get_backend_name() == "duckdb":
        # set when the database opens: no statement, and nothing a contract's SQL could change
        kwargs["connect_args"] = {"config": {**dict(NO_EXTENSIONS), **dict(connection.duckdb)}}
        if connection.files is None:
            kwargs["connect_args"]["read_only"] = True
    elif connection.url.get_backend_name() == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": 10}
        kwargs["use_native_hstore"] = False  # a catalog query per new connection, for a type no check reads
    engine = sa.create_engine(connection.url, **kwargs)
    if connection.url.get_backend_name() == "duckdb":
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
    return engine


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


class RedefinitionError(ValueError):
    """A warehouse file defines functions or types that would change what the checks mean."""


def refuse_redefinitions(dbapi_connection: Any, database: str | None) -> None:
    found = [row[0] for row in dbapi_connection.execute(REDEFINITIONS).fetchall()]
    if found:
        shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
        raise RedefinitionError(f"the DuckDB file {database} defines {shown}: a warehouse file cannot redefine "
                                "what the checks call, so none of its checks runs (drop them from the file, or "
                                "check a copy without them)")
