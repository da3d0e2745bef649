"""Each server's check ops are in a Dagster concurrency pool named after the server: with a pool limit
of 1 on a real instance, the checks of one warehouse never run two at once, whatever the number of
contracts, while another warehouse's checks are not held back."""

from __future__ import annotations

import os
import subprocess
import sys

import dagster as dg
import yaml
from dagster._core.definitions.reconstruct import build_reconstructable_job

from dq_contracts import build_contract_defs
from dq_contracts_tests.support import REPO, duckdb_with


def _contract(cid: str, server: str, database: str, table: str) -> dict:
    return {
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": cid, "version": "1.0.0", "status": "active",
        "servers": [{"server": server, "type": "duckdb", "database": database, "schema": "main"}],
        "schema": [{"name": table, "properties": [
            {"name": "id", "logicalType": "integer", "required": True, "unique": True},
            {"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}},
        ], "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}]}],
    }


def _folder(tmp_path) -> str:
    """Two contracts on warehouse `wh_a` (two tables of one file) and one on `wh_b`."""
    data = tmp_path / "data"
    data.mkdir()
    rows = "SELECT i AS id, i * 1.5 AS amount FROM range(200000) t(i)"
    duckdb_with(data / "a.duckdb", f"CREATE TABLE t1 AS {rows}", f"CREATE TABLE t2 AS {rows}")
    duckdb_with(data / "b.duckdb", f"CREATE TABLE t3 AS {rows}")
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    for cid, server, database, table in (("one", "wh_a", "a", "t1"), ("two", "wh_a", "a", "t2"),
                                         ("three", "wh_b", "b", "t3")):
        (contracts / f"{cid}.odcs.yaml").write_text(yaml.safe_dump(
            _contract(cid, server, f"../data/{database}.duckdb", table)))
    return str(contracts)


def test_every_check_op_is_in_the_pool_of_its_server(tmp_path):
    defs = build_contract_defs(_folder(tmp_path))
    pools = {check.node_def.name: check.node_def.pool for check in defs.asset_checks}
    assert pools and set(pools.values()) == {"wh_a", "wh_b"}, pools
    assert sorted(name for name, pool in pools.items() if pool == "wh_a") == sorted(
        name for name in pools if "one" in name or "two" in name)


def test_a_pool_limit_of_one_runs_one_check_op_of_a_warehouse_at_a_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = _folder(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    # what README "Scaling out" tells the operator: pools enforced per op in dagster.yaml, and the
    # warehouse's limit set with Dagster's own command
    (home / "dagster.yaml").write_text(yaml.safe_dump({
        "telemetry": {"enabled": False}, "concurrency": {"pools": {"granularity": "op"}}}))
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "dagster"), "instance", "concurrency", "set",
                    "wh_a", "1"], env={**os.environ, "DAGSTER_HOME": str(home)}, check=True, capture_output=True)
    job = build_reconstructable_job("dq_contracts_tests.parallel_defs", "all_checks_job",
                                    reconstructable_args=(contracts,), reconstructor_working_directory=str(REPO))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.event_log_storage.get_concurrency_info("wh_a").slot_count == 1
        result = dg.execute_job(job, instance=instance)
        assert result.success
        evaluations = [e for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        assert len(evaluations) == 3 * 5  # every clause of the three contracts: none lost while waiting
        records = instance.all_logs(result.run_id)
    spans: dict[str, dict] = {}
    blocked: dict[str, str] = {}
    for record in records:
        event = record.dagster_event
        if event is None or not event.step_key:
            continue
        span = spans.setdefault(event.step_key, {})
        if event.event_type_value == "STEP_START":
            span["start"] = record.timestamp
        if event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
            span["end"] = record.timestamp
        if record.user_message.startswith("Step blocked by limit for pool"):
            blocked[event.step_key] = record.user_message.rsplit(" ", 1)[1]
    a = sorted((s["start"], s["end"]) for key, s in spans.items() if "one" in key or "two" in key)
    assert len(a) == 2 and len(spans) == 3, spans
    assert a[0][1] <= a[1][0], f"two checks of wh_a ran at once: {a}"  # one after the other
    # the multiprocess executor would have started it at once: the pool held it back, and only wh_a's
    assert list(blocked.values()) == ["wh_a"], blocked
