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


# --- credentials go only to the operator's endpoint --------------------------------------------------

class FakePostgres:
    """A server on 127.0.0.1 that asks every client for a cleartext password and records what it gets."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.attempts: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        deadline = time.monotonic() + 120  # bounded: it stops by itself
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                client, _ = self.sock.accept()
            except OSError:
                continue
            with client:
                client.settimeout(2)
                try:
                    received = client.recv(4096)
                    if received[4:8] == b"\x04\xd2\x16\x2f":  # SSLRequest: no
                        client.sendall(b"N")
                        received = client.recv(4096)
                    client.sendall(b"R\x00\x00\x00\x08\x00\x00\x00\x03")  # AuthenticationCleartextPassword
                    received += client.recv(4096)
                except OSError:
                    pass
                self.attempts.append(received)

    def close(self):
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


PASSWORD = "operator-password-9f2"

ENDPOINT_CASES = [
    # (what the operator declared, whether the contract's own port is the fake one, what happens)
    ({"USER": "reader", "PASSWORD": PASSWORD}, True, "no endpoint declared by the operator"),
    ({"HOST": "127.0.0.1", "PORT": "{real}", "USER": "reader", "PASSWORD": PASSWORD}, True, "the contract says port"),
    ({"URL": "postgresql+psycopg2://reader:" + PASSWORD + "@127.0.0.1:{real}/wh"}, True, "the contract says port"),
    ({"HOST": "127.0.0.1", "PORT": "{fake}", "USER": "reader", "PASSWORD": PASSWORD}, True, "CONTROL"),
]


@pytest.mark.parametrize("declared, contract_port_is_fake, outcome", ENDPOINT_CASES,
                         ids=["only credentials", "another port", "a whole URL", "control: the operator's fake"])
def test_credentials_go_only_to_the_endpoint_the_operator_declared(tmp_path, declared, contract_port_is_fake,
                                                                   outcome):
    from dq_contracts_tests.pgcluster import free_port

    fake = FakePostgres()
    real = free_port()
    try:
        environ = {f"DQ_CONTRACTS_PROD_{k}": v.format(real=real, fake=fake.port) for k, v in declared.items()}
        doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "x", "version": "1.0.0", "status": "active",
               "servers": [{"server": "prod", "type": "postgres", "host": "127.0.0.1",
                            "port": fake.port if contract_port_is_fake else real, "database": "wh",
                            "schema": "public"}],
               "schema": [{"name": "t", "properties": [{"name": "a", "logicalType": "integer", "required": True}]}]}
        (tmp_path / "x.odcs.yaml").write_text(yaml.safe_dump(doc))
        plan = load_contracts([tmp_path / "x.odcs.yaml"]).usable_plans[0]
        with Warehouses(environ) as warehouses:
            results = run_contract(plan, warehouses)
    finally:
        fake.close()
    assert results and all(not r.passed for r in results)
    if outcome == "CONTROL":  # the fake does catch a password sent to it
        assert any(PASSWORD.encode() in a for a in fake.attempts)
        return
    assert fake.attempts == []  # not even a connection, let alone a password
    assert all(outcome in r.error for r in results), [r.error for r in results]
    assert PASSWORD not in repr([r.to_json() for r in results])


def test_tls_settings_reach_the_driver():
    connection = connection_for({"server": "prod", "type": "postgres"},
                                {"DQ_CONTRACTS_PROD_HOST": "db.internal", "DQ_CONTRACTS_PROD_SSLMODE": "verify-full",
                                 "DQ_CONTRACTS_PROD_REQUIRE_AUTH": "scram-sha-256"})
    assert connection.url.query == {"sslmode": "verify-full", "require_auth": "scram-sha-256"}
