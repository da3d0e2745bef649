"""What the engine sends to a warehouse for one object on a bad day: a table that fails most of its
clauses is checked in a handful of statements, counted by the server itself (PostgreSQL's
pg_stat_statements, utility statements included: BEGIN, SET, ROLLBACK, pings), so the count cannot
creep back one sample query or round trip at a time."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.orders_contract import ORDERS

# 20 checks on one table: 19 clauses and the schema check (the benchmark's contract too).
CONTRACT = {**ORDERS, "id": "urn:trips:orders",
            "servers": [{"server": "wh", "type": "postgres", "schema": "public"}]}  # + the test server's endpoint

NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.timezone.utc)
DDL = ("CREATE TABLE orders (order_id BIGINT, order_number VARCHAR, customer_id BIGINT, status VARCHAR, "
       "order_total DECIMAL(12,2), currency VARCHAR, email VARCHAR, discount_code VARCHAR, created_at TIMESTAMP)")
# 200 rows; every fifth row breaks something, so 13 of the 20 checks fail.
FILL = """
INSERT INTO orders
SELECT CASE WHEN i % 50 = 0 THEN NULL WHEN i % 40 = 0 THEN i - 1 ELSE i END,
       'ORD-' || (CASE WHEN i % 30 = 0 THEN i - 1 ELSE i END),
       CASE WHEN i % 45 = 0 THEN 0 ELSE 1 + i % 17 END,
       CASE WHEN i % 25 = 0 THEN 'lost' ELSE 'paid' END,
       CASE WHEN i % 35 = 0 THEN -5 WHEN i % 20 = 0 THEN NULL ELSE i END,
       CASE WHEN i % 15 = 0 THEN 'EURO' ELSE 'EUR' END,
       CASE WHEN i % 10 = 0 THEN 'nobody' ELSE 'c' || i || '@example.com' END,
       NULL,
       CASE WHEN i % 60 = 0 THEN TIMESTAMP '2026-05-01 00:00:00'
            ELSE TIMESTAMP '2026-04-01 00:00:00' + i * INTERVAL '1 minute' END
FROM generate_series(1, 200) AS s(i)
"""
FAILING = {
    "order_id__not_null", "order_id__primary_key", "order_number__unique", "customer_id__minimum",
    "status__accepted_values", "status__invalid_values", "order_total__minimum", "order_total__null_values",
    "currency__max_length", "currency__pattern", "email__format", "discount_code__missing_values",
    "created_at__freshness",
}
# Per object: BEGIN READ ONLY, the settings (timeout, time zone), the aggregate (the compound key's
# GROUP BY a subquery of it), the distinct counts, the catalog read, two of samples, ROLLBACK.
PER_OBJECT = 8
# and, the first time a connection meets them, the declared types resolved by the server in one
# statement (before PostgreSQL 16 in a SAVEPOINT and its RELEASE: to_regtype raised on a name it
# could not parse); the next run on the same engine knows them
TYPES, SAVEPOINT = 1, 2
# and, once per new engine, what SQLAlchemy asks in a transaction of its own (server version,
# schema, string quoting, isolation level)
MOST_STATEMENTS = 15


def plan_for(folder, url: sa.URL):
    server = {**CONTRACT["servers"][0], "host": url.host, "port": url.port, "database": url.database}
    path = folder / "orders.odcs.yaml"
    path.write_text(yaml.safe_dump({**CONTRACT, "servers": [server]}, sort_keys=False))
    loaded = load_contracts([path])
    assert loaded.problems == []
    return loaded.plans[0]


@pytest.mark.postgres
def test_a_failing_table_costs_few_statements_on_postgres(tmp_path, pg_database, postgres):
    if not postgres.has_statement_stats:
        pytest.skip("this PostgreSQL has no pg_stat_statements")
    admin = sa.create_engine(pg_database)
    with admin.begin() as c:
        c.exec_driver_sql(DDL)
        c.execute(sa.text(FILL))
        c.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        c.exec_driver_sql("DROP ROLE IF EXISTS checker")
        c.exec_driver_sql("CREATE ROLE checker LOGIN PASSWORD 'checker-pw'")
        c.exec_driver_sql("GRANT SELECT ON orders TO checker")
        c.exec_driver_sql("SELECT pg_stat_statements_reset()")
    url = sa.make_url(pg_database).set(username="checker", password="checker-pw")
    plan = plan_for(tmp_path, url)

    def sent() -> list[tuple[str, int]]:
        with admin.begin() as c:
            statements = c.exec_driver_sql(
                "SELECT query, calls FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid "
                "WHERE r.rolname = 'checker' ORDER BY query").all()
            c.exec_driver_sql("SELECT pg_stat_statements_reset()")
        return statements

    with Warehouses(environ={"DQ_CONTRACTS_WH_URL": url.render_as_string(hide_password=False)}) as warehouses:
        results = run_contract(plan, warehouses, now=NOW)
        first = sent()
        again = run_contract(plan, warehouses, now=NOW)  # the same engine: the object's statements alone
        second = sent()
    admin.dispose()

    assert {r.name for r in results if not r.passed} == FAILING, [(r.name, r.error) for r in results]
    assert all(r.error is None for r in results), [(r.name, r.error) for r in results if r.error]
    sampled = {r.name for r in results if r.samples}
    assert {"status__accepted_values", "email__format", "order_id__primary_key"} <= sampled
    assert [r.to_json() for r in again] == [r.to_json() for r in results]

    def listing(statements: list[tuple[str, int]]) -> str:
        return "\n".join(f"{calls:3}  {' '.join(q.split())[:150]}" for q, calls in statements)

    savepoint = SAVEPOINT if admin.dialect.server_version_info < (16,) else 0
    assert sum(calls for _, calls in first) <= MOST_STATEMENTS + TYPES + savepoint, listing(first)
    assert sum(calls for _, calls in second) == PER_OBJECT, listing(second)
    assert ("BEGIN READ ONLY", 1) in second and ("ROLLBACK", 1) in second  # one read-only transaction
