"""The parts of a table's name a contract chooses, kept inside what the operator drew: its server's
schema, catalog, database and namespace, and a remote location under the operator's prefixes.

* A schema or catalog the operator declared (its URL's `schema=`, the search path in its `options`,
  Snowflake's `database/schema` path, its `catalog=`; or `_SCHEMA`, `_CATALOG`) is the server's: a
  contract's server naming another is refused, as a host that disagrees is.
* With none declared, the contract's server chooses, but never a system schema or catalog of its
  type (servers.ServerType.system_names: pg_catalog, information_schema, DuckDB's `system` catalog…),
  whose tables show functions, settings, users and other sessions' objects.
* Either way, a name the operator lists in `_SCHEMAS` may be named.

Names are compared as the engine would read them: white space and quotes stripped, in any case.
A remote location is under a prefix by whole path segments (`s3://bucket` holds `s3://bucket/x`, not
`s3://bucket-x`), and one holding a `.` or `..` segment, a backslash or a percent-encoded dot, slash
or backslash is under none: a client may resolve them after the check.

This module is pure: no engine, no Dagster.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any, Mapping

from dq_contracts.odcs.servers import ServerType

_QUOTES = "\"`'[]"


def plain(name: Any) -> str:
    """A name as an engine compares it here: without surrounding white space and quotes, lower case."""
    text = str(name or "")
    while text != (stripped := text.strip().strip(_QUOTES)):
        text = stripped
    return text.lower()


def chosen_fields(row: ServerType) -> tuple[tuple[str, str | None], ...]:
    """(the server's ODCS field, which of the operator's names it must be: `schema`, `catalog`, or
    None where only the system names bind it). A `database` is the endpoint's (declaration compares
    it), but a contract may choose it where the operator names none (MySQL's is its schema)."""
    fields: dict[str, str | None] = {row.schema_key: "schema"}
    for field, role in (("schema", "schema"), ("namespace", "schema"), ("catalog", "catalog"),
                        ("database", None)):
        if not (field == "database" and row.database_file):  # a DuckDB `database` is a file (its roots)
            fields.setdefault(field, role)
    return tuple(fields.items())


def name_refusals(server: Mapping[str, Any], row: ServerType, declared: Mapping[str, tuple[str, ...]],
                  listed: tuple[str, ...], variables: str) -> list[tuple[str, str]]:
    """(the server's field, what is wrong) for each name of `server` outside what the operator drew:
    `declared` holds the operator's schemas and catalogs, `listed` its `_SCHEMAS`, `variables` the
    prefix of its variables (for the message)."""
    allowed = {plain(s) for s in listed}
    found = []
    for field, role in chosen_fields(row):
        value = server.get(field)
        name = plain(value)
        if not name or name in allowed:
            continue
        ours = declared.get(role, ()) if role else ()
        if ours and name not in {plain(o) for o in ours}:
            found.append((field, f"the contract says {field} {value!r}, the operator declared "
                                 f"{', '.join(map(repr, ours))}; not connecting (make them agree, leave {field} out "
                                 f"of the contract, or the operator lists it in {variables}_SCHEMAS)"))
            continue
        system = next((p for p in row.system_names if fnmatchcase(name, p)), None)
        if system is not None:
            found.append((field, f"{field} {value!r} is a system schema or catalog of {row.names[0]} ({system}): "
                                 "its tables are the server's own, not ones the operator offered; not connecting "
                                 f"(the operator may list it in {variables}_SCHEMAS)"))
    return found


_SEARCH_PATH = re.compile(r"search_path\s*=\s*([^\s]+)", re.I)


def url_names(query: list[tuple[str, str]], database: str | None, dialect: str) -> dict[str, tuple[str, ...]]:
    """The schemas and catalogs an operator's URL names: `schema=`, a search path in `options`
    (libpq's `-csearch_path=a,b`), the schema of Snowflake's `database/schema` path; `catalog=`."""
    schemas: list[str] = []
    catalogs: list[str] = []
    for key, value in query:
        key = key.strip().lower()
        if key == "schema":
            schemas.append(value)
        elif key == "catalog":
            catalogs.append(value)
        elif key == "options":
            for path in _SEARCH_PATH.findall(value):
                schemas.extend(p for p in path.split(",") if plain(p) and plain(p) != "$user")
    if dialect == "snowflake" and database and "/" in database:
        schemas.append(database.split("/", 1)[1])
    return {"schema": tuple(s for s in schemas if plain(s)), "catalog": tuple(c for c in catalogs if plain(c))}


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
_UNSAFE = re.compile(r"\\|%2e|%2f|%5c", re.I)


def remote_unsafe(location: str) -> str | None:
    """Why a remote location is under no prefix, or None: a `.` or `..` segment, a backslash, or a
    percent-encoded dot, slash or backslash (a client may resolve them after the prefix matched)."""
    rest = _SCHEME.sub("", location.strip(), count=1)
    if _UNSAFE.search(rest):
        return "holds a backslash or a percent-encoded '.', '/' or '\\'"
    if any(part in (".", "..") for part in re.split(r"[/?#]", rest)):
        return "holds a '.' or '..' segment"
    return None


def _normal(location: str) -> str:
    location = location.strip()
    scheme = _SCHEME.match(location)
    return scheme.group(1).lower() + location[scheme.end(1):] if scheme else location


def under_prefix(location: str, prefixes: tuple[str, ...]) -> bool:
    """Whether a remote location is under one of the operator's prefixes, by whole path segments."""
    if remote_unsafe(location):
        return False
    location = _normal(location)
    for prefix in map(_normal, prefixes):
        if not prefix or not location.startswith(prefix):
            continue
        if location == prefix or prefix.endswith(("/", ":")) or location[len(prefix)] == "/":
            return True
    return False
