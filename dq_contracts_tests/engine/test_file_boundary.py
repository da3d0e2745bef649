"""A file server's boundary, as a hostile contract meets it with the default binding (no variable
set): the file is the table, whatever a physicalName calls it, and the project's own files are
never a table. One row per attack; each is run with the command a user runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

SSNS = ["123-45-6789", "987-65-4321", "555-11-2222"]
PASSWORD = "S3cretPW-planted"


def contract(name: str, server: dict, obj: dict) -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": name, "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [obj]}


def files(path: str, server: str = "files") -> dict:
    return {"server": server, "type": "local", "format": "csv", "path": path}


def ssn(classified: bool) -> dict:
    column = {"name": "ssn", "logicalType": "string", "logicalTypeOptions": {"pattern": "^X"}}
    return {**column, "classification": "pii"} if classified else column


VICTIM = contract("victim", files("../data/{model}.csv"), {"name": "people", "properties": [ssn(True)]})

# (attack, the attacker's server, its object): each reads data/people.csv under another name
DECLASSIFYING = [
    ("a dot path", files("../data/{model}.csv"), {"name": "stolen", "physicalName": "./people"}),
    ("a climbing path", files("../data/{model}.csv"), {"name": "stolen", "physicalName": "sub/../people"}),
    ("a server naming the file", files("../data/people.csv", "files2"), {"name": "stolen", "physicalName": "x"}),
    ("a glob over the folder", files("../data/*.csv", "files3"), {"name": "stolen", "physicalName": "any"}),
    ("another case of the name", files("../data/{model}.csv"), {"name": "stolen", "physicalName": "People"}),
    # a glob the reader expands to the same file: compared as the reader's glob reads it
    ("'**' as zero folders", files("../data/**/people.csv", "f4"), {"name": "stolen", "physicalName": "x"}),
    ("'*/' over the folder", files("../*/people.csv", "f5"), {"name": "stolen", "physicalName": "x"}),
    ("a set in the name", files("../data/[p]eople.csv", "f6"), {"name": "stolen", "physicalName": "x"}),
    ("a '?' in the name", files("../data/peopl?.csv", "f7"), {"name": "stolen", "physicalName": "x"}),
    ("'./' before a glob", files("./../data/./[p]eople.csv", "f8"), {"name": "stolen", "physicalName": "x"}),
    ("'..' before a glob", files("../data/sub/../[p]eople.csv", "f9"), {"name": "stolen", "physicalName": "x"}),
    ("a symlinked folder the glob reaches", files("../m*/people.csv", "f10"), {"name": "stolen", "physicalName": "x"}),
]


def check(folder: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts", "--format", "json"],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def write(folder: Path, name: str, doc: dict) -> None:
    (folder / "contracts").mkdir(parents=True, exist_ok=True)
    (folder / "contracts" / f"{name}.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.mark.parametrize("attack, server, obj", DECLASSIFYING, ids=[a[0] for a in DECLASSIFYING])
def test_a_file_is_classified_whatever_a_contract_calls_it(tmp_path, attack, server, obj):
    (tmp_path / "data" / "sub").mkdir(parents=True)  # a folder to climb out of
    (tmp_path / "mirror").symlink_to(tmp_path / "data", target_is_directory=True)  # data by another path
    (tmp_path / "data" / "people.csv").write_text("id,ssn\n" + "".join(f"{i},{s}\n" for i, s in enumerate(SSNS)))
    write(tmp_path, "victim", VICTIM)
    write(tmp_path, "attacker", contract("attacker", server, {**obj, "properties": [ssn(False)]}))
    proc = check(tmp_path)
    results = [r for r in json.loads(proc.stdout)["results"]
               if r["asset_key"] != ["people"] and r["name"] == "ssn__pattern"]
    assert len(results) == 1, proc.stdout[-2000:]
    # the attacker's check ran on the file (a case it cannot read fails for want of the file)
    assert all(not r["passed"] for r in results)
    for value in SSNS:
        assert value not in proc.stdout + proc.stderr, attack


# (one object's glob, another's, whether a path may match both): Python's recursive glob, which
# reads the files (`**` alone in a segment is zero or more folders), in lower case (a case-insensitive
# file system is covered; on Linux `People.csv` and `people.csv` share too)
GLOBS = [
    ("/p/data/people.csv", "/p/data/**/people.csv", True),
    ("/p/data/people.csv", "/p/**/**/people.csv", True),
    ("/p/data/x/y/people.csv", "/p/data/**/people.csv", True),
    ("/p/data/people.csv", "/p/*/people.csv", True),
    ("/p/data/people.csv", "/p/data/[p]eople.csv", True),
    ("/p/data/people.csv", "/p/data/[!q]eople.csv", True),
    ("/p/data/people.csv", "/p/data/people.c?v", True),
    ("/p/data/people.csv", "/p/data/./people.csv", True),
    ("/p/data/people.csv", "/p/data//people.csv", True),
    ("/p/data/People.csv", "/p/data/people.csv", True),
    ("/p/data/p*.csv", "/p/data/*e.csv", True),
    ("/p/data/a*b", "/p/data/*c*", True),
    ("/p/data/people.csv", "/p/data/*/people.csv", False),  # `*` is one folder, never none
    ("/p/data/people.csv", "/p/data/[q]eople.csv", False),
    ("/p/data/people.csv", "/p/data/people.c?", False),
    ("/p/data/people.csv", "/p/other/**/people.csv", False),
    ("/p/data/p*.csv", "/p/data/q*.csv", False),
    ("/p/data/a*b", "/p/data/*c", False),
]


@pytest.mark.parametrize("ours, theirs, shared", GLOBS, ids=[f"{a} {b}" for a, b, _ in GLOBS])
def test_two_globs_share_classification_when_a_path_may_match_both(ours, theirs, shared):
    from dq_contracts.odcs.classification import _same_files

    assert _same_files(((ours, frozenset()),), ((theirs, frozenset()),)) is shared
    assert _same_files(((theirs, frozenset()),), ((ours, frozenset()),)) is shared


def test_a_glob_built_to_be_slow_to_compare_shares_at_a_bounded_cost():
    from dq_contracts.odcs.classification import _same_files

    def glob(n):  # forty folders of 240-character names of `*` and `?`: billions of steps unbounded
        return "/p/**/" + "/".join("*a?" * 80 + str(n + k) for k in range(40)) + "/x.csv"

    started = time.monotonic()
    assert _same_files(((glob(0), frozenset()),), ((glob(100), frozenset()),))  # erring towards one file
    assert time.monotonic() - started < 5


# (attack, the file, its contents, the server's path, refused when it loads): the project's own
# files are never a table (a glob that could also match data loads, and matches none of them)
PROJECT_FILES = [
    ("the project's .env", ".env", f"DQ_CONTRACTS_PROD_PASSWORD={PASSWORD}\n", "../.env", True),
    ("a file in a hidden folder", ".secrets/keys.csv", f"key\n{PASSWORD}\n", "../.secrets/keys.csv", True),
    ("a hidden folder through a glob", ".secrets/keys.csv", f"key\n{PASSWORD}\n", "../*/keys.csv", False),
    ("a hidden file through a glob", ".keys.csv", f"key\n{PASSWORD}\n", "../*keys.csv", False),
    ("the instance settings", "dagster.yaml", f"password: {PASSWORD}\n", "../dagster.yaml", True),
    ("a settings file through a glob", "settings.ini", f"[x]\npassword={PASSWORD}\n", "../settings*", True),
]


@pytest.mark.parametrize("attack, name, text, path, refused", PROJECT_FILES, ids=[a[0] for a in PROJECT_FILES])
def test_a_file_server_reads_no_file_of_the_project_that_is_not_data(tmp_path, attack, name, text, path, refused):
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(text)
    write(tmp_path, "leak", contract("leak", files(path), {"name": "t", "properties": [
        {"name": "key", "logicalType": "string", "logicalTypeOptions": {"pattern": "^$"}}]}))
    proc = check(tmp_path)
    assert PASSWORD not in proc.stdout + proc.stderr, attack
    validated = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "validate", "contracts"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
    assert (validated.returncode, "servers[0].path" in validated.stdout) == ((1, True) if refused else (0, True))
    if not refused:  # it loads, with a warning that its path matches no file, and its checks fail for want of one
        assert "warning: servers[0].path: server 'files': path" in validated.stdout, validated.stdout
        assert "matches no file" in validated.stdout, validated.stdout
        assert all(not r["passed"] for r in json.loads(proc.stdout)["results"])


def test_declared_roots_read_any_name_but_never_a_hidden_one(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "export.txt").write_text("key\nvalue\n")
    (tmp_path / "data" / ".hidden.csv").write_text(f"key\n{PASSWORD}\n")
    write(tmp_path, "named", contract("named", files("../data/export.txt"), {"name": "t", "properties": [
        {"name": "key", "logicalType": "string", "logicalTypeOptions": {"pattern": "^v"}}]}))
    env = {"DQ_CONTRACTS_FILES_ROOTS": str(tmp_path / "data")}
    proc = check(tmp_path, env)
    assert [r["passed"] for r in json.loads(proc.stdout)["results"] if r["name"] == "key__pattern"] == [True]
    write(tmp_path, "named", contract("named", files("../data/*.csv"), {"name": "t", "properties": [
        {"name": "key", "logicalType": "string", "logicalTypeOptions": {"pattern": "^$"}}]}))
    proc = check(tmp_path, env)
    assert PASSWORD not in proc.stdout + proc.stderr


# every variable of the operator's holding a password: a server's, and the alerts' (odcs/support.py)
DECLARED = [
    {"DQ_CONTRACTS_PROD_PASSWORD": PASSWORD},
    {"DQ_CONTRACTS_PROD_URL": f"postgresql://u:{PASSWORD}@127.0.0.1:1/db"},
    {"DQ_ALERTS_SMTP_PASSWORD": PASSWORD},
    {"DQ_ALERTS_UI_URL": f"https://u:{PASSWORD}@dagster.example.com"},
    {"DQ_ALERTS_WEBHOOK_HOSTS": f"hooks.slack.com, https://u:{PASSWORD}@hooks.example.com:8443/"},
]


@pytest.mark.parametrize("declared", DECLARED, ids=[next(iter(d)) for d in DECLARED])
def test_a_password_the_operator_declared_is_masked_in_what_a_table_shows(tmp_path, declared):
    """Defence in depth: were a table to hold a declared password, its samples and sentence say ***."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text(f"key\nuser={PASSWORD}\n")
    write(tmp_path, "t", contract("t", files("../data/{model}.csv"), {"name": "t", "properties": [
        {"name": "key", "logicalType": "string", "logicalTypeOptions": {"pattern": "^$"}}]}))
    proc = check(tmp_path, declared)
    result = next(r for r in json.loads(proc.stdout)["results"] if r["name"] == "key__pattern")
    assert not result["passed"] and result["samples"] == ["user=***"], result
    assert PASSWORD not in proc.stdout + proc.stderr
