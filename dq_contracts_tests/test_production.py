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

from dq_contracts_tests.conftest import CONTRACTS, REPO
from dq_contracts_tests.dagit import ASSET_CHECKS, CHECK_EXECUTIONS, metadata_of, start_dagster_dev
from dq_contracts_tests.pgcluster import PASSWORD
from dq_contracts_tests.test_check_cli import DOCUMENTED
from dq_contracts_tests.test_dagster_dev import DEMO_ASSETS

START_SCHEDULE = """
mutation Start($selector: ScheduleSelector!) {
  startSchedule(scheduleSelector: $selector) { __typename ... on ScheduleStateResult { scheduleState { status } } }
}"""
SCHEDULE_STATE = """
query State($selector: ScheduleSelector!) {
  scheduleOrError(scheduleSelector: $selector) { __typename ... on Schedule { scheduleState { status } } }
}"""
SCHEDULE = {"repositoryLocationName": "dq_contracts_demo", "repositoryName": "__repository__",
            "scheduleName": "urn_dq_contracts_demo_orders__orders__orders_volume"}


def every_execution(dagit) -> dict:
    """(asset, check) → its executions (run id, status, metadata), read through GraphQL."""
    nodes = dagit.query(ASSET_CHECKS, {"keys": [{"path": a} for a in DEMO_ASSETS]})["assetNodes"]
    found = {}
    for node in nodes:
        asset = node["assetKey"]["path"]
        for check in node["assetChecksOrError"]["checks"]:
            history = dagit.query(CHECK_EXECUTIONS, {"key": {"path": asset}, "name": check["name"]})
            found[(asset[-1], check["name"])] = [
                (h["runId"], h["status"], h["evaluation"]["success"], metadata_of(h["evaluation"]))
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
        assert dagit.query(START_SCHEDULE, {"selector": SCHEDULE})["startSchedule"]["__typename"] == \
            "ScheduleStateResult"
        before = every_execution(dagit)
    finally:
        dagit.stop()
    assert len(before) == 51 and all(len(v) == 1 and v[0][0] == run_id for v in before.values())

    # the history is in PostgreSQL, not in the home folder
    engine = sa.create_engine(postgres.url("dagster_prod"))
    with engine.connect() as c:
        stored = c.exec_driver_sql("SELECT COUNT(*) FROM asset_check_executions").scalar()
    engine.dispose()
    assert stored == 51

    dagit = start_dagster_dev(REPO, home, tmp_path / "second.log", env)
    try:
        dagit.wait_ready()
        after = every_execution(dagit)
        schedule = dagit.query(SCHEDULE_STATE, {"selector": SCHEDULE})["scheduleOrError"]
    finally:
        dagit.stop()
    assert after == before  # same count, run ids, statuses and metadata
    assert schedule["scheduleState"]["status"] == "RUNNING"  # schedule state survived too

    report = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "report", str(CONTRACTS), "--format",
                             "json"], env={**os.environ, **env, "DAGSTER_HOME": str(home)}, cwd=REPO,
                            capture_output=True, text=True, timeout=120, check=False)
    assert report.returncode == 0, report.stderr
    payload = json.loads(report.stdout)
    statuses = {(a["asset_key"], c["name"]): c for contract in payload["contracts"] for a in contract["assets"]
                for c in a["clauses"]}
    assert set(statuses) == set(after)
    failing = {(asset, name, "ERROR" if c["status"] == "fail" else "WARN")
               for (asset, name), c in statuses.items() if c["status"] in ("fail", "warn")}
    assert failing == DOCUMENTED
    graphql_passing = {k for k, v in after.items() if v[0][2]}
    assert {k for k, c in statuses.items() if c["status"] == "pass"} == graphql_passing
    assert all(c["run_id"] == run_id and c["last_run_at"] for c in statuses.values())
    assert {c["id"]: c["not_enforced"] for c in payload["contracts"]}["urn:dq-contracts:demo:orders"] > 0

    text = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "report", str(CONTRACTS)],
                          env={**os.environ, **env, "DAGSTER_HOME": str(home)}, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert text.returncode == 0
    assert f"total: pass {len(graphql_passing)}  warn 1  fail 6  error 0  not_run 0" in text.stdout
