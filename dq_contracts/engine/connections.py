"""SQLAlchemy engines from ODCS `servers` entries. What a server is comes from the operator.

A contract may be written by another team than the one whose credentials run it, so it only says
which of the operator's servers it means, never where credentials go or which files open. The
operator's declaration (declaration.py: `DQ_CONTRACTS_<SERVER>_URL`, or `_HOST`/`_PORT`/`_DATABASE`
with `_USER`/`_PASSWORD`, `_SSLMODE`, `_REQUIRE_AUTH`, `_TYPE`, `_ROOTS`, `_REMOTE`, `_CONTRACTS`,
`_SCHEMA`, `_CATALOG`, `_SCHEMAS`, `_READ_ONLY`, and DuckDB's `_MEMORY_LIMIT`, `_TEMP_DIRECTORY`,
`_MAX_TEMP_DIRECTORY_SIZE`, `_THREADS`; or the
WarehouseResource's settings) is checked when a contract loads (load.server_problems) and again
here, when it connects: a host, port or database other than the operator's, a type other than the
declared one, a file outside the roots or not a regular file, a remote location not declared, a
schema, catalog or namespace outside the operator's (declaration.chosen_name_refusals): an
error, and nothing is opened or sent. A server the operator declared no endpoint for gets an error too, and so does one whose
dialect's row (engine/dialects.py) cannot make a session read-only and time-limited, unless the
operator declares its credentials read-only (`_READ_ONLY=true`).

A relative DuckDB `database` path is read from the folder of the contract file that declares it,
so a contract means the same file from `dagster dev`, `dg`, the CLI and any working directory.

DuckDB check sessions (a `duckdb` server, or a file server that DuckDB reads) are bounded: at most
`_MEMORY_LIMIT` of memory (default 1GB, DuckDB's own default is 80 % of the host's, per session:
one per object checked in parallel), spilling to a folder of the engine's own below `_TEMP_DIRECTORY`
(default: a `dq_contracts_spill` folder in the system's temp folder), removed when the engine is
disposed (dialect_duckdb.SpillFolder: concurrent runs never share spill files), at most
`_MAX_TEMP_DIRECTORY_SIZE` of it (default 4GB, DuckDB's own is 90 % of the free disk), with `_THREADS` threads (default DuckDB's: every core). They
install and load no extension, and a warehouse file that defines macros (or types named like
built-in ones) is refused: its objects would change what the checks' SQL means. A PostgreSQL
database holding a cast its owner wrote a function for is refused for the same reason (a cast is
found by its types, whatever the search path). Both checks are the dialect rows' (engine/dialects.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

import sqlalchemy as sa

from dq_contracts.engine.dialect_duckdb import literal_values
from dq_contracts.engine.dialects import dialect_of, read_only_refusal
from dq_contracts.engine.sessions import CREDENTIALS_READ_ONLY
from dq_contracts.odcs.servers import (Handling, is_file_server, local, same_type, schema_of_server, server_type,
                                      server_type_of_dialect)
from dq_contracts.odcs.project_files import hidden_below, project_root
from dq_contracts.odcs.declaration import (ServerDeclaration, chosen_name_refusals, declaration_of, declared_names,
                                   default_root, endpoint_disagreements, env_prefix, inside,
                                   is_regular, is_remote, local_path, location_refusal, real_roots, server_name)
from dq_contracts.odcs.declaration import Files
from dq_contracts.odcs.url_secrets import maskable, url_secrets
from dq_contracts.odcs.servers import FORMAT_EXTENSIONS, lake_format, lake_location


@dataclass(frozen=True)
class Connection:
    url: sa.URL
    schema: str | None
    secrets: tuple[str, ...]  # values never to show in a result, log or error
    files: Any = None  # a file server's Files (DuckDB reads them), a lake server's lake.Lake
    duckdb: tuple[tuple[str, str], ...] = ()  # the dialect's session settings (dialect_duckdb.SETTINGS)
    roots: tuple[str, ...] | None = None  # where a DuckDB file may be (real paths); None: not confined
    credentials_read_only: bool = False  # the operator vouches for it (`_READ_ONLY`): any dialect may run


def connection_for(server: Mapping[str, Any], environ: Mapping[str, str] | None = None,
                   folder: str | None = None, root: str | None = None) -> Connection:
    """The connection for one ODCS server; `folder` is the contract file's folder, `root` the
    default root of what was loaded (declaration.root_of_loaded; default: the parent of `folder`, or
    `folder` itself when it is a project: project_files.project_root).

    The operator's declaration is checked again here (the files may have changed since loading):
    a DuckDB database or a file server's files must still be regular files inside the roots."""
    declaration = declaration_of(server_name(server), environ)
    name = declaration.name
    prefix = env_prefix(name)
    kind = str(server.get("type") or "").lower()
    # init --schema: `schema`, whatever the type; else the operator's (`_SCHEMA`, its URL's)
    schema = schema_of_server(server) or server.get("schema") or next(iter(declared_names(declaration)["schema"]),
                                                                       None)
    if root is None and folder:  # the project that holds the folder, or the folder that is one
        root = project_root(os.path.abspath(folder))
    root = default_root(declaration, root, environ)
    if declaration.type and kind and not same_type(kind, declaration.type):
        raise EndpointError(f"server {name!r}: the contract says type {kind!r}, the operator declared "
                            f"{declaration.type!r}; not connecting")
    row = server_type(kind)
    if row is not None and row.handling is Handling.NOT_ENFORCED:  # even with a `_URL`: not a table to query
        raise EndpointError(f"server {name!r}: {kind}: {row.how}; no check runs against it")
    for _, problem in chosen_name_refusals(server, declaration):  # as at load: the names stay the operator's
        raise EndpointError(f"server {name!r}: {problem}")
    vouched = declaration.credentials_read_only
    if declaration.url:
        url = operator_url(declaration.url)
        if not local(kind):
            url = url.update_query_dict(_tls(declaration))
            _agrees(server, url, name, f"{prefix}_URL")
            url = _with_catalog(server, url, declaration.catalog)
        _vouched_for(url, name, vouched)
        return Connection(url, _schema_of(url, schema), _secrets_of(url.password, declaration.url), None,
                          _settings(url.get_backend_name(), declaration), credentials_read_only=vouched)
    if lake_format(server):
        return _lake_connection(server, declaration, folder, root)
    if is_file_server(server):
        path, fmt = str(server["path"]), str(server["format"]).lower()
        extensions = FORMAT_EXTENSIONS.get(fmt, ())
        if root is not None or declaration.roots or is_remote(path):
            _refuse(location_refusal(path, folder, declaration, root, "path", extensions), name)
        if not is_remote(path):
            path = os.path.normpath(local_path(path, folder))
        roots = () if is_remote(path) else real_roots(declaration, root)
        # csv: DuckDB detects the delimiter; no hidden file, and with no roots declared only files
        # named for the format, whatever the glob matches
        files = Files(fmt, path, roots, extensions, any_name=bool(declaration.roots), written=str(server["path"]))
        return Connection(sa.URL.create(row.dialect, database=":memory:"), None, (), files,
                          _settings(row.dialect, declaration))
    if row is not None and row.database_file:
        database = str(server.get("database") or ":memory:")
        confined = root is not None or bool(declaration.roots)
        if confined or is_remote(database):
            _refuse(location_refusal(database, folder, declaration, root, "database"), name)
        if not (database.startswith(":memory:") or is_remote(database)):
            database = os.path.normpath(local_path(database, folder))
        return Connection(sa.URL.create(row.dialect, database=database), schema or row.default_schema, (), None,
                          _settings(row.dialect, declaration), real_roots(declaration, root) if confined else None)
    driver = dialect_of(row.dialect).driver if row is not None and row.dialect else None
    if driver is None:
        raise ValueError(f"server {name!r}: type {kind!r} has no driver here; set {prefix}_URL to a "
                         "SQLAlchemy URL for it")
    if not declaration.host:
        raise EndpointError(f"server {name!r}: no endpoint declared by the operator; set {prefix}_URL, or "
                            f"{prefix}_HOST (with _PORT, _DATABASE, _USER, _PASSWORD). Credentials are never "
                            "sent to a host that only the contract names")
    url = sa.URL.create(
        driver,
        username=declaration.user,
        password=declaration.password,
        host=declaration.host,
        port=int(declaration.port) if declaration.port else None,
        database=declaration.database or server.get("database"),
        query=_tls(declaration),
    )
    _agrees(server, url, name, f"{prefix}_HOST/_PORT/_DATABASE")
    _vouched_for(url, name, vouched)
    return Connection(url, _schema_of(url, schema), tuple(s for s in (declaration.password,) if s),
                      credentials_read_only=vouched)


def operator_url(text: str) -> sa.URL:
    """The operator's URL; one naming no driver (`postgresql://`) speaks the driver its dialect's row
    names (psycopg2, as a URL built from `_HOST`…), not SQLAlchemy's default (2.1's is psycopg)."""
    url = sa.make_url(text)
    driver = dialect_of(url.get_backend_name()).driver or ""
    if "+" not in url.drivername and "+" in driver:
        url = url.set(drivername=f"{url.get_backend_name()}+{driver.split('+', 1)[1]}")
    return url


def endpoint_of(url: sa.URL) -> str:
    """The endpoint a URL reaches, for a message: its dialect, host, port and database, never its
    user or password."""
    host = f"{url.host}{f':{url.port}' if url.port else ''}/" if url.host else ""
    place = f"{host}{url.database or ''}".rstrip("/")
    return f"{url.get_backend_name()} {place}".strip()


def _lake_connection(server: Mapping[str, Any], declaration: ServerDeclaration, folder: str | None,
                     root: str | None) -> Connection:
    """A lake server: an in-memory DuckDB session in which its tables are registered (engine/lake.py).
    A Delta folder must be inside the roots (or a declared remote prefix), as a file server's path;
    an Iceberg server reads the operator's catalog, never the contract's `catalogUrl`."""
    from dq_contracts.engine.lake import Lake

    name, fmt = declaration.name, lake_format(dict(server))
    roots = real_roots(declaration, root)
    secrets: tuple[str, ...] = ()
    if fmt == "delta":
        location = lake_location(dict(server))
        _refuse(location_refusal(location, folder, declaration, root, "path"), name)
        if not is_remote(location):
            location = os.path.normpath(local_path(location, folder))
            _refuse(_hidden(location, roots), name)
        lake = Lake("delta", location, roots, declaration.remote)
    else:
        if not declaration.catalog_url:
            raise EndpointError(f"server {name!r}: no Iceberg catalog declared by the operator; set "
                                f"{env_prefix(name)}_CATALOG_URL (pyiceberg's catalog uri; _CATALOG_TYPE, default "
                                "sql, and _WAREHOUSE). The contract's catalogUrl is never contacted")
        # the contract's `catalog` names a catalog of the operator's endpoint (a SQL catalog's rows are keyed by it)
        # (chosen_name_refusals kept it inside the operator's `_CATALOG` and `_SCHEMA`, where declared); the
        # catalog is built from these properties alone (lake.Lake._catalog), never a configuration of that name
        properties = {"uri": declaration.catalog_url, "type": declaration.catalog_type or "sql",
                      "name": str(server.get("catalog") or declaration.catalog or "default")}
        if declaration.warehouse:
            properties["warehouse"] = declaration.warehouse
        namespace = str(server.get("namespace") or server.get("schema") or declaration.schema or "default")
        lake = Lake("iceberg", namespace, roots, declaration.remote, tuple(sorted(properties.items())))
        password = sa.make_url(declaration.catalog_url).password if "://" in declaration.catalog_url else None
        secrets = _secrets_of(password, declaration.catalog_url)
    return Connection(sa.URL.create("duckdb", database=":memory:"), None, secrets, lake,
                      _settings("duckdb", declaration))


def _secrets_of(password: str | None, text: str) -> tuple[str, ...]:
    """A URL's secrets: SQLAlchemy's password (kept whatever its length, as before), and what url_secrets
    finds in the text (the same password, and any password-like query parameter the driver is given)."""
    return tuple(dict.fromkeys(s for s in (password, *maskable(url_secrets(text))) if s))


def _hidden(location: str, roots: tuple[str, ...]) -> str | None:
    from dq_contracts.odcs.declaration import resolved

    real = resolved(location)
    if hidden_below(real, roots):
        return f"path {location!r} names a hidden file or folder ({real}): a project's hidden files hold its settings"
    return None


def _schema_of(url: sa.URL, schema: Any) -> Any:
    """Tables are always named with their schema, so that a bare name never finds a catalog table
    (`pg_authid`, DuckDB's `pg_settings`) and a PostgreSQL check session can resolve names in
    pg_catalog alone (dialects.Dialect.names_need_schema): the default schema of the server type
    speaking the URL's dialect (`public`, `main`) when the contract names none."""
    row = server_type_of_dialect(url.get_backend_name())
    return schema or dialect_of(url.get_backend_name()).url_schema(url) or (
        row.default_schema if row is not None else schema)


def _vouched_for(url: sa.URL, name: str, vouched: bool) -> None:
    """A dialect whose row cannot make a session read-only and time-limited connects only when the
    operator declared the credentials read-only."""
    refusal = None if vouched else read_only_refusal(url.get_backend_name(), name)
    if refusal:
        raise EndpointError(refusal)


def _refuse(problem: str | None, name: str) -> None:
    if problem:
        raise EndpointError(f"server {name!r}: {problem}; not opening it")


def _settings(dialect: str | None, declaration: ServerDeclaration) -> tuple[tuple[str, str], ...]:
    """The dialect's session settings, as the operator declared them or by default (DuckDB's memory,
    spill folder and threads)."""
    settings = dialect_of(dialect).settings
    chosen = ((name, getattr(declaration, field) or default()) for name, field, default in settings)
    return tuple((name, str(value)) for name, value in chosen if value)


class EndpointError(ValueError):
    """The contract's server and the operator's declaration disagree, or there is no endpoint."""


def _tls(declaration: ServerDeclaration) -> dict[str, str]:
    return {key: getattr(declaration, key) for key in ("sslmode", "require_auth") if getattr(declaration, key)}


def _with_catalog(server: Mapping[str, Any], url: sa.URL, declared: str | None = None) -> sa.URL:
    """The URL reading the catalog the contract's server names (else the operator's `_CATALOG`), where
    the URL names none: a choice inside the operator's endpoint and credentials (one that names another
    is refused by _agrees, or by chosen_name_refusals; a system catalog by the latter)."""
    row = dialect_of(url.get_backend_name())
    catalog = str(server.get("catalog") or declared or "").strip()
    if row.with_catalog is None or not catalog or row.url_catalog(url):
        return url
    if not _PLAIN_NAME.fullmatch(catalog):  # the driver's own SQL quotes it in backticks, as written
        raise EndpointError(f"server {server_name(server)!r}: the contract's catalog {catalog!r} is not a plain name "
                            "(letters, digits, `_`, `-`); not connecting (the operator may name it in the URL's "
                            "`catalog=`)")
    return row.with_catalog(url, catalog)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,254}")


def _agrees(server: Mapping[str, Any], url: sa.URL, name: str, declared: str) -> None:
    """A host, port or database the contract names must be the operator's: else no connection."""
    catalog = dialect_of(url.get_backend_name()).url_catalog(url)
    disagree = endpoint_disagreements(server, url.host, url.port, url.database)
    if catalog and server.get("catalog") and str(server["catalog"]).strip().lower() != str(catalog).strip().lower():
        disagree.append(("catalog", server["catalog"], catalog))
    for key, theirs, ours in disagree:
        raise EndpointError(f"server {name!r}: the contract says {key} {theirs!r}, the operator's {declared} "
                            f"says {ours!r}; not connecting (make them agree, or leave {key} out of the "
                            "contract)")


def engine_for(connection: Connection) -> sa.Engine:
    """The engine of a connection, built as its dialect's row says (engine/dialects.py); a DuckDB
    file is checked first, again (it may have changed since the contract was loaded): a regular
    file (os.stat, never open: a FIFO would block), inside the roots."""
    # No ping before each checkout: an engine lives for one run, and every statement of an object
    # shares one connection (sessions.Session); a connection lost mid-run fails its statements, which
    # the runner reports as the checks' errors.
    backend = connection.url.get_backend_name()
    row = dialect_of(backend)
    database = connection.url.database or ":memory:"
    server = server_type_of_dialect(backend)
    if server is not None and server.database_file and connection.files is None \
            and not (database.startswith(":memory:") or is_remote(database)):
        real = os.path.realpath(database)
        if connection.roots is not None and not inside(real, connection.roots):
            raise EndpointError(f"database {database} is {real}, outside the operator's roots "
                                f"({', '.join(connection.roots)}); not opening it")
        if connection.roots is not None and _hidden(real, connection.roots):
            raise EndpointError(f"database {database} is {real}, a hidden file or folder; not opening it")
        if not is_regular(real):
            what = "is not a regular file" if os.path.lexists(real) else "does not exist"
            raise EndpointError(f"database {database} {what}; not opening it")
    # sessions._begin opens a session the row cannot make read-only only on an engine marked so
    options: dict[str, Any] = {CREDENTIALS_READ_ONLY: True} if connection.credentials_read_only else {}
    engine = sa.create_engine(connection.url, execution_options=options, **row.engine_options(connection))
    if row.prepare is not None:
        row.prepare(engine, connection)
    if row.inline_values:
        literal_values(engine)
    return engine
