"""Partitioned checks in Dagster: an external partitioned table checked partition by partition on a
test instance, and the user's own daily asset materialised for two days, one of them bad."""

from __future__ import annotations

import copy
import warnings

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml

from dq_contracts import build_contract_defs
from dq_contracts_tests.conftest import run_checks
from dq_contracts_tests.test_partitions import BAD_DAY, CONTRACT, GOOD_DAY, ROWS, SEMANTICS, fill

PER_PARTITION = {name for name, scope, *_ in SEMANTICS if scope == "partition"}
TABLE_WIDE = {name for name, scope, *_ in SEMANTICS if scope == "table"} - {"ts__freshness"}
FAILING_ON_THE_BAD_DAY = PER_PARTITION - {"customer_id__unique"}


def contract(server: dict, *, declared: bool = True) -> dict:
    document = copy.deepcopy(CONTRACT)
    document["servers"] = [server]
    document["slaProperties"] = []  # the clock of the run is today's, and the rows are of June 2026
    if not declared:  # only ODCS's `partitioned: true`: the user's asset brings the partitions
        document["schema"][0]["customProperties"] = []
    return document


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse(request, tmp_path, monkeypatch):
    """(server entry, engine) of a fresh warehouse holding the two days' rows."""
    if request.param == "duckdb":
        engine = fill(sa.create_engine(f"duckdb:///{tmp_path / 'wh.duckdb'}"))
        engine.dispose()
        return {"server": "wh", "type": "duckdb", "database": "wh.duckdb", "schema": "main"}, engine
    url = sa.make_url(request.getfixturevalue("pg_database"))
    engine = fill(sa.create_engine(url))
    monkeypatch.setenv("DQ_CONTRACTS_WH_URL", url.render_as_string(hide_password=False))
    return {"server": "wh", "type": "postgres", "host": url.host, "port": url.port, "database": url.database,
            "schema": "public"}, engine


def by_partition(result) -> dict[str | None, dict[str, bool]]:
    out: dict[str | None, dict[str, bool]] = {}
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.asset_key == dg.AssetKey("events"):
            out.setdefault(evaluation.partition, {})[evaluation.check_name] = evaluation.passed
    return out


def test_an_external_partitioned_table_is_checked_partition_by_partition(tmp_path, warehouse):
    server, engine = warehouse
    (tmp_path / "events.odcs.yaml").write_text(yaml.safe_dump(contract(server), sort_keys=False))
    defs = build_contract_defs(tmp_path, automation_sensor=dg.DefaultSensorStatus.RUNNING)
    dg.Definitions.validate_loadable(defs)  # partitioned and table-wide ops side by side, the automation sensor too
    spec = next(s for s in defs.assets if isinstance(s, dg.AssetSpec) and s.key == dg.AssetKey("events"))
    assert spec.partitions_def == dg.DailyPartitionsDefinition(start_date="2026-06-01", timezone="UTC")
    checks = {s.name: s for a in defs.asset_checks for s in a.check_specs if s.asset_key == spec.key}
    assert {n for n, s in checks.items() if s.partitions_def == spec.partitions_def} == PER_PARTITION
    assert {n for n, s in checks.items() if s.partitions_def is None} == TABLE_WIDE
    # the job a backfill launches: partitioned like the table, its per-partition clauses only
    job = defs.resolve_job_def("events__events__partitions")
    assert job.partitions_def == spec.partitions_def
    assert {k.name for k in job.asset_layer.asset_graph.asset_check_keys} == PER_PARTITION
    assert not any(j.name.endswith("__partitions") for j in build_contract_defs(tmp_path, partition_jobs=False).jobs)

    instance = dg.DagsterInstance.ephemeral()
    runs = {}
    for day in (GOOD_DAY, BAD_DAY, "2026-06-03"):  # a backfill of three days, one run per partition
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[day] = run_checks(defs, dg.AssetSelection.checks_for_assets(spec.key), instance=instance,
                                   tags={"dagster/partition": day})
    for day, result in runs.items():
        seen = by_partition(result)
        assert set(seen) == {day, None}  # the partition's clauses carry it; the table-wide ones none
        assert set(seen[day]) == PER_PARTITION and set(seen[None]) == TABLE_WIDE
        assert all(seen[None].values())
        failing = {name for name, passed in seen[day].items() if not passed}
        assert failing == (FAILING_ON_THE_BAD_DAY if day == BAD_DAY else set()), (day, failing)
    # the instance keeps each partition's evaluation: the bad day's failed, the others' passed
    records = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(spec.key, "amount__minimum"), limit=10)
    outcomes = {r.event.asset_check_evaluation.partition: r.event.asset_check_evaluation.passed
                for r in records if r.event and r.event.asset_check_evaluation}
    assert outcomes == {GOOD_DAY: True, BAD_DAY: False, "2026-06-03": True}
    metadata = next(e for e in runs[BAD_DAY].get_asset_check_evaluations() if e.check_name == "amount__minimum").metadata
    assert metadata["dq_contracts/partition"].value == BAD_DAY
    assert f"'{BAD_DAY}'" in metadata["dq_contracts/sql"].value  # the failing rows of that day only
    # a run with no partition key (a schedule, a job of the user's) checks the whole table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = by_partition(run_checks(defs, dg.AssetSelection.checks_for_assets(spec.key), instance=instance))
    assert set(whole) == {None} and whole[None]["row_count"] is False and whole[None]["customer_id__unique"] is False


def test_a_daily_asset_materialised_for_two_days_fails_only_the_bad_days_checks(tmp_path, warehouse):
    server, engine = warehouse
    (tmp_path / "events.odcs.yaml").write_text(yaml.safe_dump(contract(server, declared=False), sort_keys=False))
    daily = dg.DailyPartitionsDefinition(start_date="2026-06-01")
    url = engine.url.render_as_string(hide_password=False)
    if server["type"] == "duckdb":
        url = f"duckdb:///{tmp_path / 'wh.duckdb'}"

    @dg.asset(key="events", partitions_def=daily)
    def events(context) -> None:
        """Rewrites its day of the table."""
        writer = sa.create_engine(url)
        with writer.begin() as c:
            c.execute(sa.text("DELETE FROM events WHERE day = CAST(:d AS DATE)"), {"d": context.partition_key})
            for row in ROWS:
                if row[5] == context.partition_key:
                    c.execute(sa.text("INSERT INTO events VALUES (:a, :b, :c, :d, :e, CAST(:f AS DATE), "
                                      "CAST(:g AS TIMESTAMP))"), dict(zip("abcdefg", row)))
        writer.dispose()

    statements: list[tuple[str, object]] = []
    listener = lambda conn, cur, sql, params, *a: statements.append((sql, params))  # noqa: E731
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", listener)
    defs = build_contract_defs(tmp_path, assets=[events])
    assert not defs.jobs  # a backfill of the user's asset materialises it, its checks along: no job of ours
    job = dg.define_asset_job("build_events", selection=dg.AssetSelection.assets("events"))
    merged = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    instance = dg.DagsterInstance.ephemeral()
    try:
        runs = {}
        for day in (GOOD_DAY, BAD_DAY):
            statements.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                runs[day] = merged.resolve_job_def("build_events").execute_in_process(
                    instance=instance, partition_key=day, raise_on_error=False)
            reading = [(sql, params) for sql, params in statements if "events" in sql and "FROM" in sql.upper()
                       and "DELETE" not in sql.upper()]
            filtered = [params for sql, params in reading if '"day" >=' in sql or "day >=" in sql]
            assert filtered and all(day in str(p) for p in filtered), reading
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", listener)
    for day, result in runs.items():
        assert result.get_asset_materialization_events()[0].partition == day
        seen = by_partition(result)
        failing = {name for name, passed in seen[day].items() if not passed}
        assert failing == (FAILING_ON_THE_BAD_DAY if day == BAD_DAY else set()), (day, failing)
        assert set(seen[day]) == PER_PARTITION and set(seen[None]) == TABLE_WIDE
    assert runs[GOOD_DAY].success and not runs[BAD_DAY].success  # the bad day's ERROR clauses block
