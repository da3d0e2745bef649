"""End to end: `dagster dev` from the repository root, the demo launched through GraphQL, the
check results read back through GraphQL with their metadata."""

from __future__ import annotations

import re
import subprocess

import pytest

from dq_contracts_tests.support import DEMO_CHECKS, REPO, SKIPPED_IN_A_FULL_RUN
from dq_contracts_tests.dagit import ASSET_CHECKS, CHECK_EXECUTIONS, metadata_of, start_dagster_dev
from dq_contracts_tests.support import DOCUMENTED
from dq_contracts_tests.browser import CHROMIUM_FLAGS, OUTPUT, Browser, chromium
from dq_contracts_tests.support import DEMO_ASSETS


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """`dagster dev` from the repository root, after the demo ran once: (dagit, run id)."""
    folder = tmp_path_factory.mktemp("dagster_dev")
    dagit = start_dagster_dev(REPO, folder / "dagster_home", folder / "dagster.log")
    try:
        dagit.wait_ready()
        # a fresh instance greets a first visit with a "Join the Dagster community" dialog over the page
        # (a second after it loads): seen, as its Skip records it, so that no screenshot shows it instead
        dagit.query("mutation { setNuxSeen }")
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
    assert metadata["dq_contracts/samples_text"] == "9999"
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


# What a person reads on each page, whitespace runs made one space, and its screenshot in test-output/
PAGES = [
    ("order_items_check.png", "/assets/order_items?view=checks&checkDetail=order_id__references_orders",
     r"Latest execution 1 row of \d+ pointing at no orders\.order_id \(\d+(\.\d+)? %\) Evaluation result Failed .*"
     r"dq_contracts/samples \[Show JSON\] dq_contracts/samples_text 9999 dq_contracts/severity ERROR"),
    # once every node has loaded its status: each says when it was materialised, none says Loading
    ("asset_graph.png", "/asset-groups", r"^(?!.*Loading)(?=.*Global asset lineage)(?:.*? Materialized \w+ \d+,){4}"),
    # the policy as Dagster states it; its state is Passing once Dagster's daemon has evaluated it
    # (minutes after the run: Not evaluated until then), never failing on tables written just now
    ("orders_freshness.png", "/assets/orders",
     r"Automation details .* Freshness policy (Passing|Not evaluated) .*?"
     r"Fails if more than 24 hours since last materialization"),
]

# The asset graph's nodes (with their boxes) and edges (each path that ends in an arrow), as drawn
GRAPH = """(() => ({
  nodes: [...document.querySelectorAll('foreignObject')].map(f => ({text: f.textContent,
    x: +f.getAttribute('x'), y: +f.getAttribute('y'), w: +f.getAttribute('width'), h: +f.getAttribute('height')})),
  edges: [...document.querySelectorAll('svg path[marker-end]')].map(p => p.getAttribute('d')),
}))()"""


def drawn_edges(graph: dict) -> set[tuple[str, str]]:
    """Each edge as (from, to): the node whose right side it leaves and the one whose left side it
    reaches (the arrow stops a few pixels short)."""
    def node_at(x: float, y: float, side: str) -> str:
        found = [n for n in graph["nodes"] if abs((n["x"] + n["w"] if side == "right" else n["x"]) - x) <= 10
                 and n["y"] <= y <= n["y"] + n["h"]]
        assert len(found) == 1, (x, y, side, graph)
        return max((a[0] for a in DEMO_ASSETS if found[0]["text"].startswith(a[0])), key=len)

    edges = set()
    for d in graph["edges"]:
        points = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", d)]
        edges.add((node_at(points[0], points[1], "right"), node_at(points[-2], points[-1], "left")))
    return edges


@pytest.mark.slow
def test_screenshots_of_the_check_page_the_graph_and_freshness(demo, tmp_path):
    """The pages a person opens after "Materialize all", in a real Chromium, each kept as a screenshot in
    test-output/: the failed relationship's page (its sentence and its samples without a click), the
    asset graph (the edges of the demo's lineage, found in the drawing), and the orders overview (its
    freshness policy)."""
    dagit, _ = demo
    OUTPUT.mkdir(parents=True, exist_ok=True)
    browser = Browser(chromium(), [*[f for f in CHROMIUM_FLAGS if not f.startswith("--virtual-time-budget")],
                                   f"--user-data-dir={tmp_path / 'profile'}"])
    try:
        for name, path, shown in PAGES:
            (OUTPUT / name).unlink(missing_ok=True)
            browser.open(f"http://127.0.0.1:{dagit.port}{path}", height=1400)
            browser.wait_for_match(shown)
            if name == "asset_graph.png":
                assert drawn_edges(browser.evaluate(GRAPH)) == {("orders", "order_items"), ("orders", "payments")}
            assert "Join the Dagster community" not in browser.text()
            browser.screenshot(OUTPUT / name)
            assert (OUTPUT / name).stat().st_size > 10_000, name
    finally:
        browser.close()
