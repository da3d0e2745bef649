"""The README's first command, run exactly as written, in a fresh copy of the repository, in an
environment holding only what a new user's shell holds (PATH and HOME: no DAGSTER_HOME, nothing the
tests set for themselves). It must bring up the UI, and "Materialize all" must evaluate every check
of the materialised assets."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dq_contracts_tests.support import DEMO_CHECKS, REPO, SKIPPED_IN_A_FULL_RUN
from dq_contracts_tests.dagit import ASSET_CHECKS, Dagit, executions_in_run, metadata_of
from dq_contracts_tests.support import DOCUMENTED

README_PORT = 3000  # the command as written does not choose a port: dagster dev's default

MATERIALIZABLE = """
{ assetNodes { assetKey { path } isMaterializable repository { location { name } } } }"""


def readme_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)


def fresh_clone(target: Path) -> Path:
    """What `git clone` of this work tree gives: the tracked (and new, not ignored) files, nothing
    built or installed (.venv, demo_data, caches)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def new_user_environment() -> dict[str, str]:
    """PATH and HOME only, PATH without any virtual environment this test runs in."""
    ours = {str(Path(sys.prefix) / "bin"), str(REPO / ".venv" / "bin")}
    path = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p not in ours)
    return {"PATH": path, "HOME": os.environ.get("HOME", "/root")}


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.slow
def test_the_readme_first_command_works_in_a_clean_shell(tmp_path):
    command = readme_blocks()[0].strip()
    assert command.endswith("dagster dev"), command  # the first command installs and starts the UI
    assert port_is_free(README_PORT), f"port {README_PORT} is taken; the README's command needs it"
    clone = fresh_clone(tmp_path / "dq_contracts")
    env = new_user_environment()
    log = tmp_path / "first_command.log"
    started = time.monotonic()
    with log.open("w") as handle:
        process = subprocess.Popen(["bash", "-c", command], cwd=clone, env=env, stdout=handle,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    dagit = Dagit(process, README_PORT, log)
    try:
        dagit.wait_ready(timeout=900)  # the install comes first
        print(f"\nREADME first command: UI ready after {time.monotonic() - started:.0f} s")
        nodes = dagit.query(MATERIALIZABLE)["assetNodes"]
        assets = [n["assetKey"]["path"] for n in nodes if n["isMaterializable"]]
        assert sorted(assets) == [["customers"], ["order_items"], ["orders"], ["payments"]]
        run_id = dagit.launch(assets=assets)  # what "Materialize all" launches
        assert dagit.wait_run(run_id) == "FAILURE"  # the demo's ERROR clauses fail by design

        names = [(node["assetKey"]["path"][-1], check["name"])
                 for node in dagit.query(ASSET_CHECKS, {"keys": [{"path": a} for a in assets]})["assetNodes"]
                 for check in node["assetChecksOrError"]["checks"]]
        assert len(names) == DEMO_CHECKS
        checks = executions_in_run(dagit, names, run_id)
        # every clause evaluated in that run but the relationship that reads a table failing ERROR clauses
        not_evaluated = {k for k, e in checks.items() if not e or not e["evaluation"]}
        assert not_evaluated == SKIPPED_IN_A_FULL_RUN, {k: checks[k] for k in not_evaluated}
        for key in SKIPPED_IN_A_FULL_RUN:  # not reported as passed: no evaluation at all in that run
            assert checks[key] is not None and checks[key]["status"] != "SUCCEEDED"
        failing = {(a, n, e["evaluation"]["severity"]) for (a, n), e in checks.items()
                   if (a, n) not in not_evaluated and not e["evaluation"]["success"]}
        unexpected = {(a, n): metadata_of(checks[(a, n)]["evaluation"]).get("dq_contracts/result")
                      for a, n, _ in failing - DOCUMENTED}
        assert failing == DOCUMENTED, unexpected
    finally:
        dagit.stop()
    output = log.read_text()
    assert "DagsterInvalidConfigError" not in output and "Traceback" not in output, output[-3000:]

    # the other Dagster command a user runs at the root, in the same clean shell
    validated = subprocess.run([str(clone / ".venv" / "bin" / "dagster"), "definitions", "validate", "-w",
                                "workspace.yaml"], cwd=clone, env=env, capture_output=True, text=True,
                               timeout=300, check=False)
    assert validated.returncode == 0, validated.stdout[-2000:] + validated.stderr[-2000:]
    assert "All code locations passed validation" in validated.stdout + validated.stderr


def test_the_root_dagster_yaml_needs_no_environment():
    """Dagster's temporary instance reads ./dagster.yaml: it must not ask for any variable."""
    text = (REPO / "dagster.yaml").read_text()
    assert "env:" not in text and "postgres" not in text
    production = (REPO / "deploy" / "dagster.yaml").read_text()
    assert "DAGSTER_PG_PASSWORD" in production and "postgres" in production


def test_the_readme_test_command_is_the_one_ci_runs():
    blocks = readme_blocks()
    test_command = blocks[1].strip()
    ci = (REPO / ".ci" / "run").read_text()
    assert test_command in ci.splitlines(), (test_command, ci)


def test_report_on_a_local_dagster_home_prints_no_dagster_warning(tmp_path):
    """A DAGSTER_HOME without dagster.yaml (as `dagster dev` leaves one) is a valid local instance."""
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "report", str(REPO / "contracts")],
                          env={**new_user_environment(), "DAGSTER_HOME": str(home)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "dagster.yaml" not in proc.stdout + proc.stderr and "WARNING" not in proc.stderr.upper()
    assert "total: pass 0  warn 0  fail 0  error 0  not_run 52" in proc.stdout
