"""End to end: `dagster dev` from the repository root, the demo launched through GraphQL, the
check results read back through GraphQL with their metadata."""

from __future__ import annotations

import pytest

from dq_contracts_tests.conftest import REPO
from dq_contracts_tests.dagit import ASSET_CHECKS, CHECK_EXECUTIONS, metadata_of, start_dagster_dev
from dq_contracts_tests.test_check_cli import DOCUMENTED

DEMO_ASSETS = [["orders"], ["order_items"], ["customers"], ["payments"]]


@pytest.mark.slow
def test_dagster_dev_runs_the_demo_and_shows_every_clause(tmp_path):
    dagit = start_dagster_dev(REPO, tmp_path / "dagster_home", tmp_path / "dagster.log")
    try:
        dagit.wait_ready()
        run_id = dagit.launch(assets=DEMO_ASSETS)  # what "Materialize all" launches
        # ERROR clauses fail by design in the demo, so the run ends in FAILURE after every check reported
        assert dagit.wait_run(run_id) == "FAILURE"

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
    finally:
        dagit.stop()
