"""Delta Lake and Iceberg tables, written by their own libraries and checked through DuckDB: the
clause matrix, versions and a schema change, a partition read from its own files only, the table's
own schema, and the trust boundary (engine/lake.py)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.connections import EndpointError, connection_for
from dq_contracts.engine.runner import run_object
from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.partitions import Partition
from dq_contracts_tests.support import MATRIX_PROPERTIES as CONTRACT_PROPERTIES, MATRIX_QUALITY as QUALITY, lake_engine, write_lake

LAKES = ["delta", "iceberg"]
NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.timezone.utc)

# the clause matrix of test_engine.py, as Arrow (the same columns and rows)
SCHEMA = pa.schema([("id", pa.int32()), ("code", pa.string()), ("email", pa.string()),
                    ("amount", pa.decimal128(12, 2)), ("day", pa.date32()), ("kind", pa.string()),
                    ("parent", pa.int32()), ("ts", pa.timestamp("us")), ("ratio", pa.float64())])
GOOD = [
    (1, "AB", "a@x.io", 10.5, "2021-01-01", "a", None, "2026-06-01 06:00:00", 0.5),
    (2, "CD", "b@x.io", 0, "2022-01-01", "b", 1, "2026-05-31 18:00:00", 0.0),
    (3, "EFG", None, 99.5, "2023-01-01", "a", 2, None, None),
]
BAD = [
    (1, "AB", "not-an-email", -1, "2019-01-01", "z", 7, "2026-05-01 00:00:00", float("nan")),
    (1, "a", "b@x.io", 100, "2021-01-01", "", 7, "2026-05-02 00:00:00", 1.0),
    (None, "ABCD", None, 0.3, "2021-01-01", None, None, None, 1.0),
    (4, "a", None, 1, "2021-01-01", "", None, None, None),
    (5, "XY", None, 1, "2021-01-01", "", None, None, 2.0),
    (6, None, None, 1, "2021-01-01", "", None, None, 3.0),
]


def arrow(rows) -> pa.Table:
    import decimal

    def value(field, v):
        if v is None:
            return None
        if pa.types.is_decimal(field.type):
            return decimal.Decimal(str(v))
        if pa.types.is_date(field.type):
            return dt.date.fromisoformat(v)
        if pa.types.is_timestamp(field.type):
            return dt.datetime.fromisoformat(v)
        return v

    columns = list(zip(*rows))
    return pa.table([pa.array([value(f, v) for v in col], f.type) for f, col in zip(SCHEMA, columns)], schema=SCHEMA)


def plan_for(tmp_path, server, env, physical="t", properties=CONTRACT_PROPERTIES, quality=QUALITY, extra=None):
    doc = {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "lake", "version": "1.0.0", "status": "active",
           "servers": [server],
           "schema": [{"name": "t", "physicalName": physical, "properties": properties, "quality": quality,
                       **(extra or {})}],
           }
    if any(p["name"] == "ts" for p in properties):
        doc["slaProperties"] = [{"property": "latency", "value": 1, "unit": "d", "element": "t.ts"}]
    path = tmp_path / "contracts" / "lake.odcs.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    loaded = load_contracts([path], environ=env)
    assert loaded.problems == [], [p.message for p in loaded.problems]
    return loaded.plans[0]


@pytest.mark.parametrize("fmt", LAKES)
@pytest.mark.parametrize("rows, failing", [(GOOD, set()), (BAD, "all")], ids=["good", "bad"])
def test_the_clause_matrix_on_a_lake_table(fmt, rows, failing, tmp_path):
    server, env = write_lake(fmt, tmp_path, "t", arrow(rows))
    plan = plan_for(tmp_path, server, env)
    engine, lake = lake_engine(server, env, tmp_path)
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine, now=NOW, files=lake)}
    assert len(results) == len(plan.objects[0].checks) >= 20
    if failing == "all":
        assert [n for n, r in results.items() if r.passed and n != "schema"] == []
        assert all(r.error is None for r in results.values()), {n: r.error for n, r in results.items() if r.error}
        assert results["id__primary_key"].observed == 2 and results["parent__references_t"].samples == [7]
        assert results["kind__missing_values"].observed == pytest.approx(100 * 5 / 6)
        assert results["positive"].observed == 1  # a SQL rule reads the lake table by its name
        assert results["email__format"].samples == []  # never a classified value
    else:
        assert {n: (r.observed, r.error) for n, r in results.items() if not r.passed} == {}


# SQL rules on a lake table, each run alone (no other check's scan before it): (name, query, mustBe,
# observed on GOOD, observed on BAD)
LAKE_RULES = [
    ("negative", "SELECT COUNT(*) FROM {object} WHERE amount < 0", 0, 0, 1),
    ("repeated", "SELECT COUNT(id) - COUNT(DISTINCT id) FROM {object} AS o", 0, 0, 1),
    ("unknown_kinds", "SELECT COUNT(*) FROM {object} WHERE NOT list_contains(['a', 'b'], kind)", 0, 0, 5),
]


@pytest.mark.parametrize("fmt", LAKES)
@pytest.mark.parametrize("rows, column", [(GOOD, 3), (BAD, 4)], ids=["good", "bad"])
def test_a_sql_rule_alone_reads_the_lake_table(fmt, rows, column, tmp_path):
    server, env = write_lake(fmt, tmp_path, "t", arrow(rows))
    quality = [{"type": "sql", "name": name, "query": query, "mustBe": must} for name, query, must, *_ in LAKE_RULES]
    plan = plan_for(tmp_path, server, env, quality=quality)
    engine, lake = lake_engine(server, env, tmp_path)
    for rule in LAKE_RULES:
        [result] = run_object(plan, plan.objects[0], engine, now=NOW, files=lake, selected=[rule[0]])
        assert result.error is None, result.error
        assert (result.observed, result.passed) == (rule[column], rule[column] == rule[2]), rule


@pytest.mark.parametrize("fmt", LAKES)
def test_versions_and_a_schema_change_are_read_from_the_table_itself(fmt, tmp_path):
    """Three versions (a write, an append, an append that adds a column): the checks read the latest,
    the older files give the new column NULL, and the schema check reads the log or metadata."""
    first = arrow(GOOD).select(["id", "code"])
    server, env = write_lake(fmt, tmp_path, "t", first)
    write_lake(fmt, tmp_path, "t", arrow(GOOD).select(["id", "code"]), mode="append")
    added = pa.table({"id": pa.array([7], pa.int32()), "code": ["XY"], "size": pa.array([2.5], pa.float64())})
    write_lake(fmt, tmp_path, "t", added, mode="merge")
    properties = [{"name": "id", "logicalType": "integer", "physicalType": "INTEGER"},
                  {"name": "code", "logicalType": "string"},
                  {"name": "size", "logicalType": "number", "physicalType": "DOUBLE",
                   "quality": [{"metric": "nullValues", "mustBe": 6}]}]
    plan = plan_for(tmp_path, server, env, properties=properties, quality=[{"metric": "rowCount", "mustBe": 7}])
    engine, lake = lake_engine(server, env, tmp_path)
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine, now=NOW, files=lake)}
    assert results["row_count"].passed and results["size__null_values"].observed == 6
    schema = results["schema"]
    assert schema.passed, schema.details
    assert ["size", "DOUBLE"] in schema.details["observed_columns"]
    wrong = plan_for(tmp_path, server, env, properties=[{"name": "size", "logicalType": "number", "physicalType": "BIGINT"},
                                                        {"name": "gone", "logicalType": "string"}], quality=[])
    [result] = [r for r in run_object(wrong, wrong.objects[0], engine, now=NOW, files=lake) if r.kind == "schema"]
    assert not result.passed and result.details["missing"] == ["gone"]
    assert result.details["type_mismatches"] == ["size: declared BIGINT, found DOUBLE"]


@pytest.mark.parametrize("fmt", LAKES)
def test_one_partition_is_checked_reading_only_its_files(fmt, tmp_path):
    """A table partitioned by day: one day's checks read its files alone. The other days' data files
    are then overwritten with garbage: the day still checks cleanly (those files were never opened),
    while the whole table fails to read."""
    days = [dt.date(2026, 6, 1), dt.date(2026, 6, 2), dt.date(2026, 6, 3)]
    data = pa.table({"id": pa.array(range(9), pa.int32()), "day": pa.array([d for d in days for _ in range(3)]),
                     "code": ["AB"] * 9})
    server, env = write_lake(fmt, tmp_path, "t", data, partition_by=["day"])
    properties = [{"name": "id", "logicalType": "integer", "unique": True},
                  {"name": "day", "logicalType": "date", "partitioned": True, "partitionKeyPosition": 1},
                  {"name": "code", "logicalType": "string", "logicalTypeOptions": {"pattern": "^[A-Z]+$"}}]
    plan = plan_for(tmp_path, server, env, properties=properties, quality=[{"metric": "rowCount", "mustBe": 3}],
                    extra={"customProperties": [{"property": "dagsterPartitions",
                                                 "value": {"type": "daily", "start": "2026-06-01"}}]})
    day = Partition("2026-06-02", "day", "date", start=dt.datetime(2026, 6, 2), end=dt.datetime(2026, 6, 3))
    others = [p for p in tmp_path.rglob("*.parquet") if "2026-06-02" not in str(p)]
    assert others
    for path in others:
        path.write_bytes(b"not a parquet file")
    engine, lake = lake_engine(server, env, tmp_path)
    checked = [c.name for c in plan.objects[0].checks if c.kind != "schema"]
    results = run_object(plan, plan.objects[0], engine, now=NOW, files=lake, partition=day, selected=checked)
    assert [(r.name, r.error) for r in results if not r.passed] == []
    assert {r.partition for r in results} == {"2026-06-02"}
    if fmt == "iceberg":  # the scan's own plan: the day's file alone
        opened = lake.opened("t@2026-06-02")
        assert len(opened) == 1 and "2026-06-02" in opened[0]
    whole = run_object(plan, plan.objects[0], lake_engine(server, env, tmp_path)[0], now=NOW, files=lake,
                       selected=["row_count"])
    assert not whole[0].passed and whole[0].error  # the garbage is read when the whole table is


@pytest.mark.parametrize("fmt", LAKES)
def test_a_lake_table_stays_inside_the_operators_roots(fmt, tmp_path):
    """The table's folder (Delta) and every file its log or metadata lists must be inside the roots."""
    server, env = write_lake(fmt, tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, "t", arrow(GOOD))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**env, "DQ_CONTRACTS_LAKE_ROOTS": str(elsewhere)}
    if fmt == "delta":
        with pytest.raises(EndpointError, match="outside the folders the operator lets server 'lake' open"):
            connection_for(server, env, str(tmp_path))
        return
    plan = plan_for(tmp_path, server, env, properties=[{"name": "id", "logicalType": "integer"}], quality=[])
    engine, lake = lake_engine(server, env, tmp_path)
    results = run_object(plan, plan.objects[0], engine, now=NOW, files=lake)
    assert results and all(not r.passed and "outside the operator's roots" in r.error for r in results)


def test_an_iceberg_server_needs_the_operators_catalog(tmp_path):
    server = {"server": "lake", "type": "iceberg", "catalog": "lake", "catalogUrl": "https://evil.example/",
              "namespace": "lake"}
    with pytest.raises(EndpointError, match="no Iceberg catalog declared by the operator"):
        connection_for(server, {}, str(tmp_path))


def test_a_delta_log_that_lists_a_file_outside_the_roots_is_not_read(tmp_path):
    """A producer who writes the log may list any path; a file outside the roots fails every check."""
    import json

    outside = tmp_path / "outside"
    outside.mkdir()
    server, env = write_lake("delta", tmp_path / "lake" if (tmp_path / "lake").mkdir() is None else tmp_path, "t",
                             arrow(GOOD).select(["id"]))
    (outside / "secret.parquet").write_bytes((next((tmp_path / "lake" / "t").glob("*.parquet"))).read_bytes())
    log = next((tmp_path / "lake" / "t" / "_delta_log").glob("*.json"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines:
        if "add" in line:
            line["add"]["path"] = f"file://{outside / 'secret.parquet'}"
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    env = {"DQ_CONTRACTS_LAKE_ROOTS": str(tmp_path / "lake")}
    plan = plan_for(tmp_path / "lake", server, env, properties=[{"name": "id", "logicalType": "integer"}], quality=[])
    engine, lake = lake_engine(server, env, tmp_path / "lake")
    results = run_object(plan, plan.objects[0], engine, now=NOW, files=lake)
    assert results and all(not r.passed and "outside the operator's roots" in r.error for r in results), \
        [(r.name, r.error) for r in results]


def test_an_iceberg_catalog_is_opened_read_only(tmp_path):
    server, env = write_lake("iceberg", tmp_path, "t", arrow(GOOD))
    before = (tmp_path / "catalog.db").stat().st_mtime_ns
    plan = plan_for(tmp_path, server, env, properties=[{"name": "id", "logicalType": "integer"}], quality=[])
    engine, lake = lake_engine(server, env, tmp_path)
    assert all(r.passed for r in run_object(plan, plan.objects[0], engine, now=NOW, files=lake))
    assert (tmp_path / "catalog.db").stat().st_mtime_ns == before
    assert sa.make_url(dict(lake.catalog)["uri"]).drivername == "sqlite"
