"""A classified table is classified under every name it has (principle 3): the folder of a Delta
table, read as a Delta table spelt otherwise or as the parquet files below it; and, in the warehouse,
a PostgreSQL partition or inheritance child, a view (PostgreSQL, DuckDB) over the classified table.
One row per attack; each is run with the command a user runs, and the planted values are searched for
in all it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dq_contracts_tests.support import write_lake

SSNS = ["123-45-6789", "987-65-4321", "555-11-2222"]


def contract(name: str, server: dict, obj: dict) -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": name, "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [obj]}


STOLEN = [{"property": "dagsterAssetKey", "value": "stolen"}]  # an asset of its own, whatever it reads


def ssn(classified: bool) -> dict:
    column = {"name": "ssn", "logicalType": "string", "logicalTypeOptions": {"pattern": "^X"}}
    return {**column, "classification": "pii"} if classified else column


def lake(path: str, fmt: str = "delta", server: str = "lake") -> dict:
    return {"server": server, "type": "local", "format": fmt, "path": path}


def write(folder: Path, name: str, doc: dict) -> None:
    (folder / "contracts").mkdir(parents=True, exist_ok=True)
    (folder / "contracts" / f"{name}.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def check(folder: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts", "--format", "json"],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def attacker_results(proc: subprocess.CompletedProcess, victim: list[str]) -> list[dict]:
    return [r for r in json.loads(proc.stdout)["results"] if r["asset_key"] != victim and r["name"] == "ssn__pattern"]


def classified_in_plan(folder: Path, contract_id: str) -> bool:
    """Whether the loaded plan of `contract_id` classifies its object's ssn (another file saying so)."""
    from dq_contracts.odcs.load import load_contracts

    loaded = load_contracts([folder / "contracts"])
    plan = next(p for p in loaded.plans if p.id == contract_id)
    return all(o.column("ssn").classified for o in plan.objects)


# -- a table that is a folder: Delta ------------------------------------------------------------

# (attack, the victim's server, the attacker's server, its object's physicalName): each reads the
# files of the Delta table data/people (or the Delta table over data/people's parquet files)
LAKE_ATTACKS = [
    ("delta: the folder named by the server's path", lake("../data/{model}"), lake("../data/people", server="l2"), "x"),
    ("delta: './' and '..' in the path", lake("../data/{model}"), lake("./../data/sub/../people", server="l2"), "x"),
    ("delta: a symlinked folder", lake("../data/{model}"), lake("../mirror/people", server="l2"), "x"),
    ("delta: another case", lake("../data/{model}"), lake("../data/People", server="l2"), "x"),
    ("parquet: a glob of the table's files", lake("../data/{model}"), lake("../data/people/*.parquet", "parquet", "pq"),
     "x"),
    ("parquet: '**' over the lake", lake("../data/{model}"), lake("../data/**/*.parquet", "parquet", "pq"), "x"),
    ("parquet: one data file by a set", lake("../data/{model}"), lake("../data/[p]eople/*.parquet", "parquet", "pq"),
     "x"),
    # the other way: the parquet files classified, read as the Delta table they belong to
    ("delta over classified parquet files", lake("../data/people/*.parquet", "parquet", "pq"),
     lake("../data/people", server="l2"), "x"),
]


@pytest.mark.parametrize("attack, victim, server, physical", LAKE_ATTACKS, ids=[a[0] for a in LAKE_ATTACKS])
def test_a_delta_table_is_classified_under_every_path_of_its_files(tmp_path, attack, victim, server, physical):
    import pyarrow as pa

    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "mirror").symlink_to(tmp_path / "data", target_is_directory=True)
    write_lake("delta", tmp_path / "data", "people", pa.table({"id": [1, 2, 3], "ssn": SSNS}))
    write(tmp_path, "victim", contract("victim", victim, {"name": "people", "physicalName": "people",
                                                          "properties": [ssn(True)]}))
    write(tmp_path, "attacker", contract("attacker", server, {"name": "stolen", "physicalName": physical,
                                                              "customProperties": STOLEN, "properties": [ssn(False)]}))
    assert classified_in_plan(tmp_path, "attacker"), attack
    proc = check(tmp_path)
    assert len(attacker_results(proc, ["people"])) == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    for value in SSNS:
        assert value not in proc.stdout + proc.stderr, attack


ICEBERG_ATTACKS = [  # (attack, the victim's glob of the Iceberg table's data files, below the lake's folder)
    ("an Iceberg table whose data files a classified parquet glob reads", "warehouse/lake/people/data/*.parquet"),
    ("an Iceberg table below a classified '**' glob", "**/*.parquet"),
    ("an Iceberg table whose folder a classified Delta path names", "warehouse/lake/people"),
]


@pytest.mark.parametrize("attack, glob", ICEBERG_ATTACKS, ids=[a[0] for a in ICEBERG_ATTACKS])
def test_an_iceberg_table_is_classified_by_the_files_below_its_location(tmp_path, attack, glob):
    import pyarrow as pa

    (tmp_path / "lake").mkdir()
    server, env = write_lake("iceberg", tmp_path / "lake", "people", pa.table({"id": [1, 2, 3], "ssn": SSNS}))
    victim = lake(f"../lake/{glob}", "parquet" if glob.endswith(".parquet") else "delta", "pq")
    # another name than the Iceberg table's: only the files tell that the two are one
    write(tmp_path, "victim", contract("victim", victim, {"name": "files", "physicalName": "files",
                                                          "properties": [ssn(True)]}))
    write(tmp_path, "attacker", contract("attacker", server, {"name": "stolen", "physicalName": "people",
                                                              "customProperties": STOLEN, "properties": [ssn(False)]}))
    proc = check(tmp_path, env)
    results = [r for r in json.loads(proc.stdout)["results"] if r["asset_key"] == ["stolen"] and r["kind"] == "pattern"]
    assert len(results) == 1 and not results[0]["passed"], proc.stdout[-3000:] + proc.stderr[-2000:]
    assert results[0]["details"].get("samples_withheld"), results[0]
    for value in SSNS:
        assert value not in proc.stdout + proc.stderr, attack


def test_a_delta_table_elsewhere_shares_nothing(tmp_path):
    """The other side: a Delta table in another folder is not classified by this one."""
    import pyarrow as pa

    write_lake("delta", tmp_path / "data", "people", pa.table({"id": [1], "ssn": SSNS[:1]}))
    write_lake("delta", tmp_path / "data", "others", pa.table({"id": [1], "ssn": ["none"]}))
    write(tmp_path, "victim", contract("victim", lake("../data/{model}"), {"name": "people", "properties": [ssn(True)]}))
    write(tmp_path, "other", contract("other", lake("../data/{model}", server="l2"),
                                      {"name": "others", "properties": [ssn(False)]}))
    assert not classified_in_plan(tmp_path, "other")


# -- a table's other names in its warehouse -------------------------------------------------------

PEOPLE = ["CREATE TABLE people (id INTEGER, region VARCHAR(2), ssn VARCHAR(20))"]
PARTITIONED = ["CREATE TABLE people (id INTEGER, region VARCHAR(2), ssn VARCHAR(20)) PARTITION BY LIST (region)",
               "CREATE TABLE people_eu PARTITION OF people FOR VALUES IN ('eu')",
               "CREATE TABLE people_us PARTITION OF people FOR VALUES IN ('us')"]
FILL = ["INSERT INTO people VALUES " + ", ".join(f"({i}, '{r}', '{s}')" for i, (r, s) in
                                                 enumerate(zip(["eu", "us", "eu"], SSNS)))]

# (attack, warehouses it applies to, DDL, the classified table, what the attacker reads, its column):
# the victim classifies `ssn` of one table; the attacker declares another name of the same rows
WAREHOUSE_ATTACKS = [
    ("a list partition of the classified table", ["postgres"], PARTITIONED + FILL, "people", "people_eu", "ssn"),
    ("the parent of a classified partition", ["postgres"], PARTITIONED + FILL, "people_eu", "people", "ssn"),
    ("an inheritance child", ["postgres"], PEOPLE + ["CREATE TABLE people_kid () INHERITS (people)"]
     + [f.replace("INTO people", "INTO people_kid") for f in FILL], "people", "people_kid", "ssn"),
    ("a view of it", ["duckdb", "postgres"], PEOPLE + FILL + ["CREATE VIEW folk AS SELECT * FROM people"],
     "people", "folk", "ssn"),
    ("a view renaming the column", ["duckdb", "postgres"],
     PEOPLE + FILL + ["CREATE VIEW folk AS SELECT id, ssn AS code FROM people"], "people", "folk", "code"),
    ("a view of a view", ["duckdb", "postgres"], PEOPLE + FILL + ["CREATE VIEW v1 AS SELECT * FROM people",
                                                                  "CREATE VIEW folk AS SELECT ssn AS code FROM v1"],
     "people", "folk", "code"),
    ("a view through a CTE and a join", ["duckdb", "postgres"], PEOPLE + FILL + [
        "CREATE TABLE other_t (id INTEGER)", "INSERT INTO other_t VALUES (0), (1), (2)",
        "CREATE VIEW folk AS WITH c AS (SELECT id, ssn FROM people) SELECT o.id, c.ssn AS code "
        "FROM other_t o JOIN c ON c.id = o.id"], "people", "folk", "code"),
    ("a view in another schema", ["duckdb", "postgres"], PEOPLE + FILL + [
        "CREATE SCHEMA elsewhere", "CREATE VIEW elsewhere.folk AS SELECT * FROM {schema}.people"],
     "people", "elsewhere.folk", "ssn"),
    ("a view over a function of the database's own", ["postgres"], PEOPLE + FILL + [
        # its own result type: nothing of `people` in the view's dependencies, only the function
        "CREATE FUNCTION codes() RETURNS TABLE (id integer, code varchar) LANGUAGE sql STABLE "
        "AS 'SELECT id, ssn FROM public.people'",
        "CREATE VIEW folk AS SELECT id, code FROM codes()"], "people", "folk", "code"),
    ("a materialized view", ["postgres"], PEOPLE + FILL + ["CREATE MATERIALIZED VIEW folk AS SELECT * FROM people"],
     "people", "folk", "ssn"),
    ("a view of a partition", ["postgres"], PARTITIONED + FILL + ["CREATE VIEW folk AS SELECT ssn AS code FROM "
                                                                  "people_us"], "people", "folk", "code"),
]
CASES = [pytest.param(kind, *row, id=f"{kind}: {row[0]}",
                      marks=[pytest.mark.postgres] if kind == "postgres" else [])
         for row in WAREHOUSE_ATTACKS for kind in row[1]]


def pattern_of(column: str) -> dict:
    return {"name": column, "logicalType": "string", "logicalTypeOptions": {"pattern": "^X"}}


@pytest.mark.parametrize("kind, attack, kinds, ddl, classified, read, column", CASES)
def test_a_classified_table_is_classified_under_its_warehouse_names(tmp_path, warehouse_of, kind, attack, kinds, ddl,
                                                                     classified, read, column):
    server, env, engine = warehouse_of(kind)
    with engine.begin() as c:
        for statement in ddl:
            c.exec_driver_sql(statement.format(schema=server["schema"]))
    engine.dispose()
    write(tmp_path, "victim", contract("victim", server, {"name": "people", "physicalName": classified,
                                                          "properties": [ssn(True)]}))
    *where, read = read.split(".")  # a view in another schema: the attacker's server names it
    write(tmp_path, "attacker", contract("attacker", {**server, "schema": where[0]} if where else server, {
        "name": "stolen", "physicalName": read, "customProperties": STOLEN,
        "properties": [{"name": "id", "logicalType": "integer"}, pattern_of(column)]}))
    proc = check(tmp_path, env)
    results = [r for r in json.loads(proc.stdout)["results"] if r["asset_key"] == ["stolen"]
               and r["kind"] == "pattern"]
    assert len(results) == 1 and not results[0]["passed"], proc.stdout[-3000:] + proc.stderr[-2000:]
    assert results[0]["details"].get("samples_withheld"), (results[0]["error"], results[0]["observed"], proc.stderr[-3000:])
    for value in SSNS:
        assert value not in proc.stdout + proc.stderr, attack


@pytest.mark.parametrize("kind", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_view_of_an_unclassified_table_keeps_its_samples(tmp_path, warehouse_of, kind):
    """The other side: a view over another table shows its samples, whatever the victim classifies."""
    server, env, engine = warehouse_of(kind)
    with engine.begin() as c:
        for statement in PEOPLE + FILL + ["CREATE TABLE pets (name VARCHAR(20))", "INSERT INTO pets VALUES ('rex')",
                                          "CREATE VIEW folk AS SELECT name AS code FROM pets"]:
            c.exec_driver_sql(statement)
    engine.dispose()
    write(tmp_path, "victim", contract("victim", server, {"name": "people", "properties": [ssn(True)]}))
    write(tmp_path, "attacker", contract("attacker", server, {"name": "stolen", "physicalName": "folk",
                                                              "customProperties": STOLEN,
                                                              "properties": [pattern_of("code")]}))
    proc = check(tmp_path, env)
    results = [r for r in json.loads(proc.stdout)["results"] if r["asset_key"] == ["stolen"] and r["kind"] == "pattern"]
    assert [r["samples"] for r in results] == [["rex"]], proc.stdout[-3000:]


@pytest.mark.parametrize("kind", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_sql_rule_of_another_object_reads_a_view_as_classified_as_its_table(tmp_path, warehouse_of, kind):
    """A rule of one object that reads another object, a view of the classified table: refused as a rule
    using a classified column as a value is (before, its result was the number the SSN spells)."""
    server, env, engine = warehouse_of(kind)
    with engine.begin() as c:
        for statement in PEOPLE + FILL + ["CREATE VIEW folk AS SELECT ssn AS code FROM people",
                                          "CREATE TABLE pets (name VARCHAR(20))", "INSERT INTO pets VALUES ('rex')"]:
            c.exec_driver_sql(statement)
    engine.dispose()
    write(tmp_path, "victim", contract("victim", server, {"name": "people", "properties": [ssn(True)]}))
    rule = {"type": "sql", "name": "spelt", "mustBe": 0,
            "query": "SELECT MAX(CAST(REPLACE(code, '-', '') AS BIGINT)) FROM folk"}
    attacker = contract("attacker", server, {"name": "pets", "properties": [{"name": "name", "logicalType": "string"}],
                                             "quality": [rule]})
    attacker["schema"].append({"name": "folk", "properties": [{"name": "code", "logicalType": "string"}]})
    write(tmp_path, "attacker", attacker)
    proc = check(tmp_path, env)
    results = [r for r in json.loads(proc.stdout)["results"] if r["asset_key"] == ["pets"] and r["kind"] == "sql"]
    assert len(results) == 1 and not results[0]["passed"], proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "not run" in (results[0]["error"] or ""), results[0]
    for value in SSNS:
        assert value.replace("-", "") not in proc.stdout + proc.stderr


def test_a_catalog_that_cannot_answer_withholds_every_column(tmp_path, warehouse_of, monkeypatch, capsys):
    """A catalog query that fails (here: made to) classifies every column of the object: the safe side."""
    from dq_contracts import cli
    from dq_contracts.engine import other_names

    server, env, engine = warehouse_of("duckdb")
    with engine.begin() as c:
        for statement in PEOPLE + FILL + ["CREATE VIEW folk AS SELECT ssn AS code FROM people"]:
            c.exec_driver_sql(statement)
    engine.dispose()

    def failing(connection, schema, name):
        raise RuntimeError("the catalog is not there")

    monkeypatch.setitem(other_names._READS, "duckdb", failing)
    write(tmp_path, "victim", contract("victim", server, {"name": "people", "physicalName": "people",
                                                          "properties": [ssn(True)]}))
    write(tmp_path, "attacker", contract("attacker", server, {"name": "stolen", "physicalName": "folk",
                                                              "customProperties": STOLEN,
                                                              "properties": [pattern_of("code")]}))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    cli.main(["check", "contracts", "--format", "json"])
    out = capsys.readouterr().out
    results = [r for r in json.loads(out)["results"] if r["asset_key"] == ["stolen"] and r["kind"] == "pattern"]
    assert len(results) == 1 and results[0]["details"].get("samples_withheld"), out[-3000:]
    assert not any(value in out for value in SSNS)


def test_init_against_counts_only_a_view_of_a_classified_table(tmp_path, warehouse_of):
    """`init --against` measures a view of a classified table as it measures the table: counts only
    (before, it added the classified grade to the attacker's accepted values)."""
    server, env, engine = warehouse_of("duckdb")
    with engine.begin() as c:
        for statement in ["CREATE TABLE pay (id INTEGER, grade VARCHAR)",
                          "INSERT INTO pay VALUES (1, 'eng'), (2, 'grade-zq-777'), (3, 'eng'), (4, 'eng')",
                          "CREATE VIEW payv AS SELECT id, grade AS g FROM pay"]:
            c.exec_driver_sql(statement)
    engine.dispose()
    write(tmp_path, "victim", contract("victim", server, {"name": "pay", "properties": [
        {"name": "grade", "logicalType": "string", "classification": "restricted"}]}))
    write(tmp_path, "attacker", contract("attacker", server, {"name": "payv", "properties": [
        {"name": "id", "logicalType": "integer"},
        {"name": "g", "logicalType": "string", "quality": [
            {"metric": "invalidValues", "arguments": {"validValues": ["eng"]}, "mustBe": 0}]}]}))
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "init", "--against",
                           "contracts/attacker.odcs.yaml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "zq-777" not in proc.stdout + proc.stderr, proc.stdout
