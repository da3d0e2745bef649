"""Warn and fail levels on one clause, in Dagster: one check whose evaluation, as the instance stores
it, has severity WARN when only the warn level is reached and ERROR when the fail level is, failed
both times, with the level and both thresholds in its metadata; a WARN evaluation blocks nothing."""

from __future__ import annotations

import dagster as dg
import duckdb

from dq_contracts import build_contract_defs
from dq_contracts_tests.support import levels_contract

CONTRACT = levels_contract(10)


def test_one_check_warns_then_fails_by_the_level_reached(tmp_path):
    contract = tmp_path / "levels.odcs.yaml"
    contract.write_text(CONTRACT)
    database, nulls = tmp_path / "wh.duckdb", [0]

    @dg.asset(name="t")
    def t():
        with duckdb.connect(str(database)) as connection:
            connection.execute("CREATE OR REPLACE TABLE t (a VARCHAR)")
            connection.execute("INSERT INTO t SELECT CASE WHEN i < ? THEN NULL ELSE 'x' END FROM range(10) r(i)",
                                [nulls[0]])

    @dg.asset(deps=[t])
    def downstream():
        return 1

    defs = dg.Definitions.merge(build_contract_defs(contract, assets=[t, downstream]),
                                dg.Definitions(executor=dg.in_process_executor))
    job = defs.resolve_job_def("__ASSET_JOB")
    instance = dg.DagsterInstance.ephemeral()
    key = dg.AssetCheckKey(dg.AssetKey("t"), "a__null_values")
    seen = []
    for count in (0, 2, 4):  # 0 %: pass; 20 %: the warn level; 40 %: the fail level
        nulls[0] = count
        result = job.execute_in_process(instance=instance, raise_on_error=False,
                                        asset_selection=[dg.AssetKey("t"), dg.AssetKey("downstream")])
        [record] = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
        evaluation = record.event.dagster_event.event_specific_data
        metadata = {k: v.value for k, v in evaluation.metadata.items()}
        built = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
        seen.append((evaluation.passed, evaluation.severity, metadata["dq_contracts/level"],
                     metadata["dq_contracts/status"], "downstream" in built))
        assert metadata["dq_contracts/warn_threshold"] == "< 10%"
        assert metadata["dq_contracts/fail_threshold"] == metadata["dq_contracts/threshold"] == "< 30%"
    assert seen == [
        (True, dg.AssetCheckSeverity.ERROR, "pass", "pass", True),
        (False, dg.AssetCheckSeverity.WARN, "warn", "warn", True),  # a WARN evaluation blocks nothing
        (False, dg.AssetCheckSeverity.ERROR, "fail", "fail", False),  # the ERROR one blocks downstream
    ]
