"""The clause matrix on a real DuckDB file, a real PostgreSQL server and a real MariaDB server, and on
Snowflake emulated by fakesnow: every check passes on a good table and fails on a bad one."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.odcs.load import load_contracts
from dq_contracts.engine.runner import run_object
from dq_contracts.engine.schema_check import normalise_type
from dq_contracts_tests.support import MATRIX_PROPERTIES, MATRIX_QUALITY, spark_engine, spark_table, special_floats

CONTRACT = {
    "apiVersion": "v3.2.0", "kind": "DataContract", "id": "m", "version": "1.0.0", "status": "active",
    "schema": [{
        "name": "t", "physicalName": "TABLE",
        "properties": MATRIX_PROPERTIES,
        "quality": MATRIX_QUALITY,
    }],
    "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "t.ts"}],
}

NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.timezone.utc)
NAN = float("nan")
GOOD = [
    (1, "AB", "a@x.io", 10.5, "2021-01-01", "a", None, "2026-06-01 06:00:00", 0.5),
    (2, "CD", "b@x.io", 0, "2022-01-01", "b", 1, "2026-05-31 18:00:00", 0.0),
    (3, "EFG", None, 99.5, "2023-01-01", "a", 2, None, None),
]
BAD = [
    (1, "AB", "not-an-email", -1, "2019-01-01", "z", 7, "2026-05-01 00:00:00", NAN),
    (1, "a", "b@x.io", 100, "2021-01-01", "", 7, "2026-05-02 00:00:00", 1.0),
    (None, "ABCD", None, 0.3, "2021-01-01", None, None, None, 1.0),
    (4, "a", None, 1, "2021-01-01", "", None, None, None),
    (5, "XY", None, 1, "2021-01-01", "", None, None, 2.0),
    (6, None, None, 1, "2021-01-01", "", None, None, 3.0),
]


DDL = ('CREATE TABLE "TABLE" (id INTEGER, code VARCHAR(8), email VARCHAR(64), amount DECIMAL(12,2), '
       'day DATE, kind VARCHAR(8), parent INTEGER, ts TIMESTAMP, ratio DOUBLE PRECISION)')
COLUMNS = ("id", "code", "email", "amount", "day", "kind", "parent", "ts", "ratio")


def fill(engine, rows):
    """"TABLE" holding `rows`; a NaN written as a cast of its text (support.special_floats)."""
    table = sa.table(sa.sql.quoted_name("TABLE", quote=True), *(sa.column(c) for c in COLUMNS))
    with engine.begin() as c:
        c.exec_driver_sql(DDL)
        if rows:
            c.execute(sa.insert(table).values([special_floats(dict(zip(COLUMNS, row, strict=True))) for row in rows]))
    return engine


def no_nan(rows):
    """MariaDB stores no NaN: its bad ratio is a negative instead."""
    return [tuple(-1.0 if v is NAN else v for v in row) for row in rows]


# DDL's columns as Spark spells them (support.spark_table)
SPARK_COLUMNS = {"id": "INT", "code": "VARCHAR(8)", "email": "VARCHAR(64)", "amount": "DECIMAL(12,2)",
                 "day": "DATE", "kind": "VARCHAR(8)", "parent": "INT", "ts": "TIMESTAMP", "ratio": "DOUBLE"}


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres),
                        pytest.param("mariadb", marks=pytest.mark.mariadb), "snowflake",
                        pytest.param("spark", marks=pytest.mark.spark)])
def warehouse(request, tmp_path):
    """A factory: rows -> an engine on a fresh warehouse holding "TABLE" with those rows. On MariaDB
    the table is written with ANSI quotes, and the checks run as the operator's user granted SELECT
    alone, through the operator's declaration. Snowflake: emulated by fakesnow, one database a test.
    Spark: a database of the session's Thrift server, on credentials the operator declared read-only."""
    if request.param == "duckdb":
        return lambda rows, name="w": fill(sa.create_engine(f"duckdb:///{tmp_path / name}.duckdb"), rows)
    if request.param == "snowflake":
        engine = request.getfixturevalue("snowflake")[2]
        return lambda rows, name="w": fill(engine, rows)
    if request.param == "spark":
        # the test stands for an operator who declared the credentials read-only: SQL rules run
        engine = spark_engine(request.getfixturevalue("spark_database"))
        return lambda rows, name="w": (spark_table(engine, "TABLE", SPARK_COLUMNS, rows), engine)[1]
    if request.param == "mariadb":
        from dq_contracts.engine.connections import connection_for, engine_for
        from dq_contracts_tests.support import mysql_env, mysql_server

        admin, reader = request.getfixturevalue("mariadb_database")

        def mariadb(rows, name="w"):
            fill(sa.create_engine(admin, connect_args={"init_command": "SET SESSION sql_mode = 'ANSI_QUOTES'"}),
                 no_nan(rows)).dispose()
            return engine_for(connection_for(mysql_server(reader), mysql_env(reader)))

        return mariadb
    url = request.getfixturevalue("pg_database")
    return lambda rows, name="w": fill(sa.create_engine(url), rows)


def parquet_server(tmp_path, rows) -> tuple[sa.Engine, object]:
    """The same rows as a parquet file of a `local` file server: (engine, files)."""
    from dq_contracts.engine.connections import connection_for, engine_for

    writer = fill(sa.create_engine(f"duckdb:///{tmp_path / 'source.duckdb'}"), rows)
    with writer.begin() as c:
        c.execute(sa.text('COPY "TABLE" TO :path (FORMAT parquet)').bindparams(
            path=str(tmp_path / "TABLE.parquet")))
    writer.dispose()
    connection = connection_for({"server": "lake", "type": "local", "format": "parquet",
                                 "path": "{model}.parquet"}, {}, str(tmp_path))
    return engine_for(connection), connection.files


@pytest.mark.parametrize("rows, failing", [(GOOD, set()), (BAD, "all")], ids=["good", "bad"])
def test_the_clause_matrix_on_a_file_server(plan, tmp_path, rows, failing):
    engine, files = parquet_server(tmp_path, rows)
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine, now=NOW, files=files)}
    assert len(results) == len(plan.objects[0].checks)
    if failing == "all":
        assert [n for n, r in results.items() if r.passed and n != "schema"] == []
        assert results["id__primary_key"].observed == 2 and results["parent__references_t"].samples == [7]
        assert results["kind__missing_values"].observed == pytest.approx(100 * 5 / 6)
    else:
        assert {n for n, r in results.items() if not r.passed} == failing
        assert results["schema"].passed  # parquet keeps the types; DuckDB reads them back
    # a SQL rule reads the object's files: `{object}` is their scan
    assert results["positive"].error is None and results["positive"].observed == (0 if failing != "all" else 1)


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "m.odcs.yaml"
    path.write_text(yaml.safe_dump(CONTRACT))
    result = load_contracts([path])
    assert result.problems == []
    return result.plans[0]


def test_every_check_passes_on_the_good_table(plan, warehouse):
    engine = warehouse(GOOD)
    results = run_object(plan, plan.objects[0], engine, now=NOW)
    assert len(results) == len(plan.objects[0].checks) >= 20
    failing = [(r.name, r.observed, r.error) for r in results if not r.passed]
    assert failing == []


def test_every_check_fails_on_the_bad_table(plan, warehouse):
    engine = warehouse(BAD)
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine, now=NOW)}
    passing = [name for name, r in results.items() if r.passed and name != "schema"]
    assert passing == []
    assert results["code__pattern"].observed == 2
    assert results["email__format"].observed == 1
    assert results["amount__minimum"].observed == 1
    assert results["ratio__minimum"].observed == 1  # the NaN (a negative on MariaDB)
    assert results["row_count"].observed == 6
    assert results["kind__missing_values"].observed == pytest.approx(100 * 5 / 6)
    assert results["id__primary_key"].observed == 2  # one duplicate, one NULL
    assert results["kind__invalid_values"].observed == 5  # 'z' and four '': the NULL is not invalid
    assert results["parent__duplicate_values"].observed == 1  # 7 twice; the four NULLs are not duplicates
    assert results["parent__references_t"].observed == 2  # two rows point at id 7, which does not exist
    assert results["ts__freshness"].observed == (NOW - dt.datetime(2026, 5, 2, tzinfo=dt.timezone.utc)).total_seconds()
    assert all(r.error is None for r in results.values())
    # a failure carries what a person needs to act on it: the value, the threshold, the SQL, samples
    assert results["code__pattern"].samples == ["a"]
    assert results["kind__invalid_values"].samples == ["", "z"]
    assert results["parent__references_t"].samples == [7]
    assert results["parent__duplicate_values"].samples == [7]
    assert results["amount__minimum"].threshold == "= 0" and results["amount__minimum"].row_count == 6
    assert any(op in results["code__pattern"].sql for op in ("regexp_matches", "~", "REGEXP", "regexp_instr",
                                                               "RLIKE"))
    # never a value of a classified column
    assert results["email__format"].samples == []
    assert "classified" in results["email__format"].details["samples_withheld"]


def test_a_missing_table_fails_every_check_with_the_error(plan, tmp_path):
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'empty.duckdb'}")
    results = run_object(plan, plan.objects[0], engine, now=NOW)
    assert results and all(not r.passed and r.error for r in results)
    assert any("TABLE" in r.error for r in results)


# Statements that read the table on the good day, by dialect: (all of them, those with a GROUP BY,
# those with a DISTINCT). Both: the aggregate (the compound key's GROUP BY a subquery of it), the
# relationship's anti-join and the SQL rule. PostgreSQL: one statement of distinct counts for the
# three key columns. DuckDB: one GROUP BY per key column, which also finds the repeated keys. MySQL:
# as PostgreSQL (its catalog read, information_schema, binds the table's name). Snowflake and Spark: as
# PostgreSQL, and their catalog queries (DESC TABLE, DESCRIBE … AS JSON) name the table too.
TABLE_STATEMENTS = {"duckdb": (6, 4, 0), "postgresql": (4, 1, 1), "mysql": (4, 1, 1), "snowflake": (5, 1, 1),
                    "hive": (5, 1, 1)}


def test_one_aggregate_scan_per_table(plan, warehouse):
    engine = warehouse(GOOD)
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    results = run_object(plan, plan.objects[0], engine, now=NOW)
    kinds = {r.kind for r in results}
    assert len(results) >= 15 and len(kinds) >= 10
    preparer = engine.dialect.identifier_preparer
    table = preparer.quote_identifier("TABLE")  # "TABLE", or `TABLE` on MySQL and Spark
    data = [s for s in statements if table in s]
    catalog = [s for s in statements if table not in s and s.lstrip().upper().startswith(("SELECT", "WITH"))]
    aggregate = [s for s in data if f" AS {preparer.quote('m0')}" in s and "GROUP BY" in s]  # `m0` on Spark
    # one aggregate for all count-style checks; one query each for the relationship and the SQL
    # rule; the schema check only reads the catalog
    assert len(aggregate) == 1
    statements, group_bys, distincts = TABLE_STATEMENTS[engine.dialect.name]
    assert len(data) == statements, data
    assert sum("GROUP BY" in s for s in data) == group_bys and sum("EXISTS" in s for s in data) == 1
    assert sum("DISTINCT" in s for s in data) == distincts
    assert all(table not in s for s in catalog)
    shared = next(r.aggregate_sql for r in results if r.kind == "row_count")
    assert sum(r.aggregate_sql == shared for r in results) >= 13  # answered by the single aggregate


@pytest.mark.parametrize("a,b", [("int4", "INTEGER"), ("varchar(2)", "VARCHAR(2)"), ("numeric(12,2)", "DECIMAL(12, 2)"),
                                 ("bool_", "BOOLEAN")])
def test_type_spellings_compare_equal(a, b):
    assert normalise_type(a) == normalise_type(b)


# (dialect, the catalog's type, the contract's physicalType, the same?): each dialect's row's spellings,
# names with `_` among them (Spark's `timestamp_ltz` failed a clean table's schema check)
DIALECT_SPELLINGS = [
    ("hive", "timestamp_ltz", "TIMESTAMP", True),
    ("hive", "timestamp_ntz", "TIMESTAMP", False),
    ("hive", "long", "BIGINT", True),
    ("duckdb", "timestamp_ns", "TIMESTAMP", False),
    ("postgresql", "character varying(8)", "VARCHAR(8)", True),
]


@pytest.mark.parametrize("dialect, real, declared, same", DIALECT_SPELLINGS)
def test_a_dialects_type_spellings_judge_the_schema(dialect, real, declared, same):
    from dq_contracts.engine.dialects import dialect_of
    from dq_contracts.engine.schema_check import same_type

    assert same_type(real, declared, dialect_of(dialect).type_spellings) is same


COMPOUND = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "pk", "version": "1.0.0", "status": "active",
    "schema": [{"name": "t", "physicalName": "TABLE", "properties": [
        {"name": "id", "logicalType": "integer", "primaryKey": True, "primaryKeyPosition": 1},
        {"name": "code", "logicalType": "string", "primaryKey": True, "primaryKeyPosition": 2}]}],
}


@pytest.mark.parametrize("rows,observed", [
    (GOOD, 0),
    # (1, AB) is fine once; a NULL in either part of the key counts, so does a repeated tuple
    (GOOD + [(1, "AB", None, 1, "2021-01-01", "a", None, None, None),
             (None, "ZZ", None, 1, "2021-01-01", "a", None, None, None),
             (9, None, None, 1, "2021-01-01", "a", None, None, None)], 3),
])
def test_a_compound_primary_key(warehouse, tmp_path, rows, observed):
    path = tmp_path / "pk.odcs.yaml"
    path.write_text(yaml.safe_dump(COMPOUND))
    plan = load_contracts([path]).plans[0]
    engine = warehouse(rows)
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine, now=NOW)}
    key = results["primary_key"]
    assert key.kind == "primary_key" and key.error is None
    assert key.observed == observed and key.passed is (observed == 0)
    assert len(key.details) == 0 and "GROUP BY" in key.sql


@pytest.mark.postgres
def test_a_postgresql_session_groups_by_sorting(pg_database):
    """A key column's GROUP BY has a group per row: hashed, it spills in batches at the default
    work_mem, sorted it streams and a LIMIT of 5 repeated keys stops early (dialect_postgres)."""
    from dq_contracts.engine.sessions import Session

    engine = sa.create_engine(pg_database)
    with Session(engine, 30) as session:
        settings = session.run(lambda c: c.execute(sa.text(
            "SELECT current_setting('enable_hashagg'), current_setting('TimeZone'), "
            "current_setting('transaction_read_only')")).one())
    assert tuple(settings) == ("off", "UTC", "on")
    with engine.connect() as c:  # local to the check's transaction, not the connection's
        assert c.execute(sa.text("SELECT current_setting('enable_hashagg')")).scalar() == "on"
    engine.dispose()


def test_two_clauses_measured_by_the_same_sql_share_one_measure(tmp_path):
    """enum and invalidValues' validValues on one column are the same NOT IN: measured once, both judged."""
    from dq_contracts.engine.connections import connection_for, engine_for

    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t AS SELECT * FROM (VALUES ('a'), ('b'), ('z'), (NULL)) AS v(kind)")
    engine.dispose()
    path = tmp_path / "c.odcs.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v3.2.0", "kind": "DataContract", "id": "shared", "version": "1.0.0", "status": "active",
        "servers": [{"server": "w", "type": "duckdb", "database": "w.duckdb"}],
        "schema": [{"name": "t", "properties": [{"name": "kind", "physicalType": "VARCHAR",
                    "enum": [{"value": "a"}, {"value": "b"}],
                    "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["a", "b"]}, "mustBe": 0},
                                {"metric": "invalidValues", "arguments": {"validValues": ["a", "z"]}, "mustBe": 0}]}]}],
    }))
    plan = load_contracts([path]).plans[0]
    connection = connection_for(plan.servers[0], {}, str(tmp_path))
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine_for(connection), now=NOW)}
    judged = {name: (r.passed, r.observed) for name, r in results.items() if r.kind != "schema"}
    assert sorted(judged.values()) == [(False, 1)] * 3  # 'z', 'z', then 'b' outside ['a', 'z'] (NULL valid)
    aggregate = next(r.aggregate_sql for r in results.values() if r.kind != "schema")
    assert aggregate.count("NOT IN ('a', 'b')") == 1 and aggregate.count("NOT IN ('a', 'z')") == 1
