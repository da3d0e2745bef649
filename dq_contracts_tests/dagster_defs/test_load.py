"""Load: a folder of many contracts on one DuckDB warehouse. The code location loads, and one run of
every check with Dagster's multiprocess executor records every result: none lost, no lock errors.

CI runs 8 contracts (each op is a process of its own: about 5 s of CPU to start and rebuild the
job); the full size (500 contracts, 10,000 clauses) is one variable away:

    DQ_LOAD_CONTRACTS=500 .venv/bin/python -m pytest -q dq_contracts_tests/dagster_defs/test_load.py -s
"""

from __future__ import annotations

import os
import resource
import time

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml
from dagster._core.definitions.reconstruct import build_reconstructable_job

from dq_contracts import build_contract_defs
from dq_contracts_tests.support import REPO

CONTRACTS = int(os.environ.get("DQ_LOAD_CONTRACTS", "8"))
COLUMNS = 10  # two clauses each (required, minimum): 20 clauses per contract, plus the schema check


def contract(i: int, database: str) -> dict:
    return {
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": f"urn:load:{i:04d}", "version": "1.0.0",
        "status": "active",
        "servers": [{"server": "local", "type": "duckdb", "database": database, "schema": "main"}],
        "schema": [{"name": f"t{i:04d}", "properties": [
            {"name": f"c{j}", "logicalType": "integer", "required": True,
             "logicalTypeOptions": {"minimum": 0 if (i + j) % 7 else 1}} for j in range(COLUMNS)]}],
    }


def test_many_contracts_load_and_every_check_is_recorded(tmp_path, monkeypatch):
    database = tmp_path / "wh.duckdb"
    engine = sa.create_engine(f"duckdb:///{database}")
    columns = ", ".join(f"c{j} INTEGER" for j in range(COLUMNS))
    values = ", ".join(f"(i + {j}) % 50" for j in range(COLUMNS))
    with engine.begin() as c:
        for i in range(CONTRACTS):
            c.exec_driver_sql(f"CREATE TABLE t{i:04d} ({columns})")
            c.exec_driver_sql(f"INSERT INTO t{i:04d} SELECT {values} FROM range(100) r(i)")
    engine.dispose()  # the checks open the file read-only, from many processes at once
    folder = tmp_path / "contracts"
    folder.mkdir()
    for i in range(CONTRACTS):
        (folder / f"c{i:04d}.odcs.yaml").write_text(yaml.safe_dump(contract(i, str(database))))

    started = time.perf_counter()
    defs = build_contract_defs(folder)
    dg.Definitions.validate_loadable(defs)
    load_seconds = time.perf_counter() - started
    specs = [s for c in defs.asset_checks for s in c.check_specs]
    assert len(specs) == CONTRACTS * (2 * COLUMNS + 1)

    (tmp_path / "home").mkdir()
    job = build_reconstructable_job("dq_contracts_tests.parallel_defs", "all_checks_job",
                                    reconstructable_args=(str(folder),),
                                    reconstructor_working_directory=str(REPO))
    started = time.perf_counter()
    with dg.DagsterInstance.local_temp(str(tmp_path / "home")) as instance:
        result = dg.execute_job(job, instance=instance)
        run_seconds = time.perf_counter() - started
        stored = {}
        for spec in specs:
            history = instance.event_log_storage.get_asset_check_execution_history(spec.key, limit=5)
            stored[spec.key] = history
        messages = " ".join(r.user_message or "" for r in instance.all_logs(result.run_id))
    # every check recorded once, in Dagster's storage, by this run
    assert all(len(h) == 1 and h[0].run_id == result.run_id for h in stored.values())
    evaluations = [h[0].event.dagster_event.event_specific_data for h in stored.values()]
    assert all(e is not None for e in evaluations)
    assert "lock" not in messages.lower()
    errors = [e for e in evaluations if "dq_contracts/error" in e.metadata]
    assert errors == []
    # the data: minimum 1 fails where a column holds 0 (every column of 100 rows holds one 0)
    failing = {(e.asset_key.to_user_string(), e.check_name) for e in evaluations if not e.passed}
    expected = {(f"t{i:04d}", f"c{j}__minimum") for i in range(CONTRACTS) for j in range(COLUMNS) if (i + j) % 7 == 0}
    assert failing == expected
    peak_mb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    print(f"\n{CONTRACTS} contracts, {len(specs)} checks: definitions built and validated in {load_seconds:.1f} s; "
          f"one multiprocess run of every check in {run_seconds:.1f} s; peak RSS of one process {peak_mb:.0f} MB")


@pytest.mark.parametrize("made,full_collections", [(1_000, 0), (300_000, 1)])
def test_the_paused_collector_collects_in_full_only_after_a_large_build(made, full_collections):
    """A full collection walks the whole heap of the process: after a small build it costs more than
    it saves (a test run that loads contracts thousands of times took twice as long)."""
    import gc

    from dq_contracts.odcs.load import gc_paused

    seen: list[int] = []
    callback = lambda phase, info: seen.append(info["generation"]) if phase == "start" else None  # noqa: E731
    gc.collect()
    gc.callbacks.append(callback)
    try:
        with gc_paused():
            kept = [[] for _ in range(made)]
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(callback)
    assert seen.count(2) == full_collections and len(kept) == made
