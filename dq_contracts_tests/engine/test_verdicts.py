"""A right verdict for every clause on a bad day, on DuckDB and PostgreSQL: no crash, no false pass,
every object checked. Each case is data: the table as it is, the contract as written, and what each
check must say."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.engine.verdicts import Unmeasurable, judge_count
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.odcs.plans import CheckPlan, Condition
from dq_contracts_tests.support import duckdb_with
from dq_contracts_tests.support import plan_of

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
NAIVE_HOUR_AGO = "2026-06-01 11:00:00"  # written as naive UTC
TOMORROW = "2026-06-02 12:00:00"


@dataclass(frozen=True)
class Expect:
    passed: bool
    observed: Any = "any"
    error: str | None = None  # a substring of the error; None: no error
    details: dict[str, Any] = field(default_factory=dict)  # keys that must equal
    samples: list[Any] | None = None


@dataclass(frozen=True)
class Case:
    name: str
    setup: list[str]  # SQL run on the warehouse first (portable to DuckDB and PostgreSQL)
    objects: list[dict]
    expect: dict[str, Expect]  # check name → what it says
    sla: list[dict] = field(default_factory=list)


T_SCHEMA = [{"name": "t", "properties": [
    {"name": "a", "logicalType": "integer", "physicalType": "VARCHAR", "required": True},
    {"name": "b", "logicalType": "integer"},
    {"name": "c", "logicalType": "string", "required": True},
]}]

CASES = [
    Case("schema differences are one readable result, and the other clauses still report",
         ["CREATE TABLE t (a INTEGER, b VARCHAR(10), extra INTEGER)", "INSERT INTO t VALUES (1, 'x', 2)"],
         T_SCHEMA,
         {"schema": Expect(False, 3, details={"missing": ["c"], "undeclared_columns": ["extra"],
                                              "required_but_nullable": ["a"]}),
          "a__not_null": Expect(True, 0),
          "c__not_null": Expect(False, None, error="c")}),  # the missing column fails its own clause only
    Case("a multipleOf on a text column fails alone, with the likely cause",
         ["CREATE TABLE t (a VARCHAR(10), b INTEGER)", "INSERT INTO t VALUES ('x', 1)"],
         [{"name": "t", "properties": [
             {"name": "a", "logicalType": "number", "logicalTypeOptions": {"multipleOf": 1}},
             {"name": "b", "logicalType": "integer", "required": True}]}],
         {"a__multiple_of": Expect(False, None, error="not a number (see the schema check)"),
          "b__not_null": Expect(True, 0),
          "schema": Expect(False, 1, details={"required_but_nullable": ["b"]})}),  # a: number stored as text
    Case("a broken relationship shows its orphan keys",
         ["CREATE TABLE orders (id INTEGER)", "INSERT INTO orders VALUES (1)",
          "CREATE TABLE items (order_id INTEGER)", "INSERT INTO items VALUES (1), (99), (NULL)"],
         [{"name": "orders", "properties": [{"name": "id", "logicalType": "integer"}]},
          {"name": "items", "properties": [{"name": "order_id", "logicalType": "integer",
                                            "relationships": [{"to": "orders.id"}]}]}],
         {"order_id__references_orders": Expect(False, 1, samples=[99])}),
    Case("a newest value in the future fails, with the reason",
         ["CREATE TABLE t (ts TIMESTAMP)", f"INSERT INTO t VALUES ('{NAIVE_HOUR_AGO}'), ('{TOMORROW}')"],
         [{"name": "t", "properties": [{"name": "ts", "logicalType": "timestamp"}]}],
         {"ts__freshness": Expect(False, -86400.0, error="in the future")},
         sla=[{"property": "latency", "value": 2, "unit": "d", "element": "t.ts"}]),
    Case("a naive timestamp is read as UTC",
         ["CREATE TABLE t (ts TIMESTAMP)", f"INSERT INTO t VALUES ('{NAIVE_HOUR_AGO}')"],
         [{"name": "t", "properties": [{"name": "ts", "logicalType": "timestamp"}]}],
         {"ts__freshness": Expect(True, 3600.0)},
         sla=[{"property": "latency", "value": 2, "unit": "h", "element": "t.ts"}]),
    Case("a stale date fails with its age",
         ["CREATE TABLE t (d DATE)", "INSERT INTO t VALUES ('2026-05-01')"],
         [{"name": "t", "properties": [{"name": "d", "logicalType": "date"}]}],
         {"d__freshness": Expect(False, 31 * 86400.0 + 12 * 3600.0)},
         sla=[{"property": "latency", "value": 2, "unit": "d", "element": "t.d"}]),
    Case("freshness of a column that holds text fails with a clear error",
         ["CREATE TABLE t (ts VARCHAR(30))", f"INSERT INTO t VALUES ('{NAIVE_HOUR_AGO}')"],
         [{"name": "t", "properties": [{"name": "ts"}]}],
         {"ts__freshness": Expect(False, None, error="not a date or timestamp: freshness needs one"),
          "schema": Expect(True, 0)},
         sla=[{"property": "latency", "value": 2, "unit": "d", "element": "t.ts"}]),
    Case("freshness of an empty table fails",
         ["CREATE TABLE t (ts TIMESTAMP)"],
         [{"name": "t", "properties": [{"name": "ts", "logicalType": "timestamp"}]}],
         {"ts__freshness": Expect(False, None, error="holds no value")},
         sla=[{"property": "latency", "value": 2, "unit": "d", "element": "t.ts"}]),
    Case("a SQL rule must answer one row of one column",
         ["CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1), (2)"],
         [{"name": "t", "properties": [{"name": "a", "logicalType": "integer"}], "quality": [
             {"type": "sql", "name": "per_group", "query": "SELECT COUNT(*) FROM {object} GROUP BY a", "mustBe": 1},
             {"type": "sql", "name": "two_columns", "query": "SELECT 0, 1 FROM {object} LIMIT 1", "mustBe": 0},
             {"type": "sql", "name": "one_value", "query": "SELECT COUNT(*) FROM {object}", "mustBe": 2}]}],
         {"per_group": Expect(False, None, error="several rows"),
          "two_columns": Expect(False, None, error="2 columns"),
          "one_value": Expect(True, 2)}),
    Case("an object of any physicalType is checked",
         ["CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (NULL)"],
         [{"name": "t", "physicalType": "parquet", "properties": [
             {"name": "a", "logicalType": "integer", "required": True}]}],
         {"schema": Expect(True, 0), "a__not_null": Expect(False, 1)}),
]


def run_case(case: Case, server: dict, environ: dict, writer: sa.Engine, tmp_path) -> dict:
    with writer.begin() as c:
        for statement in case.setup:
            c.exec_driver_sql(statement)
    writer.dispose()
    doc = {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "v", "version": "1.0.0", "status": "active",
           "servers": [server], "schema": case.objects}
    if case.sla:
        doc["slaProperties"] = case.sla
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        return {r.name: r for r in run_contract(plan, warehouses, now=NOW)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_verdict(case, warehouse, tmp_path):  # noqa: F811 - the fixture
    server, environ, writer = warehouse
    results = run_case(case, server, environ, writer, tmp_path)
    for name, expect in case.expect.items():
        got = results[name]
        assert got.passed is expect.passed, (name, got)
        if expect.observed != "any":
            if isinstance(expect.observed, float):
                assert got.observed == pytest.approx(expect.observed, abs=1), (name, got)
            else:
                assert got.observed == expect.observed, (name, got)
        if expect.error is None:
            assert got.error is None, (name, got.error)
        else:
            assert got.error and expect.error in got.error, (name, got.error)
        for key, value in expect.details.items():
            assert got.details[key] == value, (name, key, got.details)
        if expect.samples is not None:
            assert got.samples == expect.samples, (name, got.samples)
    assert all(r.error is None or "internal error" not in r.error for r in results.values())


def test_schema_types_are_compared_by_physical_then_logical_type(warehouse, tmp_path):  # noqa: F811
    server, environ, writer = warehouse
    case = CASES[0]
    results = run_case(case, server, environ, writer, tmp_path)
    details = results["schema"].details
    assert len(details["type_mismatches"]) == 1 and details["type_mismatches"][0].startswith(
        "a: declared VARCHAR, found ")
    assert len(details["logical_type_mismatches"]) == 1 and details["logical_type_mismatches"][0].startswith(
        "b: declared logicalType integer, found ")  # as the catalog spells it: VARCHAR, character varying(10)


@pytest.mark.postgres
def test_a_naive_timestamp_is_utc_whatever_the_session_time_zone(pg_database, tmp_path):
    from dq_contracts_tests.support import pg_env, pg_server

    admin = sa.create_engine(pg_database, isolation_level="AUTOCOMMIT")
    name = sa.make_url(pg_database).database
    with admin.connect() as c:  # every new session of this database starts in Tokyo
        c.exec_driver_sql(f"ALTER DATABASE \"{name}\" SET timezone TO 'Asia/Tokyo'")
    admin.dispose()
    engine = sa.create_engine(pg_database)
    with engine.connect() as c:
        assert c.exec_driver_sql("SHOW timezone").scalar() == "Asia/Tokyo"
    results = run_case(CASES[4], pg_server(pg_database), pg_env(pg_database), engine, tmp_path)
    assert results["ts__freshness"].passed and results["ts__freshness"].observed == pytest.approx(3600, abs=1)


def test_check_never_says_internal_error_on_a_table_that_differs_from_its_contract(tmp_path):
    duckdb_with(tmp_path / "wh.duckdb", "CREATE TABLE t (a INTEGER, b VARCHAR, extra INTEGER)",
                "INSERT INTO t VALUES (1, 'x', 2)")
    doc = {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "v", "version": "1.0.0", "status": "active",
           "servers": [{"server": "local", "type": "duckdb", "database": "wh.duckdb"}], "schema": T_SCHEMA}
    (tmp_path / "v.odcs.json").write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "v.odcs.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1 and "internal error" not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "3 check(s): 1 pass, 0 warn, 1 fail, 1 error" in proc.stdout
    assert "column c is missing from the table (see the schema check)" in proc.stdout  # its words, not the engine's


# --- names of several parts, the same in every query ------------------------------------------------

def n_part_objects(name: str) -> list[dict]:
    return [{"name": "t", "physicalName": name, "properties": [
        {"name": "id", "logicalType": "integer", "primaryKey": True, "primaryKeyPosition": 1},
        {"name": "k", "logicalType": "integer", "primaryKey": True, "primaryKeyPosition": 2},
        {"name": "parent", "logicalType": "integer", "relationships": [{"to": "t.id"}]},
        {"name": "code", "logicalType": "string", "logicalTypeOptions": {"pattern": "^[a-z]+$"}}],
        "quality": [{"type": "sql", "name": "rows", "query": "SELECT COUNT(*) FROM {object}", "mustBe": 2}]}]


# 1: the bare name in the server's schema; 2: the schema written out. (A catalog, or a schema other
# than the server's, is the operator's to allow: test_boundary.py.)
@pytest.mark.parametrize("parts", [1, 2])
def test_a_name_of_several_parts_is_quoted_part_by_part_in_every_query(warehouse, tmp_path, parts):  # noqa: F811
    server, environ, writer = warehouse
    server = {**server, "schema": "odd schema"}
    dialect = writer.dialect.name
    catalog = "wh" if dialect == "duckdb" else sa.make_url(str(writer.url)).database
    with writer.begin() as c:
        c.exec_driver_sql('CREATE SCHEMA "odd schema"')
        c.exec_driver_sql('CREATE TABLE "odd schema".t (id INTEGER, k INTEGER, parent INTEGER, code VARCHAR(5))')
        c.exec_driver_sql("""INSERT INTO "odd schema".t VALUES (1, 1, NULL, 'ab'), (2, 1, 7, 'X1')""")
    writer.dispose()
    name = ".".join([catalog, "odd schema", "t"][-parts:])
    doc = {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "v", "version": "1.0.0", "status": "active",
           "servers": [server], "schema": n_part_objects(name)}
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses, now=NOW)}
    assert {n: (r.passed, r.observed, r.error) for n, r in results.items()} == {
        "schema": (True, 0, None),
        "primary_key": (True, 0, None),
        "parent__references_t": (False, 1, None),
        "code__pattern": (False, 1, None),
        "rows": (True, 2, None),
    }
    assert results["parent__references_t"].samples == [7] and results["code__pattern"].samples == ["X1"]
    for r in results.values():  # one quoted identifier per part, never a dotted name as one identifier
        if r.name != "schema":
            assert '"odd schema".' in r.sql and '"odd schema.t"' not in r.sql, r.sql
            assert f'"{catalog}.odd schema"' not in r.sql, r.sql


# --- a measure never passes when what it depends on was not measured ---------------------------------

def test_a_percent_of_a_row_count_that_was_not_measured_never_passes():
    check = CheckPlan("x", "duplicate_values", "/p", "t", None, "ERROR", "", (Condition("mustBeLessThan", 5),),
                      unit="percent", params={"columns": ["a", "b"]})
    with pytest.raises(Unmeasurable, match="row count could not be measured"):
        judge_count(check, 0, None, CheckedObject.__new__(CheckedObject))
    assert judge_count(check, 1, 10, CheckedObject.__new__(CheckedObject)).observed == 10.0


# --- the compiler's side -----------------------------------------------------------------------------

from dq_contracts.odcs.load import load_contracts  # noqa: E402

HEAD = "apiVersion: {api}\nkind: DataContract\nid: {id}\nversion: {version}\nstatus: active\n"
TABLE = ("schema:\n  - name: {table}\n    properties:\n      - {{name: id, logicalType: integer}}\n"
         "      - {{name: ts, logicalType: timestamp}}\n      - {{name: n, logicalType: integer}}\n")


def contract_text(api="v3.1.0", id="c", version="1.0.0", table="t", extra="") -> str:
    return HEAD.format(api=api, id=id, version=version) + TABLE.format(table=table) + extra


TWO_LATENCIES = ("slaProperties:\n"
                 "  - {property: latency, value: 1, unit: d, element: t.ts}\n"
                 "  - {property: latency, value: 2, unit: d, element: t.ts, scheduler: cron, schedule: '0 * * * *'}\n")


def test_two_latencies_on_one_column_keep_their_freshness_and_schedule(tmp_path):
    path = tmp_path / "c.odcs.yaml"
    path.write_text(contract_text(extra=TWO_LATENCIES))
    result = load_contracts([path])
    assert result.problems == []
    plan = result.plans[0]
    names = {c.name for c in plan.objects[0].checks}
    fresh = [c.name for c in plan.objects[0].checks if c.kind == "freshness"]
    assert len(fresh) == 2 and len(set(fresh)) == 2
    assert {f.check_name for f in plan.freshness} == set(fresh)  # each policy names a check that exists
    assert [s.checks for s in plan.schedules] == [(("t", fresh[1]),)] and set(fresh) <= names


CLAUSE_WARNINGS = [
    # (quality or relationship text under the object, the warning, the check that will fail)
    ("    relationships:\n      - {from: t.id, to: t.nope}\n", "'t' declares no such column", "id__references_t"),
    ("    quality:\n      - {metric: duplicateValues, arguments: {properties: [id, nope]}, mustBe: 0}\n",
     "duplicateValues names 'nope'", "duplicate_values"),
]


@pytest.mark.parametrize("text, warning, check", CLAUSE_WARNINGS, ids=["relationship", "duplicateValues"])
def test_a_missing_column_reference_is_a_problem_and_its_check_fails(tmp_path, text, warning, check):
    path = tmp_path / "c.odcs.yaml"
    path.write_text(contract_text(extra="") + text)
    result = load_contracts([path])
    assert [(p.severity, p.reach) for p in result.problems] == [("warning", "clause")]
    assert warning in result.problems[0].message
    checks = {c.name: c for c in result.usable_plans[0].objects[0].checks}
    assert warning in checks[check].params["refusal"]


def test_a_freshness_element_declared_as_a_number_is_a_problem_and_its_check_fails(tmp_path):
    path = tmp_path / "c.odcs.yaml"
    path.write_text(contract_text(extra="slaProperties:\n  - {property: latency, value: 1, unit: d, element: t.n}\n"))
    result = load_contracts([path])
    assert [p.severity for p in result.problems] == ["warning"]
    assert "declared logicalType integer: freshness needs a date or timestamp" in result.problems[0].message
    (check,) = [c for c in result.plans[0].objects[0].checks if c.kind == "freshness"]
    assert "freshness needs a date or timestamp" in check.params["refusal"]


NAME_CLASHES = [
    # (first contract, second contract): their short names would clash; the one whose id sorts later
    # takes a longer one, and both load (the names checked are the names built)
    (dict(id="orders", version="1.0.0", table="orders_v1"), dict(id="orders", version="2.0.0", table="orders_v2")),
    (dict(id="sales.orders", table="a"), dict(id="sales-orders", table="b")),
]


@pytest.mark.parametrize("first, second", NAME_CLASHES, ids=["two versions", "ids differing in punctuation"])
def test_contracts_whose_short_names_would_clash_load_under_distinct_names(tmp_path, first, second):
    import dagster as dg

    from dq_contracts.dagster_defs.definitions import build_contract_defs

    (tmp_path / "a.odcs.yaml").write_text(contract_text(**first))
    (tmp_path / "b.odcs.yaml").write_text(contract_text(**second))
    result = load_contracts([tmp_path])
    assert result.errors == []
    assert sorted(Path(p.file).name for p in result.usable_plans) == ["a.odcs.yaml", "b.odcs.yaml"]
    assert len(set(result.prefixes.values())) == 2
    defs = build_contract_defs(tmp_path, contract_jobs=True)
    dg.Definitions.validate_loadable(defs)
    jobs = {job.name for job in defs.resolve_all_job_defs()}
    assert {f"{prefix}__checks" for prefix in result.prefixes.values()} <= jobs


API_VERSIONS = [
    # (apiVersion as written, accepted?, what the problem says)
    ("v3.0.0", True, None), ("v3.0.1", True, None), ("v3.0.2", True, None), ("v3.1.0", True, None),
    ("v3.2.0", True, None), ("v3.3.0", True, "newer than the newest version known"),
    ("3.1.0", False, "not an ODCS apiVersion"), ("v3.1", False, "not an ODCS apiVersion"),
    ("v3.1.0-rc1", False, "not an ODCS apiVersion"), ("v3.1.1", False, "not an ODCS apiVersion"),
    ("v2.2.2", False, "ODCS v2"),
]


@pytest.mark.parametrize("api, accepted, says", API_VERSIONS, ids=[a for a, _, _ in API_VERSIONS])
def test_api_version_is_judged_as_the_official_enum_judges_it(tmp_path, api, accepted, says):
    path = tmp_path / "c.odcs.yaml"
    text = contract_text(api=api).replace("logicalType: timestamp", "logicalType: date")  # valid in v3.0 too
    path.write_text(text)
    result = load_contracts([path])
    assert (result.errors == []) is accepted, [p.render() for p in result.problems]
    if says:
        assert any(says in p.message for p in result.problems), [p.render() for p in result.problems]
    else:
        assert result.problems == []


def test_a_v30_role_with_keys_v31_closed_is_accepted(tmp_path):
    path = tmp_path / "c.odcs.yaml"
    path.write_text(contract_text(api="v3.0.0").replace("logicalType: timestamp", "logicalType: date")
                    + "roles:\n  - {role: analyst, access: read, approvalProcess: ticket}\n")
    assert load_contracts([path]).problems == []


def test_each_kind_declares_its_parameters():
    """A key a kind does not declare is an error where the plan is built, not a crash where it runs."""
    ok = CheckPlan("x", "range", "/p", "t", "a", "ERROR", "", params={"column": "a", "bound": 1, "lower": True,
                                                                        "strict": False})
    assert ok.params["bound"] == 1 and ok.params.get("format") is None and dict(ok.params)["lower"] is True
    with pytest.raises(TypeError, match="colum"):
        CheckPlan("x", "range", "/p", "t", "a", "ERROR", "", params={"colum": "a", "bound": 1})
    with pytest.raises(KeyError):
        ok.params["pattern"]  # noqa: B018 - a range has no pattern


EDGE_CASES = [
    Case("a zoned timestamp bound is applied in UTC, not dropped",
         ["CREATE TABLE t (ts TIMESTAMP)", "INSERT INTO t VALUES ('2023-12-31 12:00:00')"],
         [{"name": "t", "properties": [{"name": "ts", "logicalType": "timestamp",
                                         "logicalTypeOptions": {"minimum": "2023-12-31T08:00:00-05:00"}}]}],
         {"ts__minimum": Expect(False, 1)}),  # the bound is 13:00 UTC; the value is 12:00 UTC
    Case("NaN never passes",
         ["CREATE TABLE t (a DOUBLE PRECISION)", "INSERT INTO t VALUES ('NaN')"],
         [{"name": "t", "properties": [{"name": "a", "logicalType": "number"}], "quality": [
             {"type": "sql", "name": "mean", "query": "SELECT AVG(a) FROM {object}", "mustNotBeBetween": [-1, 0]}]}],
         {"mean": Expect(False)}),
]


@pytest.mark.parametrize("case", EDGE_CASES, ids=[c.name for c in EDGE_CASES])
def test_edge_verdict(case, warehouse, tmp_path):  # noqa: F811 - the fixture
    test_verdict(case, warehouse, tmp_path)


@pytest.mark.postgres
def test_a_column_spelt_otherwise_fails_the_schema_check_on_postgresql(pg_database, tmp_path):
    from dq_contracts_tests.support import pg_env, pg_server

    case = Case("case", ['CREATE TABLE t ("Amount" INTEGER)', "INSERT INTO t VALUES (1)"],
                [{"name": "t", "properties": [{"name": "amount", "logicalType": "integer", "required": True}]}],
                {})
    results = run_case(case, pg_server(pg_database), pg_env(pg_database), sa.create_engine(pg_database), tmp_path)
    assert not results["schema"].passed and "spells it 'Amount'" in results["schema"].details["type_mismatches"][0]
    assert not results["amount__not_null"].passed  # and the clause that cannot find it does not pass either


PG_SPELLINGS = [("timestamp(3)", "TIMESTAMP(3) WITHOUT TIME ZONE"), ("timestamptz(3)", "TIMESTAMP(3) WITH TIME ZONE"),
                ("timetz", "TIME WITH TIME ZONE"), ("character(3)", "CHAR(3)"), ("int4", "INTEGER"),
                ("varchar(2)", "VARCHAR(2)"), ("numeric(12,2)", "NUMERIC(12, 2)")]


@pytest.mark.parametrize("declared, found", PG_SPELLINGS)
def test_postgresql_type_spellings_compare_equal(declared, found):
    from dq_contracts.engine.schema_check import same_type

    assert same_type(found, declared)


def test_a_multiple_of_finer_than_the_engine_checks_is_not_enforced(tmp_path):
    path = tmp_path / "c.odcs.yaml"
    path.write_text(contract_text().replace("{name: n, logicalType: integer}",
                                            "{name: n, logicalType: number, logicalTypeOptions: {multipleOf: 1.0e-11}}"))
    plan = load_contracts([path]).plans[0]
    assert [n.code for n in plan.not_enforced] == ["not_comparable"] and "10 decimal places" in plan.not_enforced[0].reason
