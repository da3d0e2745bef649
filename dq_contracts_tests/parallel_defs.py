"""A job of every contract check with Dagster's multiprocess executor, loadable by module and name
(the executor starts a process per step and rebuilds the job in each)."""

from __future__ import annotations

import os

import dagster as dg

from dq_contracts import build_contract_defs


def all_checks_job() -> dg.JobDefinition:
    defs = dg.Definitions.merge(
        build_contract_defs(os.environ["DQ_CONTRACTS_DIR"]),
        dg.Definitions(jobs=[dg.define_asset_job(
            "all_contract_checks", selection=dg.AssetSelection.all_asset_checks(),
            executor_def=dg.multiprocess_executor.configured({"max_concurrent": 4}))]),
    )
    return defs.resolve_job_def("all_contract_checks")
