"""The trust boundary: a contract written by another team cannot steal credentials, reach the host
from a DuckDB session, run SQL the allow-list does not know, or carry a classified value out of the
database. Each attack is a row; each row runs against real servers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.checking import Warehouses, run_contract
from dq_contracts.connections import connection_for, engine_for
from dq_contracts.core import load_contracts

SECRET = "hunter2-secret-file-content"

# --- a DuckDB session cannot reach the host -----------------------------------------------------------

HOST_ATTACKS = [
    # (statement run in the session the checks use; {secret} and {out} are paths on the host)
    "SELECT * FROM read_csv('{secret}')",
    "SELECT * FROM '{secret}'",
    "SELECT * FROM read_text('{secret}')",
    "SELECT * FROM query('SELECT * FROM read_text(''{secret}'')')",
    "SELECT * FROM glob('{folder}/*')",
    "SELECT * FROM sniff_csv('{secret}')",
    "COPY (SELECT 1) TO '{out}'",
    "ATTACH '{out}' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
]


@pytest.fixture
def duckdb_file(tmp_path):
    path = tmp_path / "wh.duckdb"
    writer = sa.create_engine(f"duckdb:///{path}")
    with writer.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a INTEGER)")
        c.exec_driver_sql("INSERT INTO t VALUES (1)")
    writer.dispose()
    (tmp_path / "secret.csv").write_text(f"x\n{SECRET}\n")
    return path


@pytest.mark.parametrize("attack", HOST_ATTACKS)
def test_a_duckdb_session_cannot_reach_the_host(duckdb_file, tmp_path, attack):
    engine = engine_for(connection_for({"server": "local", "type": "duckdb", "database": str(duckdb_file)}, {}))
    statement = attack.format(secret=tmp_path / "secret.csv", out=tmp_path / "out.file", folder=tmp_path)
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT COUNT(*) FROM t").scalar() == 1  # its own database: yes
        with pytest.raises(sa.exc.DBAPIError) as caught:
            c.exec_driver_sql(statement)
    engine.dispose()
    assert SECRET not in str(caught.value)
    assert not (tmp_path / "out.file").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.csv", "wh.duckdb"]


def test_sql_rules_that_reach_the_host_fail_and_show_nothing_of_it(duckdb_file, tmp_path):
    rules = [{"type": "sql", "name": f"r{i}", "query": q.format(secret=tmp_path / "secret.csv"), "mustBe": 0}
             for i, q in enumerate(["SELECT COUNT(*) FROM '{secret}'", "SELECT COUNT(*) FROM read_csv('{secret}')",
                                    "SELECT COUNT(*) FROM query('SELECT * FROM read_text(''{secret}'')')"])]
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "x", "version": "1.0.0", "status": "active",
           "servers": [{"server": "local", "type": "duckdb", "database": "wh.duckdb"}],
           "schema": [{"name": "t", "properties": [{"name": "a", "logicalType": "integer"}], "quality": rules}]}
    (tmp_path / "x.odcs.yaml").write_text(yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "x.odcs.yaml", "--format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    assert all(not results[f"r{i}"]["passed"] for i in range(3))
    assert SECRET not in proc.stdout + proc.stderr
