"""How the engine reaches each SQL dialect: one row per dialect (`DIALECTS`, keyed by SQLAlchemy's
dialect name, `url.get_backend_name()`), and `GENERIC` for any other.

A row says how a connection is built and opened, how a session is made read-only and time-limited
(`begin`, `interrupt`, `server_timeout`), how a 2- or 3-part table name is quoted, the regex, length,
epoch and NaN functions the check kinds call, how text is compared byte by byte (`binary_text`), the
catalog query of the schema check (types as the engine spells them), how the engine resolves a
declared type name (`resolve_types`) or how type names are normalised, and how many measures one
statement holds. What ODCS says about the server type (its
names, sqlglot dialect, default schema, case) is its row in odcs/servers.py. This module holds the
row type, the functions rows share and the rows; each engine's own functions are in its module
(dialect_duckdb.py, dialect_postgres.py, dialect_mysql.py, warehouse_sql.py, spark.py).

A dialect whose row has no `begin` cannot make a session read-only and time-limited here: the engine
refuses it (connections.connection_for, sessions._begin) unless the operator declares that its
credentials can only read (`DQ_CONTRACTS_<SERVER>_READ_ONLY=true`). So is one whose session could
undo its own read-only mode (MySQL), or one no client can make read-only (Snowflake), though its `begin`
still sets what it can: `why_not_read_only` says which, and the refusal says it. Spark has no
read-only mode either, but its row's `checks_unvouched` lets the checks' own SELECTs run on its
time-limited session; a contract's SQL rule runs there only on `_READ_ONLY` (rule_refusal).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.engine import dialect_duckdb, dialect_mysql, nested, nested_json, spark
from dq_contracts.engine import dialect_postgres as pg
from dq_contracts.engine import warehouse_sql as ws
from dq_contracts.odcs.declaration import env_prefix
from dq_contracts.odcs.servers import DIALECT_SPELLINGS


# -- quoting, functions, catalog: what every dialect shares unless its row says otherwise ------------

def qualifier(prefix: list[str], preparer: Any, physical_name: str) -> Any:
    """The schema part of a table's name, each part quoted on its own: SQLAlchemy quotes a schema as
    one identifier, so `db.schema` is joined here from parts each quoted by the dialect's preparer."""
    if not prefix:
        return None
    if len(prefix) == 1:
        return sa.sql.quoted_name(prefix[0], quote=True)
    if preparer is None:
        raise ValueError(f"{physical_name}: a name of {len(prefix) + 1} parts needs the dialect's quoting")
    return sa.sql.quoted_name(".".join(preparer.quote_identifier(p) for p in prefix), quote=False)


def _regex(column: ColumnElement, pattern: str) -> ColumnElement:
    """True when the value contains a match (JSON Schema `pattern`: not anchored); SQLAlchemy's own
    operator for the dialect, where it has one."""
    return column.regexp_match(pattern)


def _length(column: ColumnElement) -> ColumnElement:
    return sa.func.length(column)


def _epoch(value: ColumnElement) -> ColumnElement:
    # EXTRACT(EPOCH) of a timestamp without time zone is its nominal epoch (as if UTC), of a date its
    # midnight UTC, of a timestamp with time zone the instant itself: on PostgreSQL and DuckDB alike
    return sa.extract("epoch", value)


def _nan_equal(value: ColumnElement) -> ColumnElement:
    """True for a NaN where NaN equals itself (PostgreSQL, Snowflake: `x != x` is never true there);
    the cast makes the text NaN on every such engine, and a NUMERIC's own NaN compares as one."""
    return value == sa.cast(sa.bindparam(None, "NaN", type_=sa.String), sa.Double)


def _is_nan(name: str) -> Callable[[ColumnElement], ColumnElement]:
    """The engine's own NaN test (DuckDB and Spark `isnan`, Trino `is_nan`, BigQuery `IS_NAN`)."""
    return lambda value: getattr(sa.func, name)(value, type_=sa.Boolean)


def _binary_text(text_type: type, collation: str) -> Callable[[ColumnElement], ColumnElement]:
    """Text compared byte by byte, whatever the warehouse's owner made the column compare as: a
    collation (DuckDB's NOCASE, PostgreSQL's nondeterministic ICU ones, a domain carrying one) or a
    type (citext groups and joins case-blind, an enum compares labels as its own). The value is cast
    to plain text and put under the dialect's binary collation; DuckDB keeps a column's collation
    through a cast, so the COLLATE is what drops it there."""
    return lambda value: sa.cast(value, text_type).collate(collation)


def _called(name: str) -> Callable[..., ColumnElement]:
    """A call of the SQL function `name`, not of whatever `sa.func.<name>` is registered as: a driver
    imported in the same process may register its own (sqlalchemy_bigquery's `unnest` refuses any
    argument not typed ARRAY)."""
    return lambda *arguments: sa.sql.functions.Function(name, *arguments)


def _catalog_columns(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    """The table's columns as SQLAlchemy's inspector reads the catalog, each type as the dialect
    writes it; [] when there is no table. (The rows of the engines run here read their catalog
    themselves: the inspector knows no type it has no class for.)"""
    try:
        columns = sa.inspect(connection).get_columns(name, schema=".".join(prefix) or None)
    except sa.exc.NoSuchTableError:
        return []
    return [{**c, "type_text": c.get("type_text") or c["type"].compile(dialect=connection.dialect)} for c in columns]


def no_server_timeout(exc: BaseException) -> bool:
    """A dialect whose server has no statement timeout of ours: only a timer (`interrupt`) stops one."""
    return False


class MissingTable(Exception):
    """The table is not in the catalog."""


# Type names spelt differently by warehouses and by people, to one spelling each
TYPE_SPELLINGS: Mapping[str, str] = {
    "int4": "integer", "int": "integer", "int32": "integer", "int8": "bigint", "int64": "bigint", "long": "bigint",
    "int2": "smallint", "float8": "double", "double precision": "double", "float4": "real", "float": "double",
    "numeric": "decimal", "bool": "boolean", "character varying": "varchar", "string": "varchar", "text": "varchar",
    "timestamp without time zone": "timestamp", "timestamptz": "timestamp with time zone",
    "timestamp with time zone": "timestamp with time zone", "timetz": "time with time zone",
    "time without time zone": "time", "character": "char", "bpchar": "char", "varbit": "bit varying",
    "bool_": "boolean",
}

DEFAULT_MEASURES_PER_STATEMENT = 2000


# -- PostgreSQL (engine/dialect_postgres.py) ----------------------------------------------------------

def _postgres_catalog(connection: sa.Connection, prefix: list[str], name: str) -> list[dict[str, Any]]:
    if len(prefix) == 2:  # database.schema.table: PostgreSQL's catalog holds its own database only
        current = connection.execute(sa.select(sa.func.current_database())).scalar()
        if prefix[0] != current:
            raise MissingTable(f"table {'.'.join([*prefix, name])} is in database {prefix[0]!r}, not in "
                               f"{current!r}, the database this server connects to")
        prefix = prefix[1:]
    return pg.catalog_columns(connection, prefix[0] if prefix else connection.dialect.default_schema_name, name)


# -- the rows -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Dialect:
    """How the engine reaches one SQL dialect. Every field is given in every row (test_servers)."""

    name: str  # SQLAlchemy's dialect name
    driver: str | None  # the drivername of a URL built from `_HOST`…; None: only the operator's `_URL`
    engine_options: Callable[[Any], dict[str, Any]]  # create_engine's keywords for a connections.Connection
    prepare: Callable[[sa.Engine, Any], None] | None  # what every new connection of the engine does first
    settings: tuple[tuple[str, str, Callable[[], Any]], ...]  # (setting, declaration field, default) of a session
    # a connection in a read-only transaction with the timeout set; None: this row cannot make one
    begin: Callable[[sa.Engine, float], sa.Connection] | None
    # None: `begin` makes every session read-only itself. Otherwise why it cannot (the refusal says it),
    # so only the operator's read-only credentials can and `_READ_ONLY` is required: no `begin` at all,
    # a read-only mode the session could undo (MySQL), or none a client can set (Snowflake, whose
    # `begin` sets the time limit alone). One field for both: "read-only by itself" is one question
    why_not_read_only: str | None
    # True: the checks' own SELECTs run on `begin`'s time-limited session without `_READ_ONLY` (a
    # contract's SQL rule still needs it: dialects.rule_refusal); Spark, which has no read-only mode
    checks_unvouched: bool
    # where the server has no statement timeout: what a timer calls to stop the statement at it
    interrupt: Callable[[sa.Connection], Callable[[], None]] | None
    server_timeout: Callable[[BaseException], bool]  # the server cancelled a statement at the timeout
    names_need_schema: bool  # the session resolves names in the catalog schema alone: tables name theirs
    qualifier: Callable[[list[str], Any, str], Any]  # the quoted schema part of a 2- or 3-part name
    regex: Callable[[ColumnElement, str], ColumnElement]
    length: Callable[[ColumnElement], ColumnElement]
    epoch: Callable[[ColumnElement], ColumnElement]
    # a text value as every check compares it, byte by byte (_binary_text); None: as the column compares
    binary_text: Callable[[ColumnElement], ColumnElement] | None
    # the condition a number is NaN, which a bound counts as outside it (check_kinds._range); None where
    # no column can hold a NaN or an infinity (MySQL and MariaDB cast 'NaN' to 0: a test there would
    # flag every zero), so multipleOf adds no test of them either
    nan: Callable[[ColumnElement], ColumnElement] | None
    # the schema check's catalog read: each column's name, `type_text` (as the engine spells its type),
    # `nullable`, and `resolved` where the engine names it as `resolve_types` does
    catalog_columns: Callable[[sa.Connection, list[str], str], list[dict[str, Any]]]
    # each judged type name (odcs.type_names) as the engine resolves it, None where it knows none;
    # None: the engine cannot resolve names here, and `type_spellings` normalise them
    resolve_types: Callable[[sa.Connection, list[str]], dict[str, str | None]] | None
    type_spellings: Mapping[str, str]  # type-name normalisation (schema_check.normalise_type)
    measures_per_statement: int  # a wide table's aggregate is split into statements of at most this
    distinct_counts_per_statement: int  # the same for its distinct counts (check_kinds._keys_apart)
    # a key column's repeated rows, NULLs and 5 smallest repeated keys from one GROUP BY (a bounded
    # `min(key, 5)`), so a failing unique or primary key needs no second pass for samples
    key_groups: bool
    # one row of array subqueries serves a table's bounded samples (samples._bounded_samples); False
    # where the server has no array (MySQL): each failing clause's samples query runs alone
    sample_arrays: bool
    # a struct's field as a column expression (engine/nested.py): (value, field, type) -> `(value).field`;
    # None: nested values are not addressed here (a nested clause's check says so)
    field_access: Callable[..., ColumnElement] | None
    unnest: Callable[[ColumnElement], ColumnElement] | None  # an array's items, one row each, in a SELECT list
    json: nested_json.JsonAccess | None  # members of a JSON column's values (`-> 'key'`); None: not addressed
    # statements sent with their values as literals (dialect_duckdb.literal_values), where binding
    # parameters costs the client more than rendering them (DuckDB's imports pandas)
    inline_values: bool
    # the schema the operator's URL itself names (a Spark URL's database, Databricks' `schema=`): what
    # a bare name means where the contract's server names none; None: the type's default schema
    url_schema: Callable[[sa.URL], str | None]
    # the catalog the operator's URL reads (Databricks' `catalog=`): a contract's server naming another is
    # refused (connections._agrees), since its tables would be read in the URL's
    url_catalog: Callable[[sa.URL], str | None]
    # the operator's URL with the catalog the contract's server names, where the URL names none
    # (Databricks' `catalog=`): else its tables would be read in the session's default catalog, another
    # table of the same schema and name. None: the dialect's URL names no catalog
    with_catalog: Callable[[sa.URL, str], sa.URL] | None
    # the type a time of day and a time bound both compare as (check_kinds._range): TIME WITH TIME ZONE
    # where the engine has it, so a TIMETZ column meets a bound without an offset at UTC (as PostgreSQL
    # casts it in a UTC session) and a bound's offset is honoured; None: as TIME, the bound's offset dropped
    zoned_time: sa.types.TypeEngine | None


def _no_name(url: sa.URL) -> str | None:
    """A URL whose query names no schema or catalog of its own: the server's, else its type's default."""
    return None


GENERIC = Dialect(
    name="", driver=None, engine_options=lambda connection: {}, prepare=None, settings=(), begin=None,
    why_not_read_only="has no row here that makes a check session read-only and time-limited (engine/dialects.py)",
    interrupt=None, server_timeout=no_server_timeout, names_need_schema=False, qualifier=qualifier, regex=_regex,
    length=_length, epoch=_epoch, binary_text=None, nan=_nan_equal, catalog_columns=_catalog_columns, resolve_types=None,
    type_spellings=TYPE_SPELLINGS, measures_per_statement=DEFAULT_MEASURES_PER_STATEMENT,
    distinct_counts_per_statement=DEFAULT_MEASURES_PER_STATEMENT, key_groups=False,
    sample_arrays=True, checks_unvouched=False, field_access=None, unnest=None, json=None, inline_values=False,
    url_schema=_no_name, url_catalog=_no_name, with_catalog=None, zoned_time=None)

# The warehouses reached through their own SQLAlchemy packages (pyproject's extras): GENERIC but for
# what each row says. Snowflake begins a time-limited session but cannot make it read-only; the
# compiled-only ones (the tests compile and parse their SQL, nothing runs it) begin none, so they run
# only on the operator's `_READ_ONLY` word, with no timeout of ours.
_COMPILED_ONLY = ("has a row here for its SQL (compiled and parsed in tests, not run), but none that makes a check "
                  "session read-only and time-limited (engine/dialects.py)")
WAREHOUSE_DIALECTS: dict[str, Dialect] = {row.name: row for row in (
    dataclasses.replace(
        GENERIC, name="snowflake", driver="snowflake", begin=ws.snowflake_begin,
        why_not_read_only="time-limits a check session, but a snowflake session cannot be made read-only by the "
                          "client: only the operator's read-only role keeps it read-only",
        server_timeout=ws.snowflake_timeout, regex=ws.snowflake_regex, epoch=ws.snowflake_epoch,
        catalog_columns=ws.snowflake_catalog, type_spellings={**TYPE_SPELLINGS, **ws.SNOWFLAKE_SPELLINGS}),
    dataclasses.replace(GENERIC, name="bigquery", driver="bigquery", why_not_read_only=_COMPILED_ONLY,
                        regex=ws.bigquery_regex, epoch=ws.bigquery_epoch, nan=_is_nan("is_nan"),
                        type_spellings={**TYPE_SPELLINGS, **ws.BIGQUERY_SPELLINGS}),
    # PostgreSQL's operators, over psycopg2
    dataclasses.replace(GENERIC, name="redshift", driver="redshift+psycopg2", why_not_read_only=_COMPILED_ONLY,
                        regex=pg.regex),
    dataclasses.replace(GENERIC, name="trino", driver="trino", why_not_read_only=_COMPILED_ONLY,
                        engine_options=ws.trino_options, regex=ws.trino_regex, epoch=ws.trino_epoch,
                        nan=_is_nan("is_nan")),
    dataclasses.replace(GENERIC, name="mssql", driver="mssql+pyodbc", why_not_read_only=_COMPILED_ONLY,
                        regex=ws.mssql_regex, length=ws.mssql_length, epoch=ws.mssql_epoch,
                        binary_text=ws.mssql_binary_text, nan=None),  # SQL Server's float holds no NaN
)}

DIALECTS: dict[str, Dialect] = {
    # PostgreSQL refuses a target list of more than 1,664 entries; it has no bounded aggregate, and
    # its COUNT(DISTINCT …) is faster than its hash GROUP BY (2M rows: 0.57 s against 2.37 s)
    "postgresql": Dialect(
        name="postgresql", driver="postgresql+psycopg2", engine_options=pg.options,
        prepare=pg.prepare, settings=(), begin=pg.begin, why_not_read_only=None, interrupt=None,
        server_timeout=pg.timed_out, names_need_schema=True, qualifier=qualifier, regex=pg.regex,
        length=_length, epoch=_epoch, binary_text=_binary_text(sa.Text, "C"), nan=_nan_equal,
        catalog_columns=_postgres_catalog, resolve_types=pg.resolve_types,
        type_spellings=TYPE_SPELLINGS, measures_per_statement=1500, distinct_counts_per_statement=1500,
        key_groups=False, sample_arrays=True, checks_unvouched=False, field_access=nested.field_of,
        unnest=_called("unnest"), json=nested_json.POSTGRES_JSON, inline_values=False, url_schema=_no_name,
        url_catalog=_no_name, with_catalog=None, zoned_time=sa.Time(timezone=True)),
    # DuckDB holds a hash table for each distinct count at once
    "duckdb": Dialect(
        name="duckdb", driver="duckdb", engine_options=dialect_duckdb.options, prepare=dialect_duckdb.prepare,
        settings=dialect_duckdb.SETTINGS, begin=dialect_duckdb.begin, interrupt=dialect_duckdb.interrupt,
        server_timeout=no_server_timeout, names_need_schema=False, qualifier=qualifier, regex=dialect_duckdb.regex,
        length=_length, epoch=_epoch, binary_text=_binary_text(sa.String, "binary"), nan=_is_nan("isnan"),
        catalog_columns=dialect_duckdb.catalog_columns, resolve_types=dialect_duckdb.resolve_types,
        type_spellings=TYPE_SPELLINGS,
        measures_per_statement=DEFAULT_MEASURES_PER_STATEMENT, distinct_counts_per_statement=50,
        key_groups=True, why_not_read_only=None, sample_arrays=True, checks_unvouched=False,
        field_access=nested.field_of, unnest=_called("unnest"), json=nested_json.DUCKDB_JSON, inline_values=True,
        url_schema=_no_name, url_catalog=_no_name, with_catalog=None, zoned_time=sa.Time(timezone=True)),
    # MySQL and MariaDB (engine/dialect_mysql.py): read-only only by the operator's SELECT-only user;
    # a table holds at most 4,096 columns, so a statement of 1,000 measures is well within its limits
    "mysql": Dialect(
        name="mysql", driver="mysql+pymysql", engine_options=dialect_mysql.options, prepare=None, settings=(),
        begin=dialect_mysql.begin, interrupt=None, server_timeout=dialect_mysql.timed_out, names_need_schema=False,
        qualifier=dialect_mysql.qualifier, regex=dialect_mysql.regex, length=dialect_mysql.length,
        epoch=dialect_mysql.epoch, binary_text=dialect_mysql.binary_text, nan=None,
        catalog_columns=dialect_mysql.catalog_columns, resolve_types=None,
        type_spellings={**TYPE_SPELLINGS, **dialect_mysql.TYPE_SPELLINGS}, measures_per_statement=1000,
        distinct_counts_per_statement=100, key_groups=False,
        why_not_read_only="starts a check session READ ONLY with a statement timeout, but the session itself could "
                          "undo READ ONLY, so only credentials that can only read (a user granted SELECT alone) "
                          "keep it read-only",
        sample_arrays=False, checks_unvouched=False, field_access=None, unnest=None, json=None, inline_values=False,
        url_schema=_no_name, url_catalog=_no_name, with_catalog=None, zoned_time=None),
    **WAREHOUSE_DIALECTS,
    # Spark SQL (engine/spark.py): a Spark Thrift server through PyHive (`hive://`), and a Databricks SQL
    # warehouse through databricks-sqlalchemy (a URL built from `_HOST`… has no `http_path`: Databricks
    # takes the operator's `_URL`). Time-limited by the server's query timeout, never read-only
    **{name: dataclasses.replace(
        GENERIC, name=name, driver=name, prepare=spark.prepare, begin=spark.begin, checks_unvouched=True,
        why_not_read_only=f"has no read-only session ({name} time-limits it, but Spark has no read-only mode)",
        server_timeout=spark.server_timeout, regex=spark.regex, epoch=spark.epoch,
        # text as the column compares: a `CAST(… AS STRING)` would drop a UTF8_LCASE collation, but
        # Spark cannot then resolve the samples' ORDER BY over the GROUP BY of that expression
        binary_text=None, nan=_is_nan("isnan"), catalog_columns=spark.catalog_columns,
        type_spellings={**TYPE_SPELLINGS, **spark.SPELLINGS}, distinct_counts_per_statement=50,
        field_access=nested.field_of, unnest=_called("explode"), json=None, url_schema=url_schema,
        url_catalog=url_catalog, with_catalog=with_catalog)
       for name, url_schema, url_catalog, with_catalog in (
           ("hive", lambda url: url.database, lambda url: None, None),
           ("databricks", lambda url: url.query.get("schema"), lambda url: url.query.get("catalog"),
            lambda url, catalog: url.update_query_dict({"catalog": catalog})))},
}



def dialect_of(name: str | None) -> Dialect:
    """The row of SQLAlchemy dialect `name`; GENERIC (no read-only session) for any other."""
    name = str(name or "").lower()
    return DIALECTS.get(DIALECT_SPELLINGS.get(name, name), GENERIC)


def rule_refusal(name: str, vouched: bool) -> str | None:
    """Why a contract's SQL rule is not run in dialect `name`, or None: on a session that is not
    read-only by itself (`why_not_read_only`), only on the operator's word that its credentials can only
    read. (Rows without `checks_unvouched` never connect without that word, so only Spark's refuse here.)"""
    row = dialect_of(name)
    if vouched or row.why_not_read_only is None:
        return None
    return (f"dialect {name!r} {row.why_not_read_only}, so a contract's own SQL runs only where the operator "
            "declares the server's credentials read-only (DQ_CONTRACTS_<SERVER>_READ_ONLY=true)")


def read_only_refusal(name: str, server: str | None = None) -> str | None:
    """Why a connection in dialect `name` is refused when the operator has not declared its
    credentials read-only, or None when its row makes every session read-only and time-limited."""
    row = dialect_of(name)
    if row.begin is not None and (row.why_not_read_only is None or row.checks_unvouched):
        return None
    variable = (env_prefix(server) if server is not None else "DQ_CONTRACTS_<SERVER>") + "_READ_ONLY"
    where = f"server {server!r}: " if server is not None else ""
    # a row that begins a session still time-limits it; one that begins none runs with no timeout
    untimed = "" if row.begin is not None else ": its statements then run with no timeout"
    return (f"{where}dialect {name or '(none)'!r} {row.why_not_read_only}; not connecting (if its credentials "
            f"can only read, the operator declares {variable}=true{untimed})")
