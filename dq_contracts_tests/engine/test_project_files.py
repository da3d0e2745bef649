"""What the default root (no `_ROOTS` declared) lets a hostile contract open: never a file that
holds the project's credentials, never a sibling project's file, never a hidden DuckDB file; and
the operator's roots read any name that is not hidden. Each row is run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dq_contracts_tests.support import duckdb_with

SECRET = "S3cretKey-planted"
KEY = {"name": "key", "logicalType": "string", "logicalTypeOptions": {"pattern": "^$"}}


def contract(server: dict, physical: str = "t") -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "leak", "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [{"name": "t", "physicalName": physical, "properties": [KEY]}]}


def files(path: str) -> dict:
    fmt = "json" if path.endswith(".json") else "csv"
    return {"server": "files", "type": "local", "format": fmt, "path": path}


def plant(folder: Path, name: str) -> None:
    """A file holding SECRET as a table would: JSON for .json, else CSV."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": SECRET}) if name.endswith(".json") else f"key\n{SECRET}\n")


def write(project: Path, doc: dict) -> None:
    (project / "contracts").mkdir(parents=True, exist_ok=True)
    (project / "contracts" / "leak.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def run(command: str, target: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "dq_contracts.cli", command, target, *(["--format", "json"] if command == "check"
                                                                         else [])]
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


# (attack, the file planted in the project, the contract's path, refused when it loads): with no roots
# declared, a file or folder named as credentials are is never a table
CREDENTIALS = [
    ("a service account key", "service-account.json", "../service-account.json", True),
    ("an OAuth client secret", "client_secret_123.apps.json", "../client_secret_123.apps.json", True),
    ("a token file", "token.json", "../token.json", True),
    ("a credentials file", "credentials.json", "../credentials.json", True),
    ("a service account by another spelling", "gcp_service_account.json", "../gcp_service_account.json", True),
    ("a file in a secrets folder", "secrets/db.csv", "../secrets/db.csv", True),
    ("a file in a credentials folder", "Credentials/db.csv", "../Credentials/db.csv", True),
    ("a token through a glob", "keys/api_token.csv", "../keys/*.csv", False),
    ("a secrets folder through a glob", "secrets/x.csv", "../*/x.csv", False),
    ("an object named as the token", "data/token.csv", "../data/{object}.csv", True),
]


@pytest.mark.parametrize("attack, name, path, refused", CREDENTIALS, ids=[c[0] for c in CREDENTIALS])
def test_a_file_named_as_credentials_is_never_a_table_under_the_default_root(tmp_path, attack, name, path, refused):
    plant(tmp_path, name)
    write(tmp_path, contract(files(path), "token" if "{object}" in path else "t"))
    proc = run("check", "contracts", tmp_path)
    assert SECRET not in proc.stdout + proc.stderr, attack
    validated = run("validate", "contracts", tmp_path)
    assert (validated.returncode, "servers[0].path" in validated.stdout) == ((1, True) if refused else (0, False)), \
        validated.stdout
    if refused:
        assert "holds credentials" in validated.stdout, validated.stdout
    else:  # it loads, and its checks fail for want of a file
        assert all(not r["passed"] for r in json.loads(proc.stdout)["results"])


def test_the_operators_roots_read_a_name_the_default_root_refuses(tmp_path):
    plant(tmp_path, "secrets/db.csv")
    write(tmp_path, {**contract(files("../secrets/db.csv")), "schema": [{"name": "t", "properties": [
        {**KEY, "logicalTypeOptions": {"pattern": "^S3"}}]}]})
    proc = run("check", "contracts", tmp_path, {"DQ_CONTRACTS_FILES_ROOTS": str(tmp_path)})
    assert [r["passed"] for r in json.loads(proc.stdout)["results"] if r["name"] == "key__pattern"] == [True], \
        proc.stdout + proc.stderr


# (case, the DuckDB file's place in the project, the operator's roots (None: the default), refused):
# a DuckDB database is refused where a file server's file would be
DUCKDB_FILES = [
    ("a hidden folder", ".cache/w.duckdb", None, True),
    ("a hidden file", ".w.duckdb", None, True),
    ("a hidden folder inside the operator's roots", ".cache/w.duckdb", ".", True),
    ("a secrets folder", "secrets/w.duckdb", None, True),
    ("a file named as a token", "token.duckdb", None, True),
]


@pytest.mark.parametrize("case, place, roots, refused", DUCKDB_FILES, ids=[c[0] for c in DUCKDB_FILES])
def test_a_duckdb_database_is_refused_where_a_file_servers_file_would_be(tmp_path, case, place, roots, refused):
    (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
    duckdb_with(tmp_path / place, f"CREATE TABLE t AS SELECT '{SECRET}' AS key")
    write(tmp_path, contract({"server": "wh", "type": "duckdb", "database": f"../{place}"}))
    env = {"DQ_CONTRACTS_WH_ROOTS": str(tmp_path)} if roots else {}
    proc = run("check", "contracts", tmp_path, env)
    assert SECRET not in proc.stdout + proc.stderr, case
    validated = run("validate", "contracts", tmp_path, env)
    expected = (1, True) if refused else (0, False)
    assert (validated.returncode, "servers[0].database" in validated.stdout) == expected, validated.stdout


def test_a_secrets_folder_inside_the_operators_roots_opens(tmp_path):
    (tmp_path / "secrets").mkdir()
    duckdb_with(tmp_path / "secrets" / "w.duckdb", "CREATE TABLE t AS SELECT 'S3' AS key")
    write(tmp_path, {**contract({"server": "wh", "type": "duckdb", "database": "../secrets/w.duckdb"}),
                     "schema": [{"name": "t", "properties": [{**KEY, "logicalTypeOptions": {"pattern": "^S3"}}]}]})
    proc = run("check", "contracts", tmp_path, {"DQ_CONTRACTS_WH_ROOTS": str(tmp_path)})
    assert [r["passed"] for r in json.loads(proc.stdout)["results"] if r["name"] == "key__pattern"] == [True], \
        proc.stdout + proc.stderr


# (how the project is named, where the command runs, relative to the site holding two projects): the
# root is the project, never the site above it, so the sibling's file is refused
NAMED = [
    ("check .", ".", "p"),
    ("check contracts", "contracts", "p"),
    ("check the project by its path", "{site}/p", "."),
    ("check the project from its parent", "p", "."),
]


@pytest.mark.parametrize("case, target, cwd", NAMED, ids=[n[0] for n in NAMED])
def test_a_sibling_projects_file_is_outside_the_default_root(tmp_path, case, target, cwd):
    plant(tmp_path / "q", "data/srv.csv")
    write(tmp_path / "p", contract(files("../../q/data/srv.csv")))
    proc = run("check", target.format(site=tmp_path), tmp_path / cwd)
    assert SECRET not in proc.stdout + proc.stderr, case
    validated = run("validate", target.format(site=tmp_path), tmp_path / cwd)
    assert validated.returncode == 1 and "outside the folders" in validated.stdout, validated.stdout


# (how the contracts are named, where the command runs): the project's own data stays readable
OWN_DATA = [
    ("check contracts", "contracts", "."),
    ("check . in the contracts folder", ".", "contracts"),
    ("check a contract file", "contracts/leak.odcs.yaml", "."),
]


@pytest.mark.parametrize("case, target, cwd", OWN_DATA, ids=[n[0] for n in OWN_DATA])
def test_the_projects_own_data_is_inside_the_default_root(tmp_path, case, target, cwd):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("key\nS3\n")
    write(tmp_path, {**contract(files("../data/t.csv")), "schema": [{"name": "t", "properties": [
        {**KEY, "logicalTypeOptions": {"pattern": "^S3"}}]}]})
    proc = run("check", target, tmp_path / cwd)
    assert [r["passed"] for r in json.loads(proc.stdout)["results"] if r["name"] == "key__pattern"] == [True], \
        proc.stdout + proc.stderr


def test_init_draws_no_sibling_projects_file(tmp_path):
    """`init --path` opens files as `check` does from the output's folder (here the project): the
    project's root, never the folder above it."""
    plant(tmp_path / "q", "data/srv.csv")
    (tmp_path / "p" / "contracts").mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "init", "--path", "../q/data/srv.csv", "--table",
                           "t"], cwd=tmp_path / "p", capture_output=True, text=True, timeout=300)
    assert SECRET not in proc.stdout + proc.stderr
    assert proc.returncode == 1 and "outside the folders" in proc.stderr, proc.stdout + proc.stderr
