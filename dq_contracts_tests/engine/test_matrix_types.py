"""The clause matrix's extension (cases/matrix/types.yaml): a native UUID, a TIME, a struct and an
array, on each engine that holds the type (DuckDB, PostgreSQL, MariaDB, Snowflake emulated by
fakesnow, Spark): every check passes on the good rows, and on the bad rows each observes its count."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.runner import run_object
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import lake_engine, write_lake

MATRIX = yaml.safe_load((Path(__file__).parent / "cases" / "matrix" / "types.yaml").read_text())
MARKS = {"postgres": (pytest.mark.postgres,), "mariadb": (pytest.mark.mariadb,), "spark": (pytest.mark.spark,)}
ENGINES = [pytest.param(name, marks=MARKS.get(name, ())) for name in MATRIX["engines"]]


def literals(engine: str, column: str, rows: str) -> list[str]:
    """A column's values as this engine writes them: its own literals, or the shared ones."""
    own = MATRIX["engines"][engine].get("literals", {}).get(column)
    return (own or MATRIX["columns"][column])[rows]


# the lake's columns as Arrow types (cases/matrix/types.yaml `lake` holds their values)
LAKE_TYPES = {"id": pa.int32(), "uid": pa.string(), "opens": pa.time64("us"),
              "address": pa.struct([("city", pa.string()), ("zip", pa.int32())]), "tags": pa.list_(pa.string())}


def plan_for(where: str, columns, server: dict, environ: dict, tmp_path):
    """The plan of table `x` of `columns` on `server`, as the operator's environment loads it."""
    properties = [{"name": "id", "logicalType": "integer"}, *(MATRIX["columns"][c]["property"] for c in columns)]
    physical = MATRIX["engines"].get(where, {}).get("physical", "x")
    path = tmp_path / "contracts" / "x.odcs.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "x", "version": "1.0.0", "status": "active",
        "servers": [server], "schema": [{"name": "x", "physicalName": physical, "properties": properties}]}))
    loaded = load_contracts([path], environ=environ)
    assert loaded.problems == [], [p.render() for p in loaded.problems]
    return loaded.plans[0]


def written(engine: str, rows: str, warehouse_of) -> tuple[dict, dict, sa.Engine]:
    """(server, environment, engine the checks run on) of a fresh warehouse of `engine` holding `x` of
    its extra columns and `rows` (good or bad), written as the test's own DDL and literals; on MariaDB
    the operator's engine, whose user may only read."""
    row = MATRIX["engines"][engine]
    server, environ, writer = warehouse_of(engine)
    values = [literals(engine, column, rows) for column in row["types"]]
    with writer.begin() as c:
        for statement in row.get("setup", []):
            c.exec_driver_sql(statement)
        c.exec_driver_sql("CREATE TABLE x (id INT, " + ", ".join(f"{c} {t}" for c, t in row["types"].items()) + ")")
        # one statement (on Spark each is a job)
        c.exec_driver_sql("INSERT INTO x VALUES " + ", ".join(
            f"({i}, {', '.join(cells)})" for i, cells in enumerate(zip(*values, strict=True), 1)))
    if engine == "mariadb":
        writer.dispose()
        return server, environ, engine_for(connection_for(server, environ))
    return server, environ, writer


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("rows", ["good", "bad"])
def test_the_matrix_extension(engine, rows, warehouse_of, tmp_path):
    columns = MATRIX["engines"][engine]["types"]
    server, environ, checked = written(engine, rows, warehouse_of)
    plan = plan_for(engine, columns, server, environ, tmp_path)
    assert_verdicts(plan, {r.name: r for r in run_object(plan, plan.objects[0], checked)}, rows, columns)


def assert_verdicts(plan, results: dict, rows: str, columns) -> None:
    """Every check passes observing 0 on the good rows; on the bad, each observes its count of `bad`."""
    said = {n: (r.passed, r.observed, r.error) for n, r in results.items()}
    # every clause of the engine's columns is checked on its server: none is listed as not enforced
    expected = {n: (0 if rows == "good" else o) for n, o in MATRIX["bad"].items()
                if n.split("__")[0] in columns}
    assert set(results) == {"schema", *expected} and plan.to_json()["not_enforced"] == [], said
    assert all(r.error is None for r in results.values()), said
    assert results["schema"].passed, said
    assert {n: (results[n].passed, results[n].observed) for n in expected} == \
        {n: (o == 0, o) for n, o in expected.items()}, said


def arrow(rows: str, columns: list[str]) -> pa.Table:
    """The lake's rows (good or bad) of `columns`, as Arrow."""
    values = {"id": [1, 2, 3], **{c: MATRIX["lake"][rows][c] for c in columns}}
    if "opens" in values:
        values["opens"] = [v and dt.time.fromisoformat(v) for v in values["opens"]]
    return pa.table({c: pa.array(v, LAKE_TYPES[c]) for c, v in values.items()})


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
@pytest.mark.parametrize("rows", ["good", "bad"])
def test_the_matrix_extension_on_a_lake_table(fmt, rows, tmp_path):
    columns = MATRIX["lake"]["columns"][fmt]
    server, environ = write_lake(fmt, tmp_path, "x", arrow(rows, columns))
    plan = plan_for(fmt, columns, server, environ, tmp_path)
    engine, lake = lake_engine(server, environ, tmp_path)
    assert_verdicts(plan, {r.name: r for r in run_object(plan, plan.objects[0], engine, files=lake)}, rows, columns)
