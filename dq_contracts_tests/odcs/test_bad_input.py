"""Malformed and hostile contracts: each gives the expected problem text; the CLI exits 1, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.bad_inputs import CASES, GOOD


@pytest.fixture
def bad_folder(tmp_path):
    for name, (content, _) in CASES.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return tmp_path


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_bad_file_gives_its_problem(bad_folder, name):
    result = load_contracts([bad_folder / name])
    expected = CASES[name][1]
    assert any(expected in p.message for p in result.errors), [p.render() for p in result.problems]
    assert all(p.file.endswith(name) for p in result.problems)


def test_a_50_mib_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.odcs.yaml"
    with path.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    result = load_contracts([path])
    assert "over the limit" in result.errors[0].message


def test_duplicate_ids_and_assets_name_both_files(tmp_path):
    (tmp_path / "a.odcs.yaml").write_text(GOOD.format(id="same", table="t"))
    (tmp_path / "b.odcs.yaml").write_text(GOOD.format(id="same", table="u"))
    (tmp_path / "c.odcs.yaml").write_text(GOOD.format(id="other", table="t"))
    result = load_contracts([tmp_path])
    messages = [p.render() for p in result.errors]
    assert any("b.odcs.yaml" in m and "also defined in" in m and "a.odcs.yaml" in m for m in messages), messages
    assert any("c.odcs.yaml" in m and "asset t is also claimed by" in m and "a.odcs.yaml" in m for m in messages)


def test_problems_carry_line_and_named_path(tmp_path):
    path = tmp_path / "p.odcs.yaml"
    path.write_text(GOOD.format(id="x", table="orders") + "        logicalTypeOptions:\n          minLength: -1\n")
    problem = load_contracts([path]).errors[0]
    assert problem.path == "schema.orders.properties.a.logicalTypeOptions.minLength"
    assert problem.line == 12


def test_other_yaml_beside_contracts_is_ignored(tmp_path):
    (tmp_path / "defs.yaml").write_text("type: dq_contracts.ContractsComponent\nattributes: {contracts_dir: .}\n")
    (tmp_path / "c.yaml").write_text(GOOD.format(id="x", table="t"))
    result = load_contracts([tmp_path])
    assert result.problems == [] and len(result.plans) == 1


def test_cli_validate_reports_everything_in_one_go_without_traceback(bad_folder):
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "validate", str(bad_folder)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    for name, (_, expected) in CASES.items():
        assert any(name in line and expected in line for line in proc.stdout.splitlines()), (name, proc.stdout)


def test_cli_validate_exits_0_on_the_demo_contracts():
    from dq_contracts_tests.support import CONTRACTS

    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "validate", str(CONTRACTS)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout
    assert "read 3 contract file(s): 3 valid, 0 error(s)" in proc.stdout


def test_cli_plan_json_shape():
    import json

    from dq_contracts_tests.support import CONTRACTS

    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "plan", str(CONTRACTS), "--format", "json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    orders = next(c for c in data["contracts"] if c["id"] == "urn:dq-contracts:demo:orders")
    assert {"file", "id", "version", "apiVersion", "checks", "freshness", "schedules", "not_enforced"} <= set(orders)
    check = next(c for c in orders["checks"] if c["name"] == "customer_id__not_null")
    assert check == {**check, "asset_key": ["orders"], "clause": "/schema/0/properties/1/required",
                     "kind": "not_null", "severity": "ERROR", "blocking": True}
    assert orders["freshness"][0]["fail_window_seconds"] == 86400
    assert {s["cron"] for s in orders["schedules"]} == {"0 6 * * *", "0 * * * *"}
    assert data["problems"] == []


@pytest.mark.parametrize("step", ["validate_document", "compile_contract"])
def test_a_contract_dq_contracts_fails_on_is_its_error_and_the_others_load(tmp_path, monkeypatch, step):
    """One contract's document meeting a bug of ours (an OverflowError, a RecursionError…) is that
    contract's error, naming the exception's kind only; the folder's other contracts still load."""
    import dq_contracts.odcs.load as load

    (tmp_path / "good.odcs.yaml").write_text(GOOD.format(id="urn:x:good", table="good"))
    (tmp_path / "boom.odcs.yaml").write_text(GOOD.format(id="urn:x:boom", table="boom"))
    real = getattr(load, step)

    def failing(document, *rest):
        if "boom" in str(getattr(document, "file", "")):
            raise OverflowError("int too large: 1000000000 (a value of the document)")
        return real(document, *rest)

    monkeypatch.setattr(load, step, failing)
    result = load_contracts([tmp_path])
    assert [p.file.rsplit("/", 1)[-1] for p in result.errors] == ["boom.odcs.yaml"]
    assert "OverflowError" in result.errors[0].message and "1000000000" not in result.errors[0].message
    assert [p.file.rsplit("/", 1)[-1] for p in result.usable_plans] == ["good.odcs.yaml"]
