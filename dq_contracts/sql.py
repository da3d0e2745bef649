"""Measures as SQLAlchemy Core expressions: identifiers quoted, values bound, one scan per table.

Every count-style check of a table is one labelled column of a single aggregate SELECT; a measure
two checks share (the row count, a column's NULL count) is computed once. Compound keys,
relationships, SQL rules and the schema check are the only other queries.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.plans import CheckPlan

COUNT_KINDS = {"not_null", "unique", "range", "length", "pattern", "accepted_values", "null_values",
               "missing_values", "invalid_values", "multiple_of", "row_count", "freshness", "primary_key"}


def quoted(name: str) -> sa.sql.quoted_name:
    return sa.sql.quoted_name(name, quote=True)


def table_for(physical_name: str, schema: str | None, columns: list[str]) -> sa.TableClause:
    """A physical name `a.b` is schema-qualified; otherwise the server's schema applies."""
    parts = physical_name.split(".")
    if len(parts) > 1:
        schema, name = ".".join(parts[:-1]), parts[-1]
    else:
        name = parts[0]
    return sa.table(quoted(name), *(sa.column(quoted(c)) for c in dict.fromkeys(columns)),
                    schema=quoted(schema) if schema else None)


def regex_match(column: ColumnElement, pattern: str, dialect: str) -> ColumnElement:
    """True when the value contains a match (JSON Schema `pattern` semantics: not anchored)."""
    if dialect == "duckdb":
        return sa.func.regexp_matches(column, sa.bindparam(None, pattern, type_=sa.String))
    if dialect in ("postgresql", "postgres"):
        return column.op("~")(sa.bindparam(None, pattern, type_=sa.String))
    return column.regexp_match(pattern)


def _count_where(condition: ColumnElement) -> ColumnElement:
    return sa.func.count(sa.case((condition, 1)))


def _typed_bound(check: CheckPlan, value: Any) -> ColumnElement:
    logical = check.params.get("logical_type")
    if logical == "date":
        return sa.cast(sa.bindparam(None, str(value), type_=sa.String), sa.Date)
    if logical in ("timestamp", "time"):
        return sa.cast(sa.bindparam(None, str(value), type_=sa.String), sa.DateTime)
    return sa.bindparam(None, value)


def violation(check: CheckPlan, table: sa.TableClause, dialect: str) -> ColumnElement | None:
    """The condition a row breaks for a row-level check, or None when the check is not row-level."""
    p = check.params
    if not p.get("column"):
        return None
    col = table.c[p["column"]]
    kind = check.kind
    if kind == "range":
        bound = _typed_bound(check, p["bound"])
        if p["lower"]:
            return col <= bound if p["strict"] else col < bound
        return col >= bound if p["strict"] else col > bound
    if kind == "length":
        length = sa.func.length(col)
        return length < p["bound"] if p["lower"] else length > p["bound"]
    if kind == "pattern":
        return sa.and_(col.is_not(None), sa.not_(regex_match(col, p["pattern"], dialect)))
    if kind == "accepted_values":
        return sa.and_(col.is_not(None), col.not_in(p["values"]))
    if kind == "missing_values":
        values = [v for v in p["values"] if v is not None]
        conditions = [col.in_(values)] if values else []
        if None in p["values"]:
            conditions.append(col.is_(None))
        return sa.or_(*conditions)
    if kind == "invalid_values":
        invalid = []
        if p.get("valid_values") is not None:
            invalid.append(col.not_in(p["valid_values"]))
        if p.get("pattern") is not None:
            invalid.append(sa.not_(regex_match(col, p["pattern"], dialect)))
        return sa.and_(col.is_not(None), sa.or_(*invalid))
    if kind == "multiple_of":
        divisor = sa.cast(sa.bindparam(None, str(p["divisor"]), type_=sa.String), sa.Numeric(38, 10))
        return sa.cast(col, sa.Numeric(38, 10)) % divisor != 0
    return None


# the identity of each row-level measure: two checks with the same key share one column
_VIOLATION_KEYS = {
    "range": ("column", "lower", "strict", "bound"), "length": ("column", "lower", "bound"),
    "pattern": ("column", "pattern"), "accepted_values": ("column", "values"),
    "missing_values": ("column", "values"), "invalid_values": ("column", "valid_values", "pattern"),
    "multiple_of": ("column", "divisor"),
}


def measure_for(check: CheckPlan, table: sa.TableClause, dialect: str) -> tuple[str, ColumnElement] | None:
    """(key, expression) of the single aggregate this check needs, or None if it needs its own query.

    Keys identify what is measured, so two checks needing the same measure share one column.
    """
    p = check.params
    col = table.c[p["column"]] if p.get("column") else None
    kind = check.kind
    if kind == "row_count":
        return "rows", sa.func.count()
    if kind in ("not_null", "null_values"):
        return f"nulls:{p['column']}", sa.func.count() - sa.func.count(col)
    if kind == "unique" or (kind == "duplicate_values" and len(p["columns"]) == 1):
        c = table.c[p["columns"][0]]
        return f"dups:{p['columns'][0]}", sa.func.count(c) - sa.func.count(sa.distinct(c))
    if kind == "primary_key" and len(p["columns"]) == 1:
        return f"pk:{p['column']}", (sa.func.count() - sa.func.count(col)) + (
            sa.func.count(col) - sa.func.count(sa.distinct(col)))
    if kind == "freshness":
        return f"max:{p['column']}", sa.func.max(col)
    bad = violation(check, table, dialect)
    if bad is None:
        return None
    key = ":".join([kind, *(repr(p.get(k)) for k in _VIOLATION_KEYS[kind])])
    return key, _count_where(bad)


def samples_query(check: CheckPlan, table: sa.TableClause, dialect: str, limit: int = 5) -> sa.Select | None:
    """Up to `limit` distinct offending values of the check's column, or None when there is nothing to show
    (a NULL count has no values to show; compound keys and SQL rules have no single column)."""
    p = check.params
    if check.kind in ("unique", "primary_key", "duplicate_values") and len(p.get("columns") or []) == 1:
        col = table.c[p["columns"][0]]
        return (sa.select(col).where(col.is_not(None)).group_by(col).having(sa.func.count() > 1)
                .order_by(col).limit(limit))
    bad = violation(check, table, dialect)
    if bad is None:
        return None
    col = table.c[p["column"]]
    return sa.select(col).where(bad).group_by(col).order_by(col).limit(limit)


def compound_duplicates(table: sa.TableClause, columns: list[str], *, count_nulls: bool) -> sa.Select:
    """Extra copies of a tuple (rows beyond the first); with count_nulls, rows with a NULL key too."""
    cols = [table.c[c] for c in columns]
    complete = sa.and_(*(c.is_not(None) for c in cols))
    groups = (sa.select(*cols, sa.func.count().label("n")).where(complete).group_by(*cols)
              .having(sa.func.count() > 1).subquery("dup"))
    extra = sa.select(sa.func.coalesce(sa.func.sum(groups.c.n - 1), 0)).scalar_subquery()
    if not count_nulls:
        return sa.select(extra)
    nulls = sa.select(sa.func.count()).select_from(table).where(sa.not_(complete)).scalar_subquery()
    return sa.select(extra + nulls)


def _orphaned(table: sa.TableClause, columns: list[str], target: sa.TableClause,
              target_columns: list[str]) -> tuple[list, ColumnElement]:
    """The key columns, and the condition of a row whose non-NULL key has no match in the target."""
    cols = [table.c[c] for c in columns]
    target = target.alias("ref")  # the target may be the same table (a self-reference)
    match = sa.exists().where(sa.and_(*(target.c[t] == c for c, t in zip(cols, target_columns))))
    return cols, sa.and_(*(c.is_not(None) for c in cols), sa.not_(match))


def orphan_samples(table: sa.TableClause, columns: list[str], target: sa.TableClause,
                   target_columns: list[str], limit: int = 5) -> sa.Select:
    """Up to `limit` distinct keys that have no match in the target."""
    cols, orphaned = _orphaned(table, columns, target, target_columns)
    return sa.select(*cols).where(orphaned).group_by(*cols).order_by(*cols).limit(limit)


def orphans(table: sa.TableClause, columns: list[str], target: sa.TableClause,
            target_columns: list[str]) -> sa.Select:
    """Rows whose non-NULL key has no match in the target (an anti-join)."""
    _, orphaned = _orphaned(table, columns, target, target_columns)
    return sa.select(sa.func.count()).select_from(table).where(orphaned)


def render(statement: sa.sql.ClauseElement, engine: sa.Engine) -> str:
    """The SQL that ran, with bound values rendered as literals for people to read."""
    try:
        return str(statement.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
    except Exception:  # some types cannot render literally; the parametrised form is still true
        return str(statement.compile(dialect=engine.dialect))
