"""The schema check: the object's declared columns against the catalog, as one readable difference.

Fails on a declared column that is missing, a declared `physicalType` that differs, or, where no
`physicalType` is declared, a `logicalType` whose family the column's type is not of (an `integer`
stored as VARCHAR, a `date` stored as text). Types are the engine's: the catalog's own spelling of
each column's type (not SQLAlchemy's reflection, which knows no `xml`), and where the engine
resolves type names (the Dialect row's `resolve_types`: DuckDB, PostgreSQL) the declared type as
the engine resolves it, so `bpchar` is VARCHAR on DuckDB and `int4` is integer on PostgreSQL. Where
it cannot, or does not know the name, spellings are normalised by the row's `type_spellings`.
`resolve_type` and `is_declared_type` answer for one declared type (a nested field's).
Undeclared columns, and `required: true` on a column the catalog says is nullable, are reported
as information: they never fail the check.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

import sqlalchemy as sa

from dq_contracts.engine.dialect_duckdb import READERS
from dq_contracts.engine.dialects import TYPE_SPELLINGS, MissingTable, dialect_of
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.nested import nested_differences
from dq_contracts.odcs.servers import server_type_of_dialect, sqlglot_dialect
from dq_contracts.odcs.type_names import plain_type, split_arguments

# The family of a type name as the engines spell them (lower case, without arguments); an engine's
# own types count in the family their values belong to: a UUID is a string (its text form is what
# every check reads), a list an array, a struct or map an object
_FAMILY_NAMES = {
    "integer": ("tinyint", "smallint", "integer", "int", "bigint", "hugeint", "utinyint", "usmallint", "uinteger",
                "ubigint", "uhugeint", "int1", "int2", "int4", "int8", "mediumint", "long", "short", "byte",
                "signed", "unsigned", "smallserial", "serial", "bigserial"),
    "number": ("decimal", "numeric", "number", "real", "float", "double", "double precision", "float4", "float8",
               "float64", "bignumeric", "money"),
    "string": ("varchar", "character varying", "char", "character", "bpchar", "text", "string", "uuid", "citext",
               "name", "nvarchar", "nchar", "tinytext", "mediumtext", "longtext", "clob", "enum"),
    "boolean": ("boolean", "bool", "bit"),
    "date": ("date",),
    "timestamp": ("timestamp", "timestamp without time zone", "timestamp with time zone", "timestamptz", "datetime",
                  "timestamp_ntz", "timestamp_ltz", "timestamp_tz", "timestamp_s", "timestamp_ms", "timestamp_ns"),
    "time": ("time", "time without time zone", "time with time zone", "timetz"),
}
FAMILIES: Mapping[str, str] = {name: family for family, names in _FAMILY_NAMES.items() for name in names}
# ODCS logicalType → the families a column of that logical type may have
LOGICAL_FAMILIES: Mapping[str, tuple[str, ...]] = {
    "integer": ("integer",), "number": ("number", "integer"), "string": ("string",), "boolean": ("boolean",),
    "date": ("date", "timestamp"), "timestamp": ("timestamp", "date"), "time": ("time",),
    "array": ("array",), "object": ("object",),
}


def family_of(type_text: str) -> str | None:
    """The family of a type as the catalog spells it (`BIGINT[]`: array; `STRUCT(a INTEGER)`,
    `MAP(...)`: object; `character varying(8)`: string); None for a type of no known family."""
    text = re.sub(r"\s+", " ", str(type_text).strip().lower())
    if text.endswith("]") or text.startswith(("list", "array")):
        return "array"
    if text.startswith(("struct", "map", "row(")):
        return "object"
    return FAMILIES.get(split_arguments(text)[0])


def normalise_type(text: str, spellings: Mapping[str, str] = TYPE_SPELLINGS) -> str:
    """`int4`/`INTEGER`, `varchar(2)`/`VARCHAR(2)`, `numeric(12,2)`/`DECIMAL(12,2)` compare equal
    (`spellings`: the dialect's row's): for the engines that cannot resolve a type name, and for a
    name the engine does not know."""
    lowered = re.sub(r"\s+", " ", str(text).strip().lower())
    # PostgreSQL writes the precision mid-name: timestamp(3) with time zone → timestamp with time zone(3)
    lowered = re.sub(r"^(timestamp|time)\s*(\(\d+\))\s+(with(?:out)? time zone)$", r"\1 \3\2", lowered)
    match = re.match(r"^([a-z0-9_ ]+?)\s*(\(.*\))?$", lowered)  # `timestamp_ltz`, `bool_`: names hold _
    if not match:
        return lowered
    base, args = match.group(1).strip(), (match.group(2) or "").replace(" ", "")
    return spellings.get(base, base) + args


def _alike(a: str, b: str) -> bool:
    """Equal; or the same name where one side has no arguments (DuckDB keeps no VARCHAR length)."""
    if a == b:
        return True
    return ("(" not in a or "(" not in b) and a.split("(")[0] == b.split("(")[0]


def same_type(real: str, declared: str, spellings: Mapping[str, str] = TYPE_SPELLINGS) -> bool:
    """Equal after normalising; arguments count only when both sides have them, because some
    warehouses drop them."""
    return _alike(normalise_type(real, spellings), normalise_type(declared, spellings))


def _canonical(resolved: str) -> str:
    base, args = split_arguments(resolved)
    return base.lower() + args


# connection.info: the engine's verdict on each declared type, per (dialect, declared): a run asks once
RESOLVED = "dq_contracts_resolved_types"


def resolve_types(connection: sa.Connection, declared: Iterable[str]) -> dict[str, str | None]:
    """Each declared type as the engine names it (`bpchar` → `VARCHAR` on DuckDB, `int4` → `integer`
    on PostgreSQL), arguments kept; None where the engine cannot resolve names (its row has no
    `resolve_types`), does not know the name, or the text is not a plain type name (type_names).
    One round trip for all the names not yet resolved on this connection."""
    name = connection.dialect.name
    row, known = dialect_of(name), connection.info.setdefault(RESOLVED, {})
    judged = {text: plain_type(text, sqlglot_dialect(name)) for text in dict.fromkeys(declared)}
    wanted = [plain for text, plain in judged.items() if plain is not None and (name, plain) not in known]
    if wanted and row.resolve_types is not None:
        known.update({(name, plain): found for plain, found in row.resolve_types(connection, wanted).items()})
    return {text: known.get((name, plain)) for text, plain in judged.items()}


def resolve_type(connection: sa.Connection, declared: str) -> str | None:
    """One declared type as the engine names it, or None (resolve_types): the hook the comparison of
    nested types calls for each field's declared type."""
    return resolve_types(connection, [declared])[declared]


def type_differs(connection: sa.Connection, found: Mapping[str, Any], declared: str, resolved: str | None) -> bool:
    """Whether a column's type differs from the declared one: by the engine's own names where it
    resolved the declared type and the catalog gave the column's (`resolved`); else by spelling.
    A native UUID is what a declared text type says (README: Semantics decided here): a file's
    UUID-shaped strings are read as UUID by DuckDB, and a UUID's text is all any check reads."""
    if split_arguments(str(found["type_text"]).lower())[0] == "uuid" and family_of(resolved or declared) == "string":
        return False
    if resolved is not None and found.get("resolved"):
        return not _alike(_canonical(found["resolved"]), _canonical(resolved))
    return not same_type(found["type_text"], declared, dialect_of(connection.dialect.name).type_spellings)


def is_declared_type(connection: sa.Connection, observed: str, declared: str) -> bool:
    """Whether a type the engine names `observed` (as its catalog and `resolve_types` name types:
    DuckDB's `INTEGER`, PostgreSQL's `format_type` without the modifier, then the modifier's numbers)
    is the `declared` one: the hook for comparing a nested field's declared type."""
    found = {"type_text": observed,
             "resolved": observed if dialect_of(connection.dialect.name).resolve_types is not None else None}
    return not type_differs(connection, found, declared, resolve_type(connection, declared))


def whole_decimal(type_text: str) -> bool:
    """A decimal of scale 0 (`numeric(10,0)`, `DECIMAL(38,0)`): it holds integers alone, so it is of
    logicalType integer too (a bare `numeric`, of any scale, is not)."""
    base, args = split_arguments(str(type_text).strip().lower())
    return family_of(base) == "number" and bool(re.fullmatch(r"\(\d+,0\)", args))


def logical_mismatch(logical_type: Any, type_text: str) -> bool:
    """True when the column's type is of a known family that the logical type does not allow."""
    allowed = LOGICAL_FAMILIES.get(str(logical_type or "").strip().lower())
    family = family_of(type_text)
    if allowed is None or family is None:
        return False  # an unknown logical type or an engine type of no known family: nothing to compare
    return family not in allowed and not ("integer" in allowed and whole_decimal(type_text))


def _folds_to(dialect: str, declared: str, real: str) -> bool:
    """Whether a quoted identifier as declared reaches the real column: where the server type's names
    are not case-sensitive (DuckDB matches quoted identifiers ignoring case), in any case; else
    (PostgreSQL, a dialect no server type speaks) only exactly."""
    row = server_type_of_dialect(dialect)
    return row is not None and not row.case_sensitive and declared.lower() == real.lower()


# DESCRIBE has no SQLAlchemy expression; the reader's name comes from DuckDB's readers, the path is bound
DESCRIBE_FILES = {fmt: sa.text(f"DESCRIBE SELECT * FROM {reader}(:path)") for fmt, reader in READERS.items()}


def read_files(checked: CheckedObject, connection: sa.Connection) -> dict[str, dict[str, Any]]:
    """The columns DuckDB's reader finds in the object's files, typed as DuckDB names them."""
    path = checked.files.path_of(checked.obj.physical_name)
    read_as = getattr(checked.files, "read_as_of", lambda name: {})(checked.obj.physical_name)
    # the reader's guesses, described once when the files were read as declared (engine/file_types.py)
    guessed = getattr(checked.files, "guessed_of", lambda name: None)(checked.obj.physical_name)
    try:
        rows = list(guessed) if guessed is not None else \
            connection.execute(DESCRIBE_FILES[checked.files.format], {"path": path}).fetchall()
    except sa.exc.DBAPIError as exc:
        # the reader's message may quote a line of the file: not where a column is classified
        said = (f"{type(exc.orig).__name__} (its message is withheld: the table has a classified column)"
                if checked.obj.has_classified else str(exc.orig).splitlines()[0])
        raise MissingTable(f"the files {path} cannot be read as {checked.files.format}: {said}") from exc
    # files declare no nullability: nothing to say about `required` here. A column DuckDB only guessed
    # is of the type it is read as (a CSV's DATE declared a string is its text: VARCHAR)
    return {str(name).lower(): {"name": name, "type_text": read_as.get(str(name), str(type_text)),
                                "resolved": read_as.get(str(name), str(type_text)), "nullable": None,
                                **({"guessed": str(type_text)} if str(name) in read_as else {})}
            for name, type_text, *_ in rows}


def read_lake(checked: CheckedObject, connection: sa.Connection) -> dict[str, dict[str, Any]]:
    """The columns of a lake table as its own schema says (the Delta log, the Iceberg metadata),
    typed as DuckDB reads them and with the schema's nullability."""
    driver = connection.connection.driver_connection
    return {name.lower(): {"name": name, "type_text": type_text, "resolved": type_text, "nullable": nullable}
            for name, type_text, nullable in checked.files.columns(checked.obj.physical_name, driver)}


def read_catalog(checked: CheckedObject, connection: sa.Connection) -> dict[str, dict[str, Any]]:
    """The object's columns: `name`, `type_text` (as the engine spells the type), `nullable`, and
    where the engine names types itself `resolved` (the name its type resolution gives)."""
    from dq_contracts.engine.sql import qualified_parts

    if checked.catalog is not None:  # read already in this session (runner._catalog)
        return checked.catalog
    if hasattr(checked.files, "columns"):
        return read_lake(checked, connection)
    if checked.files is not None:
        return read_files(checked, connection)
    *prefix, name = qualified_parts(checked.obj.physical_name, checked.schema)
    columns = dialect_of(checked.dialect).catalog_columns(connection, prefix, name)
    if not columns:
        raise MissingTable(f"table {'.'.join([*prefix, name])} does not exist (or has no columns)")
    return {str(c["name"]).lower(): c for c in columns}


def differences(check: Any, checked: CheckedObject, connection: sa.Connection) -> dict[str, Any]:
    from dq_contracts.engine.sql import qualified_parts

    actual = read_catalog(checked, connection)
    *prefix, table = qualified_parts(checked.obj.physical_name, checked.schema)
    parts = (prefix, table)
    resolved = resolve_types(connection, [str(c["physical_type"]) for c in check.params["columns"]
                                          if c.get("physical_type")])
    missing: list[str] = []
    mismatched: list[str] = []
    logical: list[str] = []
    nullable: list[str] = []
    notes: list[str] = []
    declared = set()
    exact = {str(c["name"]): c for c in actual.values()}
    for column in check.params["columns"]:
        name = str(column["name"])
        found = exact.get(name) or actual.get(name.lower())
        if found is None:
            missing.append(name)
            continue
        declared.add(str(found["name"]).lower())
        if str(found["name"]) != name and not _folds_to(connection.dialect.name, name, str(found["name"])):
            # the other checks quote names exactly: a column spelt otherwise is one they cannot find
            mismatched.append(f"{name}: the table spells it {found['name']!r}; declare physicalName: "
                              f"{found['name']}")
            continue
        real_text = found["type_text"]
        differs = False
        if column.get("physical_type"):
            physical = str(column["physical_type"])
            if differs := type_differs(connection, found, physical, resolved[physical]):
                mismatched.append(f"{name}: declared {physical}, found {real_text}")
        elif differs := logical_mismatch(column.get("logical_type"), real_text):
            logical.append(f"{name}: declared logicalType {column['logical_type']}, found {real_text}")
        if not differs:  # a column of the wrong type is one mistake, not one more for each field inside
            inside, unchecked = nested_differences(column, found, checked, connection, parts,  # engine/nested.py
                                                   is_declared_type)
            mismatched += inside
            notes += unchecked
        if column.get("required") and found.get("nullable"):
            nullable.append(name)
    return {
        # what the table has, as Dagster's column schema shows it (names and types only, no values)
        "observed_columns": [[str(c["name"]), str(c["type_text"])] for c in actual.values()],
        "missing": missing,
        "type_mismatches": mismatched,
        "logical_type_mismatches": logical,
        "undeclared_columns": sorted(n for n in actual if n not in declared),
        "required_but_nullable": nullable,
        **({"nested_not_compared": notes} if notes else {}),
    }
