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

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import duckdb_with

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
    path = duckdb_with(tmp_path / "wh.duckdb", "CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1)")
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
    # refused by reading the rule, before it runs (the session would block the read too, later)
    assert all(results[f"r{i}"]["error"].startswith("not run: ") for i in range(3)), results
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
    # the operator's endpoint is the fake one: only the comparison of host or database stops the password
    ({"HOST": "localhost", "PORT": "{fake}", "USER": "reader", "PASSWORD": PASSWORD}, True, "the contract says host"),
    ({"HOST": "127.0.0.1", "PORT": "{fake}", "DATABASE": "payroll", "USER": "reader", "PASSWORD": PASSWORD}, True,
     "the contract says database"),
    ({"URL": "postgresql+psycopg2://reader:" + PASSWORD + "@localhost:{fake}/wh"}, True, "the contract says host"),
    ({"HOST": "127.0.0.1", "PORT": "{fake}", "USER": "reader", "PASSWORD": PASSWORD}, True, "CONTROL"),
]


@pytest.mark.parametrize("declared, contract_port_is_fake, outcome", ENDPOINT_CASES,
                         ids=["only credentials", "another port", "a whole URL", "another host", "another database",
                              "a whole URL to another host", "control: the operator's fake"])
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


# --- no classified value leaves the database ---------------------------------------------------------

PLANTED = "999-88-7777"  # in a restricted column, and nowhere else
PLANTED_TIME = "2026-05-31 07:41:13"  # the newest value of a classified timestamp column


def classified_contract(server: dict) -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "pii", "version": "1.0.0", "status": "active",
            "servers": [server],
            "schema": [
                {"name": "people", "properties": [
                    {"name": "id", "logicalType": "integer"},
                    {"name": "ssn", "logicalType": "number", "classification": "restricted",
                     "logicalTypeOptions": {"multipleOf": 1}},  # stored as text: a cast error quoting it
                    {"name": "tax_id", "logicalType": "string", "classification": "restricted",
                     "logicalTypeOptions": {"pattern": "^[0-9]+$"},  # a pattern miss
                     "relationships": [{"to": "known.ssn"}],  # an orphan
                     "quality": [{"metric": "duplicateValues", "arguments": {"properties": ["tax_id", "id"]},
                                  "mustBe": 0}]},
                    {"name": "seen_at", "logicalType": "timestamp", "classification": "pii"}],
                 "quality": [{"type": "sql", "name": "ssn_as_number",
                              "query": "SELECT COUNT(*) FROM {object} WHERE CAST(ssn AS INTEGER) > 0", "mustBe": 0}]},
                {"name": "known", "properties": [{"name": "ssn", "logicalType": "string",
                                                  "classification": "restricted"}]}],
            "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "people.seen_at"}]}


def test_no_classified_value_leaves_the_database_by_any_path(warehouse_any, tmp_path, capfd):
    import dagster as dg

    from dq_contracts import build_contract_defs
    from dq_contracts.dagster_defs.resource import WarehouseResource

    server, environ, writer = warehouse_any
    with writer.begin() as c:
        c.exec_driver_sql("CREATE TABLE people (id INTEGER, ssn VARCHAR(20), tax_id VARCHAR(20), seen_at TIMESTAMP)")
        c.exec_driver_sql(f"INSERT INTO people VALUES (1, '{PLANTED}', '{PLANTED}', '{PLANTED_TIME}'), "
                          f"(1, '{PLANTED}', '{PLANTED}', '2026-05-30 00:00:00')")
        c.exec_driver_sql("CREATE TABLE known (ssn VARCHAR(20))")
    writer.dispose()
    path = tmp_path / "pii.odcs.yaml"
    path.write_text(yaml.safe_dump(classified_contract(server)))
    outputs = []
    env = {**__import__("os").environ, **environ}
    for args in (["check", str(path)], ["check", str(path), "--format", "json"]):
        proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        outputs += [proc.stdout, proc.stderr]
    results = {r["name"]: r for r in json.loads(outputs[2])["results"]}
    # every path was taken: each of these failed, with an error or without samples
    assert "ssn__multiple_of" in results and not results["ssn__multiple_of"]["passed"]
    assert results["ssn__multiple_of"]["error"] and not results["ssn_as_number"]["passed"]
    assert results["ssn_as_number"]["error"]
    for name in ("tax_id__pattern", "tax_id__references_known", "tax_id__duplicate_values"):
        assert not results[name]["passed"] and results[name]["samples"] == [], name
    fresh = results["seen_at__freshness"]  # its age would give the newest value away
    assert "observed_withheld" in fresh["details"] and fresh["observed"] is None

    home = tmp_path / "home"
    home.mkdir()
    resource = WarehouseResource(servers={server["server"]: {k.split("_")[-1].lower(): v for k, v in environ.items()}})
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        defs = build_contract_defs(path, resource=resource, contract_jobs=True)
        result = defs.resolve_job_def("pii__checks").execute_in_process(instance=instance, raise_on_error=False)
        assert len(result.get_asset_check_evaluations()) == len(results) + 1  # people and known
        outputs += [repr(r) for r in instance.all_logs(result.run_id)]
        sensor = defs.resolve_sensor_def("dq_contracts_freshness")
        tick = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, resources={"dq_warehouse": resource}))
        outputs += [repr(tick.asset_events), str(tick.cursor)]
    captured = capfd.readouterr()
    outputs += [captured.out, captured.err]
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    for value in (PLANTED, PLANTED_TIME, PLANTED_TIME.replace(" ", "T")):
        assert value.encode() not in stored, value
        assert not any(value in o for o in outputs), (value, [o for o in outputs if value in o][:1])


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse_any(request, tmp_path):
    """(server, operator environment, writable engine) on DuckDB or PostgreSQL."""
    if request.param == "duckdb":
        path = tmp_path / "wh.duckdb"
        return {"server": "local", "type": "duckdb", "database": str(path)}, {}, sa.create_engine(f"duckdb:///{path}")
    from dq_contracts_tests.support import pg_env, pg_server

    url = request.getfixturevalue("pg_database")
    return pg_server(url), pg_env(url), sa.create_engine(url)


# --- the allow-list reads SQL as the server does --------------------------------------------------------

SPLIT_FORMS = [
    # (a rule's query, whether it is one statement) — comments, dollar quoting, escapes hide semicolons
    ("SELECT COUNT(*) FROM t /* ; DROP TABLE t */", True),
    ("SELECT COUNT(*) FROM t -- ; DROP TABLE t", True),
    ("SELECT COUNT(*) FROM t WHERE 'a;b' <> ''", True),
    ("SELECT COUNT(*) FROM t WHERE 'it''s;' <> ''", True),
    ("SELECT COUNT(*) FROM t WHERE $$;DROP TABLE t;$$ <> ''", True),
    ("SELECT COUNT(*) FROM t WHERE $x$;DROP TABLE t;$x$ <> ''", True),
    ("SELECT COUNT(*) FROM t WHERE U&'\\0041;' <> ''", True),
    ("SELECT COUNT(*) FROM t; DROP TABLE t", False),
    ("SELECT COUNT(*) FROM t;/* */DROP TABLE t", False),
]


@pytest.mark.postgres
@pytest.mark.parametrize("query, one", SPLIT_FORMS, ids=[q for q, _ in SPLIT_FORMS])
def test_the_judge_and_postgresql_split_a_query_the_same_way(pg_database, query, one):
    from dq_contracts.odcs.sqlrules import judge_sql_rule

    engine = sa.create_engine(pg_database)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE IF NOT EXISTS t (a INTEGER)")
    refusal = judge_sql_rule(query, dialect="postgres", own="t", column=None, tables={"t": {"a": False}}).refusal
    with engine.connect() as c:  # the server's own reading: as a subquery it parses only if it is one SELECT
        c.exec_driver_sql("SET TRANSACTION READ ONLY")
        try:
            c.exec_driver_sql(f"SELECT 1 FROM (\n{query}\n) AS probe LIMIT 0")
            server_one = True
        except sa.exc.DBAPIError:
            server_one = False
        c.rollback()
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT COUNT(*) FROM t").scalar() == 0  # still there
    engine.dispose()
    assert server_one is one
    assert (refusal is None) is one, refusal  # accepted exactly when the server sees one statement



LEAKS = [
    # (table, rows, properties, what must never show, the check that takes the way out and what it
    # must say: what its error holds on each engine, or None where it fails with its samples withheld) — the
    # reviewer's ways out, each closed
    ("CREATE TABLE staff (id BIGINT, badge VARCHAR(40), manager_badge BIGINT)",
     "INSERT INTO staff VALUES (1, 'SSN-999-88-7777', NULL), (2, '12', 12)",
     [{"name": "id", "logicalType": "integer"},
      {"name": "badge", "logicalType": "string", "classification": "restricted"},
      {"name": "manager_badge", "logicalType": "integer", "relationships": [{"to": "staff.badge"}]}],
     "999-88-7777", ("manager_badge__references_staff",
                     {"duckdb": ("ConversionException", "message is withheld"),
                      "postgres": ("UndefinedFunction, SQLSTATE 42883", "message is withheld")})),
    # a relationship whose target column is classified: DuckDB's cast error quotes it (PostgreSQL
    # refuses to compare the types, quoting nothing, and the error is still told by its code only)
    ("CREATE TABLE staff (amount VARCHAR(60))",  # quotes inside the value itself
     """INSERT INTO staff VALUES ('a "4111-1111-1111-1111" b''s')""",
     [{"name": "amount", "logicalType": "number", "classification": "confidential",
       "logicalTypeOptions": {"multipleOf": 0.01}}],
     # the schema check read the column's type in the same run: the check says so in its own words
     "4111-1111-1111-1111", ("amount__multiple_of", {
         "duckdb": ("amount is VARCHAR, not a number (see the schema check)",),
         "postgres": ("amount is character varying(60), not a number (see the schema check)",)})),
    ("CREATE TABLE staff (ssn VARCHAR(20), ssn_masked VARCHAR(20))",
     "INSERT INTO staff VALUES ('999-88-7777', '***-**-7777')",
     [{"name": "ssn", "physicalName": "ssn_masked", "logicalType": "string"},
      {"name": "ssn_raw", "physicalName": "ssn", "logicalType": "string", "classification": "pii",
       "logicalTypeOptions": {"pattern": "^[0-9]{9}$"}}],
     "999-88-7777", ("ssn_raw__pattern", None)),  # one property's name is another's physical column
]


@pytest.mark.parametrize("ddl, rows, properties, planted, taken", LEAKS,
                         ids=["relationship target", "quotes in the value", "name of another's column"])
def test_the_ways_a_classified_value_could_slip_out_are_closed(warehouse_any, tmp_path, ddl, rows, properties,
                                                               planted, taken):
    server, environ, writer = warehouse_any
    with writer.begin() as c:
        c.exec_driver_sql(ddl)
        c.exec_driver_sql(rows)
    writer.dispose()
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "leak", "version": "1.0.0", "status": "active",
           "servers": [server], "schema": [{"name": "staff", "properties": properties}]}
    (tmp_path / "leak.odcs.yaml").write_text(yaml.safe_dump(doc))
    env = {**__import__("os").environ, **environ}
    for args in (["check", "leak.odcs.yaml"], ["check", "leak.odcs.yaml", "--format", "json"]):
        proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert "internal error" not in proc.stderr
        assert planted not in proc.stdout + proc.stderr, proc.stdout
    name, errors = taken  # the way out was taken: the check that would carry the value failed as it says
    result = {r["name"]: r for r in json.loads(proc.stdout)["results"]}[name]
    assert not result["passed"]
    if errors is None:
        assert result["error"] is None and result["samples"] == [] and "samples_withheld" in result["details"]
    else:
        engine = "duckdb" if server["type"] == "duckdb" else "postgres"
        assert all(said in result["error"] for said in errors[engine]), result["error"]


SQL_RESULTS = [
    # (rule on a table whose `salary` is confidential, is its result shown?) A rule that uses it in
    # any form but COUNT(c), COUNT(DISTINCT c) or c IS [NOT] NULL is refused (test_sql_rules.py)
    ("SELECT MAX(salary) FROM {object}", False),
    ("SELECT MAX(salary) - 0 AS m FROM {object}", False),
    ("SELECT COUNT(*) FROM {object} WHERE salary > 100", False),
    ("SELECT COUNT(salary) FROM {object} WHERE salary IS NOT NULL", True),
    ("SELECT MAX(id) FROM {object}", True),
]


@pytest.mark.parametrize("query, shown", SQL_RESULTS, ids=[q for q, _ in SQL_RESULTS])
def test_a_sql_rule_that_may_return_a_classified_value_shows_only_its_verdict(duckdb_file, tmp_path, query, shown):
    duckdb_with(duckdb_file, "CREATE TABLE pay (id INTEGER, salary INTEGER)", "INSERT INTO pay VALUES (1, 123456789)")
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "x", "version": "1.0.0", "status": "active",
           "servers": [{"server": "local", "type": "duckdb", "database": "wh.duckdb"}],
           "schema": [{"name": "pay", "properties": [{"name": "id", "logicalType": "integer"},
                                                     {"name": "salary", "logicalType": "integer",
                                                      "classification": "confidential"}],
                       "quality": [{"type": "sql", "name": "rule", "query": query, "mustBeLessThan": 0}]}]}
    (tmp_path / "x.odcs.yaml").write_text(yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "x.odcs.yaml", "--format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    rule = {r["name"]: r for r in json.loads(proc.stdout)["results"]}["rule"]
    assert rule["passed"] is False  # the verdict is always there
    assert (rule["observed"] is not None) is shown
    assert "123456789" not in proc.stdout
