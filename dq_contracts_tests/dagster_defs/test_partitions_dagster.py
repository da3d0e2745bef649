"""Partitioned checks in Dagster: an external partitioned table checked partition by partition on a
test instance, and the user's own daily asset materialised for two days, one of them bad."""

from __future__ import annotations

import datetime as dt
import warnings

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml

from dq_contracts import build_contract_defs, load_contracts
from dq_contracts.dagster_defs.report import build_report, report_text
from dq_contracts_tests.support import run_checks
from dq_contracts_tests.partition_cases import BAD_DAY, GOOD_DAY, ROWS, fill
from dq_contracts_tests.partition_cases import FAILING_ON_THE_BAD_DAY, PER_PARTITION, TABLE_WIDE, contract


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
    # its schedule, stopped until turned on: at midnight UTC, the day that has just ended
    schedule = defs.get_repository_def().get_schedule_def("events__events__partitions_schedule")
    assert (schedule.job_name, schedule.cron_schedule, schedule.default_status) == (
        "events__events__partitions", "0 0 * * *", dg.DefaultScheduleStatus.STOPPED)
    with dg.build_schedule_context(scheduled_execution_time=dt.datetime(2026, 6, 3, tzinfo=dt.timezone.utc)) as tick:
        requests = schedule.evaluate_tick(tick).run_requests
    assert [r.partition_key for r in requests] == ["2026-06-02"]

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
    # `dq-contracts report`: the bad day stays failed after a good day was checked last
    clauses = {c["name"]: c for c in build_report(load_contracts([tmp_path]).usable_plans, instance)
               ["contracts"][0]["assets"][0]["clauses"]}
    assert clauses["amount__minimum"]["status"] == "fail"
    assert [(p["partition"], p["status"]) for p in clauses["amount__minimum"]["partitions"]] == [
        (GOOD_DAY, "pass"), (BAD_DAY, "fail"), ("2026-06-03", "pass")]
    assert clauses["row_count"]["status"] == "fail"  # on the bad day only
    assert clauses["has_rows"]["status"] == "pass" and "partitions" not in clauses["has_rows"]  # table-wide
    assert f"fail    events.amount__minimum  (partition {BAD_DAY}, last run" in report_text(
        {"contracts": [{"id": "x", "version": "1", "not_enforced": 0, "assets": [
            {"asset_key": "events", "clauses": [clauses["amount__minimum"]]}]}]})
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
            # the window's bounds, bound (PostgreSQL) or written in as literals (DuckDB: no bound values)
            filtered = [f"{sql} {params}" for sql, params in reading if '"day" >=' in sql or "day >=" in sql]
            assert filtered and all(day in sent for sent in filtered), reading
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", listener)
    for day, result in runs.items():
        assert result.get_asset_materialization_events()[0].partition == day
        seen = by_partition(result)
        failing = {name for name, passed in seen[day].items() if not passed}
        assert failing == (FAILING_ON_THE_BAD_DAY if day == BAD_DAY else set()), (day, failing)
        assert set(seen[day]) == PER_PARTITION and set(seen[None]) == TABLE_WIDE
    assert runs[GOOD_DAY].success and not runs[BAD_DAY].success  # the bad day's ERROR clauses block


SALES = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "urn:sales", "version": "1.0.0", "status": "active",
    "schema": [{"name": "sales", "properties": [
        {"name": "id", "logicalType": "integer", "required": True},
        {"name": "day", "logicalType": "date", "partitioned": True, "partitionKeyPosition": 1},
        {"name": "region", "logicalType": "string", "partitioned": True, "partitionKeyPosition": 2},
        {"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}},
    ], "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}]}],
}
SALES_ROWS = [(1, GOOD_DAY, "eu", 5), (2, GOOD_DAY, "us", -1), (3, BAD_DAY, "eu", 2)]  # id, day, region, amount

# (day, region) materialised -> the checks that fail; a partition with no row fails only rowCount
MULTI = [
    ((GOOD_DAY, "eu"), set()),
    ((GOOD_DAY, "us"), {"amount__minimum"}),
    ((BAD_DAY, "us"), {"row_count"}),
]


def test_a_multi_partitioned_asset_checks_the_rows_of_each_dimension(tmp_path):
    """A user's asset partitioned by day and by region: each dimension filters on the property of its
    name, so one (day, region) partition's checks read only its rows."""
    db = tmp_path / "wh.duckdb"
    engine = sa.create_engine(f"duckdb:///{db}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE sales (id INTEGER, day DATE, region VARCHAR, amount DECIMAL(10,2))")
    engine.dispose()
    document = {**SALES, "servers": [{"server": "wh", "type": "duckdb", "database": "wh.duckdb", "schema": "main"}]}
    (tmp_path / "sales.odcs.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    partitions = dg.MultiPartitionsDefinition({"day": dg.DailyPartitionsDefinition(start_date="2026-06-01"),
                                               "region": dg.StaticPartitionsDefinition(["eu", "us"])})

    @dg.asset(key="sales", partitions_def=partitions)
    def sales(context) -> None:
        """Rewrites its (day, region) of the table."""
        keys = context.partition_key.keys_by_dimension
        writer = sa.create_engine(f"duckdb:///{db}")
        with writer.begin() as c:
            c.execute(sa.text("DELETE FROM sales WHERE day = CAST(:d AS DATE) AND region = :r"),
                      {"d": keys["day"], "r": keys["region"]})
            for row in SALES_ROWS:
                if (row[1], row[2]) == (keys["day"], keys["region"]):
                    c.execute(sa.text("INSERT INTO sales VALUES (:a, CAST(:b AS DATE), :c, :d)"),
                              dict(zip("abcd", row)))
        writer.dispose()

    defs = build_contract_defs(tmp_path, assets=[sales])
    checks = {s.name: s for a in defs.asset_checks for s in a.check_specs}
    assert {n for n, s in checks.items() if s.partitions_def == partitions} == {"id__not_null", "amount__minimum",
                                                                                "row_count"}
    assert checks["schema"].partitions_def is None
    job = dg.define_asset_job("build_sales", selection=dg.AssetSelection.assets("sales"))
    merged = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    instance = dg.DagsterInstance.ephemeral()
    for (day, region), failing in MULTI:
        key = dg.MultiPartitionKey({"day": day, "region": region})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = merged.resolve_job_def("build_sales").execute_in_process(
                instance=instance, partition_key=key, raise_on_error=False)
        evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
        per_partition = {n: e for n, e in evaluations.items() if e.partition is not None}
        assert set(per_partition) == {"id__not_null", "amount__minimum", "row_count"}
        assert {e.partition for e in per_partition.values()} == {key}
        assert {n for n, e in per_partition.items() if not e.passed} == failing, (key, per_partition)
        sql = per_partition["amount__minimum"].metadata["dq_contracts/sql"].value
        assert f"'{day}'" in sql and f"'{region}'" in sql  # the failing rows of that day and region only
        assert per_partition["row_count"].metadata["dq_contracts/observed"].value == (0 if failing == {"row_count"}
                                                                                     else 1)


def test_a_single_run_backfill_checks_the_rows_of_its_range_once(tmp_path):
    """A single-run backfill (BackfillPolicy.single_run) runs a range of partitions: the checks read
    the range's rows (not the whole table), once; Dagster records such a run's evaluations with no
    partition, so the metadata names the range."""
    fill(sa.create_engine(f"duckdb:///{tmp_path / 'wh.duckdb'}")).dispose()
    server = {"server": "wh", "type": "duckdb", "database": "wh.duckdb", "schema": "main"}
    (tmp_path / "events.odcs.yaml").write_text(yaml.safe_dump(contract(server, declared=False), sort_keys=False))

    @dg.asset(key="events", partitions_def=dg.DailyPartitionsDefinition(start_date="2026-06-01"),
              backfill_policy=dg.BackfillPolicy.single_run())
    def events() -> None:
        """Built elsewhere; the rows are already there."""

    job = dg.define_asset_job("build_events", selection=dg.AssetSelection.assets("events"))
    merged = dg.Definitions.merge(build_contract_defs(tmp_path, assets=[events]), dg.Definitions(jobs=[job]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = merged.resolve_job_def("build_events").execute_in_process(
            instance=dg.DagsterInstance.ephemeral(), raise_on_error=False,
            tags={"dagster/asset_partition_range_start": BAD_DAY, "dagster/asset_partition_range_end": "2026-06-03"})
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == PER_PARTITION | TABLE_WIDE
    failing = {n for n, e in evaluations.items() if not e.passed}
    assert failing == FAILING_ON_THE_BAD_DAY  # customer_id is unique within these days, not in the table
    assert evaluations["row_count"].metadata["dq_contracts/observed"].value == 3  # of 5 in the table
    for name in PER_PARTITION:
        assert evaluations[name].metadata["dq_contracts/partition"].value == f"{BAD_DAY}...2026-06-03", name
    assert "dq_contracts/partition" not in evaluations["schema"].metadata
    sql = evaluations["amount__minimum"].metadata["dq_contracts/sql"].value
    assert f"'{BAD_DAY}'" in sql and "'2026-06-04'" in sql  # the range's window: the 2nd to the end of the 3rd
