"""End to end: `dagster dev` from the repository root, the demo launched through GraphQL, the
check results read back through GraphQL with their metadata."""

from __future__ import annotations

import re
import subprocess

import pytest

from dq_contracts_tests.support import DEMO_CHECKS, REPO, SKIPPED_IN_A_FULL_RUN
from dq_contracts_tests.dagit import ASSET_CHECKS, CHECK_EXECUTIONS, metadata_of, start_dagster_dev
from dq_contracts_tests.support import DOCUMENTED
from dq_contracts_tests.browser import CHROMIUM_FLAGS, OUTPUT, chromium
from dq_contracts_tests.support import DEMO_ASSETS


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
            seen[(asset, check["name"])] = (check, check["executionForLatestMaterialization"])
    assert len(seen) == DEMO_CHECKS
    # the relationship that reads customers (which failed ERROR clauses in this run) was skipped,
    # never reported as passed; every other clause was evaluated in the run
    skipped = {k for k, (_, e) in seen.items() if not e or not e["evaluation"]}
    assert skipped == SKIPPED_IN_A_FULL_RUN, {k: seen[k][1] for k in skipped}
    assert all(e["runId"] == run_id for k, (_, e) in seen.items() if k not in skipped)
    failing = {(a, n, e["evaluation"]["severity"]) for (a, n), (_, e) in seen.items()
               if (a, n) not in skipped and not e["evaluation"]["success"]}
    assert failing == DOCUMENTED
    check, execution = seen[("order_items", "order_id__references_orders")]
    assert not check["blocking"] and "references orders" in check["description"]
    metadata = metadata_of(execution["evaluation"])
    print(metadata)
    line = next(i for i, text in enumerate((REPO / "contracts" / "orders.odcs.yaml").read_text().splitlines(), 1)
                if text.strip() == "- to: orders.order_id")
    assert metadata["dq_contracts/clause"] == (f"contracts/orders.odcs.yaml:{line} "
                                               "schema.order_items.properties.order_id.relationships[0]")
    assert metadata["dq_contracts/pointer"] == "/schema/1/properties/0/relationships/0"
    assert metadata["dq_contracts/observed"] == 1 and metadata["dq_contracts/threshold"] == "= 0"
    assert metadata["dq_contracts/unit"] == "rows that break the clause"
    assert re.fullmatch(r"1 row of \d+ pointing at no orders\.order_id \(\d+(\.\d+)? %\)",
                        metadata["dq_contracts/result"])
    assert metadata["dq_contracts/kind"] == "relationship" and metadata["dq_contracts/severity"] == "ERROR"
    assert metadata["dagster/row_count"] > 0 and metadata["dq_contracts/samples"] == "[9999]"
    assert "order_items" in metadata["dq_contracts/sql"] and " m0" not in metadata["dq_contracts/sql"]
    freshness = metadata_of(seen[("orders", "orders_latency")][1]["evaluation"])
    assert re.fullmatch(r"newest row \d+(\.\d+)? (s|min|h) old; the contract allows 1 d",
                        freshness["dq_contracts/result"]), freshness["dq_contracts/result"]

    executions = dagit.query(CHECK_EXECUTIONS, {"key": {"path": ["orders"]}, "name": "status_is_known"})
    history = executions["assetCheckExecutions"]
    assert [h["runId"] for h in history] == [run_id]
    assert history[0]["status"] == "FAILED" and history[0]["evaluation"]["severity"] == "WARN"


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
    assert "Checks (18)" in text
    assert re.search(r"status_is_known Failed", text)
    assert re.search(r"currency__pattern Succeeded", text)
    # the failed relationship's own page: the clause's file and line, the result in words with its unit
    page = f"http://127.0.0.1:{dagit.port}/assets/order_items?view=checks&checkDetail=order_id__references_orders"
    detail = subprocess.run([browser, *flags, "--dump-dom", page], capture_output=True, text=True, timeout=180,
                            check=False)
    shown = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", detail.stdout))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "order_items_check_detail.txt").write_text(shown)
    assert re.search(r"contracts/orders\.odcs\.yaml:\d+ schema\.order_items\.properties\.order_id", shown)
    assert re.search(r"1 row of \d+ pointing at no orders\.order_id", shown)
    assert "rows that break the clause" in shown
    OUTPUT.mkdir(parents=True, exist_ok=True)
    shot = OUTPUT / "orders_checks.png"
    shot.unlink(missing_ok=True)
    subprocess.run([browser, *flags, f"--screenshot={shot}", url], capture_output=True, text=True, timeout=180,
                   check=False)
    assert shot.exists() and shot.stat().st_size > 10_000
