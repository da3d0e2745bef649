"""Partition-aware checks: the declaration, the keys, which clauses run per partition (README:
Semantics), and the engine reading only the partition's rows, on DuckDB and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import re
import subprocess
import sys

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.partitions import Partition, PartitionKeyError, PartitionPlan, multi_partition, partition_for
from dq_contracts.engine.runner import run_object
from dq_contracts_tests.partition_cases import BAD_DAY, CONTRACT, GOOD_DAY, SEMANTICS, fill


NOW = dt.datetime(2026, 6, 3, 12, tzinfo=dt.timezone.utc)  # the newest row is exactly one day old


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request, tmp_path):
    if request.param == "duckdb":
        engine = fill(sa.create_engine(f"duckdb:///{tmp_path / 'wh.duckdb'}"))
    else:
        engine = fill(sa.create_engine(request.getfixturevalue("pg_database")))
    yield engine
    engine.dispose()


def load(tmp_path, document=CONTRACT, name="events.odcs.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return load_contracts([path])


@pytest.fixture
def plan(tmp_path):
    loaded = load(tmp_path)
    assert loaded.problems == []
    return loaded.plans[0]


# --- the declaration and the keys ------------------------------------------------------------------

def test_the_declaration_names_the_column_odcs_marks_partitioned(plan):
    events = plan.object("events")
    assert events.partition_columns == ("day",)
    assert events.partitioning == PartitionPlan("daily", "day", "date", start="2026-06-01 00:00:00",
                                                clause="/schema/0/customProperties/0")
    assert plan.object("customers").partitioning is None


def test_partition_columns_follow_partition_key_position(tmp_path):
    document = yaml.safe_load(yaml.safe_dump(CONTRACT))
    props = document["schema"][0]["properties"]
    props[5]["partitionKeyPosition"] = 2
    props[4].update(partitioned=True, partitionKeyPosition=1)
    document["schema"][0]["customProperties"] = [{"property": "dagsterPartitions",
                                                  "value": {"type": "static", "values": ["a", "b"]}}]
    events = load(tmp_path, document).plans[0].object("events")
    assert events.partition_columns == ("status", "day")
    assert events.partitioning.column == "status" and events.partitioning.values == ("a", "b")


BAD_DECLARATIONS = [
    ({"type": "yearly", "start": "2026-01-01"}, "type", "partition type 'yearly' is not one of hourly, daily, weekly, monthly, static"),
    ({"type": "daily"}, "start", "daily partitions need a start"),
    ({"type": "daily", "start": "June"}, "start", "start 'June' is not an ISO date"),
    ({"type": "monthly", "start": "2026-01-15"}, "start", "is not the start of a monthly partition"),
    ({"type": "hourly", "start": "2026-01-01", "column": "day"}, "column", "hourly partitions need a timestamp column"),
    ({"type": "daily", "start": "2026-01-01", "column": "nope"}, "column", "'nope' is not a declared property"),
    ({"type": "daily", "start": "2026-01-01", "column": "amount"}, "column", "need a date or timestamp column"),
    ({"type": "static", "values": []}, "values", "need `values`: a non-empty list"),
    ({"type": "static", "values": ["a", "a"]}, "values", "must be distinct"),
    ({"type": "daily", "start": "2026-01-01", "every": 2}, "every", "unknown key 'every'"),
    ("daily", "value", "must be a mapping"),
]


@pytest.mark.parametrize("value,where,message", BAD_DECLARATIONS, ids=[m for _, _, m in BAD_DECLARATIONS])
def test_a_bad_declaration_is_a_problem_with_file_line_and_path(tmp_path, value, where, message):
    document = yaml.safe_load(yaml.safe_dump(CONTRACT))
    document["schema"][0]["customProperties"] = [{"property": "dagsterPartitions", "value": value}]
    loaded = load(tmp_path, document)
    assert [p.severity for p in loaded.problems] == ["error"], loaded.problems
    problem = loaded.problems[0]
    assert message in problem.message
    assert problem.path.startswith("schema.events.customProperties[0].value") and problem.path.endswith(where)
    assert problem.line is not None and problem.file.endswith("events.odcs.yaml")
    assert loaded.usable_plans == []  # like any other contract error: not run


DAILY = PartitionPlan("daily", "day", "date", start="2026-06-01 00:00:00")
HOURLY = PartitionPlan("hourly", "ts", "timestamp", start="2026-06-01 00:00:00")
WEEKLY = PartitionPlan("weekly", "day", "date", start="2026-05-31 00:00:00")
MONTHLY = PartitionPlan("monthly", "day", "date", start="2026-01-01 00:00:00", end="2027-01-01 00:00:00")
STATIC = PartitionPlan("static", "region", "string", values=("eu", "us", 7))


@pytest.mark.parametrize("plan_,key,start,end", [
    (DAILY, "2026-06-01", dt.datetime(2026, 6, 1), dt.datetime(2026, 6, 2)),
    (HOURLY, "2026-06-01-13:00", dt.datetime(2026, 6, 1, 13), dt.datetime(2026, 6, 1, 14)),
    (WEEKLY, "2026-06-07", dt.datetime(2026, 6, 7), dt.datetime(2026, 6, 14)),
    (MONTHLY, "2026-12-01", dt.datetime(2026, 12, 1), dt.datetime(2027, 1, 1)),
])
def test_a_key_is_the_time_window_dagster_means(plan_, key, start, end):
    partition = partition_for(plan_, key)
    assert (partition.key, partition.start, partition.end, partition.column) == (key, start, end, plan_.column)


def test_a_static_key_is_one_of_the_values_as_written():
    assert partition_for(STATIC, "7").value == 7 and partition_for(STATIC, "eu").value == "eu"


@pytest.mark.parametrize("plan_,key,message", [
    (DAILY, "2026-13-01", "is not a daily partition key (write it as 2026-06-01)"),
    (DAILY, "2026-05-31", "is outside the partitions (daily from 2026-06-01)"),
    (HOURLY, "2026-06-01", "write it as 2026-06-01-13:00"),
    (HOURLY, "2026-06-01-13:30", "is not the start of a hourly partition"),
    (WEEKLY, "2026-06-08", "is not the start of a weekly partition"),
    (MONTHLY, "2027-01-01", "is outside the partitions"),
    (STATIC, "asia", "is not one of the static partitions (eu, us, 7)"),
])
def test_a_key_that_names_no_partition_says_why(plan_, key, message):
    with pytest.raises(PartitionKeyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        partition_for(plan_, key)


# --- the semantics: one row per kind ------------------------------------------------------------------

def test_the_semantics_table_covers_every_check_of_the_contract(plan):
    assert sorted(c.name for c in plan.object("events").checks) == sorted(name for name, *_ in SEMANTICS)
    events = plan.object("events")
    assert {c.name: events.partition_reach(c)[0] for c in events.checks} == {n: s for n, s, *_ in SEMANTICS}


@pytest.mark.parametrize("name,reach,good,bad,whole", SEMANTICS, ids=[row[0] for row in SEMANTICS])
def test_each_clause_kind_is_judged_per_partition_or_on_the_whole_table(plan, tmp_path, name, reach, good, bad, whole):
    events = plan.object("events")
    check = next(c for c in events.checks if c.name == name)
    assert events.partition_reach(check)[0] == reach
    engine = fill(sa.create_engine(f"duckdb:///{tmp_path / 'one.duckdb'}"))
    runs = {key: {r.name: r for r in run_object(plan, events, engine, now=NOW, selected=[name],
                                                 partition=None if key is None else partition_for(events.partitioning, key))}
            for key in (GOOD_DAY, BAD_DAY, None)}
    engine.dispose()
    assert [runs[k][name].passed for k in (GOOD_DAY, BAD_DAY, None)] == [good, bad, whole], {
        k: (r[name].observed, r[name].error) for k, r in runs.items()}
    assert runs[BAD_DAY][name].partition == (BAD_DAY if reach == "partition" else None)
    assert runs[None][name].partition is None and all(r[name].error is None for r in runs.values())


def test_the_plan_shows_each_checks_partition_reach(plan, tmp_path):
    proc = cli(tmp_path, "plan", "events.odcs.yaml")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "partitioned daily from 2026-06-01 on day" in text
    assert re.search(r"has_rows .*\[table-wide: the query has no `\{partition\}` placeholder", text)
    assert re.search(r"customer_id__unique .*\[per partition: no duplicate within the partition", text)
    checks = {c["name"]: c for c in plan.to_json()["checks"]}
    assert checks["ts__freshness"]["partition_scope"] == "table"
    assert checks["row_count"]["partition_scope"] == "partition"
    assert "partition_scope" not in next(c for c in plan.to_json()["checks"] if c["object"] == "customers")


# --- the engine: only the partition's rows are read ---------------------------------------------------

def test_only_the_bad_partitions_checks_fail_and_its_sql_filters_on_it(plan, engine):
    events = plan.object("events")
    statements: list[tuple[str, object]] = []
    sa.event.listen(engine, "before_cursor_execute", lambda conn, cur, sql, params, *a: statements.append((sql, params)))
    results = {}
    for key in (GOOD_DAY, BAD_DAY):
        statements.clear()
        results[key] = {r.name: r for r in run_object(plan, events, engine, now=NOW,
                                                      partition=partition_for(events.partitioning, key))}
        reading = [(sql, params) for sql, params in statements if "events" in sql]
        if engine.dialect.name == "postgresql" and key == GOOD_DAY:  # nothing failed: nothing reconnected
            assert sum("set_config" in sql for sql, _ in statements) == 1  # one session for both passes
        filtered = [(sql, params) for sql, params in reading if "dq_partition_start" in sql or (
            '"day" >=' in sql and "<" in sql)]
        # the partition's scan, distinct counts, compound key, anti-join and SQL rule all filter on the day;
        # what does not is the whole table's (freshness, has_rows) and, on a failure, nothing else
        assert len(filtered) >= 4, reading
        following = (dt.date.fromisoformat(key) + dt.timedelta(days=1)).isoformat()
        for _, params in filtered:
            assert key in str(params) and following in str(params), params
        unfiltered = [sql for sql, _ in reading if (sql, _) not in filtered]
        assert all("max(" in sql.lower() or "SELECT COUNT(*) FROM" in sql or "information_schema" in sql.lower()
                   or "duckdb_columns" in sql.lower() for sql in unfiltered), unfiltered
    per_partition = {name for name, reach, *_ in SEMANTICS if reach == "partition"}
    assert {n for n, r in results[GOOD_DAY].items() if not r.passed} == set()
    assert {n for n, r in results[BAD_DAY].items() if not r.passed} == per_partition - {"customer_id__unique"}
    for key, by_name in results.items():
        for name, result in by_name.items():
            assert result.partition == (key if name in per_partition else None), name
    bad = results[BAD_DAY]
    assert bad["row_count"].observed == 3 and bad["amount__minimum"].samples == [-3.3]
    assert bad["customer_id__references_customers"].samples == [9]
    assert f"'{BAD_DAY}'" in bad["amount__minimum"].sql  # the clause's own query names its partition
    assert bad["negative_amounts"].observed == 1 and f"'{BAD_DAY}'" in bad["negative_amounts"].sql


def test_without_a_partition_the_whole_table_is_read_as_before(plan, engine):
    events = plan.object("events")
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda conn, cur, sql, *a: statements.append(sql))
    results = {r.name: r for r in run_object(plan, events, engine, now=NOW)}
    assert results["row_count"].observed == 5 and results["negative_amounts"].observed == 1
    assert all(r.partition is None for r in results.values())
    assert not any("dq_partition" in s or '"day" >=' in s for s in statements)
    assert "partition" not in results["row_count"].to_json()


def test_a_partition_with_only_the_schema_table_wide_reads_no_whole_table(plan, engine):
    """The schema check reads the catalog: checking one partition must not also count the whole
    table (a full scan on PostgreSQL) for a check that measures nothing."""
    events = plan.object("events")
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda conn, cur, sql, *a: statements.append(sql))
    chosen = {name for name, reach, *_ in SEMANTICS if reach == "partition"} | {"schema"}
    results = {r.name: r for r in run_object(plan, events, engine, now=NOW, selected=chosen,
                                             partition=partition_for(events.partitioning, GOOD_DAY))}
    assert set(results) == chosen and all(r.passed for r in results.values()), results
    whole = [sql for sql in statements if "events" in sql and "information_schema" not in sql.lower()
             and "duckdb_columns" not in sql.lower() and "dq_partition" not in sql and '"day" >=' not in sql]
    assert whole == []


# --- the CLI -------------------------------------------------------------------------------------------

def cli(cwd, *args, env: dict[str, str] | None = None):
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, **(env or {})})


@pytest.fixture
def shop(tmp_path):
    fill(sa.create_engine(f"duckdb:///{tmp_path / 'wh.duckdb'}")).dispose()
    # no latency: the shell's clock is today's, and the rows are of June 2026
    document = {**CONTRACT, "servers": [{"server": "wh", "type": "duckdb", "database": "wh.duckdb", "schema": "main"}],
                "slaProperties": []}
    (tmp_path / "events.odcs.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return tmp_path


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_shop(request, tmp_path):
    """(folder, environment) of the shop on DuckDB, or on PostgreSQL with the operator's endpoint set."""
    if request.param == "duckdb":
        return request.getfixturevalue("shop"), {}
    url = sa.make_url(request.getfixturevalue("pg_database"))
    fill(sa.create_engine(url)).dispose()
    server = {"server": "wh", "type": "postgres", "host": url.host, "port": url.port, "database": url.database,
              "schema": "public"}
    document = {**CONTRACT, "servers": [server], "slaProperties": []}
    (tmp_path / "events.odcs.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return tmp_path, {"DQ_CONTRACTS_WH_URL": url.render_as_string(hide_password=False)}


def test_check_one_partition_from_the_shell(any_shop):
    shop, env = any_shop
    run = functools.partial(cli, env=env)
    good = run(shop, "check", "events.odcs.yaml", "--partition", GOOD_DAY, "--format", "json")
    bad = run(shop, "check", "events.odcs.yaml", "--partition", BAD_DAY, "--format", "json")
    assert good.returncode == 0 and bad.returncode == 1, (good.stderr, bad.stderr)
    assert "object customers is not partitioned: skipped" in good.stderr
    outcomes = {day: {r["name"]: (r["passed"], r.get("partition")) for r in json.loads(proc.stdout)["results"]}
                for day, proc in ((GOOD_DAY, good), (BAD_DAY, bad))}
    assert all(passed for passed, _ in outcomes[GOOD_DAY].values())
    assert outcomes[BAD_DAY]["amount__minimum"] == (False, BAD_DAY)
    assert outcomes[BAD_DAY]["has_rows"] == (True, None) and outcomes[BAD_DAY]["schema"] == (True, None)
    text = run(shop, "check", "events.odcs.yaml", "--partition", BAD_DAY)
    line = next(l for l in text.stdout.splitlines() if "amount__minimum" in l)
    assert "fail" in line and f"[partition {BAD_DAY}]" in line
    assert "[whole table]" in next(l for l in text.stdout.splitlines() if "has_rows" in l)


@pytest.mark.parametrize("key,message", [
    ("2026-06-01-13:00", "'2026-06-01-13:00' is not a daily partition key (write it as 2026-06-01)"),
    ("2025-01-01", "'2025-01-01' is outside the partitions (daily from 2026-06-01)"),
])
def test_a_key_that_names_no_partition_is_an_error_without_traceback(shop, key, message):
    proc = cli(shop, "check", "events.odcs.yaml", "--partition", key)
    assert proc.returncode == 1 and proc.stdout == ""
    assert message in proc.stderr and "events.odcs.yaml: object events" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_partition_of_contracts_with_no_partitioned_object_is_an_error(shop):
    document = yaml.safe_load((shop / "events.odcs.yaml").read_text())
    document["schema"][0]["customProperties"] = []
    (shop / "flat.odcs.yaml").write_text(yaml.safe_dump({**document, "id": "urn:flat"}, sort_keys=False))
    proc = cli(shop, "check", "flat.odcs.yaml", "--partition", GOOD_DAY)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no object of these contracts is partitioned" in proc.stderr


@pytest.mark.parametrize("declaration,key,rows", [
    ({"type": "hourly", "start": "2026-06-01T00:00:00", "column": "ts"}, "2026-06-02-10:00", 1),
    ({"type": "static", "values": ["a", "b", "z"], "column": "status"}, "a", 2),
    ({"type": "monthly", "start": "2026-06-01"}, "2026-06-01", 5),
])
def test_timestamp_windows_and_static_values_select_their_rows(tmp_path, engine, declaration, key, rows):
    document = yaml.safe_load(yaml.safe_dump(CONTRACT))
    document["schema"][0]["customProperties"] = [{"property": "dagsterPartitions", "value": declaration}]
    loaded = load(tmp_path, document)
    assert loaded.problems == []
    events = loaded.plans[0].object("events")
    results = {r.name: r for r in run_object(loaded.plans[0], events, engine, now=NOW, selected=["row_count"],
                                             partition=partition_for(events.partitioning, key))}
    assert (results["row_count"].observed, results["row_count"].partition) == (rows, key)


@pytest.mark.parametrize("partition,rows", [
    (Partition("a...b", "status", "string", values=("a", "b")), 3),  # a range of static partitions
    (Partition("a...z", "status", "string", values=("a", "z")), 3),
    (multi_partition(f"{BAD_DAY}|a", (Partition(BAD_DAY, "day", "date", start=dt.datetime(2026, 6, 2),
                                                end=dt.datetime(2026, 6, 3)),
                                      Partition("a", "status", "string", value="a"))), 1),
])
def test_ranges_and_dimensions_select_their_rows(plan, engine, partition, rows):
    events = plan.object("events")
    results = {r.name: r for r in run_object(plan, events, engine, now=NOW, selected=["row_count", "negative_amounts"],
                                             partition=partition)}
    assert results["row_count"].observed == rows and results["row_count"].partition == partition.key
    assert results["negative_amounts"].error is None  # the SQL rule's {partition} is the same filter

def test_an_unquoted_yaml_date_is_a_start(write_contract):
    text = yaml.safe_dump(CONTRACT, sort_keys=False).replace("start: '2026-06-01'", "start: 2026-06-01")
    assert "start: 2026-06-01\n" in text
    loaded = load_contracts([write_contract(text)])
    assert loaded.problems == [] and loaded.plans[0].object("events").partitioning.start == "2026-06-01 00:00:00"
