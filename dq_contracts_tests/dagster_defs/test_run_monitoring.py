"""Crashed runs are noticed: `dagster dev` reading the repository's own dagster.yaml (its poll interval
alone shortened, as an operator may set it), a checks run whose run worker is killed in the middle of
its query ends FAILURE with none of its checks reported as passed, and re-executing it then succeeds.
Both instance files turn Dagster's run monitoring on.

With Dagster's default run launcher, the code server that started a run worker marks the run failed
as soon as that worker dies; nothing does when the worker dies together with its code server (the
whole code location killed, out of memory, a host restart): then only run monitoring, which the
instance files turn on, ends the run, at its maximum run time."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from dq_contracts.engine.sessions import DEFAULT_TIMEOUT_SECONDS
from dq_contracts_tests.support import REPO, duckdb_with
from dq_contracts_tests.dagit import CHECK_EXECUTIONS, RUN_STATUS, Dagit
from dq_contracts_tests.pgcluster import PASSWORD, free_port

LOCATION = {"repositoryLocationName": "dq_contracts_demo", "repositoryName": "__repository__"}
CHECKS = [(["events"], "schema"), (["events"], "token__pattern")]
# The crashed run's maximum run time (its own tag), above the seconds its worker takes to reach its query
# even on a loaded machine; and how often run monitoring looks, as an operator may set it (the file's 10 s
# would add up to 10 s of waiting to each end the monitor finds)
MAX_RUNTIME = 20
POLL = ("  poll_interval_seconds: 10 ", "  poll_interval_seconds: 2  ")

# One object whose counting query reads a view of md5 strings: of a trillion rows while the runs are
# killed (it never ends on its own), of a thousand for the re-execution. No table is stored.
CONTRACT = """\
apiVersion: v3.1.0
kind: DataContract
id: urn:dq-contracts:test:crash
name: crash
version: 1.0.0
status: active
servers:
  - server: local
    type: duckdb
    database: ../data/events.duckdb
    schema: main
schema:
  - name: events
    physicalName: events
    physicalType: view
    properties:
      - name: token
        logicalType: string
        physicalType: VARCHAR
        logicalTypeOptions:
          pattern: "^[0-9a-f]{32}$"
"""


def events_view(rows: int) -> str:
    return f"CREATE OR REPLACE VIEW events AS SELECT md5(i::VARCHAR) AS token FROM range({rows}) t(i)"


LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  }
}"""
REEXECUTE = """
mutation Reexecute($params: ReexecutionParams!) {
  launchRunReexecution(reexecutionParams: $params) {
    __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  }
}"""
RUN_LOGS = """
query Logs($runId: ID!) {
  logsForRun(runId: $runId) {
    __typename
    ... on EventConnection {
      events { __typename ... on MessageEvent { message } ... on LogsCapturedEvent { pid } }
    }
  }
}"""
RELOAD = """
mutation Reload($name: String!) {
  reloadRepositoryLocation(repositoryLocationName: $name) {
    __typename ... on WorkspaceLocationEntry { locationOrLoadError { __typename } }
  }
}"""
IN_PROGRESS = """
{ runsOrError(filter: {statuses: [STARTING, STARTED, CANCELING]}) { ... on Runs { results { runId } } } }"""
DAEMONS = "{ instance { daemonHealth { allDaemonStatuses { daemonType required healthy } } } }"


def project(folder: Path) -> Path:
    """What a user has at the repository root, the demo's contracts replaced by one slow contract:
    the repository's dagster.yaml and workspace.yaml (copies of the same bytes, but the dagster.yaml's
    poll interval: POLL) beside contracts/."""
    folder.mkdir(parents=True)
    shutil.copy(REPO / "workspace.yaml", folder / "workspace.yaml")
    instance = (REPO / "dagster.yaml").read_text()
    assert instance.count(POLL[0]) == 1, "the repository's dagster.yaml no longer polls every 10 s"
    (folder / "dagster.yaml").write_text(instance.replace(*POLL))
    (folder / "contracts").mkdir()
    (folder / "contracts" / "events.odcs.yaml").write_text(CONTRACT)
    (folder / "data").mkdir()
    duckdb_with(folder / "data" / "events.duckdb", events_view(10**12))
    return folder


def start(folder: Path, log: Path) -> Dagit:
    """`dagster dev` in the folder, in a shell holding only PATH (with this environment's commands)
    and HOME: no DAGSTER_HOME, so Dagster's temporary instance reads ./dagster.yaml."""
    port = free_port()
    bin_dir = os.path.dirname(sys.executable)
    env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": os.environ.get("HOME", "/root")}
    handle = log.open("w")
    process = subprocess.Popen([os.path.join(bin_dir, "dagster"), "dev", "-h", "127.0.0.1", "-p", str(port)],
                               cwd=folder, env=env, stdout=handle, stderr=subprocess.STDOUT,
                               start_new_session=True)
    return Dagit(process, port, log)


def processes() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, command line) of every process this user can see."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        table[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), command)
    return table


def descendants(root: int) -> dict[int, tuple[int, str]]:
    table = processes()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, command) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = (ppid, command)
                frontier.append(pid)
    return found


def wait_for(what: str, probe, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"not seen within {timeout:.0f} s: {what}")


def status(dagit: Dagit, run_id: str) -> str:
    return dagit.query(RUN_STATUS, {"runId": run_id})["runOrError"]["status"]


def launch_checks(dagit: Dagit, tags: dict[str, str]) -> str:
    selector = {**LOCATION, "jobName": "__ASSET_JOB", "assetSelection": [],
                "assetCheckSelection": [{"assetKey": {"path": a}, "name": n} for a, n in CHECKS]}
    params = {"selector": selector, "mode": "default",
              "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]}}
    result = dagit.query(LAUNCH, {"params": params})["launchRun"]
    assert result["__typename"] == "LaunchRunSuccess", result
    return result["run"]["runId"]


def worker_in_its_query(dagit: Dagit, run_id: str) -> int:
    """The run worker's pid, once the checks' step has started (the run logs name it)."""
    def probe():
        events = dagit.query(RUN_LOGS, {"runId": run_id})["logsForRun"].get("events") or []
        started = any(e["__typename"] == "ExecutionStepStartEvent" for e in events)
        pids = {e["pid"] for e in events if e["__typename"] == "LogsCapturedEvent" and e.get("pid")}
        return started and len(pids) == 1 and pids.pop()
    pid = wait_for(f"run {run_id} in its checks step", probe)
    assert pid in descendants(dagit.process.pid), "the run worker is not a process of this dagster dev"
    return pid


def executions(dagit: Dagit) -> dict[str, list[tuple[str, str, bool | None]]]:
    """check name → its executions: (run id, status, passed)."""
    out = {}
    for asset, name in CHECKS:
        history = dagit.query(CHECK_EXECUTIONS, {"key": {"path": asset}, "name": name})["assetCheckExecutions"]
        out[name] = [(h["runId"], h["status"], (h["evaluation"] or {}).get("success")) for h in history]
    return out


def test_a_checks_run_whose_worker_dies_ends_failed_and_its_reexecution_passes(tmp_path):
    folder = project(tmp_path / "project")
    dagit = start(folder, tmp_path / "dagster_dev.log")
    try:
        dagit.wait_ready()
        # the UI's daemon list: run monitoring is one of the daemons `dagster dev` runs
        def monitoring():
            statuses = dagit.query(DAEMONS)["instance"]["daemonHealth"]["allDaemonStatuses"]
            return any(d["daemonType"] == "MONITORING" and d["required"] and d["healthy"] for d in statuses)
        wait_for("a healthy run monitoring daemon", monitoring, timeout=60)

        # 1. the run worker alone is killed: the code server that started it notices
        alone = launch_checks(dagit, {})
        os.kill(worker_in_its_query(dagit, alone), signal.SIGKILL)
        assert dagit.wait_run(alone, timeout=120) == "FAILURE"

        # 2. the run worker is killed with its code server: nothing is left to notice but run
        # monitoring, which ends the run at its maximum run time (here the run's own tag)
        crashed = launch_checks(dagit, {"dagster/max_runtime": str(MAX_RUNTIME)})
        worker = worker_in_its_query(dagit, crashed)
        server = processes()[worker][0]
        tree = descendants(dagit.process.pid)
        assert server in tree and "dagster api grpc" in tree[server][1], "the worker's parent is its code server"
        assert status(dagit, crashed) == "STARTED"
        os.kill(server, signal.SIGKILL)  # the code server first: it would mark the run failed itself
        os.kill(worker, signal.SIGKILL)
        assert dagit.wait_run(crashed, timeout=180) == "FAILURE"
        # the run's log says why: run monitoring stopped it at its maximum run time
        said = [e.get("message") or "" for e in dagit.query(RUN_LOGS, {"runId": crashed})["logsForRun"]["events"]]
        assert any(f"maximum runtime of {MAX_RUNTIME} seconds" in m for m in said), said[-5:]
        # no run holds a slot of the run queue any more
        assert dagit.query(IN_PROGRESS)["runsOrError"]["results"] == []

        # none of the checks the killed runs left unfinished is reported as passed
        before = executions(dagit)
        for name, history in before.items():
            for run_id in (alone, crashed):
                found = [(s, passed) for r, s, passed in history if r == run_id]
                assert found and all(s != "SUCCEEDED" and passed is not True for s, passed in found), (name, found)

        # 3. the view is small again; reload the code location (the UI's Reload: the crash took its
        # code server) and re-execute the crashed run: it passes, nothing of the crash in its way
        duckdb_with(folder / "data" / "events.duckdb", events_view(1000))
        def reloaded():
            entry = dagit.query(RELOAD, {"name": LOCATION["repositoryLocationName"]})["reloadRepositoryLocation"]
            return (entry.get("locationOrLoadError") or {}).get("__typename") == "RepositoryLocation"
        wait_for("the code location reloaded", reloaded)
        params = {"parentRunId": crashed, "strategy": "ALL_STEPS",
                  "useParentRunTags": False}  # the MAX_RUNTIME limit was the crashed run's own
        result = dagit.query(REEXECUTE, {"params": params})["launchRunReexecution"]
        assert result["__typename"] == "LaunchRunSuccess", result
        rerun = result["run"]["runId"]
        assert dagit.wait_run(rerun, timeout=180) == "SUCCESS"
        after = executions(dagit)
        for name in before:
            assert [(s, passed) for r, s, passed in after[name] if r == rerun] == [("SUCCEEDED", True)], after[name]
    finally:
        dagit.stop()
    log = (tmp_path / "dagster_dev.log").read_text()
    assert "DagsterInvalidConfigError" not in log


def monitoring_of(instance) -> dict:
    return {"daemons": instance.get_required_daemon_types(), "enabled": instance.run_monitoring_enabled,
            "start": instance.run_monitoring_start_timeout_seconds,
            "cancel": instance.run_monitoring_cancel_timeout_seconds,
            "max_runtime": instance.run_monitoring_max_runtime_seconds,
            "resume": instance.run_monitoring_max_resume_run_attempts,
            "poll": instance.run_monitoring_poll_interval_seconds,
            "free_slots": instance.run_monitoring_settings.get("free_slots_after_run_end_seconds")}


def assert_sensible(settings: dict) -> None:
    assert "MONITORING" in settings["daemons"] and settings["enabled"]
    assert settings["resume"] == 0  # the default run launcher cannot resume a run
    assert settings["max_runtime"] > 0  # the only end of a run whose worker died with its code server
    assert settings["cancel"] > DEFAULT_TIMEOUT_SECONDS  # a cancel may wait out a check's statement
    assert settings["start"] > 0 and settings["free_slots"] > 0
    assert settings["poll"] < min(settings["start"], settings["cancel"], settings["max_runtime"])


def test_the_local_instance_file_turns_run_monitoring_on(tmp_path):
    """As `dagster dev` builds its temporary instance: a new home, the configuration from ./dagster.yaml."""
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    with DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path), config_dir=str(REPO))) as instance:
        assert_sensible(monitoring_of(instance))


def test_the_production_instance_file_passes_dagsters_validation():
    from dagster._core.instance.config import dagster_instance_config

    config, _ = dagster_instance_config(str(REPO / "deploy"))  # Dagster's own schema; no connection
    assert config["run_monitoring"]["enabled"] is True
    assert config["run_monitoring"]["max_resume_run_attempts"] == 0


@pytest.mark.postgres
def test_the_production_instance_runs_the_monitoring_daemon(postgres, tmp_path, monkeypatch):
    """deploy/dagster.yaml copied into DAGSTER_HOME, as the README says, on a real PostgreSQL: the
    daemons `dagster-daemon run` starts include run monitoring, beside the run queue."""
    from dagster import DagsterInstance

    admin = sa.create_engine(postgres.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql("CREATE DATABASE dagster_monitoring")
    admin.dispose()
    shutil.copy(REPO / "deploy" / "dagster.yaml", tmp_path / "dagster.yaml")
    for name, value in {"DAGSTER_HOME": str(tmp_path), "DAGSTER_PG_HOST": "127.0.0.1",
                        "DAGSTER_PG_PORT": str(postgres.port), "DAGSTER_PG_DB": "dagster_monitoring",
                        "DAGSTER_PG_USER": "postgres", "DAGSTER_PG_PASSWORD": PASSWORD}.items():
        monkeypatch.setenv(name, value)
    with DagsterInstance.get() as instance:
        settings = monitoring_of(instance)
        assert "QUEUED_RUN_COORDINATOR" in settings["daemons"]
        assert_sensible(settings)
