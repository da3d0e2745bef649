"""One result, every clause: a check built from several clauses (a compound primary key, a v3.0
rewrite that merged two options) lists every clause it answers, with its file and line, in
`check --format json`, in its Dagster check spec and evaluation, and in `report`.

The expected lines are written in the table by hand, counted in the contract text below: an oracle
that does not go through the loader's own line finder."""

from __future__ import annotations

import json
import subprocess
import sys

import dagster as dg
import duckdb
import pytest

from dq_contracts import build_contract_defs
from dq_contracts.dagster_defs.report import build_report, report_text
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import run_checks

# 13 lines: the first property is on line 14
HEADER = """\
apiVersion: {api}
kind: DataContract
id: every-clause
version: 1.0.0
status: active
servers:
  - server: local
    type: duckdb
    database: ../w.duckdb
schema:
  - name: t
    physicalName: t
    properties:
"""

P = "/schema/0/properties"
W = "schema.t.properties"

# (id, apiVersion, properties (from line 14), the table's rows, check, passes, [(pointer, line, named path)])
CASES = [
    ("compound key of two columns, a duplicate tuple", "v3.1.0", """\
      - name: a
        logicalType: integer
        primaryKey: true
      - name: b
        logicalType: integer
        primaryKey: true
""", "SELECT * FROM (VALUES (1, 1), (1, 1), (2, 1)) v(a, b)", "primary_key", False,
     [(f"{P}/0/primaryKey", 16, f"{W}.a.primaryKey"), (f"{P}/1/primaryKey", 19, f"{W}.b.primaryKey")]),
    ("compound key of three columns in primaryKeyPosition order", "v3.1.0", """\
      - name: a
        logicalType: integer
        primaryKey: true
        primaryKeyPosition: 2
      - name: b
        logicalType: integer
        primaryKey: true
        primaryKeyPosition: 1
      - name: c
        logicalType: integer
        primaryKey: true
        primaryKeyPosition: 3
""", "SELECT * FROM (VALUES (1, 1, 1), (1, 2, 1)) v(a, b, c)", "primary_key", True,
     [(f"{P}/1/primaryKey", 20, f"{W}.b.primaryKey"), (f"{P}/0/primaryKey", 16, f"{W}.a.primaryKey"),
      (f"{P}/2/primaryKey", 24, f"{W}.c.primaryKey")]),
    ("v3.0 exclusiveMinimum true merged with minimum", "v3.0.2", """\
      - name: x
        logicalType: integer
        logicalTypeOptions:
          minimum: 0
          exclusiveMinimum: true
""", "SELECT * FROM (VALUES (0), (1)) v(x)", "x__exclusive_minimum", False,
     [(f"{P}/0/logicalTypeOptions/exclusiveMinimum", 18, f"{W}.x.logicalTypeOptions.exclusiveMinimum"),
      (f"{P}/0/logicalTypeOptions/minimum", 17, f"{W}.x.logicalTypeOptions.minimum")]),
    ("v3.0 exclusiveMaximum false dropped into maximum", "v3.0.2", """\
      - name: x
        logicalType: integer
        logicalTypeOptions:
          maximum: 10
          exclusiveMaximum: false
""", "SELECT * FROM (VALUES (10), (11)) v(x)", "x__maximum", False,
     [(f"{P}/0/logicalTypeOptions/maximum", 17, f"{W}.x.logicalTypeOptions.maximum"),
      (f"{P}/0/logicalTypeOptions/exclusiveMaximum", 18, f"{W}.x.logicalTypeOptions.exclusiveMaximum")]),
    ("one clause, one pointer", "v3.1.0", """\
      - name: a
        logicalType: integer
        primaryKey: true
""", "SELECT * FROM (VALUES (1), (1)) v(a)", "a__primary_key", False,
     [(f"{P}/0/primaryKey", 16, f"{W}.a.primaryKey")]),
]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case(request, tmp_path):
    _, api, properties, rows, check, passes, answers = request.param
    (tmp_path / "contracts").mkdir()
    text = HEADER.format(api=api) + properties
    (tmp_path / "contracts" / "c.odcs.yaml").write_text(text)
    for _, line, where in answers:  # the table's lines are the text's
        assert where.split(".")[-1] + ":" in text.splitlines()[line - 1], (line, where)
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute(f"CREATE TABLE t AS {rows}")
    return tmp_path, check, passes, answers


def _locations(answers):
    return [f"contracts/c.odcs.yaml:{line} {where}" for _, line, where in answers]


def test_check_json_lists_every_clause_it_answers(case):
    folder, name, passes, answers = case
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts", "--format", "json"],
                          cwd=folder, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == (0 if passes else 1), proc.stderr
    result = next(r for r in json.loads(proc.stdout)["results"] if r["name"] == name)
    assert result["passed"] is passes and result["error"] is None
    assert result["clause"] == answers[0][0]  # the first, as before
    assert result["clauses"] == [a[0] for a in answers]
    assert result["locations"] == _locations(answers)
    plan = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "plan", "contracts"],
                          cwd=folder, capture_output=True, text=True, timeout=120, check=False)
    line = next(text for text in plan.stdout.splitlines() if text.strip().startswith(name + " "))
    assert all(a[0] in line for a in answers), line


def test_dagster_spec_evaluation_and_report_list_every_clause_it_answers(case, monkeypatch):
    folder, name, passes, answers = case
    monkeypatch.chdir(folder)  # the plan's file is as loaded: contracts/c.odcs.yaml
    pointers, locations = [a[0] for a in answers], _locations(answers)
    defs = build_contract_defs("contracts")
    spec = next(s for checks in defs.asset_checks or [] for s in checks.check_specs if s.name == name)
    assert spec.metadata["dq_contracts/pointer"] == pointers[0]
    assert spec.metadata["dq_contracts/pointers"].value == pointers
    assert spec.metadata["dq_contracts/clauses"].value.splitlines() == locations
    assert [r.line_number for r in spec.metadata["dagster/code_references"].code_references] == [
        a[1] for a in answers]
    if len(answers) > 1:
        assert all(location in spec.description for location in locations), spec.description
    (folder / "home").mkdir()
    with dg.DagsterInstance.local_temp(str(folder / "home")) as instance:
        result = run_checks(defs, instance=instance)
        evaluation = next(e for e in result.get_asset_check_evaluations() if e.check_name == name)
        assert evaluation.passed is passes
        assert evaluation.metadata["dq_contracts/pointer"].value == pointers[0]
        assert evaluation.metadata["dq_contracts/pointers"].value == pointers
        assert evaluation.metadata["dq_contracts/clauses"].value.splitlines() == locations
        report = build_report(load_contracts(["contracts"]).usable_plans, instance)
    entry = next(c for c in report["contracts"][0]["assets"][0]["clauses"] if c["name"] == name)
    assert entry["status"] == ("pass" if passes else "fail")
    assert (entry["clause"], entry["clauses"], entry["locations"]) == (pointers[0], pointers, locations)
    text = report_text(report)
    if not passes:  # a failing check's line, then where each clause it answers is written
        lines = text.splitlines()
        at = next(i for i, line in enumerate(lines) if f"t.{name}  " in line)
        assert [line.strip() for line in lines[at + 1:at + 1 + len(locations)]] == locations, text
