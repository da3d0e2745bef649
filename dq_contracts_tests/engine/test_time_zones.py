"""A time of day against time bounds on DuckDB, its files (parquet) and PostgreSQL: the cases of
cases/typed/times.yaml, a TIMETZ column compared as PostgreSQL compares it, a bound's offset honoured."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.runner import run_object
from dq_contracts.odcs.load import load_contracts

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "typed" / "times.yaml").read_text())
CASE_KEYS = {"case", "types", "values", "property", "expect", "xfail"}
WHERE = [("duckdb", "table", ()), ("duckdb", "parquet", ()), ("postgres", "table", (pytest.mark.postgres,))]
PARAMS = [pytest.param(engine, reading, case, marks=marks, id=f"{engine}-{reading}/{case['case']}")
          for engine, reading, marks in WHERE for case in CASES]


@pytest.mark.parametrize("engine_name, reading, case", PARAMS)
def test_a_time_against_its_bounds(engine_name, reading, case, warehouse_of, tmp_path, request):
    assert set(case) <= CASE_KEYS, "a key the cases do not know"
    if case.get("xfail"):
        request.applymarker(pytest.mark.xfail(reason=case["xfail"], strict=True))
    server, environ, engine = warehouse_of(engine_name)
    with engine.begin() as c:
        c.exec_driver_sql(f"CREATE TABLE t (id INTEGER, tt {case['types'][engine_name]})")
        c.exec_driver_sql("INSERT INTO t VALUES " + ", ".join(
            f"({i}, {v})" for i, v in enumerate(case["values"], 1)))
    files = None
    if reading != "table":
        with engine.begin() as c:
            c.execute(sa.text(f"COPY t TO :path (FORMAT {reading})").bindparams(path=str(tmp_path / f"t.{reading}")))
        engine.dispose()
        server = {"server": "lake", "type": "local", "format": reading, "path": "{object}." + reading}
        connection = connection_for(server, {}, str(tmp_path))
        engine, files = engine_for(connection), connection.files
    path = tmp_path / "contracts" / "c.odcs.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "c", "version": "1.0.0", "status": "active",
        "servers": [server], "schema": [{"name": "t", "properties": [
            {"name": "id", "logicalType": "integer"}, case["property"]]}]}))
    loaded = load_contracts([path], environ=environ)
    assert loaded.problems == [], [p.message for p in loaded.problems]
    plan = loaded.plans[0]
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine, files=files)}
    said = {n: (r.passed, r.observed, r.error) for n, r in results.items()}
    assert {n: [results[n].passed, results[n].observed] for n in case["expect"]} == case["expect"], said
    assert results["schema"].passed, said
