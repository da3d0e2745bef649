"""Classified columns, by construction: a column is classified if any contract of its physical
table says so (principle 3), and no value of one leaves the database whatever the error
(principle 4). Each case is a row; each row runs against real servers."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts import cli

PLANTED = "999-88-7777"
PLANTED_TIME = "2026-05-31 07:41:13"


def contract(cid: str, server: dict, table: str, ssn: str, *, classified: bool, asset: str, word: str = "pii") -> dict:
    """One object on `table`: its `ssn` column (named as given) with a pattern its value misses, and
    a freshness SLA on `seen_at`; the classification (`word`) only where `classified`."""
    mark = {"classification": word} if classified else {}
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": cid, "version": "1.0.0", "status": "active",
            "servers": [server],
            "schema": [{"name": "people", "physicalName": table,
                        "customProperties": [{"property": "dagsterAssetKey", "value": asset}],
                        "properties": [
                            {"name": ssn, "logicalType": "string", "logicalTypeOptions": {"pattern": "^[0-9]+$"},
                             **mark},
                            {"name": "seen_at", "logicalType": "timestamp", **mark}]}],
            "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "people.seen_at"}]}


def people(name: str = "people", ssn: str = "ssn") -> list[str]:
    return [f"CREATE TABLE {name} ({ssn} VARCHAR(20), seen_at TIMESTAMP)",
            f"INSERT INTO {name} VALUES ('{PLANTED}', '{PLANTED_TIME}')"]


# (case, DDL beside `people`, B's server ("same" or "other"), B's physicalName, B's column name,
#  is it A's classified table on DuckDB, on PostgreSQL). Classification follows the table's name
# whatever the endpoint's spelling (compiler._table_key): the same name in another schema or on
# another server is classified too, which withholds more and can never be told apart by a trick.
SHARED = [
    ("same table", {}, "same", "people", "ssn", True, True),
    ("names in another case", {"postgres": people('"People"', '"SSN"')}, "same", "People", "SSN", True, True),
    ("schema written out", {}, "same", "{schema}.people", "ssn", True, True),
    ("another schema", dict.fromkeys(["duckdb", "postgres"], ["CREATE SCHEMA other", *people("other.people")]),
     "same", "other.people", "ssn", True, True),
    ("another server", {}, "other", "people", "ssn", True, True),
    ("another table", {"duckdb": people("folk"), "postgres": people("folk")}, "same", "folk", "ssn", False, False),
]


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_servers(request, tmp_path):
    """(engine, [server, the other server], environment, [a writable engine on each])."""
    if request.param == "duckdb":
        paths = [tmp_path / "wh.duckdb", tmp_path / "other.duckdb"]
        return ("duckdb", [{"server": "local", "type": "duckdb", "database": str(p)} for p in paths], {},
                [sa.create_engine(f"duckdb:///{p}") for p in paths])
    from dq_contracts_tests.support import pg_env, pg_server

    url = sa.make_url(request.getfixturevalue("pg_database"))
    other = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f'CREATE DATABASE "{other}"')
    admin.dispose()
    urls = [url, url.set(database=other)]
    return ("postgres", [pg_server(u.render_as_string(hide_password=False)) for u in urls],
            pg_env(url.render_as_string(hide_password=False)), [sa.create_engine(u) for u in urls])


@pytest.mark.parametrize("case, ddl, where, table, ssn, on_duckdb, on_postgres", SHARED, ids=[r[0] for r in SHARED])
def test_a_column_is_classified_if_any_contract_of_its_table_says_so(two_servers, tmp_path, capsys, monkeypatch,
                                                                    case, ddl, where, table, ssn, on_duckdb,
                                                                    on_postgres):
    import dagster as dg

    from dq_contracts import build_contract_defs
    from dq_contracts.dagster_defs.resource import WarehouseResource

    engine, servers, environ, writers = two_servers
    shared = on_duckdb if engine == "duckdb" else on_postgres
    for writer, statements in zip(writers, [[*people(), *ddl.get(engine, [])], people()]):
        with writer.begin() as c:
            for statement in statements:
                c.exec_driver_sql(statement)
        writer.dispose()
    schema = "main" if engine == "duckdb" else "public"
    a = contract("a", servers[0], "people", "ssn", classified=True, asset="a/people")
    b = contract("b", servers[0 if where == "same" else 1], table.format(schema=schema), ssn, classified=False,
                 asset="b/people")
    for name, doc in (("a", a), ("b", b)):
        (tmp_path / f"{name}.odcs.yaml").write_text(yaml.safe_dump(doc))
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    if table.startswith("other."):  # a schema beside the server's own is the operator's to allow
        monkeypatch.setenv(f"DQ_CONTRACTS_{servers[0]['server'].upper()}_SCHEMAS", "other")
    capsys.readouterr()
    cli.main(["check", str(tmp_path / "a.odcs.yaml"), str(tmp_path / "b.odcs.yaml"), "--format", "json"])
    out = capsys.readouterr().out
    of_b = {r["kind"]: r for r in json.loads(out)["results"] if r["asset_key"] == ["b", "people"]}
    pattern, fresh = of_b["pattern"], of_b["freshness"]
    assert not pattern["passed"] and fresh["passed"] is False  # both fail: 2026 is more than a day ago
    if shared:
        assert pattern["samples"] == [] and "samples_withheld" in pattern["details"]
        assert fresh["observed"] is None and "observed_withheld" in fresh["details"]
        assert PLANTED not in out and PLANTED_TIME.replace(" ", "T") not in out
    else:  # another table: nothing of A's applies, and B's own values show as B wrote it
        assert pattern["samples"] == [PLANTED] and "newest_utc" in fresh["details"]

    resource = WarehouseResource(servers={"pg": {k.split("_")[-1].lower(): v for k, v in environ.items()}}
                                 if environ else {})
    defs = build_contract_defs([tmp_path / "a.odcs.yaml", tmp_path / "b.odcs.yaml"], resource=resource)
    with dg.DagsterInstance.ephemeral() as instance:  # the freshness sensor watches B's column only if unclassified
        tick = defs.resolve_sensor_def("dq_contracts_freshness").evaluate_tick(
            dg.build_sensor_context(instance=instance, resources={"dq_warehouse": resource}))
    reported = [e.asset_key.path for e in tick.asset_events]
    assert (["b", "people"] in reported) is not shared and ["a", "people"] not in reported
    assert (PLANTED_TIME in str(tick.cursor)) is not shared
    spec = next(s for s in defs.resolve_all_asset_specs() if s.key.path == ["b", "people"])
    said = {c.name: c.constraints.other for c in spec.metadata["dagster/column_schema"].columns}
    assert set(said) == {ssn, "seen_at"}
    for other in said.values():  # and which file says so
        found = [re.fullmatch(r"classification: pii \(from (.+)\)", o) for o in other]
        assert [Path(f.group(1)).resolve() for f in found if f] == ([tmp_path / "a.odcs.yaml"] if shared else [])
        assert len(found) == len(other)



# (classification as written, is the column classified, validate's warning (None: no warning)). Only
# the known words of no sensitivity leave a column unclassified: any other word classifies it, and
# a word not known is a warning saying what it may have meant (plans.CLASSIFIED).
WORDS = [
    ("pii", True, None), (" Restricted ", True, None), ("SECRET", True, None),
    ("highly confidential", True, "'highly confidential' is not one of .* \\(did you mean 'confidential'\\?\\)"),
    ("PHI", True, "'PHI' is not one of [^(]*: the column is taken as classified"),
    ("confidentail", True, "did you mean 'confidential'"), ("personal data", True, "is not one of"),
    ("publik", True, "did you mean 'public'"), ("0", True, "'0' is not one of"),
    ("public", False, None), ("Internal", False, None), ("unclassified", False, None), ("none", False, None),
]


@pytest.mark.parametrize("word, classified, warning", WORDS, ids=[r[0] for r in WORDS])
def test_a_classification_word_not_known_classifies_the_column(two_servers, tmp_path, capsys, monkeypatch, word,
                                                               classified, warning):
    _, servers, environ, writers = two_servers
    with writers[0].begin() as c:
        for statement in people():
            c.exec_driver_sql(statement)
    writers[0].dispose()
    doc = contract("a", servers[0], "people", "ssn", classified=True, asset="a/people", word=word)
    (tmp_path / "a.odcs.yaml").write_text(yaml.safe_dump(doc))
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    capsys.readouterr()
    assert cli.main(["validate", str(tmp_path / "a.odcs.yaml")]) == 0
    said = capsys.readouterr().out
    warnings = [line for line in said.splitlines() if "warning: schema.people.properties" in line]
    assert len(warnings) == (0 if warning is None else 2), said  # one per column (ssn, seen_at)
    assert all(re.search(warning, w) for w in warnings), said
    cli.main(["check", str(tmp_path / "a.odcs.yaml"), "--format", "json"])
    out = capsys.readouterr().out
    pattern = next(r for r in json.loads(out)["results"] if r["kind"] == "pattern")
    assert (PLANTED in out) is not classified, out
    assert pattern["samples"] == ([] if classified else [PLANTED]), out


def test_a_relationship_reads_a_table_as_classified_as_any_contract_of_it_says(tmp_path, capsys):
    """C references B's table, which only A classifies: C's error quotes nothing of it."""
    from dq_contracts_tests.support import duckdb_with

    duckdb_with(tmp_path / "wh.duckdb", *people(), "CREATE TABLE refs (k INTEGER)", "INSERT INTO refs VALUES (12)")
    server = {"server": "local", "type": "duckdb", "database": str(tmp_path / "wh.duckdb")}
    c = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "c", "version": "1.0.0", "status": "active",
         "servers": [server], "schema": [{"name": "refs", "properties": [
             {"name": "k", "logicalType": "integer", "relationships": [{"to": "b_people.ssn"}]}]}]}
    b = contract("b", server, "people", "ssn", classified=False, asset="b/people")
    b["schema"][0]["name"] = "b_people"
    for name, doc in (("a", contract("a", server, "people", "ssn", classified=True, asset="a/people")), ("b", b),
                      ("c", c)):
        (tmp_path / f"{name}.odcs.yaml").write_text(yaml.safe_dump(doc))
    cli.main(["check", *(str(tmp_path / f"{n}.odcs.yaml") for n in "abc"), "--format", "json"])
    out = capsys.readouterr().out
    refs = next(r for r in json.loads(out)["results"] if r["kind"] == "relationship")
    assert "ConversionException" in refs["error"] and "the referenced table has a classified column" in refs["error"]
    assert PLANTED not in out

def test_a_sql_rule_reads_another_object_as_classified_as_any_contract_of_its_table_says(tmp_path, capsys):
    """B's rule on `refs` reads B's own `people`, which only A classifies: where it would run, the
    judge refuses the classified column used as a value, and nothing of it is shown."""
    from dq_contracts_tests.support import duckdb_with

    duckdb_with(tmp_path / "wh.duckdb", *people(), "CREATE TABLE refs (k INTEGER)", "INSERT INTO refs VALUES (12)")
    server = {"server": "local", "type": "duckdb", "database": str(tmp_path / "wh.duckdb")}
    b = contract("b", server, "people", "ssn", classified=False, asset="b/people")
    b["schema"].append({"name": "refs", "properties": [{"name": "k", "logicalType": "integer"}], "quality": [
        {"type": "sql", "name": "newest_ssn", "query": "SELECT MAX(p.ssn) FROM people p", "mustBe": 0}]})
    for name, doc in (("a", contract("a", server, "people", "ssn", classified=True, asset="a/people")), ("b", b)):
        (tmp_path / f"{name}.odcs.yaml").write_text(yaml.safe_dump(doc))
    cli.main(["check", *(str(tmp_path / f"{n}.odcs.yaml") for n in "ab"), "--format", "json"])
    out = capsys.readouterr().out
    rule = next(r for r in json.loads(out)["results"] if r["name"] == "newest_ssn")
    assert rule["passed"] is False and rule["observed"] is None
    assert rule["error"].startswith("not run:") and "classified" in rule["error"]
    assert PLANTED not in out


# --- principle 4: no value of a classified column leaves the database, whatever the error -----------

# (engine, attack, the value planted in a classified column, its SQL type there, the property (its
#  classification added), the object's quality rules, the failed check's kind, what its error must
#  say: the proof that the error was provoked). `{t}` is the row's own table; each row plants its
#  own value, which must then show nowhere.
ATTACKS = [
    ("duckdb", "range on text", "999-88-7701", "VARCHAR",
     {"logicalType": "number", "logicalTypeOptions": {"minimum": 0}}, [], "range", "BinderException"),
    ("duckdb", "multipleOf on text", "999-88-7702", "VARCHAR",
     {"logicalType": "number", "logicalTypeOptions": {"multipleOf": 1}}, [], "multiple_of", "ConversionException"),
    ("duckdb", "freshness of text that is no timestamp", "999-88-7703", "VARCHAR",
     {"logicalType": "timestamp"}, [], "freshness", "BinderException"),
    ("duckdb", "a pattern the regex engine refuses", "999-88-7704", "VARCHAR",
     {"logicalType": "string", "logicalTypeOptions": {"pattern": "^(?=9)"}}, [], "pattern", "InvalidInputException"),
    ("duckdb", "a SQL rule's cast", "999-88-7705", "VARCHAR", {"logicalType": "string"},
     [{"type": "sql", "name": "cast", "query": "SELECT COUNT(*) FROM {object} WHERE CAST(v AS INTEGER) > 0",
       "mustBe": 0}], "sql", "ConversionException"),
    ("duckdb", "a cast to UUID echoes the value", "a secret of no digits", "VARCHAR", {"logicalType": "string"},
     [{"type": "sql", "name": "uuid", "query": "SELECT COUNT(*) FROM {object} WHERE CAST(v AS UUID) IS NULL",
       "mustBe": 0}], "sql", "ConversionException"),
    ("duckdb", "the regex engine echoes a pattern that is the value", "topsecret name(", "VARCHAR",
     {"logicalType": "string"},
     [{"type": "sql", "name": "regex", "query": "SELECT COUNT(*) FROM {object} WHERE regexp_matches('x', v)",
       "mustBe": 0}], "sql", "InvalidInputException"),
    ("duckdb", "the value unquoted on a second line", "SECRET ON LINE TWO", "VARCHAR", {"logicalType": "string"},
     [{"type": "sql", "name": "parse", "query": "SELECT COUNT(*) FROM {object} WHERE strptime(v, '%Y') IS NULL",
       "mustBe": 0}], "sql", "InvalidInputException"),
    ("duckdb", "a relationship to a classified key of another type", "999-88-7707", "VARCHAR",
     {"logicalType": "string"}, [], "relationship", "ConversionException"),
    ("postgres", "range on text: invalid input syntax quotes the value", "999-88-7711", "VARCHAR(20)",
     {"logicalType": "number", "logicalTypeOptions": {"minimum": 0}}, [], "range", "SQLSTATE"),
    ("postgres", "freshness of text that is no timestamp", "999-88-7712", "VARCHAR(20)",
     {"logicalType": "timestamp"}, [], "freshness", "SQLSTATE"),
    ("postgres", "a cast to UUID quotes the value", "[999-88-7713", "VARCHAR(20)", {"logicalType": "string"},
     [{"type": "sql", "name": "uuid", "query": "SELECT COUNT(*) FROM {object} WHERE CAST(v AS UUID) IS NULL",
       "mustBe": 0}], "sql", "SQLSTATE 22P02"),
    ("postgres", "a SQL rule's cast", "999-88-7714", "VARCHAR(20)", {"logicalType": "string"},
     [{"type": "sql", "name": "cast", "query": "SELECT COUNT(*) FROM {object} WHERE CAST(v AS INTEGER) > 0",
       "mustBe": 0}], "sql", "SQLSTATE 22P02"),
    ("postgres", "a relationship to a classified key of another type", "999-88-7715", "VARCHAR(20)",
     {"logicalType": "string"}, [], "relationship", "SQLSTATE"),
    ("files", "range on a csv column of text", "999-88-7721", "VARCHAR",
     {"logicalType": "number", "logicalTypeOptions": {"minimum": 0}}, [], "range", "BinderException"),
    ("files", "freshness of csv text that is no timestamp", "999-88-7722", "VARCHAR",
     {"logicalType": "timestamp"}, [], "freshness", "BinderException"),
]


def attack_objects(rows: list[tuple]) -> tuple[list[dict], dict[str, list[str]]]:
    """Per row, its table (`v` classified, holding the planted value) and, for a relationship, a
    referring table of integers: the contract's objects and each table's CSV lines."""
    objects, tables = [], {}
    for i, (_, _, planted, _, prop, quality, kind, _) in enumerate(rows):
        t = f"t{i}"
        objects.append({"name": t, "properties": [{"name": "v", "classification": "restricted", **prop}],
                        "quality": quality})
        tables[t] = ["v", planted]
        if kind == "relationship":
            objects.append({"name": f"{t}_from", "properties": [
                {"name": "k", "logicalType": "integer", "relationships": [{"to": f"{t}.v"}]}]})
            tables[f"{t}_from"] = ["k", "12"]
        if kind == "freshness":
            objects[-1]["_sla"] = f"{t}.v"
    return objects, tables


def encodings(value: str) -> set[str]:
    """The value raw, JSON-escaped, and its digits alone."""
    return {v for v in (value, json.dumps(value)[1:-1], re.sub(r"\D", "", value)) if v}


@pytest.fixture
def attacked(request, tmp_path):
    """(server, operator environment, a function writing the tables) for one engine."""
    engine = request.param
    if engine == "files":
        (tmp_path / "lake").mkdir()

        def write(tables):
            for name, lines in tables.items():
                (tmp_path / "lake" / f"{name}.csv").write_text("\n".join(lines) + "\n")

        return {"server": "lake", "type": "local", "format": "csv", "path": str(tmp_path / "lake" / "{model}.csv")}, \
            {}, write
    if engine == "duckdb":
        server, environ = {"server": "local", "type": "duckdb", "database": str(tmp_path / "wh.duckdb")}, {}
        url = f"duckdb:///{tmp_path / 'wh.duckdb'}"
    else:
        from dq_contracts_tests.support import pg_env, pg_server

        url = request.getfixturevalue("pg_database")
        server, environ = pg_server(url), pg_env(url)
    types = {r[2]: r[3] for r in ATTACKS if r[0] == engine}

    def write(tables):
        writer = sa.create_engine(url)
        with writer.begin() as c:
            for name, (column, value) in tables.items():
                c.exec_driver_sql(f"CREATE TABLE {name} ({column} {types.get(value, 'INTEGER')})")
                c.execute(sa.text(f"INSERT INTO {name} VALUES (:value)"), {"value": value})
        writer.dispose()

    return server, environ, write


ENGINES = ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres), "files"]


# Each lock alone: the SQL rules' judge refuses a classified column used as anything but a count, and,
# with that rule of the judge switched off, the database's messages are still withheld.
LOCKS = ["judge and messages", "messages alone"]


@pytest.mark.parametrize("locks", LOCKS)
@pytest.mark.parametrize("attacked", ENGINES, indirect=True)
def test_no_classified_value_leaves_the_database_whatever_the_error(attacked, locks, request, tmp_path, capfd,
                                                                    monkeypatch):
    import dagster as dg

    from dq_contracts import build_contract_defs
    from dq_contracts.odcs import sqlrules
    from dq_contracts.dagster_defs.resource import WarehouseResource

    if locks == "messages alone":
        monkeypatch.setattr(sqlrules._Checker, "counted_only", lambda self, node: True)
        monkeypatch.setattr(sqlrules, "_counted_only", lambda node: True)
    server, environ, write = attacked
    engine = request.node.callspec.params["attacked"]
    rows = [r for r in ATTACKS if r[0] == engine]
    objects, tables = attack_objects(rows)
    write(tables)
    sla = [o.pop("_sla") for o in objects if "_sla" in o]
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "leaks", "version": "1.0.0", "status": "active",
           "servers": [server], "schema": objects,
           "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": e} for e in sla]}
    path = tmp_path / "leaks.odcs.yaml"
    path.write_text(yaml.safe_dump(doc))
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    outputs = []
    for args in (["check", str(path)], ["check", str(path), "--format", "json"]):
        cli.main(args)
        captured = capfd.readouterr()
        outputs += [captured.out, captured.err]
    results = json.loads(outputs[2])["results"]
    leaked(rows, outputs)
    for i, (_, attack, _, _, spec, _, kind, said) in enumerate(rows):  # every error was provoked, as the row says
        failed = [r for r in results if r["kind"] == kind and r["asset_key"][-1] in (f"t{i}", f"t{i}_from")]
        errors = [(r["name"], r["error"]) for r in failed]
        if kind == "sql" and locks == "judge and messages":  # refused before anything runs
            said, withheld = "classified column 'v' in a form that could return or encode its values", "not run"
        elif spec.get("logicalType") in ("number", "timestamp"):  # text: the run's schema check says it in words
            said, withheld = "(see the schema check)", "v is "
        else:
            withheld = "the database's message is withheld"
        assert failed and all(not r["passed"] and said in (r["error"] or "") for r in failed), (attack, errors)
        assert all(withheld in r["error"] for r in failed), (attack, errors)

    home = tmp_path / "home"
    home.mkdir()
    resource = WarehouseResource(servers={server["server"]: {k.split("_")[-1].lower(): v for k, v in environ.items()}}
                                 if environ else {})
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        defs = build_contract_defs(path, resource=resource, contract_jobs=True)
        run = defs.resolve_job_def("leaks__checks").execute_in_process(instance=instance, raise_on_error=False)
        assert len(run.get_asset_check_evaluations()) == len(results)
        outputs += [repr(e) for e in instance.all_logs(run.run_id)]
        sensor = defs.resolve_sensor_def("dq_contracts_freshness")
        tick = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, resources={"dq_warehouse": resource}))
        outputs += [repr(tick.asset_events), str(tick.cursor)]
    captured = capfd.readouterr()
    outputs += [captured.out, captured.err]
    leaked(rows, outputs, b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file()))


def leaked(rows: list[tuple], outputs: list[str], stored: bytes = b"") -> None:
    """Fails on the first planted value found, in any of its encodings, in any output or byte."""
    for _, attack, planted, *_ in rows:
        for value in encodings(planted):
            assert value.encode() not in stored, (attack, value)
            assert not any(value in o for o in outputs), (attack, value, [o for o in outputs if value in o][:1])


# (case, the partition declaration, the contract that classifies the column: this one or another)
PARTITIONED = [
    ("static values that guess a classified column", {"type": "static", "values": ["111-22-3333", PLANTED],
                                                      "column": "ssn"}, "this"),
    ("days of a classified date", {"type": "daily", "start": "2026-01-01", "column": "born"}, "this"),
    ("a column another contract classifies", {"type": "static", "values": ["x"], "column": "ssn"}, "other"),
]


@pytest.mark.parametrize("case, declaration, by", PARTITIONED, ids=[r[0] for r in PARTITIONED])
def test_a_classified_column_cannot_partition_a_table(tmp_path, case, declaration, by):
    """Each partition's results would tell which values exist: such a contract is refused at load."""
    from dq_contracts.odcs.load import load_contracts

    server = {"server": "local", "type": "duckdb", "database": str(tmp_path / "wh.duckdb")}
    mark = {"classification": "pii"} if by == "this" else {}
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "p", "version": "1.0.0", "status": "active",
           "servers": [server], "schema": [{"name": "people", "customProperties": [
               {"property": "dagsterPartitions", "value": declaration}], "properties": [
               {"name": "ssn", "logicalType": "string", **mark},
               {"name": "born", "logicalType": "date", **mark}]}]}
    (tmp_path / "p.odcs.yaml").write_text(yaml.safe_dump(doc))
    if by == "other":
        (tmp_path / "a.odcs.yaml").write_text(yaml.safe_dump(
            contract("a", server, "people", "ssn", classified=True, asset="a/people")))
    loaded = load_contracts([tmp_path])
    problems = [p for p in loaded.errors if p.file.endswith("p.odcs.yaml")]
    assert any(f"partition column {declaration['column']!r} is classified" in p.message for p in problems), problems
    assert "p.odcs.yaml" in {Path(r.file).name for r in loaded.rejected}
