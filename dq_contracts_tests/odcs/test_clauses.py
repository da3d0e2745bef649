"""One test per row of the clause table, from cases/clauses.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dq_contracts.odcs.load import load_contracts

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "clauses.yaml").read_text())


def build(case: dict) -> dict:
    obj = {"name": "t", "physicalName": "t", "properties": [{"name": "ts", "logicalType": "timestamp"}]}
    if "property" in case:
        obj["properties"].insert(0, case["property"])
    for key, value in (case.get("object") or {}).items():
        obj[key] = value
    doc = {"apiVersion": case.get("api", "v3.1.0"), "kind": "DataContract", "id": "c", "version": "1.0.0",
           "status": "active", "schema": [obj]}
    if "sla" in case:
        doc["slaProperties"] = [case["sla"]]
    if "servers" in case:
        doc["servers"] = case["servers"]
    return doc


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_clause(case, tmp_path):
    path = tmp_path / "c.odcs.yaml"
    path.write_text(yaml.safe_dump(build(case)))
    result = load_contracts([path])
    expect = case["expect"]
    messages = [p.message for p in result.problems]
    if "problem" in expect:
        assert any(expect["problem"] in m for m in messages), messages
        if "problem_at" in expect:  # where it is: the named path's end, and a line of the file
            found = next(p for p in result.problems if expect["problem"] in p.message)
            assert found.path.endswith(expect["problem_at"]) and found.line is not None, (found.path, found.line)
    elif "warning" in expect:
        assert any(expect["warning"] in p.message and p.severity == "warning" for p in result.problems)
    else:
        assert result.problems == [], messages
    if not result.plans:
        return
    plan = result.plans[0]
    checks = [c for c in plan.objects[0].checks if c.kind != "schema" or expect.get("kind") == "schema"]
    if "not_enforced" in expect:
        assert [n.code for n in plan.not_enforced] == [expect["not_enforced"]]
        assert plan.not_enforced[0].reason
        return
    if "name" in expect or "kind" in expect:
        matches = [c for c in checks if c.name == expect.get("name", c.name) and c.kind == expect.get("kind", c.kind)]
        assert len(matches) == 1, [(c.name, c.kind) for c in checks]
        check = matches[0]
        assert check.severity == expect.get("severity", "ERROR")
        assert check.blocking == (check.severity == "ERROR")
        for key, value in (expect.get("params") or {}).items():
            assert check.params[key] == value, (key, check.params)
        if "unit" in expect:
            assert check.unit == expect["unit"]
        if "threshold" in expect:
            assert check.threshold_text() == expect["threshold"]
        if "warn_threshold" in expect:  # the warn level beside the fail level (`threshold`); null: none
            assert check.warn_threshold_text() == expect["warn_threshold"]
        if "clauses" in expect:
            assert len(check.clauses) == expect["clauses"]
        if "classified" in expect:
            assert plan.objects[0].column(check.property).classified is expect["classified"]
        if "freshness_seconds" in expect:
            assert [f.fail_window_seconds for f in plan.freshness] == [expect["freshness_seconds"]]
            assert plan.freshness[0].check_name == check.name
    if "schedule" in expect:
        assert [s.cron for s in plan.schedules] == [expect["schedule"]]
        assert plan.schedules[0].checks
