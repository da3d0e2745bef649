"""Nested properties where the data lives (engine/nested.py): the cases of cases/nested/<engine>.yaml,
each a property of one table holding structs and arrays (or composites and JSONB), on that engine; on
DuckDB also as the same rows in Parquet and JSON files. A case holds `case`, the ODCS `property` of
`t` (or `object` keys merged into `t`), `check` (the name of the check it makes), `api` (the
apiVersion, v3.1.0 unless given) and `expect`: `passed`, and where useful `observed`, `samples`,
`error` (a part of it), `said` (a part of the result's sentence), `note` (a part of the schema check's `nested_not_compared`), `mismatches` (the schema check's type mismatches, in order, without the type found); `xfail: <why>` marks a
wrong verdict kept as a case until it is fixed."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.runner import run_object
from dq_contracts.odcs.load import load_contracts

CASES_DIR = Path(__file__).parent / "cases" / "nested"
TABLES = {path.stem: yaml.safe_load(path.read_text()) for path in sorted(CASES_DIR.glob("*.yaml"))}
CASE_KEYS = {"case", "api", "property", "object", "check", "expect", "xfail"}
EXPECT_KEYS = {"passed", "observed", "samples", "error", "mismatches", "note", "said"}

# where a table's cases run: (cases file, engine, how the rows are read)
WHERE = [("duckdb", "duckdb", "table", ()), ("duckdb", "duckdb", "parquet", ()), ("duckdb", "duckdb", "json", ()),
         ("duckdb_json", "duckdb", "table", ()), ("duckdb_json_values", "duckdb", "table", ()),
         ("postgres", "postgres", "table", (pytest.mark.postgres,)),
         ("postgres_jsonb", "postgres", "table", (pytest.mark.postgres,)),
         ("postgres_jsonb_values", "postgres", "table", (pytest.mark.postgres,)),
         ("spark", "spark", "table", (pytest.mark.spark,)), ("mariadb", "mariadb", "table", (pytest.mark.mariadb,)),
         ("snowflake", "snowflake", "table", ())]
PARAMS = [pytest.param(file, engine, reading, case, marks=marks, id=f"{file}-{reading}/{case['case']}")
          for file, engine, reading, marks in WHERE for case in TABLES[file]["cases"]]


def contract(case: dict) -> dict:
    obj = {"name": "t", "physicalName": "t", **(case.get("object") or {})}
    if "property" in case:
        obj["properties"] = [case["property"], *obj.get("properties", [])]
    return {"apiVersion": case.get("api", "v3.1.0"), "kind": "DataContract", "id": "c", "version": "1.0.0",
            "status": "active", "schema": [obj]}


def fill(engine: sa.Engine, table: dict) -> None:
    """The engine's table from its cases file: the test's own DDL and literal rows, as written there."""
    with engine.begin() as c:
        for statement in [*table.get("setup", []), table["table"]]:
            c.exec_driver_sql(statement)
        # one statement (on Spark each is a job)
        c.exec_driver_sql("INSERT INTO t VALUES " + ", ".join(f"({row})" for row in table["rows"]))


def checked_where(file: str, engine_name: str, reading: str, warehouse_of, tmp_path):
    """(engine the checks run on, files or None)."""
    server, environ, engine = warehouse_of(engine_name)
    fill(engine, TABLES[file])
    if reading == "table":  # on MariaDB the operator's engine, whose user may only read
        return (engine_for(connection_for(server, environ)) if engine_name == "mariadb" else engine), None
    with engine.begin() as c:
        c.execute(sa.text(f"COPY t TO :path (FORMAT {reading})").bindparams(path=str(tmp_path / f"t.{reading}")))
    engine.dispose()
    connection = connection_for({"server": "lake", "type": "local", "format": reading,
                                 "path": "{model}." + reading}, {}, str(tmp_path))
    return engine_for(connection), connection.files


@pytest.mark.parametrize("file, engine_name, reading, case", PARAMS)
def test_nested_case(file, engine_name, reading, case, warehouse_of, tmp_path, request):
    assert set(case) <= CASE_KEYS and set(case["expect"]) <= EXPECT_KEYS, "a key the cases do not know"
    if case.get("xfail"):
        request.applymarker(pytest.mark.xfail(reason=case["xfail"], strict=True))
    path = tmp_path / "c.odcs.yaml"
    path.write_text(yaml.safe_dump(contract(case)))
    loaded = load_contracts([path])
    assert loaded.problems == [], [p.message for p in loaded.problems]
    plan = loaded.plans[0]
    assert case["check"] in [c.name for c in plan.objects[0].checks], plan.not_enforced
    engine, files = checked_where(file, engine_name, reading, warehouse_of, tmp_path)
    [result] = run_object(plan, plan.objects[0], engine, selected=[case["check"]], files=files)
    said = dict(passed=result.passed, observed=result.observed, samples=result.samples, error=result.error,
                message=result.message, details=result.details)
    expect = case["expect"]
    assert result.passed is expect["passed"], said
    if "observed" in expect:
        assert result.observed == expect["observed"], said
    if "samples" in expect:
        assert sorted(map(str, result.samples)) == sorted(map(str, expect["samples"])), said
    if "mismatches" in expect:
        # as the engine spells the type found (a JSON file's integers are BIGINT): the words before it
        assert [m.split(" (")[0] for m in result.details["type_mismatches"]] == expect["mismatches"], said
    if "said" in expect:
        assert expect["said"] in result.message, said
    if "note" in expect:
        assert any(expect["note"] in n for n in result.details.get("nested_not_compared") or []), said
    if "error" in expect:
        assert expect["error"] in (result.error or ""), said
    else:
        assert result.error is None, said


def test_the_pure_core_and_the_dialect_rows_agree_on_what_addresses_nested_values():
    """odcs/clauses/nested.NESTED_DIALECTS decides at load which servers' nested clauses are checked;
    the engine rows that address struct fields and unnest arrays must be exactly those."""
    from dq_contracts.engine.dialects import DIALECTS
    from dq_contracts.odcs.clauses.nested import NESTED_DIALECTS

    addressing = {name for name, row in DIALECTS.items() if row.field_access is not None and row.unnest is not None}
    assert addressing == NESTED_DIALECTS


# (a nested leaf's declared logicalType and physicalType, and a column's) → compared as text by both: one rule,
# so that a struct's field and a column of the same declared type are judged alike
TEXT_LEAVES = [
    (None, "CLOB", True), (None, "varchar(10)", True), (None, "STRING", True), (None, "nvarchar", True),
    ("string", "int", True), ("integer", "varchar", False), (None, "BIGINT", False), (None, None, False),
]


@pytest.mark.parametrize("logical, physical, text", TEXT_LEAVES)
def test_a_leaf_is_text_as_a_column_of_its_type_is(logical, physical, text):
    from types import SimpleNamespace

    from dq_contracts.engine.nested import leaf_is_text
    from dq_contracts.odcs.type_names import is_text

    check = SimpleNamespace(params={"leaf_type": [logical, physical]})
    column = SimpleNamespace(logical_type=logical, physical_type=physical)
    assert leaf_is_text(check) is text and is_text(column) is text
