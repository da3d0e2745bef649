"""SQL building blocks as SQLAlchemy Core expressions: identifiers quoted part by part, values bound.

What each check kind measures is in kinds.py; this module holds what several kinds share: table
names, regular expressions, compound keys, anti-joins, and rendering for people to read.
"""

from __future__ import annotations

from collections.abc import Callable

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.engine import file_types
from dq_contracts.engine.dialect_duckdb import READERS
from dq_contracts.engine.dialects import dialect_of



def quoted(name: str) -> sa.sql.quoted_name:
    return sa.sql.quoted_name(name, quote=True)


def as_bytes(expression: ColumnElement, dialect: str) -> ColumnElement:
    """The value as text, compared byte by byte whatever collation or type the warehouse gave it (the
    dialect row's `binary_text`); in a dialect with none, as it is."""
    binary_text = dialect_of(dialect).binary_text
    return expression if binary_text is None else binary_text(expression)


def _as_is(name: str, column: ColumnElement) -> ColumnElement:
    return column


# How a key column is compared: (its name, the column) -> the expression compared (CheckedObject.key)
Compared = Callable[[str, ColumnElement], ColumnElement]


def qualified_parts(physical_name: str, schema: str | None) -> list[str]:
    """The parts of a table's name: `db.schema.table` and `schema.table` stand as written; a bare
    name takes the server's schema."""
    parts = [p for p in physical_name.split(".")]
    return parts if len(parts) > 1 or not schema else [schema, *parts]


def table_for(physical_name: str, schema: str | None, columns: list[str], preparer: Any = None,
              files: Any = None, partition: Any = None) -> Any:
    """The table with each part of its name quoted on its own (`"db"."schema"."table"`), never a
    dotted name quoted as one identifier, as the dialect's row quotes them (`preparer` is the
    dialect's identifier preparer). With `files` (a file server), the table is DuckDB's reader of the
    object's files, its path bound; with a lake server's tables (engine/lake.py), the name the session
    registers the table by (one Iceberg partition's rows: a name of their own, its scan filtered)."""
    if hasattr(files, "attach"):
        return files.table(physical_name, columns, partition)
    if files is not None:
        # the columns DuckDB only guessed read as the contract declares them (engine/file_types.py)
        reader = getattr(sa.func, READERS[files.format])(sa.bindparam(None, files.path_of(physical_name),
                                                                      type_=sa.String),
                                                         *file_types.options_of(files, physical_name))
        wanted = list(dict.fromkeys(columns))
        return file_types.projected(files, physical_name, reader.table_valued(*(sa.column(quoted(c)) for c in wanted)),
                                    wanted, quoted(physical_name.split(".")[-1]))
    *prefix, name = qualified_parts(physical_name, schema)
    row = dialect_of(preparer.dialect.name if preparer is not None else None)
    qualifier = row.qualifier(prefix, preparer, physical_name)
    return sa.table(quoted(name), *(sa.column(quoted(c)) for c in dict.fromkeys(columns)), schema=qualifier)


def _partition_bound(moment: Any, logical_type: str | None, name: str) -> ColumnElement:
    """A window bound, bound by name, typed as the column is: a date column compares dates, a text
    column ISO text (the date alone at midnight, so '2026-06-01' falls in its day), else timestamps."""
    text = moment.isoformat(sep=" ")
    if logical_type == "date":
        return sa.cast(sa.bindparam(name, moment.date().isoformat(), type_=sa.String), sa.Date)
    if logical_type == "string":
        midnight = (moment.hour, moment.minute, moment.second, moment.microsecond) == (0, 0, 0, 0)
        return sa.bindparam(name, moment.date().isoformat() if midnight else text, type_=sa.String)
    return sa.cast(sa.bindparam(name, text, type_=sa.String), sa.DateTime)


def partition_filter(column_of: Callable[[str], ColumnElement], partition: Any, dialect: str = "") -> ColumnElement:
    """The rows of one partition (partitions.Partition): `col >= :start AND col < :end` for a time
    window, `col = :value` for a static one, each dimension's for a multi-dimensional one; values
    bound, never written into the SQL. `column_of` gives the column of a name (`table.c.__getitem__`)."""
    if partition.parts:  # a name per dimension: dq_partition_start_1, dq_partition_value_2, ...
        return sa.and_(*(_one_filter(column_of(p.column), p, f"_{n}", dialect)
                         for n, p in enumerate(partition.parts, 1)))
    return _one_filter(column_of(partition.column), partition, "", dialect)


def _one_filter(column: ColumnElement, partition: Any, suffix: str, dialect: str) -> ColumnElement:
    # a text column's window or value is compared byte by byte, as every check compares text
    text = partition.logical_type == "string" or (partition.logical_type is None and not partition.time_window
                                                  and all(isinstance(v, str) for v in partition.values
                                                          or (partition.value,)))
    if partition.time_window:
        column = as_bytes(column, dialect) if text else column  # another collation orders otherwise: bytes alone
        return sa.and_(
            column >= _partition_bound(partition.start, partition.logical_type, f"dq_partition_start{suffix}"),
            column < _partition_bound(partition.end, partition.logical_type, f"dq_partition_end{suffix}"))
    if partition.values:
        # a parameter per value, not one expanding parameter: a SQL rule's text() takes these as they are
        values = [sa.bindparam(f"dq_partition_value{suffix}_{n}", v) for n, v in enumerate(partition.values, 1)]
        equal: Callable[[ColumnElement], ColumnElement] = lambda c: c.in_(values)  # noqa: E731
    else:
        value = sa.bindparam(f"dq_partition_value{suffix}", partition.value)
        equal = lambda c: c == value  # noqa: E731
    # equal bytes are equal under any collation, so the column's own equality keeps its index and
    # zone maps, and the bytes' narrow it to exactly the partition's rows
    if text and dialect_of(dialect).binary_text is not None:
        return sa.and_(equal(column), equal(as_bytes(column, dialect)))
    return equal(column)


def restricted(table: Any, columns: list[str], partition: Any, name: str, dialect: str = "") -> Any:
    """`(SELECT <columns> FROM t WHERE <partition>) AS <name>`: the table as one partition, so every
    statement built on it (measures, samples, failing rows) reads the partition only, unchanged."""
    selected = [table.c[c] for c in dict.fromkeys(columns)] or [table.c[partition.column]]
    return sa.select(*selected).where(partition_filter(table.c.__getitem__, partition, dialect)).subquery(quoted(name))


def partition_condition(partition: Any, dialect: Any) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """A SQL rule's `{partition}`: the same filter compiled by the server's dialect with named
    parameters (`:dq_partition_start`), the same with its values as literals (for people), and the
    values and types to bind to the parameters."""
    condition = partition_filter(lambda name: sa.column(quoted(name)), partition, dialect.name)
    compiled = condition.compile(dialect=type(dialect)(paramstyle="named"))
    try:
        shown = str(condition.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    except Exception:  # a type that cannot render literally: people read the parameters' names
        shown = str(compiled)
    return (str(compiled), shown, dict(compiled.params),
            {name: bind.type for name, bind in compiled.binds.items()})


def compound_duplicates(table: sa.TableClause, columns: list[str], *, count_nulls: bool,
                        compared: Compared = _as_is) -> sa.Select:
    """Extra copies of a tuple (rows beyond the first); with count_nulls, rows with a NULL key too."""
    cols = [table.c[c] for c in columns]
    complete = sa.and_(*(c.is_not(None) for c in cols))
    keys = [compared(name, c).label(name) for name, c in zip(columns, cols)]
    groups = (sa.select(*keys, sa.func.count().label("n")).where(complete).group_by(*keys)
              .having(sa.func.count() > 1).subquery("dup"))
    extra = sa.select(sa.func.coalesce(sa.func.sum(groups.c.n - 1), 0)).scalar_subquery()
    if not count_nulls:
        return sa.select(extra)
    nulls = sa.select(sa.func.count()).select_from(table).where(sa.not_(complete)).scalar_subquery()
    return sa.select(extra + nulls)


def _orphaned(table: sa.TableClause, columns: list[str], target: sa.TableClause,
              target_columns: list[str], compared: Compared = _as_is) -> tuple[list, ColumnElement]:
    """The key columns, and the condition of a row whose non-NULL key has no match in the target;
    both sides of a key compared as the source column is (`compared`)."""
    cols = [table.c[c] for c in columns]
    target = target.alias("ref")  # the target may be the same table (a self-reference)
    match = sa.exists().where(sa.and_(*(compared(name, target.c[t]) == compared(name, c)
                                        for name, c, t in zip(columns, cols, target_columns))))
    return cols, sa.and_(*(c.is_not(None) for c in cols), sa.not_(match))


def orphan_samples(table: sa.TableClause, columns: list[str], target: sa.TableClause,
                   target_columns: list[str], limit: int = 5, compared: Compared = _as_is) -> sa.Select:
    """Up to `limit` distinct keys that have no match in the target."""
    cols, orphaned = _orphaned(table, columns, target, target_columns, compared)
    return sa.select(*cols).where(orphaned).group_by(*cols).order_by(*cols).limit(limit)


def orphans(table: sa.TableClause, columns: list[str], target: sa.TableClause,
            target_columns: list[str], compared: Compared = _as_is) -> sa.Select:
    """Rows whose non-NULL key has no match in the target (an anti-join)."""
    _, orphaned = _orphaned(table, columns, target, target_columns, compared)
    return sa.select(sa.func.count()).select_from(table).where(orphaned)


def render(statement: sa.sql.ClauseElement, engine: sa.Engine) -> str:
    """The SQL that ran, with bound values rendered as literals for people to read."""
    try:
        return str(statement.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
    except Exception:  # some types cannot render literally; the parametrised form is still true
        return str(statement.compile(dialect=engine.dialect))
