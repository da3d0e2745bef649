"""The freshness sensor publishes (a materialisation's description, its metadata, the sensor's cursor,
its log: all shown in the UI) nothing the contract's checks would withhold: a declared secret is
masked, nothing of a classified column is shown, and only a date or timestamp is a newest value."""

from __future__ import annotations

import io
import json
import logging

import dagster as dg
import pytest
import yaml

from dq_contracts import build_contract_defs
from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts_tests.support import duckdb_with

SECRET = "zz-Sup3rSecretPW"


def sensor_for(tmp_path, column_type: str, classified: bool):
    (tmp_path / "contracts").mkdir()
    prop = {"name": "ts", "logicalType": "string" if "CHAR" in column_type else "timestamp"}
    if classified:
        prop["classification"] = "restricted"
    (tmp_path / "contracts" / "t.odcs.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "t", "version": "1.0.0", "status": "active",
        "servers": [{"server": "local", "type": "duckdb", "database": "../wh.duckdb"}],
        "schema": [{"name": "t", "physicalName": "t", "properties": [prop]}],
        "slaProperties": [{"property": "latency", "value": 30, "unit": "hours", "element": "t.ts"}]}))
    defs = build_contract_defs(tmp_path / "contracts")
    return defs.resolve_sensor_def("dq_contracts_freshness")


def tick(sensor, cursor=None) -> tuple[str, dg.SensorResult]:
    """(all the tick publishes, as one text: each description and metadata, the cursor, the log; its result)"""
    context = dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), cursor=cursor,
                                      resources={"dq_warehouse": WarehouseResource()})
    logged = io.StringIO()
    context.log.addHandler(logging.StreamHandler(logged))
    result = sensor.evaluate_tick(context)
    published = [f"{e.description} {json.dumps({k: str(v.value) for k, v in e.metadata.items()})}"
                 for e in result.asset_events]
    return " ".join([*published, result.cursor or "", logged.getvalue()]), result


def write(tmp_path, column_type: str, value: str) -> None:
    path = tmp_path / "wh.duckdb"
    path.unlink(missing_ok=True)
    duckdb_with(path, f"CREATE TABLE t (ts {column_type})", f"INSERT INTO t VALUES ('{value}')")


NOT_A_DATE = "freshness needs a date or timestamp column, and t.ts could not be read as one; no advance is reported"
# (the column's type, classified, the operator's environment, its newest value, the description of
# what the tick reports, a warning it logs)
CASES = [
    # a text SLA column: not a date (the freshness check says so too): no value, no advance
    ("VARCHAR", False, {"DQ_CONTRACTS_PROD_PASSWORD": SECRET}, SECRET, None, NOT_A_DATE),
    ("VARCHAR", False, {}, "not-a-date-at-all", None, NOT_A_DATE),
    ("VARCHAR", True, {}, "not-a-date-at-all", None, NOT_A_DATE),
    ("INTEGER", False, {}, "20260301", None, NOT_A_DATE),
    # a date: its value, masked where it holds a declared secret
    ("DATE", False, {"DQ_CONTRACTS_PROD_PASSWORD": "2026-03-01"}, "2026-03-01", "t.ts advanced to ***", None),
    ("TIMESTAMP", False, {"DQ_CONTRACTS_PROD_URL": "postgresql://u:2026-03-01 10@h/d"}, "2026-03-01 10:00:00",
     "t.ts advanced to ***:00:00", None),
    # classified: its first value is only seen (the next test: an advance is told without it)
    ("TIMESTAMP", True, {}, "2026-03-01 10:00:00", None, None),
]


@pytest.mark.parametrize("column_type, classified, environ, value, said, warned", CASES)
def test_the_freshness_sensor_publishes_no_value_a_check_would_withhold(tmp_path, monkeypatch, column_type,
                                                                          classified, environ, value, said, warned):
    for name, setting in environ.items():
        monkeypatch.setenv(name, setting)
    write(tmp_path, column_type, value)
    published, result = tick(sensor_for(tmp_path, column_type, classified))
    assert [e.description for e in result.asset_events] == ([said] if said else [])
    assert (warned or "") in published
    assert value not in published and SECRET not in published, published


def test_a_date_is_published_as_before(tmp_path):
    """A plain timestamp column: its newest value, in the description, the metadata and the cursor."""
    write(tmp_path, "TIMESTAMP", "2026-03-01 10:00:00")
    sensor = sensor_for(tmp_path, "TIMESTAMP", False)
    _, result = tick(sensor)
    [event] = result.asset_events
    assert event.description == "t.ts advanced to 2026-03-01 10:00:00"
    assert event.metadata["dq_contracts/newest"].value == "2026-03-01 10:00:00"
    assert list(tick(sensor, result.cursor)[1].asset_events) == []


def test_a_classified_columns_advance_is_told_without_its_value(tmp_path):
    write(tmp_path, "TIMESTAMP", "2026-03-01 10:00:00")
    sensor = sensor_for(tmp_path, "TIMESTAMP", True)
    first, result = tick(sensor)
    assert list(result.asset_events) == []
    again, result = tick(sensor, result.cursor)
    assert list(result.asset_events) == []  # nothing new
    write(tmp_path, "TIMESTAMP", "2026-03-02 11:00:00")
    advanced, result = tick(sensor, result.cursor)
    assert [e.description for e in result.asset_events] == ["t.ts advanced (its value is classified: not shown)"]
    assert "dq_contracts/newest" not in result.asset_events[0].metadata
    for published in (first, again, advanced):
        assert "2026-03" not in published and "10:00" not in published and "11:00" not in published, published


@pytest.mark.parametrize("column_type, value", sorted({(c[0], c[3]) for c in CASES} | {
    ("VARCHAR", "2026-03-01 10:00:00"), ("TIMESTAMPTZ", "2026-03-01 10:00:00+00")}))
def test_the_sensor_takes_a_column_for_a_date_exactly_when_the_freshness_check_does(tmp_path, column_type, value):
    from dq_contracts.engine.contracts import Warehouses, run_contract
    from dq_contracts.odcs.load import load_contracts

    write(tmp_path, column_type, value)
    published, result = tick(sensor_for(tmp_path, column_type, False))
    with Warehouses({}) as warehouses:
        [fresh] = [r for r in run_contract(load_contracts([tmp_path / "contracts"]).plans[0], warehouses)
                   if r.kind == "freshness"]
    # the check's words: its hint or refusal, or the run's schema check's when it found the column of another type
    not_a_date = any(said in (fresh.error or "") for said in
                     ("freshness needs a date or timestamp column", "not a date or timestamp",
                      "not a timestamp (see the schema check)"))
    assert (NOT_A_DATE in published) is not_a_date and bool(result.asset_events) is not not_a_date, (
        fresh.error, published)


def test_a_view_of_a_classified_table_advances_without_its_value(tmp_path):
    """Another contract's classification of a table reaches a view of it: the sensor reads the view's
    newest value as classified (engine/other_names.py asks the catalog first)."""
    duckdb_with(tmp_path / "wh.duckdb", "CREATE TABLE people (ts TIMESTAMP)",
                "INSERT INTO people VALUES ('2026-03-01 10:00:00')", "CREATE VIEW folk AS SELECT ts FROM people")
    (tmp_path / "contracts").mkdir()
    for cid, table, prop in (("victim", "people", {"name": "ts", "logicalType": "timestamp",
                                                    "classification": "restricted"}),
                             ("viewer", "folk", {"name": "ts", "logicalType": "timestamp"})):
        (tmp_path / "contracts" / f"{cid}.odcs.yaml").write_text(yaml.safe_dump({
            "apiVersion": "v3.1.0", "kind": "DataContract", "id": cid, "version": "1.0.0", "status": "active",
            "servers": [{"server": "local", "type": "duckdb", "database": "../wh.duckdb"}],
            "schema": [{"name": table, "physicalName": table, "properties": [prop]}],
            "slaProperties": [{"property": "latency", "value": 30, "unit": "hours", "element": f"{table}.ts"}]}))
    sensor = build_contract_defs(tmp_path / "contracts").resolve_sensor_def("dq_contracts_freshness")
    published, result = tick(sensor)
    assert "2026-03" not in published and "10:00" not in published, published
