"""Each schema object's checks are one op, so Dagster's multiprocess executor runs them side by side."""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.reconstruct import build_reconstructable_job

from dq_contracts_tests.support import DEMO_CHECKS, REPO, demo_shop
from dq_contracts_tests.support import DOCUMENTED


def test_the_multiprocess_executor_runs_the_demo_checks_in_parallel(tmp_path, monkeypatch):
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
    steps = {}
    for record in records:
        event = record.dagster_event
        if event is None or not event.step_key:
            continue
        span = steps.setdefault(event.step_key, {"pids": set()})
        if event.event_type_value == "STEP_START":
            span["start"] = record.timestamp
            span["pids"].add(event.pid)
        if event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
            span["end"] = record.timestamp
    # one op per schema object, and one per object with relationships (they wait for what they read)
    assert len(steps) == 6
    pids = set().union(*(s["pids"] for s in steps.values()))
    assert len(pids) == 6 and None not in pids  # each op started in a process of its own
    # at least two ops were running at the same moment
    overlaps = max(sum(1 for s in steps.values() if s["start"] <= t["start"] < s["end"]) for t in steps.values())
    assert overlaps >= 2, steps
