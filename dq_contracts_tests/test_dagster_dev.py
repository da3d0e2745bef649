"""End to end: `dagster dev` from the repository root, the demo launched through GraphQL, the
check results read back through GraphQL with their metadata."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dq_contracts_tests.conftest import REPO
from dq_contracts_tests.dagit import ASSET_CHECKS, CHECK_EXECUTIONS, metadata_of, start_dagster_dev
from dq_contracts_tests.test_check_cli import DOCUMENTED

DEMO_ASSETS = [["orders"], ["order_items"], ["customers"], ["payments"]]


OUTPUT = Path(os.environ.get("DQ_TEST_OUTPUT", REPO / "test-output"))
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                  "--window-size=1400,1000", "--virtual-time-budget=20000"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`dagster dev` from the repository root, after the demo ran once: (dagit, run id)."""
    folder = tmp_path_factory.mktemp("dagster_dev")
    dagit = start_dagster_dev(REPO, folder / "dagster_home", folder / "dagster.log")
    try:
        dagit.wait_ready()
        run_id = dagit.launch(assets=DEMO_ASSETS)  # what "Materialize all" launches
        # ERROR clauses fail by design in the demo, so the run ends in FAILURE after every check reported
        assert dagit.wait_run(run_id) == "FAILURE"
        yield dagit, run_id
    finally:
        dagit.stop()


@pytest.mark.slow
def test_dagster_dev_runs_the_demo_and_shows_every_clause(demo):
    dagit, run_id = demo

    nodes = dagit.query(ASSET_CHECKS, {"keys": [{"path": a} for a in DEMO_ASSETS]})["assetNodes"]
    seen = {}
    for node in nodes:
        asset = node["assetKey"]["path"][-1]
        for check in node["assetChecksOrError"]["checks"]:
            execution = check["executionForLatestMaterialization"]
            assert execution and execution["runId"] == run_id, (asset, check["name"])
            seen[(asset, check["name"])] = (check, execution)
    assert len(seen) == 51
    failing = {(a, n, e["evaluation"]["severity"]) for (a, n), (_, e) in seen.items()
               if not e["evaluation"]["success"]}
    assert failing == DOCUMENTED
    check, execution = seen[("orders", "order_total__minimum")]
    assert check["blocking"] and "order_total" in check["description"]
    metadata = metadata_of(execution["evaluation"])
    assert metadata["dq_contracts/observed"] == 1 and metadata["dq_contracts/threshold"] == "= 0"
    assert metadata["dq_contracts/contract_id"] == "urn:dq-contracts:demo:orders"
    assert metadata["dq_contracts/clause"] == "/schema/0/properties/4/logicalTypeOptions/minimum"
    assert metadata["dq_contracts/samples"] == "[-5.0]"
    assert "order_total" in metadata["dq_contracts/sql"]

    executions = dagit.query(CHECK_EXECUTIONS, {"key": {"path": ["orders"]}, "name": "status_is_known"})
    history = executions["assetCheckExecutions"]
    assert [h["runId"] for h in history] == [run_id]
    assert history[0]["status"] == "FAILED" and history[0]["evaluation"]["severity"] == "WARN"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("CI"):
            raise AssertionError("chromium is not installed; .ci/run installs Debian's chromium package")
        pytest.skip("chromium is not installed")
    return found


@pytest.mark.slow
def test_the_orders_checks_page_in_a_real_browser(demo, tmp_path):
    dagit, _ = demo
    browser = chromium()
    url = f"http://127.0.0.1:{dagit.port}/assets/orders?view=checks"
    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=180,
                         check=False)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom.stdout))
    # every clause of the orders table by name, and the failing one marked as failed
    for name in ("order_total__minimum", "status_is_known", "orders_volume", "paid_orders_have_total",
                 "order_id__primary_key", "orders_latency"):
        assert name in text, name
    assert "Checks (17)" in text
    assert re.search(r"order_total__minimum Failed", text)
    assert re.search(r"currency__pattern Succeeded", text)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = OUTPUT / "orders_checks.png"
    shot.unlink(missing_ok=True)
    subprocess.run([browser, *flags, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=180,
                   check=False)
    assert shot.exists() and shot.stat().st_size > 10_000
