"""PostgreSQL, as the `postgresql` row of engine/dialects.py reaches it (psycopg2): a check session is
`BEGIN READ ONLY` with a statement timeout, in UTC, resolving names in pg_catalog alone; a database
holding a cast its owner wrote is refused on connecting (refuse_casts)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement


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
