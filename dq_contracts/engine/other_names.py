"""A classified table's other names in its warehouse, which only the warehouse knows (principle 3):
a PostgreSQL partition or inheritance child (or parent) of it, a view (PostgreSQL, DuckDB) whose
definition reads it, however deep.

When a contract's object is checked, and any contract loaded with it classifies a column somewhere
(`ContractPlan.classified_tables`), the catalog is asked first, before any sample, repeated key,
newest value or database message is taken, which base tables the object reads: one catalog query
per table the object's checks read (itself, a relationship's target, a SQL rule's other tables),
built with SQLAlchemy Core, in a read-only session of its own. A column is then classified where a
base table's column of the same name is (a partition's or child's columns are its parent's, by
name), and every column is where a view reads a table with a classified column (a view's column
may be any of them under any name). A catalog that cannot answer (its query fails, a view's SQL
sqlglot cannot read, a view over a table function) classifies every column: withholding too much
is safe, too little is not. Dialects without a query here (`_READS`) are not asked. An Iceberg
table is the files below its location, which its catalog names: classified where a file or Delta
object loaded with it that may read one of them is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import OID, REGCLASS

from dq_contracts.engine.sessions import Session
from dq_contracts.engine.sql import qualified_parts
from dq_contracts.odcs.classification import classified_below, classified_on
from dq_contracts.odcs.plans import CheckPlan, ColumnPlan, ContractPlan, ObjectPlan

# a base table an object reads: (its name, whether the object's columns are its own by name)
Base = tuple[str, bool]
# what a catalog that could not answer classifies every column as, and says why
UNKNOWN = ("unknown", "the warehouse's catalog, which could not say what the table reads")


class NotKnown(ValueError):
    """What a view reads cannot be told (SQL sqlglot cannot read, a table function)."""


def _pg(name: str, *columns: str) -> sa.TableClause:
    return sa.table(name, *(sa.column(c) for c in columns), schema="pg_catalog")


_CLASS = _pg("pg_class", "oid", "relname", "relnamespace")
_NAMESPACE = _pg("pg_namespace", "oid", "nspname")
_INHERITS = _pg("pg_inherits", "inhrelid", "inhparent")
_REWRITE = _pg("pg_rewrite", "oid", "ev_class")
_DEPEND = _pg("pg_depend", "classid", "objid", "refclassid", "refobjid")


def postgres_statement(schema: str, name: str) -> sa.Select:
    """Every table the relation `schema.name` reads or shares rows with, by name, and whether a view
    was on the way: its inheritance parents and children (partitions too), each way, and what a
    view's rewrite rule depends on (pg_depend), recursively; for a view calling a function someone
    wrote, an edge to no relation."""
    def regclass(table: str) -> Any:
        return sa.cast(sa.literal(table), REGCLASS)

    view_reads = sa.select(_REWRITE.c.ev_class.label("child"), _DEPEND.c.refobjid.label("parent"),
                           sa.true().label("renamed")).select_from(_REWRITE.join(_DEPEND, sa.and_(
                               _DEPEND.c.objid == _REWRITE.c.oid,
                               _DEPEND.c.classid == regclass("pg_catalog.pg_rewrite"),
                               _DEPEND.c.refclassid == regclass("pg_catalog.pg_class"),
                               _DEPEND.c.refobjid != _REWRITE.c.ev_class)))
    # a view calling a function someone wrote may read any table in its body, which pg_depend does
    # not follow: an edge to no relation (oid 0), which the caller takes as "cannot tell"
    calls = sa.select(_REWRITE.c.ev_class, sa.cast(sa.literal(0), OID), sa.true()).select_from(
        _REWRITE.join(_DEPEND, sa.and_(_DEPEND.c.objid == _REWRITE.c.oid,
                                       _DEPEND.c.classid == regclass("pg_catalog.pg_rewrite"),
                                       _DEPEND.c.refclassid == regclass("pg_catalog.pg_proc"),
                                       _DEPEND.c.refobjid >= FIRST_NORMAL_OID)))
    edges = sa.union_all(
        sa.select(_INHERITS.c.inhrelid.label("child"), _INHERITS.c.inhparent.label("parent"),
                  sa.false().label("renamed")),
        sa.select(_INHERITS.c.inhparent, _INHERITS.c.inhrelid, sa.false()),
        view_reads, calls).subquery("edges")
    start = sa.select(_CLASS.c.oid.label("oid"), sa.false().label("renamed")).select_from(
        _CLASS.join(_NAMESPACE, _NAMESPACE.c.oid == _CLASS.c.relnamespace)).where(
        sa.func.lower(_NAMESPACE.c.nspname) == sa.func.lower(sa.literal(schema)),
        sa.func.lower(_CLASS.c.relname) == sa.func.lower(sa.literal(name)))
    reach = start.cte("reach", recursive=True)
    reach = reach.union(sa.select(edges.c.parent, sa.or_(reach.c.renamed, edges.c.renamed)).select_from(
        edges.join(reach, edges.c.child == reach.c.oid)))
    return sa.select(_CLASS.c.relname, reach.c.renamed).select_from(
        reach.outerjoin(_CLASS, _CLASS.c.oid == reach.c.oid))


# PostgreSQL's first oid of an object not made by initdb: a function below it is a built-in one
FIRST_NORMAL_OID = 16384


def _postgres_reads(connection: sa.Connection, schema: str, name: str) -> list[Base]:
    found = connection.execute(postgres_statement(schema, name)).all()
    if any(relname is None for relname, _ in found):
        raise NotKnown("a view calling a function of the database's own, whose body may read any table")
    return [(str(relname), not renamed) for relname, renamed in found]


def duckdb_statement() -> sa.Select:
    """Every view of the database and its SQL (duckdb_views()), read whole: one query per table. (A
    file that defines a macro, which a view could call, is refused before: dialect_duckdb.)"""
    views = sa.func.duckdb_views().table_valued("schema_name", "view_name", "sql", "internal")
    return sa.select(views.c.schema_name, views.c.view_name, views.c.sql).where(views.c.internal.is_(False))


def _duckdb_reads(connection: sa.Connection, schema: str, name: str) -> list[Base]:
    views: dict[str, list[tuple[str, str]]] = {}
    for view_schema, view, sql in connection.execute(duckdb_statement()):
        views.setdefault(str(view).lower(), []).append((str(view_schema).lower(), str(sql)))
    return views_read(views, schema, name)


def views_read(views: dict[str, list[tuple[str, str]]], schema: str, name: str) -> list[Base]:
    """The base tables `schema.name` reads through the views of `views` (view name in lower case ->
    [(schema, its SQL)]), as sqlglot reads their SQL: a view's table without a schema is taken as
    any view of that name (too many, never too few)."""
    found: list[Base] = []
    todo, seen = [(schema.lower(), name, False)], set()
    while todo:
        where, table, renamed = todo.pop()
        if (where, table.lower()) in seen:
            continue
        seen.add((where, table.lower()))
        definitions = [sql for s, sql in views.get(table.lower(), []) if not where or s == where]
        if not definitions:
            found.append((table, not renamed))
            continue
        for sql in definitions:
            for db, read in _tables_of(sql):
                todo.append((db, read, True))
    return found


def _tables_of(sql: str) -> list[tuple[str, str]]:
    """(schema in lower case, or "" for any, table) of every table a view's SQL reads."""
    import sqlglot  # only where a DuckDB object is a view: a check imports no parser otherwise
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise NotKnown(f"a view's SQL sqlglot cannot read ({type(exc).__name__})") from exc
    body = tree.expression if isinstance(tree, exp.Create) else tree
    if body is None:
        raise NotKnown("a view without a query")
    ctes = {cte.alias_or_name.lower() for cte in body.find_all(exp.CTE)}
    out = []
    for table in body.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            raise NotKnown("a view reading a table function")
        if not table.db and table.name.lower() in ctes:
            continue
        out.append((table.db.lower(), table.name))
    return out


# dialect -> (connection, schema, table) -> the base tables it reads; a dialect not here is not asked
_READS: dict[str, Callable[[sa.Connection, str, str], list[Base]]] = {
    "postgresql": _postgres_reads,
    "duckdb": _duckdb_reads,
}


def classified_where_read(contract: ContractPlan, obj: ObjectPlan, engine: sa.Engine, schema: str | None,
                          files: Any, timeout_seconds: float) -> ObjectPlan:
    """`obj` with every column classified that a base table it reads has classified (by name, or every
    one through a view); its relationships' targets and SQL rules' tables the same."""
    if getattr(files, "format", None) == "iceberg" and contract.classified_files:
        return _iceberg_files(contract, obj, files)
    reads = _READS.get(engine.dialect.name)
    if not contract.classified_tables or files is not None or reads is None:
        return obj  # nothing classified, or files and Delta tables (shared by their paths when loaded)
    names = [obj.physical_name, *{str(t): None for c in obj.checks for t in _other_tables(c)}]
    found = _bases(reads, names, engine, schema, timeout_seconds)

    def marks(name: str, columns: list[str]) -> dict[str, tuple[str, str]]:
        """column -> (classification, what classifies it) of the table `name`."""
        bases = found.get(name, [])
        if bases is None:
            return dict.fromkeys(columns, UNKNOWN)
        out: dict[str, tuple[str, str]] = {}
        for base, by_name in bases:
            classified = classified_on(contract, base)
            if not classified:
                continue
            word, file = next(iter(classified.values()))
            for column in columns:
                if by_name and column.lower() in classified:
                    out.setdefault(column, (classified[column.lower()][0], f"{classified[column.lower()][1]} "
                                                                            f"through {base}"))
                elif not by_name:
                    out.setdefault(column, (word, f"{file} through {base}, which a view reads"))
        return out

    own = marks(obj.physical_name, [c.physical_name for c in obj.columns])
    columns = _marked(obj.columns, own, lambda name: name)
    checks = tuple(_check_told(c, marks) for c in obj.checks)
    return obj if (columns, checks) == (obj.columns, obj.checks) else replace(obj, columns=columns, checks=checks)


def _iceberg_files(contract: ContractPlan, obj: ObjectPlan, lake: Any) -> ObjectPlan:
    """An Iceberg table is its location's files, which only its catalog names: classified where a
    file or Delta object loaded with it that may read a file below it is (by column name)."""
    try:
        classified = classified_below(contract, lake.location_of(obj.physical_name))
    except Exception:  # noqa: BLE001 - a table whose location cannot be told withholds everything
        classified = {c.physical_name.lower(): UNKNOWN for c in obj.columns}
    columns = _marked(obj.columns, classified, str.lower)
    return obj if columns == obj.columns else replace(obj, columns=columns)


def _bases(reads: Callable[[sa.Connection, str, str], list[Base]], names: list[str], engine: sa.Engine,
           schema: str | None, timeout_seconds: float) -> dict[str, list[Base] | None]:
    """Each table's base tables, one catalog query each in one read-only session; None where the
    catalog could not answer."""
    found: dict[str, list[Base] | None] = {}
    with Session(engine, timeout_seconds) as session:
        for name in names:
            *prefix, table = qualified_parts(name, schema)
            try:
                found[name] = session.run(lambda c: reads(c, prefix[-1] if prefix else "", table))
            except Exception:  # noqa: BLE001 - a catalog that cannot answer withholds everything
                found[name] = None
    return found


def classified_read(contract: ContractPlan, tables: list[str], engine: sa.Engine, schema: str | None,
                    files: Any, timeout_seconds: float) -> dict[str, set[str]]:
    """For `init --against`, which measures tables before it knows their columns: per table, the
    columns (in lower case) classified through a base table it reads, or {ANY_COLUMN} for all."""
    reads = _READS.get(engine.dialect.name)
    if not contract.classified_tables or files is not None or reads is None:
        return {}
    out: dict[str, set[str]] = {}
    for name, bases in _bases(reads, tables, engine, schema, timeout_seconds).items():
        for base, by_name in bases if bases is not None else [("", False)]:
            classified = classified_on(contract, base) if base else {ANY_COLUMN: UNKNOWN}
            if classified:
                out.setdefault(name, set()).update(classified if by_name else {ANY_COLUMN})
    return out


ANY_COLUMN = "*"  # classified_read: every column of the table


def _other_tables(check: CheckPlan) -> list[str]:
    if check.kind == "relationship":
        return [str(check.params["target_table"])]
    if check.kind == "sql":
        return list(check.params.get("tables") or {})
    return []


def _marked(columns: tuple[ColumnPlan, ...], marks: dict[str, tuple[str, str]],
            key: Callable[[str], str]) -> tuple[ColumnPlan, ...]:
    """The columns, each not yet classified that `marks` names (by `key` of its physical name) classified."""
    return tuple(_classified(c, marks[key(c.physical_name)]) if key(c.physical_name) in marks and not c.classified
                 else c for c in columns)


def _classified(column: ColumnPlan, mark: tuple[str, str]) -> ColumnPlan:
    return replace(column, classification=mark[0], classified_by=mark[1])


def _check_told(check: CheckPlan, marks: Callable[[str, list[str]], dict]) -> CheckPlan:
    """A relationship whose target, or a SQL rule one of whose tables, reads a classified column."""
    if check.kind == "relationship" and not check.params.get("target_classified") \
            and marks(str(check.params["target_table"]), list(check.params["target_columns"])):
        return replace(check, params=replace(check.params, target_classified=True))
    if check.kind == "sql" and check.params.get("tables"):
        original = check.params["tables"]
        tables = {table: {column: classified or column in marks(table, list(columns)) for column, classified in
                          columns.items()} for table, columns in original.items()}
        if tables != original:
            return replace(check, params=replace(check.params, tables=tables))
    return check
