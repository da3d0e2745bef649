"""Production: deploy/dagster.yaml on a real PostgreSQL, history that survives a restart of
every process, and `dq-contracts report` reading the same storage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import sqlalchemy as sa

from dq_contracts_tests.support import CONTRACTS, DEMO_CHECKS, REPO, SKIPPED_IN_A_FULL_RUN
from dq_contracts_tests.dagit import ASSET_CHECKS, CHECK_EXECUTIONS, metadata_of, start_dagster_dev
from dq_contracts_tests.pgcluster import PASSWORD
from dq_contracts_tests.support import DOCUMENTED
from dq_contracts_tests.support import DEMO_ASSETS

SENSOR_STATE = """
query State($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) { __typename ... on Sensor { id sensorState { status } } }
}"""
STOP_SENSOR = """
mutation Stop($id: String) {
  stopSensor(id: $id) { __typename ... on StopSensorMutationResult { instigationState { status } } }
}"""
SENSOR = {"repositoryLocationName": "dq_contracts_demo", "repositoryName": "__repository__",
          "sensorName": "dq_contracts_automation"}


def every_execution(dagit) -> dict:
    """(asset, check) → its executions (run id, status, metadata), read through GraphQL."""
    nodes = dagit.query(ASSET_CHECKS, {"keys": [{"path": a} for a in DEMO_ASSETS]})["assetNodes"]
    found = {}
    for node in nodes:
        asset = node["assetKey"]["path"]
        for check in node["assetChecksOrError"]["checks"]:
            history = dagit.query(CHECK_EXECUTIONS, {"key": {"path": asset}, "name": check["name"]})
            found[(asset[-1], check["name"])] = [
                (h["runId"], h["status"], (h["evaluation"] or {}).get("success"), metadata_of(h["evaluation"] or {}))
                for h in history["assetCheckExecutions"]]
    return found


@pytest.mark.slow
@pytest.mark.postgres
def test_history_survives_a_restart_and_the_report_matches(postgres, tmp_path):
    admin = sa.create_engine(postgres.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql("CREATE DATABASE dagster_prod")
    admin.dispose()
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")  # as the README says
    env = {"DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(postgres.port), "DAGSTER_PG_DB": "dagster_prod",
           "DAGSTER_PG_USER": "postgres", "DAGSTER_PG_PASSWORD": PASSWORD}

    dagit = start_dagster_dev(REPO, home, tmp_path / "first.log", env)
    try:
        dagit.wait_ready()
        run_id = dagit.launch(assets=DEMO_ASSETS)
        assert dagit.wait_run(run_id) == "FAILURE"  # the demo's ERROR clauses fail by design
        sensor = dagit.query(SENSOR_STATE, {"selector": SENSOR})["sensorOrError"]
        assert sensor["sensorState"]["status"] == "RUNNING"  # the demo starts its automation sensor
        stopped = dagit.query(STOP_SENSOR, {"id": sensor["id"]})["stopSensor"]
        assert stopped["instigationState"]["status"] == "STOPPED", stopped
        before = every_execution(dagit)
    finally:
        dagit.stop()
    assert len(before) == DEMO_CHECKS and all(len(v) == 1 and v[0][0] == run_id for v in before.values())

    # the history is in PostgreSQL, not in the home folder
    engine = sa.create_engine(postgres.url("dagster_prod"))
    with engine.connect() as c:
        stored = c.exec_driver_sql("SELECT COUNT(*) FROM asset_check_executions").scalar()
    engine.dispose()
    assert stored == DEMO_CHECKS  # the skipped relationship too: its execution is recorded, without a result

    dagit = start_dagster_dev(REPO, home, tmp_path / "second.log", env)
    try:
        dagit.wait_ready()
        after = every_execution(dagit)
        sensor = dagit.query(SENSOR_STATE, {"selector": SENSOR})["sensorOrError"]
    finally:
        dagit.stop()
    assert after == before  # same count, run ids, statuses and metadata
    assert sensor["sensorState"]["status"] == "STOPPED"  # a person's choice survived the restart too

    report = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "report", str(CONTRACTS), "--format",
                             "json"], env={**os.environ, **env, "DAGSTER_HOME": str(home)}, cwd=REPO,
                            capture_output=True, text=True, timeout=120, check=False)
    assert report.returncode == 1, report.stderr  # the demo's ERROR clauses fail: a CI gate fails with them
    payload = json.loads(report.stdout)
    statuses = {(a["asset_key"], c["name"]): c for contract in payload["contracts"] for a in contract["assets"]
                for c in a["clauses"]}
    assert set(statuses) == set(after)
    failing = {(asset, name, "ERROR" if c["status"] == "fail" else "WARN")
               for (asset, name), c in statuses.items() if c["status"] in ("fail", "warn")}
    assert failing == DOCUMENTED
    assert {k for k, c in statuses.items() if c["status"] == "not_run"} == SKIPPED_IN_A_FULL_RUN
    graphql_passing = {k for k, v in after.items() if v[0][2]}
    assert {k for k, c in statuses.items() if c["status"] == "pass"} == graphql_passing
    assert all(c["run_id"] == run_id and c["last_run_at"] for c in statuses.values())
    assert {c["id"]: c["not_enforced"] for c in payload["contracts"]}["urn:dq-contracts:demo:orders"] > 0

    text = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "report", str(CONTRACTS)],
                          env={**os.environ, **env, "DAGSTER_HOME": str(home)}, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert text.returncode == 1
    assert f"total: pass {len(graphql_passing)}  warn 1  fail 5  error 0  not_run 1" in text.stdout
