"""Production: deploy/dagster.yaml on a real PostgreSQL, history that survives a restart of
every process, and `dq-contracts report` reading the same storage."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from dq_contracts_tests.support import CONTRACTS, DEMO_CHECKS, REPO, SKIPPED_IN_A_FULL_RUN
from dq_contracts_tests.dagit import ASSET_CHECKS, CHECK_EXECUTIONS, Dagit, metadata_of, start_dagster_dev
from dq_contracts_tests.pgcluster import PASSWORD, SUPERUSER, find_bin, free_port
from dq_contracts_tests.support import clean_shell, readme_blocks_of, readme_section
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


def readme_production() -> tuple[str, str, str]:
    """README "Production": the setup block (instance folder, storage, role and database, servers),
    the report block and the output it shows."""
    blocks = readme_blocks_of(readme_section("Production"))
    setup = next(text for language, text in blocks if language == "bash" and "DAGSTER_HOME=" in text)
    at = blocks.index(("bash", setup))
    (_, report), (language, shown) = blocks[at + 1], blocks[at + 2]
    assert "dq-contracts report" in report and language == "text", blocks[at + 1:at + 3]
    return setup, report, shown


def with_values(block: str, values: dict[str, str]) -> str:
    """The block with each `NAME=value` of its export lines given this machine's value: the only
    change made to the README's text (a host, port, folder and password of the test's own)."""
    def one(match: re.Match) -> str:
        name = match.group(1)
        return f"{name}={shlex.quote(values[name])}" if name in values else match.group(0)
    changed = re.sub(r"\b([A-Z][A-Z0-9_]*)=(\S+)", one, block)
    missing = set(values) - set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", block))
    assert not missing, f"the README's Production block no longer sets {missing}"
    return changed


@pytest.mark.slow
@pytest.mark.postgres
def test_the_readme_production_section_runs_as_written(postgres, tmp_path):
    """README "Production" followed literally, from the repository root in a shell holding PATH and
    HOME (and the superuser's password, which psql would ask for): the folder, the copy of
    deploy/dagster.yaml, the role and database made by its psql line on the test cluster, the
    webserver and daemon as it starts them (on 127.0.0.1 and a free port, not 0.0.0.0:3000),
    "Materialize all", then its report command, exit code and total line."""
    psql = find_bin("psql")
    if psql is None:
        pytest.skip("no psql here")
    setup, report, shown = readme_production()
    port = free_port()
    home = tmp_path / "srv" / "dagster"  # made by the block's own mkdir
    values = {"DAGSTER_HOME": str(home), "DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": str(postgres.port),
              "DAGSTER_PG_DB": "dagster_readme", "DAGSTER_PG_USER": "dagster_readme",
              "DAGSTER_PG_PASSWORD": "readme-Prod-pw"}
    script = with_values(setup, values).replace("-h 0.0.0.0 -p 3000", f"-h 127.0.0.1 -p {port}")
    assert f"-p {port}" in script, "the README's webserver line changed"
    assert f"-U {SUPERUSER} " in script  # the test cluster's superuser is the one the README names
    env = {**clean_shell(), "PGPASSWORD": PASSWORD}
    env["PATH"] = f"{Path(psql).parent}{os.pathsep}{env['PATH']}"
    log = tmp_path / "production.log"
    with log.open("w") as handle:  # the servers run in the background of this shell: it waits for them
        process = subprocess.Popen(["bash", "-c", f". .venv/bin/activate\nset -e\n{script}\nwait"], cwd=REPO,
                                   env=env, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    dagit = Dagit(process, port, log)
    try:
        dagit.wait_ready()
        assert (home / "dagster.yaml").read_text() == (REPO / "deploy" / "dagster.yaml").read_text()
        run_id = dagit.launch(assets=DEMO_ASSETS)  # what "Materialize all" launches
        assert dagit.wait_run(run_id) == "FAILURE"  # the demo's ERROR clauses fail by design
        # the same shell: the block's exports hold (its export lines alone, the servers already run)
        joined = script.replace("\\\n", " ")  # a line continued with a backslash is one command
        exports = "\n".join(line for line in joined.splitlines() if line.startswith("export "))
        wanted = re.search(r"#\s*exit (\d+)\s*$", report.strip())
        proc = subprocess.run(["bash", "-c", f". .venv/bin/activate\n{exports}\n{report}"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
    finally:
        dagit.stop()
    assert proc.returncode == int(wanted.group(1) if wanted else 0), proc.stdout + proc.stderr
    assert all(line in proc.stdout.splitlines() for line in shown.splitlines()), proc.stdout
    # the history is in the PostgreSQL database the README's psql line made, owned by its role
    engine = sa.create_engine(postgres.url("dagster_readme", user="dagster_readme", password="readme-Prod-pw"))
    with engine.connect() as c:
        stored = c.exec_driver_sql("SELECT COUNT(*) FROM asset_check_executions").scalar()
    engine.dispose()
    assert stored == DEMO_CHECKS
