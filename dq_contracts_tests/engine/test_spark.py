"""Spark SQL on a Spark Thrift server the tests start (one per session, conftest.py): what Spark's
rows add to the matrix of test_engine.py (which runs there too). No read-only session exists, so a
contract's SQL rule runs only on the operator's `_READ_ONLY`; the server's query timeout cancels a
statement; and the SQL the Databricks dialect compiles is what Spark runs."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine.results import StatementTimeout
from dq_contracts.engine.runner import run_object
from dq_contracts.engine.sessions import CREDENTIALS_READ_ONLY, Session
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import spark_engine, spark_table

pytestmark = pytest.mark.spark

CONTRACT = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "s", "version": "1.0.0", "status": "active",
    "schema": [{"name": "t", "physicalName": "t", "properties": [
        {"name": "id", "logicalType": "integer", "physicalType": "INT", "required": True, "unique": True},
        {"name": "code", "logicalType": "string", "logicalTypeOptions": {"pattern": "^[A-Z]+$"},
         "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["AB", "C\\'D"]}, "mustBe": 0}]},
    ], "quality": [
        {"metric": "rowCount", "mustBeGreaterThan": 0},
        {"type": "sql", "name": "few", "query": "SELECT COUNT(*) FROM {object} WHERE id > 100", "mustBe": 0},
    ]}],
}
ROWS = [(1, "AB"), (2, "C\\'D"), (3, None)]


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "s.odcs.yaml"
    path.write_text(yaml.safe_dump(CONTRACT))
    loaded = load_contracts([path])
    assert loaded.problems == []
    return loaded.plans[0]


@pytest.fixture
def table(spark_database):
    spark_table(spark_engine(spark_database), "t", {"id": "INT", "code": "STRING"}, ROWS)
    return spark_database


def test_a_sql_rule_runs_only_where_the_operator_declared_the_credentials_read_only(plan, table):
    vouched = {r.name: r for r in run_object(plan, plan.objects[0], spark_engine(table))}
    assert vouched["few"].passed and vouched["few"].error is None
    bare = {r.name: r for r in run_object(plan, plan.objects[0], spark_engine(table, vouched=False))}
    assert not bare["few"].passed and "READ_ONLY=true" in bare["few"].error
    # the checks' own SELECTs run either way; a backslash and a quote in a value stay in the value
    assert {n: r.passed for n, r in bare.items() if n != "few"} == {n: r.passed for n, r in vouched.items()
                                                                    if n != "few"}
    assert vouched["code__invalid_values"].passed and not vouched["code__pattern"].passed


def test_the_server_cancels_a_statement_at_the_timeout(table):
    engine = spark_engine(table)
    # 4e10 rows: minutes on one core
    slow = sa.select(sa.func.count()).select_from(sa.func.range(200000).alias("a")).join(
        sa.func.range(200000).alias("b"), sa.true())
    with Session(engine, 2) as session, pytest.raises(StatementTimeout):
        session.run(lambda c: c.execute(slow).scalar())


def test_a_server_error_is_the_servers_message_not_its_stack_trace(table):
    engine = spark_engine(table)
    with engine.connect() as c, pytest.raises(sa.exc.DBAPIError) as raised:
        c.exec_driver_sql("SELECT nothing FROM t")
    assert "UNRESOLVED_COLUMN" in str(raised.value) and "scala" not in str(raised.value)
    assert len(str(raised.value)) < 3000


def databricks_on_spark(url: str) -> sa.Engine:
    """The Databricks dialect compiling, the Spark Thrift server running: databricks-sqlalchemy binds
    `:`name`` (the connector's native parameters), which PyHive renders as `%(name)s`."""
    from pyhive import hive

    parsed = sa.make_url(url)
    engine = sa.create_engine("databricks://token:unused@localhost?http_path=/unused", execution_options={
        CREDENTIALS_READ_ONLY: True}, creator=lambda: hive.connect(host=parsed.host, port=parsed.port,
                                                                   database=parsed.database))

    @sa.event.listens_for(engine, "before_cursor_execute", retval=True)
    def pyformat(conn, cursor, statement, parameters, context, executemany):
        return re.sub(r":`(\w+)`", r"%(\1)s", statement.replace("%", "%%")), parameters

    return engine


def test_the_sql_compiled_for_databricks_is_what_spark_runs(plan, table):
    engine = databricks_on_spark(table)
    assert engine.dialect.name == "databricks" and dialect_of("databricks").begin is not None
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine)}
    spark = {r.name: r for r in run_object(plan, plan.objects[0], spark_engine(table))}
    assert {n: (r.passed, r.observed, r.error) for n, r in results.items()} == \
        {n: (r.passed, r.observed, r.error) for n, r in spark.items()}
    assert "SET STATEMENT_TIMEOUT = 300" in statements and any("RLIKE" in s for s in statements)
