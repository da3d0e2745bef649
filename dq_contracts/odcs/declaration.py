"""The operator's declaration of servers: what exists, where it is, and which contracts may use it.

A contract may be written by another team than the one whose credentials run it, so it only *names*
a server; everything else is the operator's. For each server name (upper-cased, every other
character turned into `_`: `prod` is `DQ_CONTRACTS_PROD_*`) the operator declares, in the
environment or in the WarehouseResource's `servers` (which win), the fields of `FIELDS`. Lists of
paths are separated by os.pathsep (`:` here), lists of prefixes by commas.

What a contract may then choose, checked when it is loaded (as problems of the contract, before
anything connects) and again when a connection is made:

* the server it uses must be bound to the contract's folder (`_CONTRACTS`; default: every contract
  loaded), of the declared `_TYPE`, at the declared endpoint;
* a DuckDB `database` or a file server's `path` must resolve (`~`, `..`, symlinks) inside the
  server's roots (`_ROOTS`; default: the folder that holds the contracts folder being loaded, so
  `contracts/x.yaml` may open `../demo_data/warehouse.duckdb`; never above the project:
  project_files.project_root), and only regular files are opened, never a hidden one, nor under the
  default root one named as credentials are (project_files.CREDENTIAL_NAMES);
* a remote location (`md:`, `s3://`, `https://`, any `scheme:`) only under a prefix in `_REMOTE`
  (none by default), by whole path segments (chosen_names.under_prefix);
* the server's schema, catalog and namespace: the operator's where it declared one, else never a
  system schema of the type, unless listed in `_SCHEMAS` (chosen_names.py).

`_READ_ONLY=true` is the operator's word that the server's credentials can only read: the engine
then runs a dialect it cannot make read-only and time-limited itself (engine/dialects.py), which it
refuses otherwise.

This module is pure: no engine, no Dagster.
"""

from __future__ import annotations

import glob as globbing
import os
import re
import stat
from dataclasses import dataclass, fields
from typing import Any, Mapping

from dq_contracts.odcs.chosen_names import name_refusals, plain, remote_unsafe, under_prefix, url_names
from dq_contracts.odcs.servers import (ENDPOINT, FORMAT_EXTENSIONS, is_file_server, lake_format, lake_location, local,
                                      same_type, schema_of_server, server_type)
from dq_contracts.odcs.project_files import credential_below, hidden_below, project_root
from dq_contracts.odcs.url_secrets import endpoint as url_endpoint, maskable, query_of, url_secrets

# (field, the variable's suffix, how a list is split: None for one value)
FIELDS: tuple[tuple[str, str, str | None], ...] = (
    ("type", "TYPE", None),
    ("url", "URL", None),
    ("host", "HOST", None),
    ("port", "PORT", None),
    ("database", "DATABASE", None),
    ("user", "USER", None),
    ("password", "PASSWORD", None),
    ("sslmode", "SSLMODE", None),
    ("require_auth", "REQUIRE_AUTH", None),
    ("memory_limit", "MEMORY_LIMIT", None),
    ("temp_directory", "TEMP_DIRECTORY", None),
    ("threads", "THREADS", None),
    ("max_temp_directory_size", "MAX_TEMP_DIRECTORY_SIZE", None),
    ("roots", "ROOTS", os.pathsep),
    ("remote", "REMOTE", ","),
    ("contracts", "CONTRACTS", os.pathsep),
    ("schemas", "SCHEMAS", ","),
    # the schema (an Iceberg namespace) and catalog of the server, where its URL names none: a
    # contract's server naming another is refused (chosen_names.py)
    ("schema", "SCHEMA", None),
    ("catalog", "CATALOG", None),
    ("read_only", "READ_ONLY", None),
    # an iceberg server's catalog (pyiceberg's `uri` and `type`, default sql) and warehouse; a
    # `_URL` suffix, so a password in it is masked like any other (declared_secrets)
    ("catalog_url", "CATALOG_URL", None),
    ("catalog_type", "CATALOG_TYPE", None),
    ("warehouse", "WAREHOUSE", None),
)

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # md:, s3://, https://, file: (a one-letter scheme is a drive)
_GLOB = re.compile(r"[*?\[{]")


@dataclass(frozen=True)
class ServerDeclaration:
    """One server as the operator declared it; None or () where nothing was said."""

    name: str
    type: str | None = None
    url: str | None = None
    host: str | None = None
    port: str | None = None
    database: str | None = None
    user: str | None = None
    password: str | None = None
    sslmode: str | None = None
    require_auth: str | None = None
    memory_limit: str | None = None
    temp_directory: str | None = None
    threads: str | None = None
    max_temp_directory_size: str | None = None  # DuckDB's bound on a session's spill (default 4GB)
    roots: tuple[str, ...] = ()
    remote: tuple[str, ...] = ()
    contracts: tuple[str, ...] = ()
    schemas: tuple[str, ...] = ()  # schemas beside the server's own that objects may name (`other.t`)
    schema: str | None = None  # the operator's schema (an Iceberg namespace); else its URL's, else the contract's
    catalog: str | None = None  # the operator's catalog (Databricks, an Iceberg catalog's name)
    # `true`: the operator vouches that the credentials can only read, so an engine that cannot make
    # a session read-only and time-limited itself (engine/dialects.py) may still run the checks
    read_only: str | None = None
    catalog_url: str | None = None  # an iceberg server's catalog, as pyiceberg's `uri`
    catalog_type: str | None = None  # pyiceberg's catalog type (`sql`, `rest`); default sql
    warehouse: str | None = None  # the catalog's warehouse location, where its tables are written

    @property
    def credentials_read_only(self) -> bool:
        return str(self.read_only or "").strip().lower() in ("true", "1", "yes")

    @property
    def declared(self) -> bool:
        """Whether the operator said anything at all about this server."""
        return any(getattr(self, f.name) not in (None, (), "") for f in fields(self) if f.name != "name")

    @property
    def variables(self) -> str:
        return env_prefix(self.name) + "_*"


# (the operator's variables, by prefix; the suffix of one holding a secret; how it holds it): every
# server's `_PASSWORD` and a `_URL`'s password, and the alerts' settings (support.ALERT_SETTINGS):
# the SMTP password, a password in the UI's URL or in a webhook host entry written as a URL (a URL's
# password as SQLAlchemy reads it, and a password-like query parameter: url_secrets.py)
SECRET_VARIABLES: tuple[tuple[str, str, str], ...] = (
    ("DQ_CONTRACTS_", "_PASSWORD", "value"),
    ("DQ_CONTRACTS_", "_URL", "url"),
    ("DQ_ALERTS_", "_PASSWORD", "value"),
    ("DQ_ALERTS_", "_URL", "url"),
    ("DQ_ALERTS_", "_HOSTS", "urls"),
)


def declared_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every password the operator declared (SECRET_VARIABLES), for any server or for the alerts:
    masked in everything a check shows, whichever server it ran on, so that no table can carry one out."""
    environ = os.environ if environ is None else environ
    found: list[str] = []
    for key, value in environ.items():
        how = next((h for prefix, suffix, h in SECRET_VARIABLES if key.startswith(prefix) and key.endswith(suffix)),
                   None)
        if not value or how is None:
            continue
        if how == "value":
            found.append(value)
            continue
        for url in value.split(",") if how == "urls" else (value,):
            found.extend(url_secrets(url))  # as SQLAlchemy and urllib read it, and a password in its query
    return maskable(found)


def env_prefix(server_name: str) -> str:
    return "DQ_CONTRACTS_" + re.sub(r"[^A-Za-z0-9]", "_", server_name).upper()


def declaration_of(name: str, environ: Mapping[str, str] | None = None) -> ServerDeclaration:
    """What the operator declared for server `name` in `environ` (default: the process's)."""
    environ = os.environ if environ is None else environ
    prefix = env_prefix(name)
    values: dict[str, Any] = {}
    for field, suffix, separator in FIELDS:
        raw = environ.get(f"{prefix}_{suffix}")
        if raw in (None, ""):
            continue
        values[field] = raw if separator is None else tuple(p.strip() for p in raw.split(separator) if p.strip())
    return ServerDeclaration(name, **values)


def server_name(server: Mapping[str, Any]) -> str:
    return str(server.get("server") or server.get("id") or "default")


def is_remote(location: str) -> bool:
    """A URI or URL-ish name (`md:x`, `s3://b/k`, `https://…`), not `:memory:` or a drive letter."""
    return bool(_URI.match(location))


def root_of_loaded(path: str | os.PathLike[str]) -> str:
    """The default root of what is loaded from `path`: the project that holds the contracts folder
    (for `contracts/` or `contracts/x.yaml`, the project; for `.` run in a project, that project,
    never its parent: project_files.project_root)."""
    path = os.path.abspath(path)
    return project_root(path if os.path.isdir(path) else os.path.dirname(path))


def inside(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def real_roots(declaration: ServerDeclaration, root: str | None) -> tuple[str, ...]:
    """The folders (or files) the server may open, as real paths: the declared roots, else `root`."""
    chosen = declaration.roots or ((root,) if root else ())
    return tuple(os.path.realpath(os.path.expanduser(r)) for r in chosen)


def local_path(location: str, folder: str | None) -> str:
    """A contract's local path as the engine reads it: `~` expanded, relative to the contract's folder."""
    location = os.path.expanduser(location)
    if folder and not os.path.isabs(location):
        location = os.path.join(folder, location)
    return location


def resolved(location: str) -> str:
    """The real path of a local path or glob: symlinks and `..` resolved in its fixed part (the
    longest part with no glob character), the rest as written."""
    fixed, rest = _split_glob(location)
    real = os.path.realpath(fixed or ".")
    return os.path.join(real, rest) if rest else real


def _split_glob(location: str) -> tuple[str, str]:
    match = _GLOB.search(location)
    if match is None:
        return location, ""
    cut = location.rfind(os.sep, 0, match.start()) + 1  # the glob's folder: a partial name is not a path
    return location[:cut], location[cut:]


def location_refusal(location: str, folder: str | None, declaration: ServerDeclaration,
                     root: str | None, what: str, extensions: tuple[str, ...] = ()) -> str | None:
    """Why the operator's declaration does not let a contract open `location` (a DuckDB database,
    a file server's path), or None. `what` names the field in the message. A location never names a
    hidden file or folder below the roots; in the default binding (no roots declared) none that
    holds credentials (project_files.CREDENTIAL_NAMES), and a file server's path (`extensions`: its
    format's file names) only files named for its format."""
    if location == "" or location.startswith(":memory:"):  # DuckDB's in-memory databases, named or not
        return None
    if is_remote(location):
        unsafe = remote_unsafe(location)
        if unsafe:
            return f"{what} {location!r} {unsafe}; a remote location is named without them"
        if under_prefix(location, declaration.remote):
            return None
        declared = ", ".join(declaration.remote) or "none"
        return (f"{what} {location!r} is a remote location the operator did not declare for server "
                f"{declaration.name!r} (remote prefixes: {declared}; set {env_prefix(declaration.name)}_REMOTE)")
    path = local_path(location, folder)
    _, rest = _split_glob(path)
    if ".." in rest.split(os.sep):
        return f"{what} {location!r} has '..' after a glob character; write the folder without it"
    roots = real_roots(declaration, root)
    real = resolved(path)
    if not roots or not inside(real.rstrip(os.sep), roots):
        return (f"{what} {location!r} resolves to {real}, outside the folders the operator lets server "
                f"{declaration.name!r} open ({', '.join(roots) or 'none'}; set {env_prefix(declaration.name)}_ROOTS)")
    if hidden_below(real, roots):
        return (f"{what} {location!r} names a hidden file or folder ({real}): a project's hidden files hold "
                "its settings and secrets, never a table")
    credential = None if declaration.roots else credential_below(real, roots)
    if credential:
        return (f"{what} {location!r} names {credential!r} ({real}), a name that holds credentials, never a "
                f"table: with no roots declared it is not opened (or set {env_prefix(declaration.name)}_ROOTS to "
                "the folder of its files)")
    if extensions and not declaration.roots and not real.lower().endswith(extensions):
        return (f"{what} {location!r} is not named as a {'/'.join(extensions)} file: with no roots declared, a "
                f"file server reads only files named for its format (or set {env_prefix(declaration.name)}_ROOTS "
                "to the folder of its files)")
    return None


def regular_files(pattern: str, roots: tuple[str, ...], extensions: tuple[str, ...] = (),
                  any_name: bool = False) -> list[str]:
    """The regular files a local glob matches inside `roots`, as real paths: a FIFO, a device, a
    socket or a folder is left out (os.stat, never open: open blocks on a FIFO). For a file server
    (`extensions`: its format's file names) so is a hidden file, and unless `any_name` (the operator
    declared the roots) a file not named for the format, and one named as credentials are."""
    found = []
    for match in sorted(globbing.glob(pattern, recursive=True)):
        real = os.path.realpath(match)
        if extensions and (hidden_below(real, roots) or not (any_name or real.lower().endswith(extensions))):
            continue
        if not any_name and credential_below(real, roots):  # the default root: no credential is a table
            continue
        if inside(real, roots) and is_regular(real):
            found.append(real)
    return list(dict.fromkeys(found))


def is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def endpoint_disagreements(server: Mapping[str, Any], host: Any, port: Any, database: Any) -> list[tuple[str, Any, Any]]:
    """(key, the contract's, the operator's) for each of host, port and database both name differently,
    as the server type's ODCS fields name them (Snowflake's `account` is its host)."""
    found = []
    row = server_type(server.get("type"))
    parts = {"host": host, "port": port, "database": database}
    for key, part in (row.endpoint if row is not None else ENDPOINT):
        ours = parts[part]
        theirs = server.get(key)
        if theirs in (None, "") or ours in (None, ""):
            continue
        if str(theirs).strip().lower() != str(ours).strip().lower():
            found.append((key, theirs, ours))
    return found


def declared_endpoint(declaration: ServerDeclaration) -> tuple[Any, Any, Any] | None:
    """(host, port, database) the operator declared, or None when no endpoint was."""
    if declaration.url:
        # the operator's own URL, read at load without the engine as SQLAlchemy reads it (a raw `/` in
        # its password is no path); connections.py reads it again with SQLAlchemy before anything connects
        return url_endpoint(declaration.url) or (None, None, None)
    if declaration.host:
        return declaration.host, declaration.port, declaration.database
    return None


def bound(declaration: ServerDeclaration, contract_file: str) -> bool:
    """Whether the contract file is in a folder the server is bound to (every file when none is named)."""
    if not declaration.contracts:
        return True
    real = os.path.realpath(contract_file)
    return inside(real, tuple(os.path.realpath(os.path.expanduser(f)) for f in declaration.contracts))


def operator_binds(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the operator has drawn the boundary anywhere (some server's roots or bound folders):
    then no server is open by default, and a DuckDB or file server the operator did not declare has
    no default root (another team cannot reach a bound server's file under a name of its own)."""
    environ = os.environ if environ is None else environ
    return any(k.startswith("DQ_CONTRACTS_") and k.endswith(("_ROOTS", "_CONTRACTS")) and v for k, v in environ.items())


def default_root(declaration: ServerDeclaration, root: str | None, environ: Mapping[str, str] | None) -> str | None:
    """The root a server may open when the operator declared no roots for it: the folder holding
    the contracts folder (the single-team default); for a server the operator did not declare at
    all, none once the operator binds anything."""
    return "" if not declaration.declared and operator_binds(environ) else root


_GLOB_CHARACTERS = re.compile(r"[*?\[\]{}]")


def server_refusals(server: Mapping[str, Any], index: int, contract_file: str, folder: str, root: str | None,
                    physical_names: tuple[str, ...], environ: Mapping[str, str] | None = None
                    ) -> list[tuple[list[str | int], str]]:
    """What the operator's declaration refuses in the server a contract will use, as (the parts of
    its path in the document, what is wrong)."""

    name = server_name(server)
    declaration = declaration_of(name, environ)
    kind = str(server.get("type") or "").lower()
    at = ["servers", index]
    root = default_root(declaration, root, environ)
    if declaration.declared and not bound(declaration, contract_file):
        return [(at, f"server {name!r} is not bound to this contract's folder ({os.path.dirname(contract_file)}); "
                     f"the operator binds it to {', '.join(declaration.contracts)} "
                     f"({env_prefix(name)}_CONTRACTS); not connecting")]
    found: list[tuple[list[str | int], str]] = []
    row = server_type(kind)
    declared_type, agrees = declaration.type, True
    if declared_type:
        agrees = same_type(kind, declared_type)
    elif declaration.url and row is not None and row.dialect and not row.files:
        # the URL's dialect says the type: it must be the dialect of the contract's type
        declared_type = declaration.url.split(":", 1)[0].split("+", 1)[0]
        agrees = declared_type.lower() == row.dialect
    if declared_type and kind and not agrees:
        found.append(([*at, "type"], f"server {name!r}: the contract says type {kind!r}, the operator declared "
                                     f"{declared_type!r}; not connecting"))
        return found
    if row is not None and row.database_file and not declaration.url:
        problem = location_refusal(str(server.get("database") or ""), folder, declaration, root, "database")
        if problem:
            found.append(([*at, "database"], f"server {name!r}: {problem}"))
    elif lake_format(dict(server)) == "delta":  # a table's folder, confined as a file server's path
        problem = location_refusal(lake_location(dict(server)), folder, declaration, root, "path")
        if problem:
            found.append(([*at, "path" if server.get("path") else "location"], f"server {name!r}: {problem}"))
    elif is_file_server(dict(server)) and not declaration.url:
        files = Files(str(server.get("format")), str(server["path"]))
        climbing = [p for p in physical_names if _GLOB_CHARACTERS.search(p)]
        if climbing or str(server["path"]).count("**") > 1:  # Python's glob grows without bound in them
            found.append(([*at, "path"], f"server {name!r}: a glob in an object's physicalName "
                                         f"({', '.join(map(repr, climbing[:3]))}) or more than one '**' in the "
                                         "path; write the object's file name, and at most one '**'"))
            return found
        for physical in physical_names or ("",):
            problem = location_refusal(files.pattern_of(physical) if physical else files.path, folder, declaration,
                                       root, "path", FORMAT_EXTENSIONS.get(files.format.lower(), ()))
            if problem:
                found.append(([*at, "path"], f"server {name!r}: {problem}"))
                break
    found.extend(([*at, field], f"server {name!r}: {problem}") for field, problem in
                 chosen_name_refusals(server, declaration))
    if not is_file_server(dict(server)) and not lake_format(dict(server)):
        found.extend(([*at, "schema"], f"server {name!r}: {problem}") for problem in
                     schema_refusals(server, declaration, physical_names, kind))
    if not local(kind):
        endpoint = declared_endpoint(declaration)
        if endpoint is not None:
            for key, theirs, ours in endpoint_disagreements(server, *endpoint):
                found.append(([*at, key], f"server {name!r}: the contract says {key} {theirs!r}, the operator "
                                          f"declared {ours!r}; not connecting (make them agree, or leave {key} "
                                          "out of the contract)"))
    return found


def endpoint_missing(server: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
    """Why no check can reach a warehouse server that needs the operator's endpoint (no `_URL`, no
    `_HOST`), or None; the words the engine's refusal uses when it connects (connections.py)."""
    kind = str(server.get("type") or "").lower()
    row = server_type(kind)
    if row is None or not row.dialect or row.files or row.database_file or local(kind) or lake_format(dict(server)):
        return None
    declaration = declaration_of(server_name(server), environ)
    if declaration.url or declaration.host:
        return None
    prefix = env_prefix(declaration.name)
    return (f"server {declaration.name!r}: no endpoint declared by the operator; set {prefix}_URL, or {prefix}_HOST "
            "(with _PORT, _DATABASE, _USER, _PASSWORD). Credentials are never sent to a host that only the "
            "contract names")


def schema_refusals(server: Mapping[str, Any], declaration: ServerDeclaration, physical_names: tuple[str, ...],
                    kind: str) -> list[str]:
    """An object whose physicalName names another schema (`pg_catalog.pg_authid`, `other.t`) or a
    catalog than the server's: its checks would read a table the operator never offered. Allowed
    only for the schemas the operator lists (`_SCHEMAS`)."""
    row = server_type(kind)
    own = plain(schema_of_server(server) or next(iter(declared_names(declaration).get("schema", ())), None)
                or (row.default_schema if row is not None else None))
    allowed = {own, *(plain(s) for s in declaration.schemas)}
    found = []
    for physical in physical_names:
        parts = [plain(p) for p in physical.split(".")]
        if len(parts) > 2:
            found.append(f"object {physical!r} names the catalog {parts[-3]!r}; an object is a table of the server's "
                         "own database, named `table` or `schema.table`")
        elif len(parts) == 2 and parts[0] not in allowed:
            found.append(f"object {physical!r} names the schema {parts[0]!r}, not the server's {own or '(none)'!r}; "
                         f"the operator may allow it ({env_prefix(declaration.name)}_SCHEMAS)")
    return found


def declared_names(declaration: ServerDeclaration) -> dict[str, tuple[str, ...]]:
    """The schemas and catalogs the operator declared for a server: `_SCHEMA` and `_CATALOG`, and
    what its `_URL` names (chosen_names.url_names)."""
    names = {"schema": (), "catalog": ()} if not declaration.url else url_names(
        query_of(declaration.url), (url_endpoint(declaration.url) or (None, None, None))[2],
        declaration.url.split(":", 1)[0].split("+", 1)[0].lower())
    return {"schema": (*((declaration.schema,) if declaration.schema else ()), *names["schema"]),
            "catalog": (*((declaration.catalog,) if declaration.catalog else ()), *names["catalog"])}


def chosen_name_refusals(server: Mapping[str, Any], declaration: ServerDeclaration) -> list[tuple[str, str]]:
    """(field, what is wrong) for each schema, catalog, database or namespace the contract's server
    names outside what the operator drew (chosen_names.name_refusals), at load and again at connection."""
    row = server_type(server.get("type"))
    if row is None:
        return []
    return name_refusals(server, row, declared_names(declaration), declaration.schemas, env_prefix(declaration.name))


class NoFileMatches(FileNotFoundError):
    """A file server's path matches no file: its words are this package's, from the contract's path
    and the operator's roots alone (no value of the data), so they are shown beside a classified column."""


RELATIVE_PATHS = "a relative path is read from the contract file's folder, not the current one"


def files_missing(server: Mapping[str, Any], folder: str, physical_names: tuple[str, ...]) -> str | None:
    """What a local file server's path matches no file for (the first object's), or None: said when
    the contract loads, where its line is, before every check fails on it. Only names are read."""
    path = str(server.get("path") or "")
    if not path or is_remote(path):
        return None
    files = Files(str(server.get("format")), os.path.normpath(local_path(path, folder)))
    for physical in physical_names or ("",):
        pattern = files.pattern_of(physical) if physical else files.path
        if not any(is_regular(p) for p in globbing.iglob(pattern, recursive=True)):
            relative = "" if os.path.isabs(os.path.expanduser(path)) else f"; {RELATIVE_PATHS} ({folder})"
            return (f"server {server_name(server)!r}: path {path!r} matches no file"
                    f"{f' for object {physical!r}' if physical else ''}: looked for {pattern}{relative}; every "
                    "check of it fails until the file is there")
    return None


@dataclass(frozen=True)
class Files:
    """Files of one ODCS file server, read as tables by DuckDB: `path` (a glob; `{model}` or
    `{object}` stands for the object's physical name) in `format` csv, parquet or json."""

    format: str
    path: str  # resolved: a relative local path is read from the contract's folder
    roots: tuple[str, ...] = ()  # real paths the server may open; () for a remote location
    extensions: tuple[str, ...] = ()  # its format's file names (servers.FORMAT_EXTENSIONS)
    any_name: bool = False  # the operator declared the roots: a file of any (not hidden) name
    written: str = ""  # the path as the contract writes it, for the words of a path that matches nothing

    def path_of(self, physical_name: str) -> str | list[str]:
        """What DuckDB reads for the object: a remote location as written; a local glob expanded
        here to the regular files it matches inside the roots (DuckDB would block on a FIFO)."""
        pattern = self.pattern_of(physical_name)
        if is_remote(pattern):
            return pattern
        found = regular_files(pattern, self.roots, self.extensions, self.any_name)
        if not found:
            raise NoFileMatches(f"no regular file inside the operator's roots matches {pattern}"
                                    + (f" (the server's path {self.written!r}: {RELATIVE_PATHS})"
                                       if self.written and not os.path.isabs(os.path.expanduser(self.written)) else ""))
        return found

    def pattern_of(self, physical_name: str) -> str:
        return self.path.replace("{model}", physical_name).replace("{object}", physical_name)

    def allowed_files(self) -> list[str]:
        return [r for r in self.roots if os.path.isfile(r)]

    def allowed(self) -> list[str]:
        """What the session may read: the operator's roots (a remote server: its bucket prefix)."""
        if self.roots:  # a root that is a file goes to allowed_paths (allowed_files)
            return [r.rstrip(os.sep) + os.sep for r in self.roots if not os.path.isfile(r)]
        fixed = re.split(r"[*?\[{]", self.path, maxsplit=1)[0]
        folder = fixed if fixed.endswith(("/", os.sep)) else os.path.dirname(fixed)
        return [folder.rstrip("/") + "/" if folder else "./"]
