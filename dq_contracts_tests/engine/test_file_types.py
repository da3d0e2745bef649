"""A file server's columns as the contract declares them where DuckDB's reader only guessed their type
(engine/file_types.py): the cases of cases/typed/files.yaml, each a file written as its text."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.runner import run_object
from dq_contracts.odcs.load import load_contracts

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "typed" / "files.yaml").read_text())
CASE_KEYS = {"case", "format", "text", "properties", "expect", "errors", "xfail"}


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_a_guessed_column_is_read_as_declared(case, tmp_path, request):
    assert set(case) <= CASE_KEYS, "a key the cases do not know"
    if case.get("xfail"):
        request.applymarker(pytest.mark.xfail(reason=case["xfail"], strict=True))
    fmt = case["format"]
    (tmp_path / f"t.{fmt}").write_text(case["text"])
    server = {"server": "files", "type": "local", "format": fmt, "path": "{object}." + fmt}
    path = tmp_path / "c.odcs.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "c", "version": "1.0.0", "status": "active",
        "servers": [server], "schema": [{"name": "t", "properties": case["properties"]}]}))
    loaded = load_contracts([path])
    assert loaded.problems == [], [p.message for p in loaded.problems]
    plan = loaded.plans[0]
    connection = connection_for(server, {}, str(tmp_path))
    engine = engine_for(connection)
    try:
        results = {r.name: r for r in run_object(plan, plan.objects[0], engine, files=connection.files)}
    finally:
        engine.dispose()
    said = {n: (r.passed, r.observed, r.error, r.message) for n, r in results.items()}
    assert {n: [results[n].passed, results[n].observed] for n in case["expect"]} == case["expect"], said
    assert all(results[n].error is None for n in case["expect"]), said
    assert all(text in (results[n].error or "") for n, text in (case.get("errors") or {}).items()), said
