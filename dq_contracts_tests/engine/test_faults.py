"""Faults and hostile contracts against real warehouses: nothing reported as passing that was not
verified, nothing written, no credential shown."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts_tests.pgcluster import PASSWORD
from dq_contracts_tests.support import contract, pg_env, pg_server, plan_of

EVIL = '"; DROP TABLE x; --'


def table_t(writer: sa.Engine, values: list[int]) -> None:
    """Table t(a) holding `values`; the writer is closed after (DuckDB: one writer per file)."""
    with writer.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a INTEGER)")
        for value in values:
            c.execute(sa.text("INSERT INTO t VALUES (:a)"), {"a": value})
    writer.dispose()


def snapshot(engine: sa.Engine) -> dict:
    """Every table with its row count: what must not change."""
    inspector = sa.inspect(engine)
    schema = "main" if engine.dialect.name == "duckdb" else "public"
    with engine.connect() as c:
        return {name: c.execute(sa.select(sa.func.count()).select_from(sa.table(name, schema=schema))).scalar()
                for name in inspector.get_table_names(schema=schema)}


def test_quoting_cannot_be_escaped_and_nothing_changes(warehouse, tmp_path):
    server, environ, writer = warehouse
    evil_col = sa.column(EVIL)
    with writer.begin() as c:
        c.execute(sa.schema.CreateTable(sa.Table("x", sa.MetaData(), sa.Column("a", sa.Integer))))
        c.execute(sa.text("INSERT INTO x VALUES (1)"))
        c.execute(sa.schema.CreateTable(sa.Table("t", sa.MetaData(), sa.Column(EVIL, sa.String),
                                                 sa.Column("b", sa.String))))
        c.execute(sa.table("t", evil_col, sa.column("b")).insert(), [{EVIL: EVIL, "b": "ok"},
                                                                    {EVIL: "other", "b": EVIL}])
    before = snapshot(writer)
    writer.dispose()
    doc = contract(server, [
        {"name": EVIL, "logicalType": "string", "required": True, "enum": [{"value": EVIL}],
         "description": EVIL, "logicalTypeOptions": {"pattern": EVIL + "|^o"}},
        {"name": "b", "logicalType": "string", "logicalTypeOptions": {"maxLength": 2}},
    ])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses)}
    assert all(r.error is None for r in results.values()), {n: r.error for n, r in results.items()}
    # the evil strings were compared as data: one row holds the enum value, the other does not
    evil_enum = next(r for r in results.values() if r.kind == "accepted_values")
    assert evil_enum.observed == 1 and not evil_enum.passed
    assert next(r for r in results.values() if r.kind == "not_null").passed
    assert results["b__max_length"].observed == 1
    engine = sa.create_engine(writer.url)
    assert snapshot(engine) == before == {"x": 1, "t": 2}
    engine.dispose()


@pytest.mark.parametrize("query,reason", [
    ("DELETE FROM {object}", "DELETE"),
    ("INSERT INTO x SELECT COUNT(*) FROM {object}", "INSERT"),
    ("WITH gone AS (UPDATE x SET a = 2 RETURNING a) SELECT COUNT(*) FROM gone", "UPDATE"),
    ("SELECT COUNT(*) FROM {object}; DROP TABLE x", "statements"),
])
def test_sql_rules_that_write_are_not_run(warehouse, tmp_path, query, reason):
    server, environ, writer = warehouse
    with writer.begin() as c:
        c.exec_driver_sql("CREATE TABLE x (a INTEGER)")
        c.exec_driver_sql("INSERT INTO x VALUES (1)")
        c.exec_driver_sql("CREATE TABLE t (a INTEGER)")
    before = snapshot(writer)
    writer.dispose()
    doc = contract(server, [{"name": "a", "logicalType": "integer"}],
                   [{"type": "sql", "name": "sneaky", "query": query, "mustBe": 0}])
    plan, loaded = plan_of(tmp_path, doc, expect_problems=True)
    # refused at compile time: an error for `validate` confined to its clause, a check that will fail
    assert [p for p in loaded.errors if "SQL rule refused" in p.message and p.reach == "clause"]
    assert loaded.usable_plans == [plan]
    with Warehouses(environ) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses)}
    sneaky = results["sneaky"]
    assert not sneaky.passed and sneaky.severity == "ERROR" and reason.lower() in sneaky.error.lower()
    assert sneaky.error.startswith("not run: SQL rule refused")
    assert results["schema"].passed  # the contract's other clauses ran
    engine = sa.create_engine(writer.url)
    assert snapshot(engine) == before
    engine.dispose()


def test_a_sql_rule_returning_null_fails(warehouse, tmp_path):
    server, environ, writer = warehouse
    table_t(writer, [1])
    doc = contract(server, [{"name": "a", "logicalType": "integer"}],
                   [{"type": "sql", "name": "max_of_nothing", "query": "SELECT MAX(a) FROM {object} WHERE a > 5",
                     "mustBeLessThan": 10},
                    {"type": "sql", "name": "no_row", "query": "SELECT a FROM {object} WHERE a > 5", "mustBe": 0}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses)}
    for name, said in (("max_of_nothing", "returned NULL"), ("no_row", "exactly one row of one column; this one "
                                                                         "returned no row")):
        assert not results[name].passed and said in results[name].error and results[name].observed is None


def test_percent_thresholds_on_an_empty_table(warehouse, tmp_path):
    server, environ, writer = warehouse
    table_t(writer, [])
    doc = contract(server, [{"name": "a", "logicalType": "integer", "quality": [
        {"metric": "nullValues", "mustBeLessThan": 5, "unit": "percent"},
        {"metric": "missingValues", "mustBeGreaterThan": 10, "unit": "percent"}]}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        results = {r.kind: r for r in run_contract(plan, warehouses)}
    # no rows: 0 % of them are NULL (no division by zero); "more than 10 % missing" is then false
    assert results["null_values"].observed == 0.0 and results["null_values"].row_count == 0
    assert results["null_values"].passed and results["null_values"].error is None
    assert results["missing_values"].observed == 0.0 and not results["missing_values"].passed


def test_a_missing_table_fails_at_its_severity_and_other_tables_still_report(warehouse, tmp_path):
    server, environ, writer = warehouse
    with writer.begin() as c:
        c.exec_driver_sql("CREATE TABLE present (a INTEGER)")
        c.exec_driver_sql("INSERT INTO present VALUES (1)")
    writer.dispose()
    doc = contract(server, [{"name": "a", "logicalType": "integer", "required": True}])
    doc["schema"].append({"name": "present", "physicalName": "present",
                          "properties": [{"name": "a", "logicalType": "integer", "required": True,
                                          "quality": [{"metric": "nullValues", "mustBe": 0,
                                                       "severity": "warning"}]}]})
    doc["schema"][0]["properties"][0]["quality"] = [{"metric": "nullValues", "mustBe": 0, "severity": "warning"}]
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        results = run_contract(plan, warehouses)
    missing = [r for r in results if r.object == "t"]
    present = [r for r in results if r.object == "present"]
    assert missing and all(not r.passed and r.error for r in missing)
    assert {r.severity for r in missing} == {"ERROR", "WARN"}  # each fails at its own severity
    assert present and all(r.passed and r.error is None for r in present if r.kind != "schema")


@pytest.mark.postgres
def test_a_wrong_password_fails_every_check_and_is_never_shown(pg_database, tmp_path):
    doc = contract(pg_server(pg_database), [{"name": "a", "logicalType": "integer", "required": True}])
    plan, _ = plan_of(tmp_path, doc)
    wrong = "Wr0ng-Pa55word!"
    with Warehouses(pg_env(pg_database, wrong)) as warehouses:
        results = run_contract(plan, warehouses)
    assert results and all(not r.passed for r in results)
    assert all("password authentication failed" in r.error for r in results)
    text = repr([r.to_json() for r in results])
    assert wrong not in text and PASSWORD not in text


def test_an_unreachable_server_fails_every_check(tmp_path):
    from dq_contracts_tests.pgcluster import free_port

    server = {"server": "pg", "type": "postgres", "host": "127.0.0.1", "port": free_port(), "database": "x",
              "schema": "public"}
    plan, _ = plan_of(tmp_path, contract(server, [{"name": "a", "logicalType": "integer", "required": True}]))
    with Warehouses({"DQ_CONTRACTS_PG_HOST": "127.0.0.1", "DQ_CONTRACTS_PG_PORT": str(server["port"]),
                     "DQ_CONTRACTS_PG_PASSWORD": "pw-never-shown"}) as warehouses:
        results = run_contract(plan, warehouses)
    assert results and all(not r.passed and "Connection refused" in r.error for r in results)
    assert "pw-never-shown" not in repr([r.to_json() for r in results])


SLOW = {  # a read-only query that runs for minutes on each warehouse
    "duckdb": "SELECT COUNT(*) FROM {object}, range(100000000000) r",
    "postgres": "SELECT COUNT(*) FROM {object}, generate_series(1, 1000000000) g",
}


def test_a_statement_timeout_fails_the_check_and_the_others_still_report(warehouse, tmp_path):
    server, environ, writer = warehouse
    query = SLOW[server["type"]]
    table_t(writer, [1])
    doc = contract(server, [{"name": "a", "logicalType": "integer", "required": True}],
                   [{"type": "sql", "name": "slow", "query": query, "mustBe": 0}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        # every statement of the run has the timeout: 3 s, where the slow rule takes minutes and the
        # others milliseconds, so a loaded machine cannot time out the fast ones too
        results = {r.name: r for r in run_contract(plan, warehouses, timeout_seconds=3)}
    assert not results["slow"].passed
    assert "timeout" in results["slow"].error.lower()
    assert results["a__not_null"].passed
