"""Each schema object's checks are one op, so Dagster's multiprocess executor runs each in a process
of its own, side by side as far as its concurrency allows."""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.reconstruct import build_reconstructable_job

from dq_contracts_tests.support import DEMO_CHECKS, REPO, demo_shop
from dq_contracts_tests.support import DOCUMENTED


def test_the_multiprocess_executor_runs_each_objects_checks_in_a_process_of_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = demo_shop(tmp_path)
    (tmp_path / "home").mkdir()
    job = build_reconstructable_job("dq_contracts_tests.parallel_defs", "all_checks_job",
                                    reconstructable_args=(str(contracts),),
                                    reconstructor_working_directory=str(REPO))
    with dg.DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        result = dg.execute_job(job, instance=instance)
        events = [e for e in result.all_events]
        evaluations = [e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        # every clause recorded, none lost between processes
        assert len(evaluations) == DEMO_CHECKS  # checks only: no table is rebuilt, none is skipped
        failing = {(e.asset_key.to_user_string(), e.check_name, e.severity.value) for e in evaluations
                   if not e.passed}
        assert failing == DOCUMENTED
        records = instance.all_logs(result.run_id)
    pids: dict[str, set] = {}
    for record in records:
        event = record.dagster_event
        if event is not None and event.step_key and event.event_type_value == "STEP_START":
            pids.setdefault(event.step_key, set()).add(event.pid)
    # one op per schema object, and one per object with relationships (they wait for what they read),
    # each started in a process of its own; how many run at once is the executor's setting (no
    # wall-clock overlap is asserted: on a loaded machine two short steps may simply not meet)
    assert len(pids) == 6
    assert len(set().union(*pids.values())) == 6 and all(None not in p for p in pids.values())
