"""The schema check: the object's declared columns against the catalog, as one readable difference.

Fails on a declared column that is missing, a declared `physicalType` that differs (after each
dialect's spelling is normalised), or, where no `physicalType` is declared, a `logicalType` whose
category the column's type is not of (an `integer` stored as VARCHAR, a `date` stored as text).
Undeclared columns, and `required: true` on a column the catalog says is nullable, are reported
as information: they never fail the check.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import sqlalchemy as sa

from dq_contracts.engine.dialects import READERS, TYPE_SPELLINGS, MissingTable, dialect_of
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.nested import nested_differences
from dq_contracts.odcs.servers import server_type_of_dialect

# ODCS logicalType → the SQLAlchemy type families a column of that logical type may have
LOGICAL_CATEGORIES: dict[str, tuple[type, ...]] = {
    "integer": (sa.Integer,),
    "number": (sa.Numeric, sa.Integer),  # Float is a Numeric
    "string": (sa.String, sa.Uuid),  # Enum and Text are Strings
    "boolean": (sa.Boolean,),
    "date": (sa.Date, sa.DateTime),
    "timestamp": (sa.DateTime, sa.Date),
    "time": (sa.Time,),
}
_KNOWN_FAMILIES = (sa.Integer, sa.Numeric, sa.String, sa.Uuid, sa.Boolean, sa.Date, sa.DateTime, sa.Time)


def normalise_type(text: str, spellings: Mapping[str, str] = TYPE_SPELLINGS) -> str:
    """`int4`/`INTEGER`, `varchar(2)`/`VARCHAR(2)`, `numeric(12,2)`/`DECIMAL(12,2)` compare equal
    (`spellings`: the dialect's row's)."""
    lowered = re.sub(r"\s+", " ", str(text).strip().lower())
    # PostgreSQL writes the precision mid-name: timestamp(3) with time zone → timestamp with time zone(3)
    lowered = re.sub(r"^(timestamp|time)\s*(\(\d+\))\s+(with(?:out)? time zone)$", r"\1 \3\2", lowered)
    match = re.match(r"^([a-z0-9_ ]+?)\s*(\(.*\))?$", lowered)  # `timestamp_ltz`, `bool_`: names hold _
    if not match:
        return lowered
    base, args = match.group(1).strip(), (match.group(2) or "").replace(" ", "")
    return spellings.get(base, base) + args


def same_type(real: str, declared: str, spellings: Mapping[str, str] = TYPE_SPELLINGS) -> bool:
    """Equal after normalising; arguments count only when both sides have them, because some
    warehouses drop them (DuckDB keeps no VARCHAR length)."""
    a, b = normalise_type(real, spellings), normalise_type(declared, spellings)
    if a == b:
        return True
    return ("(" not in a or "(" not in b) and a.split("(")[0] == b.split("(")[0]


def logical_mismatch(logical_type: Any, real: sa.types.TypeEngine) -> bool:
    """True when the column's type is of a known family that the logical type does not allow."""
    allowed = LOGICAL_CATEGORIES.get(str(logical_type or "").strip().lower())
    if allowed is None or not isinstance(real, _KNOWN_FAMILIES):
        return False  # object, array, an unknown type: nothing portable to compare
    return not isinstance(real, allowed)


def _folds_to(dialect: str, declared: str, real: str) -> bool:
    """Whether a quoted identifier as declared reaches the real column: where the server type's names
    are not case-sensitive (DuckDB matches quoted identifiers ignoring case), in any case; else
    (PostgreSQL, a dialect no server type speaks) only exactly."""
    row = server_type_of_dialect(dialect)
    return row is not None and not row.case_sensitive and declared.lower() == real.lower()


# DESCRIBE has no SQLAlchemy expression; the reader's name comes from DuckDB's readers, the path is bound
DESCRIBE_FILES = {fmt: sa.text(f"DESCRIBE SELECT * FROM {reader}(:path)") for fmt, reader in READERS.items()}


def read_files(checked: CheckedObject, connection: sa.Connection) -> dict[str, dict[str, Any]]:
    """The columns DuckDB's reader finds in the object's files, typed as the DuckDB dialect types them."""
    path = checked.files.path_of(checked.obj.physical_name)
    try:
        rows = connection.execute(DESCRIBE_FILES[checked.files.format], {"path": path}).fetchall()
    except sa.exc.DBAPIError as exc:
        # the reader's message may quote a line of the file: not where a column is classified
        said = (f"{type(exc.orig).__name__} (its message is withheld: the table has a classified column)"
                if checked.obj.has_classified else str(exc.orig).splitlines()[0])
        raise MissingTable(f"the files {path} cannot be read as {checked.files.format}: {said}") from exc
    types = connection.dialect.ischema_names
    found = {}
    for name, type_text, *_ in rows:
        family = types.get(re.sub(r"\(.*\)$", "", str(type_text)).strip().lower(), sa.types.NullType)
        # files declare no nullability: nothing to say about `required` here
        found[str(name).lower()] = {"name": name, "type": family(), "type_text": str(type_text), "nullable": None}
    return found


def read_lake(checked: CheckedObject, connection: sa.Connection) -> dict[str, dict[str, Any]]:
    """The columns of a lake table as its own schema says (the Delta log, the Iceberg metadata),
    typed as DuckDB reads them and with the schema's nullability."""
    driver = connection.connection.driver_connection
    types = connection.dialect.ischema_names
    found = {}
    for name, type_text, nullable in checked.files.columns(checked.obj.physical_name, driver):
        family = types.get(re.sub(r"\(.*\)$", "", type_text).strip().lower(), sa.types.NullType)
        found[name.lower()] = {"name": name, "type": family(), "type_text": type_text, "nullable": nullable}
    return found


def read_catalog(checked: CheckedObject, connection: sa.Connection) -> dict[str, dict[str, Any]]:
    from dq_contracts.engine.sql import qualified_parts

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
        real = found["type"]
        real_text = found.get("type_text") or real.compile(dialect=connection.dialect)
        if column.get("physical_type"):
            spellings = dialect_of(connection.dialect.name).type_spellings
            if not same_type(real_text, str(column["physical_type"]), spellings):
                mismatched.append(f"{name}: declared {column['physical_type']}, found {real_text}")
        elif logical_mismatch(column.get("logical_type"), real):
            logical.append(f"{name}: declared logicalType {column['logical_type']}, found {real_text}")
        inside, unchecked = nested_differences(column, found, checked, connection, parts)  # engine/nested.py
        mismatched += inside
        notes += unchecked
        if column.get("required") and found.get("nullable"):
            nullable.append(name)
    return {
        # what the table has, as Dagster's column schema shows it (names and types only, no values)
        "observed_columns": [[str(c["name"]), str(c.get("type_text") or c["type"].compile(dialect=connection.dialect))]
                             for c in actual.values()],
        "missing": missing,
        "type_mismatches": mismatched,
        "logical_type_mismatches": logical,
        "undeclared_columns": sorted(n for n in actual if n not in declared),
        "required_but_nullable": nullable,
        **({"nested_not_compared": notes} if notes else {}),
    }
