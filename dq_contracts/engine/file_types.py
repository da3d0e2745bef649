"""A file server's columns read as the contract declares them, where DuckDB's reader only guessed.

A CSV file holds text alone, and a JSON string is a string: the types DuckDB's readers give them
(CSV sniffing, JSON inference) are guesses. A column guessed a DATE, a BOOLEAN, a number or a UUID
that the contract declares a string is still text in the file, and a JSON column of ISO timestamps
with mixed offsets that the reader left VARCHAR is a timestamp where the contract says so. Which
columns are read otherwise is one table (`READINGS`: the format, the guess, the declared family ->
the type read), and how is the format's: a CSV reader told the column's type (`types := …`: the
file's own text, `007` stays `007`), a JSON reader's column cast (a guessed DATE is its ISO text).
The schema check and every clause read the column as it is read here; a SQL rule reads the files as
DuckDB guesses them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from dq_contracts.engine.dialect_duckdb import READERS
from dq_contracts.odcs.declaration import Files

TEXT, ZONED = "VARCHAR", "TIMESTAMP WITH TIME ZONE"
_GUESSED_FROM_TEXT = ("date", "timestamp", "time", "boolean", "integer", "number", "uuid")
# (format, the family DuckDB guessed, the family the contract declares) -> the type the column is read as;
# a pair not here is read as guessed (a number declared a number; text declared a number stays text, and
# the schema check says so)
READINGS: Mapping[tuple[str, str, str], str] = {
    **{(fmt, guess, "string"): TEXT for fmt in ("csv", "json") for guess in _GUESSED_FROM_TEXT},
    # a CSV's sniffer reads mixed offsets as TIMESTAMPTZ itself; JSON inference leaves them VARCHAR
    ("json", "string", "timestamp"): ZONED,
}


@dataclass(frozen=True)
class ReadFiles(Files):
    """A file server's Files with, for one object, the columns read otherwise than DuckDB guesses
    (`read_as`: column as the file names it -> type) and the reader's own guesses (`guessed`:
    DESCRIBE's rows), which the schema check reports."""

    physical_name: str = ""
    read_as: Mapping[str, str] = field(default_factory=dict)
    guessed: tuple[tuple[str, str], ...] = ()

    def read_as_of(self, physical_name: str) -> Mapping[str, str]:
        return self.read_as if physical_name == self.physical_name else {}

    def guessed_of(self, physical_name: str) -> tuple[tuple[str, str], ...] | None:
        """DESCRIBE's rows for the object, read once per run; None for another object's files."""
        return self.guessed if physical_name == self.physical_name else None


Family = Callable[[str], "str | None"]  # a type name's family (schema_check.family_of)


def _guess(type_text: str, family_of: Family) -> str | None:
    base = str(type_text).strip().lower()
    return "uuid" if base == "uuid" else family_of(base)


def _declared(column: Any, family_of: Family) -> str | None:
    if column.physical_type:
        return family_of(str(column.physical_type))
    return str(column.logical_type or "").strip().lower() or None


def readings(fmt: str, obj: Any, guessed: list[tuple[str, str]], family_of: Family) -> dict[str, str]:
    """The object's columns read otherwise than guessed: its name as the file spells it -> the type."""
    declared = {str(c.physical_name).lower(): _declared(c, family_of) for c in obj.columns}
    found = {}
    for name, type_text in guessed:
        read = READINGS.get((fmt, _guess(type_text, family_of) or "", declared.get(str(name).lower()) or ""))
        if read is not None:
            found[str(name)] = read
    return found


# DESCRIBE has no SQLAlchemy expression; the reader's name comes from DuckDB's readers, the path is bound
def describe_statement(reader: str) -> sa.TextClause:
    return sa.text(f"DESCRIBE SELECT * FROM {reader}(:path)")


def read_declared(files: Any, obj: Any, connection: sa.Connection, family_of: Family) -> Any:
    """`files` for `obj` as ReadFiles, its guessed columns and those read otherwise; `files` itself
    where no format of READINGS applies (parquet, a lake) or the files cannot be described (each
    check then meets that error itself)."""
    wanted = {declared for fmt, _, declared in READINGS if isinstance(files, Files) and fmt == files.format}
    if not any(_declared(c, family_of) in wanted for c in obj.columns):  # parquet, a lake, no such column
        return files
    try:
        rows = connection.execute(describe_statement(READERS[files.format]),
                                  {"path": files.path_of(obj.physical_name)}).fetchall()
    except Exception:  # noqa: BLE001 - the schema check and each clause say why the files cannot be read
        return files
    guessed = [(str(name), str(type_text)) for name, type_text, *_ in rows]
    read_as = readings(files.format, obj, guessed, family_of)
    return ReadFiles(**{f: getattr(files, f) for f in Files.__dataclass_fields__}, physical_name=obj.physical_name,
                     read_as=_readable(files, obj.physical_name, read_as, connection), guessed=tuple(guessed))


def _readable(files: Files, physical_name: str, read_as: dict[str, str], connection: sa.Connection) -> dict[str, str]:
    """`read_as` without the text columns that do not all read as their type: a column of which one
    value is no timestamp stays text (and the schema check says so), never an error of every clause."""
    cast = [name for name, read in read_as.items() if read != TEXT]
    if not cast:
        return read_as
    reader = getattr(sa.func, READERS[files.format])(sa.bindparam(None, files.path_of(physical_name), type_=sa.String))
    scan = reader.table_valued(*(sa.column(name) for name in cast)).alias("guessed")
    counts = connection.execute(sa.select(*(
        sa.func.count(sa.case((sa.and_(scan.c[name].is_not(None),
                                       sa.try_cast(scan.c[name], _TYPES[read_as[name]]).is_(None)), 1)))
        .label(f"n{i}") for i, name in enumerate(cast)))).one()
    return {name: read for name, read in read_as.items() if read == TEXT or not counts[cast.index(name)]}


class _Named(ColumnElement):
    """`name := value`, DuckDB's named argument: a reader's option, or a struct_pack field (quoted)."""

    inherit_cache = True
    _traverse_internals = [("value", InternalTraversal.dp_clauseelement), ("name", InternalTraversal.dp_string),
                           ("quoted", InternalTraversal.dp_boolean)]

    def __init__(self, name: str, value: ColumnElement, quoted: bool):
        self.name, self.value, self.quoted = name, value, quoted
        self.type = sa.types.NullType()


@compiles(_Named)
def _named(element: _Named, compiler: Any, **kw: Any) -> str:
    name = compiler.preparer.quote_identifier(element.name) if element.quoted else element.name
    return f"{name} := {compiler.process(element.value, **kw)}"


def reader_options(fmt: str, read_as: Mapping[str, str]) -> list[ColumnElement]:
    """The reader's own arguments for the columns read otherwise: a CSV's `types := {…}`."""
    if fmt != "csv" or not read_as:
        return []
    fields = [_Named(name, sa.bindparam(None, read, type_=sa.String), True) for name, read in read_as.items()]
    return [_Named("types", sa.func.struct_pack(*fields), False)]


def projected(files: Any, physical_name: str, reader: Any, columns: list[str], alias: str) -> Any:
    """A JSON reader's columns cast to the type they are read as, under the table's name; the reader
    itself elsewhere. Columns are matched in any case, as DuckDB matches them; a column the files do
    not hold is DuckDB's `error(…)`, raised only by a statement that reads it (DuckDB prunes the
    others), as the reader's own "does not have a column" would be."""
    read_as = files.read_as_of(physical_name) if isinstance(files, ReadFiles) else {}
    if files.format == "csv" or not read_as:
        return reader.alias(alias)
    present = {name.lower() for name, _ in files.guessed}
    inner = reader.alias("guessed")
    read = {name.lower(): type_text for name, type_text in read_as.items()}

    def projected_column(c: str) -> ColumnElement:
        if c.lower() not in present:
            return sa.func.error(sa.bindparam(None, f"the files of {physical_name} have no column {c!r}",
                                              type_=sa.String)).label(c)
        return sa.cast(inner.c[c], _TYPES[read[c.lower()]]).label(c) if c.lower() in read else inner.c[c]

    return sa.select(*(projected_column(c) for c in columns)).subquery(alias)


def options_of(files: Any, physical_name: str) -> list[ColumnElement]:
    """The reader's own arguments for the object's columns read otherwise (a CSV's `types := {…}`)."""
    return reader_options(files.format, files.read_as_of(physical_name)) if isinstance(files, ReadFiles) else []


_TYPES: Mapping[str, Any] = {TEXT: sa.String(), ZONED: sa.DateTime(timezone=True)}
