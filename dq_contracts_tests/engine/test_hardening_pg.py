"""Hardening on a real PostgreSQL: least privilege and injection judged by the database's own
statistics, faults in the middle of a Dagster run, and the password searched for everywhere."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml

from dq_contracts import build_contract_defs
from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.odcs.load import load_contracts
from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts_tests.support import start_cluster
from dq_contracts_tests.pgcluster import PASSWORD as SUPERUSER_PW

pytestmark = pytest.mark.postgres

EVIL = '"; DROP TABLE x; --'
READER_PW = "Reader-pw-7c1d"
WRITER_PW = "Writer-pw-93ab"


@pytest.fixture(scope="module")
def cluster():
    """A cluster of this module's own: some tests stop and restart it."""
    cluster = start_cluster()
    admin = sa.create_engine(cluster.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql("CREATE DATABASE wh")
        c.exec_driver_sql(f"CREATE ROLE dq_reader LOGIN PASSWORD '{READER_PW}'")
        c.exec_driver_sql(f"CREATE ROLE dq_writer LOGIN PASSWORD '{WRITER_PW}'")
    admin.dispose()
    yield cluster
    cluster.destroy()


@pytest.fixture
def warehouse(cluster):
    """Fresh tables in `wh`: x (the table the attacks aim at), t (evil names and values), items."""
    engine = sa.create_engine(cluster.url("wh"), poolclass=sa.pool.NullPool)  # each backend exits: stats flush
    metadata = sa.MetaData()
    x = sa.Table("x", metadata, sa.Column("a", sa.Integer))
    t = sa.Table("t", metadata, sa.Column(EVIL, sa.String), sa.Column("b", sa.String))
    items = sa.Table("items", metadata, sa.Column("id", sa.Integer), sa.Column("price", sa.Numeric(10, 2)))
    with engine.begin() as c:
        metadata.drop_all(c)
        metadata.create_all(c)
        c.execute(x.insert(), [{"a": 1}, {"a": 2}])
        c.execute(t.insert(), [{EVIL: EVIL, "b": "ok"}, {EVIL: "fine", "b": EVIL}])
        c.execute(items.insert(), [{"id": i, "price": i} for i in range(1, 21)])
        c.exec_driver_sql("GRANT CONNECT ON DATABASE wh TO dq_reader, dq_writer")
        c.exec_driver_sql("GRANT USAGE ON SCHEMA public TO dq_reader, dq_writer")
        c.exec_driver_sql("GRANT SELECT ON ALL TABLES IN SCHEMA public TO dq_reader")
        c.exec_driver_sql("GRANT ALL ON ALL TABLES IN SCHEMA public TO dq_writer")
        c.exec_driver_sql("GRANT CREATE ON SCHEMA public TO dq_writer")
        c.exec_driver_sql("CREATE OR REPLACE FUNCTION sneaky() RETURNS bigint LANGUAGE sql "
                          "AS 'DELETE FROM public.x RETURNING 0'")
        c.exec_driver_sql("SELECT pg_stat_force_next_flush()")  # so the counters are current
    yield engine
    engine.dispose()


def server(cluster) -> dict:
    return {"server": "wh", "type": "postgres", "host": "127.0.0.1", "port": cluster.port, "database": "wh",
            "schema": "public"}


def write(tmp_path, doc: dict, name: str = "c.odcs.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def hostile_contract(cluster) -> dict:
    rules = [
        {"type": "sql", "name": "delete_x", "query": "DELETE FROM x", "mustBe": 0},
        {"type": "sql", "name": "insert_select", "query": "INSERT INTO x SELECT COUNT(*) FROM {object}", "mustBe": 0},
        {"type": "sql", "name": "cte_update", "query": "WITH u AS (UPDATE x SET a = 0 RETURNING a) SELECT COUNT(*) FROM u",
         "mustBe": 0},
        {"type": "sql", "name": "two", "query": "SELECT 1; DROP TABLE x", "mustBe": 0},
        {"type": "sql", "name": "sequence", "query": "SELECT nextval('s')", "mustBe": 0},
        {"type": "sql", "name": "config", "query": "SELECT set_config('default_transaction_read_only', 'off', false)",
         "mustBe": 0},
        {"type": "sql", "name": "lock_rows", "query": "SELECT COUNT(*) FROM (SELECT * FROM {object} FOR UPDATE) s",
         "mustBe": 0},
        # a function that writes looks like any SELECT to a parser: the allow-list refuses it (and the
        # read-only transaction would stop it: test_the_read_only_transaction_stops_a_writing_function)
        {"type": "sql", "name": "sneaky_function", "query": "SELECT sneaky()", "mustBe": 0},
        {"type": "sql", "name": "comment_escape", "query": "SELECT COUNT(*) FROM {object} -- ; DROP TABLE x", "mustBe": 2},
        # SQL run from a string, a lock that outlives the rollback, the counters these tests read
        {"type": "sql", "name": "sql_in_a_string",
         "query": "SELECT LENGTH(CAST(query_to_xml('DELETE FROM x RETURNING 1', true, true, '') AS TEXT))", "mustBe": 0},
        {"type": "sql", "name": "xml_schema", "query": "SELECT LENGTH(CAST(query_to_xmlschema('SELECT 1', true, true, '') "
         "AS TEXT))", "mustBe": 0},
        {"type": "sql", "name": "cursor_xml", "query": "SELECT LENGTH(CAST(cursor_to_xml('c', 1, true, true, '') AS TEXT))",
         "mustBe": 0},
        {"type": "sql", "name": "ts_stat", "query": "SELECT COUNT(*) FROM ts_stat('SELECT to_tsvector(''a'')')",
         "mustBe": 0},
        {"type": "sql", "name": "advisory", "query": "SELECT CAST(pg_try_advisory_lock(42) AS INTEGER)", "mustBe": 1},
        {"type": "sql", "name": "stat_reset", "query": "SELECT COUNT(*) FROM (SELECT pg_stat_reset()) s", "mustBe": 1},
    ]
    return {
        "apiVersion": "v3.2.0", "kind": "DataContract", "id": "hostile", "version": "1.0.0", "status": "active",
        "description": {"purpose": EVIL + "'); DROP TABLE x; --"},
        "servers": [server(cluster)],
        "schema": [{
            "name": "t", "physicalName": "t", "description": "'; DELETE FROM x; --",
            "properties": [
                {"name": EVIL, "logicalType": "string", "description": EVIL, "required": True,
                 "enum": [{"value": EVIL}, {"value": "'); DROP TABLE x; --"}],
                 "logicalTypeOptions": {"pattern": "^(f|\"; DROP TABLE x; --)", "maxLength": 100}},
                {"name": "b", "logicalType": "string",
                 "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["ok", "' OR ''='"]},
                              "mustBe": 0}]},
            ],
            "quality": rules,
        }],
    }


def others_gone(engine, seconds: float = 30) -> None:
    """Wait until every other client backend has exited: a backend flushes its statistics as it exits,
    before it leaves pg_stat_activity, so then the counters hold everything they did (the engines of
    the test and of the checks have no pool, or are disposed by then)."""
    deadline = time.monotonic() + seconds
    while True:
        with engine.connect() as c:
            others = c.exec_driver_sql("SELECT COUNT(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                                       "AND pid <> pg_backend_pid()").scalar()
        if others == 0:
            return
        assert time.monotonic() < deadline, f"{others} other backend(s) still connected after {seconds} s"
        time.sleep(0.05)


def table_stats(engine) -> dict:
    """Rows, tables and PostgreSQL's own write counters: what an attack would change."""
    others_gone(engine)
    with engine.connect() as c:
        c.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
        writes = {row[0]: tuple(row[1:]) for row in c.exec_driver_sql(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables ORDER BY relname")}
        counts = {name: c.execute(sa.select(sa.func.count()).select_from(sa.table(name))).scalar()
                  for name in writes}
    return {"writes": writes, "rows": counts}


@pytest.mark.parametrize("role,password", [("dq_reader", READER_PW), ("dq_writer", WRITER_PW),
                                           ("postgres", SUPERUSER_PW)])  # the superuser may reset statistics
def test_hostile_contracts_change_nothing_whatever_the_role_may_do(cluster, warehouse, tmp_path, role, password):
    path = write(tmp_path, hostile_contract(cluster))
    loaded = load_contracts([path])
    refused = {p.path.split(".")[-2] if p.path else "" for p in loaded.errors if "SQL rule refused" in p.message}
    plan = loaded.plans[0]
    will_fail = {c.name: c.params["refusal"] for c in plan.objects[0].checks if c.params.get("refusal")}
    # the fourteen writing, locking, SQL-from-a-string or unlisted-function rules, each a check that fails
    assert len(will_fail) == 14, will_fail
    for name in ("sql_in_a_string", "xml_schema", "cursor_xml", "ts_stat", "advisory", "stat_reset"):
        # refused by name: not in the engine's catalog of rule functions, or in it with the reason it may not run
        assert re.search(r"not on the allow-list|may not run in a rule|not a function of PostgreSQL", will_fail[name]), (name, will_fail[name])
    assert refused  # and `validate` reports them as errors

    before = table_stats(warehouse)
    # the counters do see writes: a control write by the test moves them
    with warehouse.begin() as c:
        c.exec_driver_sql("INSERT INTO items VALUES (99, 1)")
        c.exec_driver_sql("DELETE FROM items WHERE id = 99")
        c.exec_driver_sql("SELECT pg_stat_force_next_flush()")
    control = table_stats(warehouse)
    assert control["writes"]["items"][0] == before["writes"]["items"][0] + 1

    environ = {"DQ_CONTRACTS_WH_HOST": "127.0.0.1", "DQ_CONTRACTS_WH_PORT": str(cluster.port),
               "DQ_CONTRACTS_WH_USER": role, "DQ_CONTRACTS_WH_PASSWORD": password}
    with Warehouses(environ) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses)}
    after = table_stats(warehouse)
    assert after == control  # no row, no table, no write counter changed (nor reset)
    with warehouse.connect() as c:  # and no advisory lock outlives the run
        assert c.exec_driver_sql("SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory'").scalar() == 0
    assert set(after["rows"]) == {"items", "t", "x"}

    # names and values stayed data: the evil enum value is accepted, the others counted
    assert results[next(n for n in results if n.endswith("__not_null"))].passed
    accepted = next(r for r in results.values() if r.kind == "accepted_values")
    assert accepted.observed == 1 and accepted.error is None
    assert results["comment_escape"].passed and results["comment_escape"].observed == 2
    pattern = next(r for r in results.values() if r.kind == "pattern")
    assert pattern.passed and pattern.error is None  # both values match: the evil one literally
    # a function that is not on the allow-list never runs
    sneaky = results["sneaky_function"]
    assert not sneaky.passed and re.search(r"not on the allow-list|may not run in a rule|not a function of PostgreSQL", sneaky.error), sneaky.error
    assert password not in repr([r.to_json() for r in results.values()])
    for name, refusal in will_fail.items():  # each refused rule failed on its own, with its reason
        assert not results[name].passed and results[name].error == f"not run: {refusal}", name


def test_a_server_stopped_in_the_middle_of_a_run(cluster, warehouse, tmp_path, monkeypatch):
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "mid", "version": "1.0.0", "status": "active",
           "servers": [server(cluster)],
           "schema": [{"name": "items", "properties": [
               {"name": "id", "logicalType": "integer", "required": True, "unique": True},
               {"name": "price", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}}],
               "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}]},
               {"name": "x", "properties": [{"name": "a", "logicalType": "integer", "required": True}],
                "quality": [{"type": "sql", "name": "some_rows", "query": "SELECT COUNT(*) FROM {object}",
                             "mustBeGreaterThan": 0}]}]}
    path = write(tmp_path, doc)
    monkeypatch.setenv("DQ_CONTRACTS_WH_HOST", "127.0.0.1")
    monkeypatch.setenv("DQ_CONTRACTS_WH_PORT", str(cluster.port))
    monkeypatch.setenv("DQ_CONTRACTS_WH_USER", "dq_reader")
    monkeypatch.setenv("DQ_CONTRACTS_WH_PASSWORD", READER_PW)
    defs = build_contract_defs(path, contract_jobs=True)
    job = defs.resolve_job_def("mid__checks")
    expected = {(s.asset_key.to_user_string(), s.name) for c in defs.asset_checks for s in c.check_specs}

    # stop the server as the first data query of the run is sent (the object's connection and its
    # read-only transaction are open by then); a result received before the server went away would
    # be a true measurement
    seen = []

    def stop_after_first(conn, cursor, statement, *args):
        if conn.engine.url.database == "wh" and '"items"' in statement and not seen:
            seen.append(statement)
            cluster.stop("immediate")

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", stop_after_first)
    try:
        instance = dg.DagsterInstance.ephemeral()
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", stop_after_first)
        cluster.restart()
    evaluations = {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == expected  # every selected check recorded
    # the server went away while the first query ran: no check passed, each says why
    for key, evaluation in evaluations.items():
        assert not evaluation.passed, key
        error = evaluation.metadata["dq_contracts/error"].value
        assert "closed the connection" in error or "Connection refused" in error, error

    # the server is back: the next run passes where the data is good
    again = job.execute_in_process(instance=instance, raise_on_error=False)
    assert all(e.passed for e in again.get_asset_check_evaluations())
    assert len(again.get_asset_check_evaluations()) == len(expected)


def test_a_table_dropped_between_plan_and_run(cluster, warehouse, tmp_path, monkeypatch):
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "drop", "version": "1.0.0", "status": "active",
           "servers": [server(cluster)],
           "schema": [{"name": "items", "properties": [{"name": "id", "logicalType": "integer", "required": True}]},
                      {"name": "x", "properties": [{"name": "a", "logicalType": "integer", "required": True}]}]}
    monkeypatch.setenv("DQ_CONTRACTS_WH_HOST", "127.0.0.1")
    monkeypatch.setenv("DQ_CONTRACTS_WH_PORT", str(cluster.port))
    monkeypatch.setenv("DQ_CONTRACTS_WH_USER", "dq_reader")
    monkeypatch.setenv("DQ_CONTRACTS_WH_PASSWORD", READER_PW)
    defs = build_contract_defs(write(tmp_path, doc), contract_jobs=True)
    with warehouse.begin() as c:
        c.exec_driver_sql("DROP TABLE x")
    result = defs.resolve_job_def("drop__checks").execute_in_process(instance=dg.DagsterInstance.ephemeral(),
                                                                      raise_on_error=False)
    by_asset = {}
    for e in result.get_asset_check_evaluations():
        by_asset.setdefault(e.asset_key.to_user_string(), []).append(e)
    assert all(not e.passed and "x" in e.metadata["dq_contracts/error"].value for e in by_asset["x"])
    assert len(by_asset["x"]) == 2 and all(e.passed for e in by_asset["items"])


def test_the_password_appears_nowhere(cluster, warehouse, tmp_path, monkeypatch, capfd, caplog):
    """Credentials in the environment; runs that pass, fail, and fail to connect; then every byte of
    Dagster's storage, the logs, the metadata and the command output is searched for the password."""
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "secret", "version": "1.0.0", "status": "active",
           "servers": [server(cluster), {**server(cluster), "server": "down", "port": 1}],
           "schema": [{"name": "items", "properties": [
               {"name": "id", "logicalType": "integer", "required": True},
               {"name": "price", "logicalType": "number", "logicalTypeOptions": {"maximum": 5}}]},
               {"name": "gone", "properties": [{"name": "a", "logicalType": "integer", "required": True}]}]}
    path = write(tmp_path, doc)
    monkeypatch.setenv("DQ_CONTRACTS_WH_HOST", "127.0.0.1")
    monkeypatch.setenv("DQ_CONTRACTS_WH_PORT", str(cluster.port))
    monkeypatch.setenv("DQ_CONTRACTS_WH_USER", "dq_reader")
    monkeypatch.setenv("DQ_CONTRACTS_WH_PASSWORD", READER_PW)
    monkeypatch.setenv("DQ_CONTRACTS_DOWN_HOST", "127.0.0.1")
    monkeypatch.setenv("DQ_CONTRACTS_DOWN_PORT", "1")
    monkeypatch.setenv("DQ_CONTRACTS_DOWN_USER", "dq_reader")
    monkeypatch.setenv("DQ_CONTRACTS_DOWN_PASSWORD", READER_PW)
    home = tmp_path / "home"
    home.mkdir()
    outputs = []
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        for server_name in ("wh", "down"):
            defs = build_contract_defs(path, resource=WarehouseResource(server=server_name), contract_jobs=True)
            result = defs.resolve_job_def("secret__checks").execute_in_process(instance=instance,
                                                                              raise_on_error=False)
            evaluations = result.get_asset_check_evaluations()
            assert len(evaluations) == 5 and not all(e.passed for e in evaluations)
            outputs.append(repr([e.metadata for e in evaluations]))
            outputs.extend(r.user_message or "" for r in instance.all_logs(result.run_id))
            outputs.extend(repr(r) for r in instance.all_logs(result.run_id))
        # a wrong password too: the error must not echo what was tried
        monkeypatch.setenv("DQ_CONTRACTS_WH_PASSWORD", READER_PW + "-wrong")
        defs = build_contract_defs(path, resource=WarehouseResource(server="wh"), contract_jobs=True)
        result = defs.resolve_job_def("secret__checks").execute_in_process(instance=instance, raise_on_error=False)
        outputs.append(repr([e.metadata for e in result.get_asset_check_evaluations()]))
        outputs.extend(repr(r) for r in instance.all_logs(result.run_id))
        monkeypatch.setenv("DQ_CONTRACTS_WH_PASSWORD", READER_PW)
    for args in (["check", str(path)], ["check", str(path), "--format", "json"],
                 ["check", str(path), "--server", "down"]):
        proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        outputs.extend([proc.stdout, proc.stderr])
    captured = capfd.readouterr()
    outputs.extend([captured.out, captured.err, caplog.text])
    assert any("password authentication failed" in o for o in outputs)  # the runs did hit the faults
    for text in outputs:
        assert READER_PW not in text
    stored = [p for p in home.rglob("*") if p.is_file()]
    assert stored  # the event log database and compute logs
    for file in stored:
        assert READER_PW.encode() not in file.read_bytes(), file


@pytest.mark.parametrize("role,password", [("dq_reader", READER_PW), ("dq_writer", WRITER_PW)])
def test_the_read_only_transaction_stops_a_writing_function(cluster, warehouse, role, password):
    """The second lock, behind the allow-list: whatever a query calls, it runs read-only."""
    from dq_contracts.engine.sessions import read_only

    before = table_stats(warehouse)
    engine = sa.create_engine(f"postgresql+psycopg2://{role}:{password}@127.0.0.1:{cluster.port}/wh")
    with pytest.raises(sa.exc.DBAPIError, match="read-only transaction"):
        with read_only(engine, 10) as connection:
            # named with its schema: the session resolves names in pg_catalog alone, a lock of its own
            connection.exec_driver_sql("SELECT public.sneaky()")
    engine.dispose()
    assert table_stats(warehouse) == before
