"""Warn and fail levels as a user sees them: `plan` gives both thresholds, `check` says `warn` where only
the warn level is reached and `fail` where the fail level is (status column, JSON), and exits 1 only
on the ERROR failure; `validate` refuses a warn level in the wrong direction at its line."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import duckdb
import pytest
import yaml

from dq_contracts_tests.support import LEVELS_CONTRACT, LEVELS_WARN_LINE, REPO

CONTRACT = LEVELS_CONTRACT


def run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


def contract_with_nulls(folder, nulls: int, warn: int = 10):
    (folder / "c.odcs.yaml").write_text(CONTRACT.replace("WARN", str(warn)))
    with duckdb.connect(str(folder / "wh.duckdb")) as connection:
        connection.execute("CREATE OR REPLACE TABLE t (a VARCHAR)")
        connection.execute("INSERT INTO t SELECT CASE WHEN i < ? THEN NULL ELSE 'x' END FROM range(10) r(i)",
                           [nulls])


def test_plan_shows_both_thresholds(tmp_path):
    contract_with_nulls(tmp_path, 0)
    proc = run(tmp_path, "plan", "c.odcs.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(l for l in proc.stdout.splitlines() if "a__null_values" in l)
    assert "fail unless < 30%, warn unless < 10%" in line
    [check] = [c for c in json.loads(run(tmp_path, "plan", "c.odcs.yaml", "--format", "json").stdout)
               ["contracts"][0]["checks"] if c["name"] == "a__null_values"]
    assert (check["threshold"], check["warn_threshold"], check["severity"]) == ("< 30%", "< 10%", "ERROR")


@pytest.mark.parametrize("nulls, status, level, severity, exits_1", [
    (0, "pass", "pass", "ERROR", False),
    (1, "warn", "warn", "WARN", False),  # 10 %: on the warn level's strict bound
    (2, "warn", "warn", "WARN", False),
    (3, "fail", "fail", "ERROR", True),  # 30 %: on the fail level's
])
def test_check_says_warn_or_fail_by_the_level_reached(tmp_path, nulls, status, level, severity, exits_1):
    contract_with_nulls(tmp_path, nulls)
    proc = run(tmp_path, "check", "c.odcs.yaml", "--format", "json")
    [result] = [r for r in json.loads(proc.stdout)["results"] if r["name"] == "a__null_values"]
    assert (result["status"], result["level"], result["severity"]) == (status, level, severity)
    assert (result["threshold"], result["warn_threshold"]) == ("< 30%", "< 10%")
    # 1 on an ERROR failure only; a WARN failure alone is not one (issue 27 makes it exit 2)
    assert (proc.returncode == 1) is exits_1, proc.stdout + proc.stderr
    text = run(tmp_path, "check", "c.odcs.yaml").stdout
    line = next(l for l in text.splitlines() if "a__null_values" in l)
    assert f"  {status}  " in line and "(it warns unless less than 10 %)" in line
    assert ("warn level reached: " in line) is (level == "warn")


def test_validate_refuses_a_warn_level_past_the_fail_level_at_its_line(tmp_path):
    contract_with_nulls(tmp_path, 0, warn=50)
    proc = run(tmp_path, "validate", "c.odcs.yaml")
    assert proc.returncode == 1
    line = CONTRACT.splitlines().index(LEVELS_WARN_LINE) + 1
    assert (f"c.odcs.yaml:{line}: schema.t.properties.a.quality[0].customProperties[0].value: warnThreshold "
            "< 50% is not reached before the rule's fail level < 30%") in proc.stdout


def test_the_readme_levels_example_says_what_the_readme_shows(tmp_path):
    """The README's rule, on a table of 100 rows with 2 NULLs, gives the line the README shows."""
    section = (REPO / "README.md").read_text().split("### Warn and fail levels\n", 1)[1].split("\n## ", 1)[0]
    rule, shown = re.findall(r"```(?:yaml)?\n(.*?)```", section, re.S)[:2]
    prop = {"name": "a", "logicalType": "string", **yaml.safe_load(rule)}
    document = yaml.safe_load(CONTRACT.replace("WARN", "10"))
    document["schema"][0]["properties"] = [prop]
    (tmp_path / "c.odcs.yaml").write_text(yaml.safe_dump(document))
    with duckdb.connect(str(tmp_path / "wh.duckdb")) as connection:
        connection.execute("CREATE TABLE t AS SELECT CASE WHEN i < 2 THEN NULL ELSE 'x' END AS a FROM range(100) r(i)")
    proc = run(tmp_path, "check", "c.odcs.yaml")
    assert shown.strip() in [line.rstrip() for line in proc.stdout.splitlines()], proc.stdout
    assert "fail unless < 5%, warn unless < 1%" in run(tmp_path, "plan", "c.odcs.yaml").stdout


def test_init_suggests_a_warn_level_that_the_table_passes_today(tmp_path):
    """1 NULL in 10 rows: init writes warn above 10 %, fail above 20 %; 2 NULLs warn, 3 fail."""
    with duckdb.connect(str(tmp_path / "wh.duckdb")) as connection:
        connection.execute("CREATE TABLE t AS SELECT i AS id, CASE WHEN i < 1 THEN NULL ELSE 'x' || i END AS note "
                           "FROM range(10) r(i)")
    made = run(tmp_path, "init", "--url", f"duckdb:///{tmp_path / 'wh.duckdb'}", "--table", "t", "--output", "c.odcs.yaml")
    assert made.returncode == 0, made.stderr
    [rule] = [r for p in yaml.safe_load((tmp_path / "c.odcs.yaml").read_text())["schema"][0]["properties"]
              for r in p.get("quality", []) if r["metric"] == "nullValues"]
    assert (rule["mustBeLessOrEqualTo"], rule["customProperties"][0]["value"]) == (20, {"mustBeLessOrEqualTo": 10})
    statuses = []
    for planted in (0, 1, 2):  # NULLs added to the one measured
        if planted:
            with duckdb.connect(str(tmp_path / "wh.duckdb")) as connection:
                connection.execute("UPDATE t SET note = NULL WHERE id = ?", [planted])
        proc = run(tmp_path, "check", "c.odcs.yaml", "--format", "json")
        [result] = [r for r in json.loads(proc.stdout)["results"] if r["name"] == "note__null_values"]
        statuses.append((result["status"], proc.returncode == 1))
    assert statuses == [("pass", False), ("warn", False), ("fail", True)]
