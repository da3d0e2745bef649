"""A classified nested field keeps its values in the database, whichever contract of the table reads
it and however: its path, its parent column declared as anything, a SQL rule addressing it. And a
value no sample can hold as it is (a struct, a map, a JSON document) never stops the run.

Each row is a table of a folder of two contracts: the victim's, classifying a field or item below a
column, and the attacker's, on the same table, with clauses of its own. The planted values must not
be anywhere in what `dq-contracts check` prints; every clause of the attacker reports, and `said` is
found in the attacker's results (its reason, its samples)."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from dq_contracts import cli

SSN = "999-88-7777"
TAG = "tag-secret-4242"

# the table on each engine: one row holding the planted values twice (duplicates are found) and one other
TABLES = {
    "duckdb": ["CREATE TABLE people (id INTEGER, person STRUCT(name VARCHAR, ssn VARCHAR), tags VARCHAR[], "
               "m MAP(VARCHAR, VARCHAR), data JSON)",
               f"INSERT INTO people VALUES (1, {{'name': 'a', 'ssn': '{SSN}'}}, ['{TAG}'], MAP {{'k': 'v1'}}, "
               f"'{{\"ssn\": \"{SSN}\"}}'), "
               f"(2, {{'name': 'a', 'ssn': '{SSN}'}}, ['{TAG}'], MAP {{'k': 'v2'}}, '{{\"ssn\": \"{SSN}\"}}'), "
               "(3, {'name': 'b', 'ssn': '123'}, ['t'], MAP {'k': 'v3'}, '{\"ssn\": \"123\"}')"],
    "postgres": ["CREATE TYPE person_t AS (name text, ssn text)",
                 "CREATE TABLE people (id integer, person person_t, data jsonb, tags text[], doc jsonb)",
                 f"INSERT INTO people VALUES (1, ROW('a', '{SSN}'), '{{\"ssn\": \"{SSN}\"}}', ARRAY['{TAG}'], "
                 "'{\"k\": 1}'), "
                 f"(2, ROW('a', '{SSN}'), '{{\"ssn\": \"{SSN}\"}}', ARRAY['{TAG}'], '{{\"k\": 2}}'), "
                 "(3, ROW('b', '123'), '{\"ssn\": \"123\"}', ARRAY['t'], '{\"k\": 3}')"],
}

SSN_FIELD = {"name": "ssn", "logicalType": "string", "classification": "pii"}
PERSON = {"name": "person", "logicalType": "object", "properties": [{"name": "name", "logicalType": "string"},
                                                                     SSN_FIELD]}
TAGS = {"name": "tags", "logicalType": "array", "items": {"logicalType": "string", "classification": "secret"}}
DATA = {"name": "data", "logicalType": "object", "physicalType": "jsonb", "properties": [SSN_FIELD]}
JSON = {"name": "data", "logicalType": "object", "physicalType": "json", "properties": [SSN_FIELD]}  # DuckDB's
MISS = {"pattern": "^x$"}


def rule(query: str) -> list[dict]:
    return [{"type": "sql", "name": "leak", "query": query, "mustBe": 0}]


def plain(name: str, **extra) -> dict:
    return {"name": name, "logicalType": "string", **extra}


# (case, engine, the victim's classified property, the attacker's properties, the attacker's object
#  quality, a text the attacker's results hold)
ATTACKS = [
    ("a pattern on the classified path", "duckdb", PERSON,
     [{"name": "person", "logicalType": "object", "properties": [plain("ssn", logicalTypeOptions=MISS)]}], [],
     "samples_withheld"),
    ("a pattern on the parent declared as a string", "duckdb", PERSON,
     [plain("person", logicalTypeOptions=MISS)], [], "samples_withheld"),
    ("invalidValues on the parent composite", "duckdb", PERSON,
     [{"name": "person", "logicalType": "object",
       "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["zzz"]}, "mustBe": 0}]}], [],
     "the database's message is withheld"),
    ("unique on the parent composite", "duckdb", PERSON,
     [{"name": "person", "logicalType": "object", "unique": True}], [], "samples_withheld"),
    ("a pattern on an array's classified items", "duckdb", TAGS,
     [{"name": "tags", "logicalType": "array", "items": plain("item", logicalTypeOptions=MISS)}], [],
     "samples_withheld"),
    ("a SQL rule's struct_extract of the field", "duckdb", PERSON, [{"name": "person", "logicalType": "object"}],
     rule("SELECT max(CAST(replace(struct_extract(person, 'ssn'), '-', '') AS BIGINT)) FROM {object}"),
     "classified column 'person'"),
    ("a SQL rule's subscript of the field", "duckdb", PERSON, [{"name": "person", "logicalType": "object"}],
     rule("SELECT max(CAST(person['ssn'] AS INTEGER)) FROM {object}"), "classified column 'person'"),
    ("a SQL rule's array item", "duckdb", TAGS, [{"name": "tags", "logicalType": "array"}],
     rule("SELECT max(CAST(tags[1] AS INTEGER)) FROM {object}"), "classified column 'tags'"),
    ("a pattern on the classified path, the file named another way", "parquet", PERSON,
     [{"name": "person", "logicalType": "object", "properties": [plain("ssn", logicalTypeOptions=MISS)]}], [],
     "samples_withheld"),
    ("a pattern on the parent declared as a string, the file named another way", "parquet", PERSON,
     [plain("person", logicalTypeOptions=MISS)], [], "samples_withheld"),
    ("a pattern on an array's classified items, the file named another way", "parquet", TAGS,
     [{"name": "tags", "logicalType": "array", "items": plain("item", logicalTypeOptions=MISS)}], [],
     "samples_withheld"),
    # JSON reads are allowed in a rule, but not of a column holding a classified member
    ("a SQL rule's ->> of the JSON member", "duckdb", JSON, [{"name": "data", "logicalType": "object"}],
     rule("SELECT max(CAST(replace(data ->> 'ssn', '-', '') AS BIGINT)) FROM {object}"), "classified column 'data'"),
    ("a SQL rule's json_extract_string of the member", "duckdb", JSON, [{"name": "data", "logicalType": "object"}],
     rule("SELECT max(CAST(json_extract_string(data, '$.ssn') AS INTEGER)) FROM {object}"),
     "classified column 'data'"),
    ("a SQL rule's -> of the member", "duckdb", JSON, [{"name": "data", "logicalType": "object"}],
     rule("SELECT max(length(CAST(data -> 'ssn' AS VARCHAR))) FROM {object}"), "classified column 'data'"),
    ("a SQL rule's dot into the field", "duckdb", PERSON, [{"name": "person", "logicalType": "object"}],
     rule("SELECT max(CAST(person.ssn AS INTEGER)) FROM {object}"), "not run"),
    ("a SQL rule's struct_extract of the field, declared by the victim alone", "duckdb", PERSON, [plain("id")],
     rule("SELECT max(CAST(struct_extract(person, 'ssn') AS INTEGER)) FROM {object}"), "not run"),
    ("a pattern on a MAP column taken as text (no classification)", "duckdb", plain("id"),
     [plain("m", logicalTypeOptions=MISS)], [], '"{\\"k\\": \\"v1\\"}"'),
    ("a pattern on the jsonb parent declared as a string", "postgres", DATA,
     [plain("data", logicalTypeOptions=MISS)], [], "samples_withheld"),
    ("a pattern on the composite parent declared as a string", "postgres", PERSON,
     [plain("person", logicalTypeOptions=MISS)], [], "samples_withheld"),
    ("invalidValues on the parent composite", "postgres", PERSON,
     [{"name": "person", "logicalType": "object",
       "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["(z,z)"]}, "mustBe": 0}]}], [],
     "the database's message is withheld"),
    ("unique on the parent composite", "postgres", PERSON,
     [{"name": "person", "logicalType": "object", "unique": True}], [], "samples_withheld"),
    ("a SQL rule's jsonb_extract_path_text of the member", "postgres", DATA,
     [{"name": "data", "logicalType": "object", "physicalType": "jsonb"}],
     rule("SELECT max(CAST(replace(jsonb_extract_path_text(data, 'ssn'), '-', '') AS BIGINT)) FROM {object}"),
     "classified column 'data'"),
    ("a SQL rule's ->> of the member", "postgres", DATA,
     [{"name": "data", "logicalType": "object", "physicalType": "jsonb"}],
     rule("SELECT max(CAST(data ->> 'ssn' AS INTEGER)) FROM {object}"), "classified column 'data'"),
    ("a SQL rule's -> of the member", "postgres", DATA,
     [{"name": "data", "logicalType": "object", "physicalType": "jsonb"}],
     rule("SELECT max(length(CAST(data -> 'ssn' AS TEXT))) FROM {object}"), "classified column 'data'"),
    ("a SQL rule's #>> of the member", "postgres", DATA,
     [{"name": "data", "logicalType": "object", "physicalType": "jsonb"}],
     rule("SELECT max(CAST(data #>> ARRAY['ssn'] AS BIGINT)) FROM {object}"), "classified column 'data'"),
    ("a SQL rule's ? of the member", "postgres", DATA,
     [{"name": "data", "logicalType": "object", "physicalType": "jsonb"}],
     rule("SELECT COUNT(*) FROM {object} WHERE data ? 'ssn'"), "classified column 'data'"),
    ("a SQL rule's field of the composite", "postgres", PERSON, [{"name": "person", "logicalType": "object"}],
     rule("SELECT max(CAST((person).ssn AS INTEGER)) FROM {object}"), "not run"),
    ("a pattern on a jsonb column taken as text (no classification)", "postgres", plain("id"),
     [plain("doc", logicalTypeOptions=MISS)], [], '"{\\"k\\": 1}"'),
]


def document(cid: str, server: dict, properties: list[dict], quality: list[dict]) -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": cid, "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [{"name": "people", "physicalName": "people",
                                              "customProperties": [{"property": "dagsterAssetKey", "value": cid}],
                                              "properties": properties, "quality": quality}]}


def encodings(value: str) -> set[str]:
    return {value, re.sub(r"\D", "", value) or value}


ENGINES = {"duckdb": (), "parquet": (), "postgres": (pytest.mark.postgres,)}


@pytest.mark.parametrize("case, engine, victim, properties, quality, said", [
    pytest.param(*row, marks=ENGINES[row[1]], id=f"{row[1]}/{row[0]}") for row in ATTACKS])
def test_no_value_of_a_classified_nested_field_leaves_by_another_contract(case, engine, victim, properties, quality,
                                                                          said, warehouse_of, tmp_path, capfd,
                                                                          monkeypatch):
    server, environ, writer = warehouse_of("duckdb" if engine == "parquet" else engine)
    with writer.begin() as c:
        for statement in TABLES["duckdb" if engine == "parquet" else engine]:
            c.exec_driver_sql(statement)
        if engine == "parquet":  # the file is the table; the attacker's server names the file itself
            (tmp_path / "data").mkdir()
            c.exec_driver_sql(f"COPY people TO '{tmp_path / 'data' / 'people.parquet'}' (FORMAT parquet)")
    writer.dispose()
    theirs = server
    if engine == "parquet":
        server = {"server": "lake", "type": "local", "format": "parquet", "path": str(tmp_path / "data" / "{model}.parquet")}
        theirs = {**server, "path": str(tmp_path / "data" / "people.parquet")}
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "victim.odcs.yaml").write_text(yaml.safe_dump(document("victim", server, [victim], [])))
    (folder / "attacker.odcs.yaml").write_text(yaml.safe_dump(document("attacker", theirs, properties, quality)))
    code = cli.main(["check", str(folder), "--format", "json"])
    out, err = capfd.readouterr()
    assert code in (0, 1), (code, err)
    for value in {*encodings(SSN), TAG}:
        assert value not in out + err, (case, value)
    attacker = [r for r in json.loads(out)["results"] if r["contract"] == "attacker" and r["kind"] != "schema"]
    assert attacker and all(not r["passed"] for r in attacker), (case, attacker)
    assert said in json.dumps(attacker), (case, said, [(r["passed"], r["observed"], r["error"], r["message"]) for r in attacker])


# (where taking samples raises): every failing clause keeps its verdict and says why it has no samples
BROKEN_SAMPLES = ["_rare_samples", "_bounded_samples", "_keep"]


@pytest.mark.parametrize("broken", BROKEN_SAMPLES)
def test_an_exception_while_taking_samples_costs_only_the_samples(broken, tmp_path, monkeypatch):
    import sqlalchemy as sa

    from dq_contracts.engine import samples
    from dq_contracts.engine.runner import run_object
    from dq_contracts.odcs.load import load_contracts

    path = tmp_path / "wh.duckdb"
    engine = sa.create_engine(f"duckdb:///{path}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a VARCHAR, b INTEGER)")
        c.exec_driver_sql("INSERT INTO t SELECT 'x' || i, i FROM range(300) r(i)")
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "c", "version": "1.0.0", "status": "active",
           "schema": [{"name": "t", "properties": [
               plain("a", logicalTypeOptions={"pattern": "^x1$"}),  # 299 rows: the bounded query
               {"name": "b", "logicalType": "integer", "logicalTypeOptions": {"maximum": 297}}]}]}  # 2: the scan
    (tmp_path / "c.odcs.yaml").write_text(yaml.safe_dump(doc))
    plan = load_contracts([tmp_path / "c.odcs.yaml"]).plans[0]

    def broke(*args, **kwargs):
        raise TypeError("unhashable type: 'dict'")

    monkeypatch.setattr(samples, broken, broke)
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine) if r.kind != "schema"}
    assert {n: (r.passed, r.error) for n, r in results.items()} == {"a__pattern": (False, None),
                                                                    "b__maximum": (False, None)}
    assert [n for n, r in results.items() if "unhashable" in r.details.get("samples_error", "")], results
    assert all(r.message for r in results.values())


def broke(*args, **kwargs):
    raise TypeError("a kind's row that raises")


# (case, the kind whose row is broken, its field, the broken value, the check that fails alone)
BROKEN_ROWS = [
    ("a kind that cannot say whether it is measured", "pattern", "in_aggregate", broke, "a__pattern"),
    ("a kind that cannot say where its measure goes", "unique", "apart", broke, "b__unique"),
    ("a hint its params cannot fill", "multiple_of", "hint", "{nosuch} is not there", "n__multiple_of"),
]


@pytest.mark.parametrize("case, kind, field, value, alone", BROKEN_ROWS, ids=[r[0] for r in BROKEN_ROWS])
def test_a_kind_that_raises_fails_its_check_alone(case, kind, field, value, alone, tmp_path, monkeypatch):
    from dataclasses import replace

    import sqlalchemy as sa

    from dq_contracts.engine.check_kinds import KINDS
    from dq_contracts.engine.runner import run_object
    from dq_contracts.odcs.load import load_contracts

    engine = sa.create_engine(f"duckdb:///{tmp_path / 'wh.duckdb'}")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a VARCHAR, b INTEGER, n VARCHAR)")
        c.exec_driver_sql("INSERT INTO t VALUES ('x', 1, 'q'), ('y', 1, 'r')")
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "c", "version": "1.0.0", "status": "active",
           "schema": [{"name": "t", "properties": [
               plain("a", logicalTypeOptions={"pattern": "^x$"}),
               {"name": "b", "logicalType": "integer", "unique": True, "logicalTypeOptions": {"maximum": 0}},
               {"name": "n", "logicalType": "number", "logicalTypeOptions": {"multipleOf": 2}}]}]}
    (tmp_path / "c.odcs.yaml").write_text(yaml.safe_dump(doc))
    plan = load_contracts([tmp_path / "c.odcs.yaml"]).plans[0]
    monkeypatch.setitem(KINDS, kind, replace(KINDS[kind], **{field: value}))
    results = {r.name: r for r in run_object(plan, plan.objects[0], engine)}
    assert results[alone].passed is False and results[alone].error, (case, results[alone])
    others = {n: (r.passed, r.error) for n, r in results.items() if n not in (alone, "schema", "n__multiple_of")}
    assert others and all(error is None and passed is False for passed, error in others.values()), (case, others)


# (the victim's classified property, the column's classification as each contract's metadata says it)
SAID = [(PERSON, "pii (at person.ssn)"), (TAGS, "secret (at tags[])")]


@pytest.mark.parametrize("victim, said", SAID, ids=[s for _, s in SAID])
def test_a_column_classified_below_says_where_in_every_contract(victim, said, tmp_path):
    from dq_contracts.odcs.load import load_contracts

    server = {"server": "local", "type": "duckdb", "database": str(tmp_path / "wh.duckdb")}
    (tmp_path / "victim.odcs.yaml").write_text(yaml.safe_dump(document("victim", server, [victim], [])))
    (tmp_path / "attacker.odcs.yaml").write_text(yaml.safe_dump(document("attacker", server, [plain(victim["name"])],
                                                                         [])))
    plans = {p.id: p for p in load_contracts([tmp_path]).plans}
    [mine], [theirs] = plans["victim"].objects[0].columns, plans["attacker"].objects[0].columns
    assert (mine.classified, mine.classification_text) == (True, said)
    assert (theirs.classified, theirs.classification_text) == (True, f"{said} (from {plans['victim'].file})")
