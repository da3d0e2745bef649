"""No text of a contract adds a line to what a command prints: a contract whose every text (id,
version, names, descriptions, paths, server names, its file's name) holds a line break, a forged
summary, an ANSI escape and a bidirectional override is fed to every command in every format; no
line of the output but the command's own starts with the forged text, and no escape or override
reaches the terminal raw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dq_contracts_tests.support import duckdb_with

FORGED = "FORGED total: pass 99  warn 0  fail 0  error 0"
# every line break Unicode has that a terminal or log may show, an ANSI escape, a bidi override
PAYLOAD = f"x\n{FORGED}\r{FORGED}\u2028{FORGED}\x85{FORGED}\x0b{FORGED}\x1b[2J\u202e{FORGED}"
NAMED = "forge\n" + FORGED  # a file's name (no `/`), and names: refused, and said as problems
SHORT = "n\nFORGED\x1b[2J\u202e"  # a text Dagster names are made of: short enough for one


def texts(server: str = "wh") -> dict:
    """A contract whose every free text holds PAYLOAD; it loads and runs."""
    return {
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "urn:x:\n" + FORGED + "\x1b\u202e", "name": SHORT,
        "version": "1.0.0" + PAYLOAD, "status": "active", "domain": PAYLOAD, "dataProduct": PAYLOAD,
        "tenant": PAYLOAD, "description": {"purpose": PAYLOAD, "usage": PAYLOAD, "limitations": PAYLOAD},
        "tags": [PAYLOAD],
        "servers": [{"server": server, "type": "duckdb", "database": "../w.duckdb", "description": PAYLOAD}],
        "schema": [{"name": "t", "physicalName": "t", "description": PAYLOAD, "businessName": PAYLOAD,
                    "properties": [{"name": "code", "logicalType": "string", "description": PAYLOAD,
                                    "businessName": PAYLOAD, "logicalTypeOptions": {"maxLength": 2},
                                    "quality": [{"type": "library", "metric": "nullValues", "mustBe": 0,
                                                 "description": PAYLOAD, "name": SHORT}]}]}],
    }


def names() -> dict:
    """A contract whose names and paths hold PAYLOAD: refused, every problem printed."""
    doc = texts(server=PAYLOAD)
    doc["schema"][0] = {**doc["schema"][0], "name": PAYLOAD, "physicalName": PAYLOAD}
    doc["schema"][0]["properties"][0] = {**doc["schema"][0]["properties"][0], "name": PAYLOAD, PAYLOAD: 1}
    return {**doc, "id": "urn:y:" + PAYLOAD, "servers": [{**doc["servers"][0], "database": "../" + PAYLOAD}]}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("forged")
    duckdb_with(folder / "w.duckdb", "CREATE TABLE t AS SELECT * FROM (VALUES ('ok'), ('bad')) AS v(code)",
                "CREATE TABLE u AS SELECT * FROM t")
    (folder / "contracts").mkdir()
    (folder / "contracts" / "texts.odcs.yaml").write_text(yaml.safe_dump(texts(), sort_keys=False))
    (folder / "contracts" / "names.odcs.yaml").write_text(yaml.safe_dump(names(), sort_keys=False))
    (folder / "contracts" / f"{NAMED}.odcs.yaml").write_text(yaml.safe_dump(
        {**texts(), "id": "urn:z:\n" + FORGED, "name": "z\n" + FORGED, "schema": [{**texts()["schema"][0], "name": "u", "physicalName": "u"}]},
        sort_keys=False))
    changed = texts()
    changed["schema"][0]["properties"][0]["logicalTypeOptions"] = {"maxLength": 1}  # a change diff reports
    changed["schema"][0]["properties"][0]["description"] = PAYLOAD + "2"
    (folder / "new.odcs.yaml").write_text(yaml.safe_dump(changed, sort_keys=False))
    (folder / "dagster_home").mkdir()
    return folder


# (command, its arguments after the command's name): every command, every format
COMMANDS = [
    ("validate", ["contracts"]),
    ("validate github", ["contracts", "--format", "github"]),
    ("plan", ["contracts"]),
    ("plan json", ["contracts", "--format", "json"]),
    ("check", ["contracts"]),
    ("check json", ["contracts", "--format", "json"]),
    ("check github", ["contracts", "--format", "github"]),
    ("check junit", ["contracts", "--format", "junit"]),
    ("check a file by its name", [f"contracts/{NAMED}.odcs.yaml"]),
    ("report", ["contracts"]),
    ("report json", ["contracts", "--format", "json"]),
    ("diff", ["contracts/texts.odcs.yaml", "new.odcs.yaml"]),
    ("diff json", ["contracts/texts.odcs.yaml", "new.odcs.yaml", "--format", "json"]),
    ("diff of a refused contract", ["contracts/names.odcs.yaml", "new.odcs.yaml"]),
    ("init against", ["--against", "contracts/texts.odcs.yaml"]),
    ("init against a refused contract", ["--against", "contracts/names.odcs.yaml"]),
]


NOT_SHOWN = {"check a file by its name"}  # check's table names assets and checks, not files


@pytest.mark.parametrize("case, arguments", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_no_text_of_a_contract_adds_a_line_to_any_commands_output(project, case, arguments):
    command = case.split()[0]
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", command, *arguments], cwd=project,
                          capture_output=True, timeout=300,
                          env={**os.environ, "DAGSTER_HOME": str(project / "dagster_home")})
    out = (proc.stdout + proc.stderr).decode("utf-8", "backslashreplace")
    assert proc.returncode in (0, 1), out  # ran to its end (no internal error, no usage error)
    assert "FORGED" in out or case in NOT_SHOWN, out  # the contract's text was printed
    forged = [line for line in out.splitlines() if line.lstrip(" +-|!").startswith("FORGED")]
    assert forged == [], out
    assert "\x1b" not in out and "\u202e" not in out, out
    if "json" in case:
        json.loads(proc.stdout)
