"""PostgreSQL, as the `postgresql` row of engine/dialects.py reaches it (psycopg2): a check session is
`BEGIN READ ONLY` with a statement timeout, in UTC, resolving names in pg_catalog alone; a database
holding a cast its owner wrote is refused on connecting (refuse_casts)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.odcs.type_names import split_arguments


class RedefinitionError(ValueError):
    """A warehouse file defines functions or types (a PostgreSQL database, casts) that would change
    what the checks mean."""


def session_settings(timeout_seconds: float) -> sa.TextClause:
    # one statement, local to the transaction: the timeout; every timestamp literal and comparison in
    # UTC whatever the role's or database's time zone; and names resolved in pg_catalog alone, since
    # PostgreSQL weighs a function of every schema on the search path equally and an exact type match
    # wins (a `public.length(varchar)` would answer our `length(code)`). Tables are always named with
    # their schema (`names_need_schema`). And grouping by sorting, not hashing: a key column's GROUP BY
    # has a group per row, which a hash aggregate spills to disk in batches at the default work_mem
    # (1M rows: 2.5 s for the 5 smallest repeated keys, 0.3-0.7 s sorted, where the LIMIT stops the
    # groups early; the compound key's 2.1-3.1 s against 1.0-1.9 s). set_config is refused in contracts' SQL.
    return sa.text("SELECT set_config('statement_timeout', :ms, true), set_config('TimeZone', 'UTC', true), "
                   "set_config('search_path', 'pg_catalog', true), set_config('enable_hashagg', 'off', true)"
                   ).bindparams(ms=str(int(timeout_seconds * 1000)))


def begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """`BEGIN READ ONLY` and one settings statement."""
    connection = engine.execution_options(postgresql_readonly=True).connect()
    try:
        connection.execute(session_settings(timeout_seconds))
    except BaseException:
        connection.close()
        raise
    return connection


def timed_out(exc: BaseException) -> bool:
    """PostgreSQL cancelled the statement at its statement_timeout (SQLSTATE 57014, and not an
    administrator's cancel)."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "pgcode", None) == "57014" and "statement timeout" in str(orig)


def options(connection: Any) -> dict[str, Any]:
    # no hstore: a catalog query per new connection, for a type no check reads
    return {"connect_args": {"connect_timeout": 10}, "use_native_hstore": False}


def regex(column: ColumnElement, pattern: str) -> ColumnElement:
    # a comparison: its type stays boolean when the column is an expression (a COLLATE) of no type
    return column.op("~", is_comparison=True)(sa.bindparam(None, pattern, type_=sa.String))


def prepare(engine: sa.Engine, connection: Any) -> None:
    @sa.event.listens_for(engine, "connect")
    def refuse(dbapi_connection, _record) -> None:
        refuse_casts(dbapi_connection, connection.url.database)


# On PostgreSQL, the schema's owner cannot reach pg_catalog (check sessions resolve names there
# alone), but a cast is found by its source and target types, never by the search path: the owner
# of a type (an enum, a composite) may write `CREATE CAST (their_type AS text) WITH FUNCTION f AS
# IMPLICIT`, and f then answers for every comparison of that type's values as text or as another
# type. A cast with a function that no extension installed is refused; casts to or from a domain
# are never used, and WITH INOUT casts call the types' own input and output. Every name and
# operator is qualified with pg_catalog: the connection's search path is not yet the session's.
USER_CASTS = """
SELECT pg_catalog.format_type(c.castsource, NULL), pg_catalog.format_type(c.casttarget, NULL),
       pg_catalog.format('%s', c.castfunc::pg_catalog.regprocedure)
FROM pg_catalog.pg_cast AS c
JOIN pg_catalog.pg_type AS s ON s.oid OPERATOR(pg_catalog.=) c.castsource
JOIN pg_catalog.pg_type AS t ON t.oid OPERATOR(pg_catalog.=) c.casttarget
WHERE c.oid OPERATOR(pg_catalog.>=) '16384'::pg_catalog.oid AND c.castmethod OPERATOR(pg_catalog.=) 'f'
  AND s.typtype OPERATOR(pg_catalog.<>) 'd' AND t.typtype OPERATOR(pg_catalog.<>) 'd'
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                  WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_cast'::pg_catalog.regclass
                    AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
ORDER BY 1, 2
"""


def refuse_casts(dbapi_connection: Any, database: str | None) -> None:
    """Refuse a database holding a cast its owner wrote (USER_CASTS): one statement per new
    connection, outside any transaction."""
    autocommit = dbapi_connection.autocommit
    dbapi_connection.autocommit = True  # no BEGIN and ROLLBACK around a catalog read
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(USER_CASTS)
            found = cursor.fetchall()
    finally:
        dbapi_connection.autocommit = autocommit
    if found:
        shown = ", ".join(f"CAST ({s} AS {t}) WITH FUNCTION {f}" for s, t, f in found[:10]) + (
            f" and {len(found) - 10} more" if len(found) > 10 else "")
        raise RedefinitionError(f"the PostgreSQL database {database} holds {shown}: a cast its owner wrote "
                                "answers for the comparisons of its types, so none of its checks runs (drop the "
                                "cast, or use WITH INOUT)")


# -- the schema check: the catalog's own names of types ----------------------------------------------

_ATTRIBUTE = sa.table("pg_attribute", sa.column("attrelid"), sa.column("attname"), sa.column("atttypid"),
                      sa.column("atttypmod"), sa.column("attnum"), sa.column("attnotnull"), sa.column("attisdropped"),
                      schema="pg_catalog")
_CLASS = sa.table("pg_class", sa.column("oid"), sa.column("relname"), sa.column("relnamespace"), schema="pg_catalog")
_NAMESPACE = sa.table("pg_namespace", sa.column("oid"), sa.column("nspname"), schema="pg_catalog")
_format_type = sa.func.pg_catalog.format_type


def catalog_columns(connection: sa.Connection, schema: str, name: str) -> list[dict[str, Any]]:
    """The columns of a table, view or foreign table as PostgreSQL names their types
    (`format_type(atttypid, atttypmod)`: `character varying(8)`, `xml`, `integer[]`), and `resolved`,
    the type's name as `resolve_types` gives a declared one (`format_type` without the modifier, the
    modifier's numbers after it); names exact, as the checks quote them."""
    a, c, n = _ATTRIBUTE.c, _CLASS.c, _NAMESPACE.c
    query = (sa.select(a.attname, _format_type(a.atttypid, a.atttypmod), _format_type(a.atttypid, sa.null()),
                       a.attnotnull)
             .select_from(_ATTRIBUTE.join(_CLASS, c.oid == a.attrelid).join(_NAMESPACE, n.oid == c.relnamespace))
             .where(n.nspname == sa.bindparam(None, schema, type_=sa.String),
                    c.relname == sa.bindparam(None, name, type_=sa.String), a.attnum > 0, sa.not_(a.attisdropped))
             .order_by(a.attnum))
    return [{"name": column, "type_text": shown, "resolved": base + split_arguments(shown)[1], "nullable": not notnull}
            for column, shown, base, notnull in connection.execute(query).fetchall()]


# Names PostgreSQL takes in CREATE TABLE that are no type: `serial` is an integer column with a
# sequence, and its catalog says integer. The only names resolved here rather than by the server
PSEUDO_TYPES = {"serial": "integer", "serial4": "integer", "bigserial": "bigint", "serial8": "bigint",
                "smallserial": "smallint", "serial2": "smallint"}


def resolve_types(connection: sa.Connection, names: list[str]) -> dict[str, str | None]:
    """Each name's type as the catalog names it (`format_type(to_regtype(:name), NULL)`: `int4` →
    `integer`, `varchar(8)` → `character varying` and its `(8)`), the name bound, never spliced; None
    where PostgreSQL knows no such type. One statement; before PostgreSQL 16, which raises on a name
    it cannot parse (that would end the read-only transaction), in a savepoint."""
    parts = {n: split_arguments(n) for n in names}
    bases = [PSEUDO_TYPES.get(base.lower(), base) for base, _ in parts.values()]
    query = sa.select(*(_format_type(sa.func.pg_catalog.to_regtype(sa.bindparam(f"t{i}", base, type_=sa.String)),
                                     sa.null()) for i, base in enumerate(bases)))
    if (connection.dialect.server_version_info or (0,)) >= (16,):  # to_regtype's errors are soft there
        found = list(connection.execute(query).one())
    else:
        try:
            with connection.begin_nested():
                found = list(connection.execute(query).one())
        except sa.exc.DBAPIError:
            found = [None] * len(parts)
    return {n: None if f is None else f + args for (n, (_, args)), f in zip(parts.items(), found)}
