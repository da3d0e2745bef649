"""The engine's cases, one file per check kind (cases/<kind>.yaml), as sqlfluff keeps rule cases: a
snippet of a contract, a small table, and what the engine must say of it, on DuckDB, PostgreSQL, MariaDB
(there as a user granted SELECT alone, through the operator's declaration), Snowflake (emulated by fakesnow)
and Spark (a Thrift server the tests start). On Spark a case takes some 1.4 s, so a default run takes one
passing and one failing case of each kind there (SPARK_CASES); `DQ_SPARK=full` runs every case.

A case holds `case` (its name); the ODCS snippet as odcs/cases/clauses.yaml writes it (`property`
goes into the object `t`, `object` keys are merged into it, `sla` is one slaProperties item, `api`
the apiVersion); `columns` (name: SQL type) and `rows` (lists in the columns' order); `now` for
freshness; `expect`: `passed`, and where useful `observed`, `row_count`, `samples`, `error` (a part
of the error's text), and for a clause with a warn level `level` (pass, warn, fail; null when not
evaluated) and `status` (pass, warn, fail, error: what `check` shows and its exit code follows), and
`warning`, a part of the text of the warning the snippet draws from `validate` (any other problem fails). Every column the snippet does not declare is declared with the logicalType of
its SQL type, unless the case lists it in `undeclared`. `check` names the check when the snippet makes
more than one of the file's kind. `xfail: <why>` (or `{duckdb: <why>}`, `{postgres: <why>}`, `{mariadb: <why>}`,
`{spark: <why>}`) marks a
wrong verdict kept as a case until the engine is fixed.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from sqlalchemy.dialects import mysql

from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.runner import run_object
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import spark_table, special_floats

CASES_DIR = Path(__file__).parent / "cases"
KIND_CASES = {path.stem: yaml.safe_load(path.read_text()) for path in sorted(CASES_DIR.glob("*.yaml"))}
CASES = [(kind, case) for kind, cases in KIND_CASES.items() for case in cases]

CASE_KEYS = {"case", "api", "property", "object", "sla", "columns", "rows", "now", "undeclared", "check",
             "expect", "xfail"}
EXPECT_KEYS = {"passed", "observed", "row_count", "samples", "error", "level", "status", "warning"}

# SQL type name -> (SQLAlchemy type, the ODCS logicalType a column of it is declared with)
# (MySQL: a VARCHAR needs a length, a bare DECIMAL is DECIMAL(10,0), a DATETIME drops fractions)
TYPES = {
    "INTEGER": (sa.Integer, "integer"),
    "BIGINT": (sa.BigInteger, "integer"),
    "VARCHAR": (lambda *a: sa.String(*a) if a else sa.String().with_variant(sa.String(255), "mysql"), "string"),
    "TEXT": (sa.Text, "string"),
    "DECIMAL": (lambda *a: sa.Numeric(*a) if a else sa.Numeric().with_variant(sa.Numeric(38, 10), "mysql"),
                "number"),
    "DOUBLE": (sa.Double, "number"),
    "REAL": (lambda: sa.REAL().with_variant(mysql.FLOAT(), "mysql"), "number"),  # single precision (MySQL's REAL is not)
    "BOOLEAN": (sa.Boolean, "boolean"),
    "DATE": (sa.Date, "date"),
    "TIMESTAMP": (lambda: sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql"), "timestamp"),
    "TIME": (sa.Time, "time"),
}

WAREHOUSES = {"duckdb": (), "postgres": (pytest.mark.postgres,), "mariadb": (pytest.mark.mariadb,), "snowflake": (),
              "spark": (pytest.mark.spark,)}


def _xfail(case: dict, backend: str) -> str | None:
    why = case.get("xfail")
    return why.get(backend) if isinstance(why, dict) else why


def _spark_cases() -> list[tuple[str, dict]]:
    """Every case under `DQ_SPARK=full`; else, of each kind, its first passing and first failing case."""
    if os.environ.get("DQ_SPARK") == "full":
        return CASES
    chosen = {}
    for kind, case in CASES:
        if not _xfail(case, "spark"):
            chosen.setdefault((kind, case["expect"]["passed"]), case)
    return [(kind, case) for kind, case in CASES if chosen.get((kind, case["expect"]["passed"])) is case]


PARAMS = [pytest.param(kind, case, backend, marks=marks, id=f"{backend}-{kind}/{case['case']}")
          for backend, marks in WAREHOUSES.items()
          for kind, case in (_spark_cases() if backend == "spark" else CASES)]


def column_type(sql_type: str) -> tuple[sa.types.TypeEngine, str]:
    """`VARCHAR(8)` -> (String(8), "string"): the SQL type of a case's column and its logicalType."""
    name, args = re.fullmatch(r"\s*(\w+)\s*(?:\(([\d,\s]*)\))?\s*", sql_type).groups()
    factory, logical = TYPES[name.upper()]
    return factory(*(int(a) for a in args.split(","))) if args else factory(), logical


def contract(case: dict) -> dict:
    obj = {"name": "t", "physicalName": "t", **{k: v for k, v in (case.get("object") or {}).items()}}
    declared = ([case["property"]] if "property" in case else []) + list(obj.get("properties") or [])
    names = {p["name"] for p in declared} | set(case.get("undeclared") or ())
    fillers = [{"name": name, "logicalType": column_type(sql)[1]}
               for name, sql in case["columns"].items() if name not in names]
    obj["properties"] = declared + fillers
    doc = {"apiVersion": case.get("api", "v3.1.0"), "kind": "DataContract", "id": "c", "version": "1.0.0",
           "status": "active", "schema": [obj]}
    if "sla" in case:
        doc["slaProperties"] = [case["sla"]]
    return doc


def fill(engine: sa.Engine, case: dict) -> None:
    """The case's table `t`, built and filled with SQLAlchemy Core; names quoted as the checks quote
    them (Snowflake's dialect would otherwise make `t` the unquoted T)."""
    exact = lambda name: sa.sql.quoted_name(name, quote=True)  # noqa: E731
    table = sa.Table(exact("t"), sa.MetaData(), *(sa.Column(exact(name), column_type(sql)[0])
                                                  for name, sql in case["columns"].items()))
    table.metadata.create_all(engine)
    rows = [dict(zip(case["columns"], row, strict=True)) for row in case.get("rows") or []]
    if any(isinstance(v, float) and not math.isfinite(v) for row in rows for v in row.values()):
        with engine.begin() as c:  # a NaN or an infinity, written as a cast of its text
            c.execute(sa.insert(table).values([special_floats(row) for row in rows]))
    elif rows:
        with engine.begin() as c:
            c.execute(sa.insert(table), rows)


def utc(moment: dt.datetime | None) -> dt.datetime | None:
    return moment.replace(tzinfo=dt.timezone.utc) if moment and moment.tzinfo is None else moment


def same(expected, observed) -> bool:
    if isinstance(expected, float) and observed is not None:
        return float(observed) == pytest.approx(expected)
    return expected == observed


@pytest.fixture
def warehouse(request, warehouse_of):
    """conftest's warehouses, MariaDB, Snowflake emulated by fakesnow, and a Spark database."""
    return warehouse_of(request.param)


def checking(backend: str, warehouse) -> sa.Engine:
    """The engine the checks run on: on MariaDB the operator's, whose user may only read; on DuckDB
    the product's own (read-only, its values sent as literals), once the writer has let the file go."""
    if backend == "duckdb":
        warehouse[2].dispose()
    return engine_for(connection_for(warehouse[0], warehouse[1])) if backend in ("mariadb", "duckdb") else warehouse[2]


@pytest.mark.parametrize("kind, case, warehouse", PARAMS, indirect=["warehouse"])
def test_kind_case(kind, case, warehouse, tmp_path, request):
    assert set(case) <= CASE_KEYS and set(case["expect"]) <= EXPECT_KEYS, "a key the cases do not know"
    backend = request.node.callspec.params["warehouse"]
    why = _xfail(case, backend)
    if why:
        request.applymarker(pytest.mark.xfail(reason=why, strict=True))
    path = tmp_path / "c.odcs.yaml"
    path.write_text(yaml.safe_dump(contract(case)))
    loaded = load_contracts([path])
    warned = case["expect"].get("warning")  # the one warning the snippet must draw, if any
    problems = [p for p in loaded.problems if not (warned and warned in p.message and p.severity == "warning")]
    assert problems == [], [p.message for p in problems]
    assert not warned or len(problems) < len(loaded.problems), [p.message for p in loaded.problems]
    plan = loaded.plans[0]
    checks = [c for c in plan.objects[0].checks if c.kind == kind and c.name == case.get("check", c.name)]
    assert len(checks) == 1, [(c.name, c.kind) for c in plan.objects[0].checks]

    engine = warehouse[2]
    if backend == "spark":
        spark_table(engine, "t", case["columns"], case.get("rows") or [])
    else:
        fill(engine, case)
    [result] = run_object(plan, plan.objects[0], checking(backend, warehouse), selected=[checks[0].name],
                          now=utc(case.get("now")))
    said = dict(passed=result.passed, observed=result.observed, row_count=result.row_count,
                samples=result.samples, error=result.error, message=result.message, level=result.level,
                status=result.status)
    expect = case["expect"]
    assert result.passed is expect["passed"], said
    for key in ("level", "status"):
        if key in expect:
            assert said[key] == expect[key], said
    for key in ("observed", "row_count"):
        if key in expect:
            assert same(expect[key], said[key]), said
    if "samples" in expect:
        assert sorted(map(str, result.samples)) == sorted(map(str, expect["samples"])), said
    if "error" in expect:
        assert expect["error"] in (result.error or ""), said
    else:
        assert result.error is None, said
