"""Snowflake through the operator's declaration, on fakesnow (Snowflake's SQL emulated on DuckDB): a
session is time-limited by STATEMENT_TIMEOUT_IN_SECONDS but cannot be made read-only by the client,
so the engine connects only on the operator's `_READ_ONLY` word for a read-only role. fakesnow has no
statement timeout: these tests see the session statement sent, not Snowflake stopping a query."""

from __future__ import annotations

import sqlalchemy as sa
import yaml

from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.engine.warehouse_sql import snowflake_timeout
from dq_contracts.odcs.load import load_contracts

CONTRACT = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "snow", "version": "1.0.0", "status": "active",
    "schema": [{"name": "orders", "properties": [
        {"name": "id", "logicalType": "integer", "physicalType": "INTEGER", "required": True, "unique": True},
        {"name": "code", "logicalType": "string", "logicalTypeOptions": {"pattern": "[A-Z]{2}"}},
    ], "quality": [{"metric": "rowCount", "mustBeGreaterThan": 1}]}],
}


def _folder(tmp_path, server):
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "snow.odcs.yaml").write_text(yaml.safe_dump({**CONTRACT, "servers": [server]}))
    return folder


def _fill(engine):
    with engine.begin() as c:
        c.exec_driver_sql('CREATE TABLE "orders" ("id" INTEGER NOT NULL, "code" VARCHAR(8))')
        # a pattern is found anywhere in the value: 'xAB' matches [A-Z]{2}, 'ab' does not
        c.execute(sa.text('INSERT INTO "orders" VALUES (1, :a), (2, :b), (2, :c)'), {"a": "AB", "b": "xAB", "c": "ab"})


def _run(folder, environ, timeout=30.0):
    loaded = load_contracts([folder], environ=environ)
    assert not loaded.problems, [p.message for p in loaded.problems]
    with Warehouses(environ) as warehouses:
        return {r.name: r for r in run_contract(loaded.plans[0], warehouses, timeout_seconds=timeout)}


def test_a_contract_runs_on_the_operators_read_only_role(snowflake, tmp_path):
    server, environ, engine = snowflake
    _fill(engine)
    sent: list[tuple[str, object]] = []

    def record(conn, cursor, statement, parameters, *_):
        sent.append((statement, parameters))

    sa.event.listen(sa.Engine, "before_cursor_execute", record)  # the engine the run builds itself
    try:
        results = _run(_folder(tmp_path, server), environ, timeout=12.5)
    finally:
        sa.event.remove(sa.Engine, "before_cursor_execute", record)
    verdicts = {name: (r.passed, r.observed, r.error) for name, r in results.items()}
    assert verdicts == {"schema": (True, 0, None), "id__not_null": (True, 0, None), "id__unique": (False, 1, None),
                        "code__pattern": (False, 1, None), "row_count": (True, 3, None)}, verdicts
    # every session sets its time limit (whole seconds, rounded up) and UTC before anything else
    sessions = [p for s, p in sent if s.startswith("ALTER SESSION")]
    assert sessions and all(p == {"seconds": 13} for p in sessions)
    assert all("secret" not in str(r.error or "") + str(r.sql or "") for r in results.values())


def test_without_the_operators_word_nothing_connects(snowflake, tmp_path):
    server, environ, engine = snowflake
    _fill(engine)
    results = _run(_folder(tmp_path, server), {k: v for k, v in environ.items() if not k.endswith("_READ_ONLY")})
    assert results and all(not r.passed for r in results.values())
    for result in results.values():
        assert "a snowflake session cannot be made read-only by the client" in result.error, result.error
        assert "DQ_CONTRACTS_SNOW_READ_ONLY=true" in result.error


def test_snowflakes_own_timeout_is_said_as_ours():
    class Orig(Exception):
        errno = 630

    class Other(Exception):
        errno = 604  # cancelled by someone else

    assert snowflake_timeout(sa.exc.OperationalError("s", {}, Orig()))
    assert not snowflake_timeout(sa.exc.OperationalError("s", {}, Other()))


def test_a_contract_naming_another_account_is_refused(tmp_path):
    """Snowflake's ODCS `account` is its URL's host: a contract naming another one never connects."""
    from dq_contracts_tests.support import snowflake_env, snowflake_server

    folder = _folder(tmp_path, {**snowflake_server(), "account": "someone-else"})
    loaded = load_contracts([folder], environ=snowflake_env())
    assert any("account 'someone-else'" in p.message and "acme-test" in p.message for p in loaded.problems), \
        [p.message for p in loaded.problems]
