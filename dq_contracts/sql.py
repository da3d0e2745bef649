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
    if kind == "range":
        bound = _typed_bound(check, p["bound"])
        if p["lower"]:
            bad = col <= bound if p["strict"] else col < bound
        else:
            bad = col >= bound if p["strict"] else col > bound
        return f"range:{p['column']}:{p['lower']}:{p['strict']}:{p['bound']}", _count_where(bad)
    if kind == "length":
        length = sa.func.length(col)
        bad = length < p["bound"] if p["lower"] else length > p["bound"]
        return f"length:{p['column']}:{p['lower']}:{p['bound']}", _count_where(bad)
    if kind == "pattern":
        bad = sa.and_(col.is_not(None), sa.not_(regex_match(col, p["pattern"], dialect)))
        return f"pattern:{p['column']}:{p['pattern']}", _count_where(bad)
    if kind == "accepted_values":
        bad = sa.and_(col.is_not(None), col.not_in(p["values"]))
        return f"accepted:{p['column']}:{p['values']!r}", _count_where(bad)
    if kind == "missing_values":
        values = [v for v in p["values"] if v is not None]
        conditions = [col.in_(values)] if values else []
        if None in p["values"]:
            conditions.append(col.is_(None))
        return f"missing:{p['column']}:{p['values']!r}", _count_where(sa.or_(*conditions))
    if kind == "invalid_values":
        invalid = []
        if p.get("valid_values") is not None:
            invalid.append(col.not_in(p["valid_values"]))
        if p.get("pattern") is not None:
            invalid.append(sa.not_(regex_match(col, p["pattern"], dialect)))
        bad = sa.and_(col.is_not(None), sa.or_(*invalid))
        return f"invalid:{p['column']}:{p.get('valid_values')!r}:{p.get('pattern')}", _count_where(bad)
    if kind == "multiple_of":
        divisor = sa.cast(sa.bindparam(None, str(p["divisor"]), type_=sa.String), sa.Numeric(38, 10))
        bad = sa.cast(col, sa.Numeric(38, 10)) % divisor != 0
        return f"multiple:{p['column']}:{p['divisor']}", _count_where(bad)
    if kind == "freshness":
        return f"max:{p['column']}", sa.func.max(col)
    return None


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


def orphans(table: sa.TableClause, columns: list[str], target: sa.TableClause,
            target_columns: list[str]) -> sa.Select:
    """Rows whose non-NULL key has no match in the target (an anti-join)."""
    cols = [table.c[c] for c in columns]
    target = target.alias("ref")  # the target may be the same table (a self-reference)
    match = sa.exists().where(sa.and_(*(target.c[t] == c for c, t in zip(cols, target_columns))))
    return (sa.select(sa.func.count()).select_from(table)
            .where(sa.and_(*(c.is_not(None) for c in cols)), sa.not_(match)))


def render(statement: sa.sql.ClauseElement, engine: sa.Engine) -> str:
    """The SQL that ran, with bound values rendered as literals for people to read."""
    try:
        return str(statement.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
    except Exception:  # some types cannot render literally; the parametrised form is still true
        return str(statement.compile(dialect=engine.dialect))
