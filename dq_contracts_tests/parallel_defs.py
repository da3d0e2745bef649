"""A job of every contract check with Dagster's multiprocess executor, loadable by module and name
(the executor starts a process per step and rebuilds the job in each)."""

from __future__ import annotations

import dagster as dg

from dq_contracts import build_contract_defs


def all_checks_job(contracts_dir: str) -> dg.JobDefinition:
    # the folder comes as an argument, not from the environment: the executor's forkserver keeps
    # the environment of the first run in this process
    defs = dg.Definitions.merge(
        build_contract_defs(contracts_dir),
        dg.Definitions(jobs=[dg.define_asset_job(
            "all_contract_checks", selection=dg.AssetSelection.all_asset_checks(),
            executor_def=dg.multiprocess_executor.configured({"max_concurrent": 4}))]),
    )
    return defs.resolve_job_def("all_contract_checks")
