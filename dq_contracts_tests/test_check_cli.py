"""`dq-contracts check` on the bundled contracts and the demo warehouse: the failing clauses are
exactly the ones the contracts' comments list."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from dq_contracts_tests.support import CONTRACTS, demo_shop
from dq_contracts_tests.support import DOCUMENTED


def check(cwd, *args, contracts="contracts"):
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", str(contracts), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    demo_shop(folder)
    return folder


def test_the_demo_fails_exactly_the_documented_clauses(demo_dir):
    assert len(DOCUMENTED) == 6
    proc = check(demo_dir, "--format", "json")
    assert proc.returncode == 1, proc.stderr  # ERROR-severity checks fail
    results = json.loads(proc.stdout)["results"]
    failing = {(r["asset_key"][-1], r["name"], r["severity"]) for r in results if not r["passed"]}
    assert failing == DOCUMENTED
    assert all(r["error"] is None for r in results)
    for r in results:
        assert set(r) >= {"asset_key", "name", "clause", "passed", "severity", "observed", "threshold", "error"}
        assert r["clause"].startswith(("/schema/", "/slaProperties/"))


def test_text_output_names_each_failure_with_a_sample(demo_dir):
    proc = check(demo_dir)
    assert proc.returncode == 1
    line = next(l for l in proc.stdout.splitlines() if "segment__accepted_values" in l)
    assert "fail" in line and "vip" in line
    email = next(l for l in proc.stdout.splitlines() if "email__format" in l)
    assert "fail" in email and "not-an-email" not in email  # email is classified pii: no samples
    assert re.search(r"52 check\(s\): 46 pass, 1 warn, 5 fail, 0 error", proc.stdout)


def test_warnings_alone_exit_two(tmp_path, write_contract):
    """Only a WARN clause broken: exit 2, which a CI gate may take as passing or not (README: Command line)."""
    demo_shop(tmp_path, ["orders", "order_items"])
    text = (CONTRACTS / "orders.odcs.yaml").read_text()
    # keep only the WARN failure: drop the negative-total clause and the orphan-item relationship
    text = text.replace("          minimum: 0\n          exclusiveMaximum", "          exclusiveMaximum")
    text = text.replace("        relationships:\n          - to: orders.order_id\n", "")
    write_contract(text, "contracts/orders.odcs.yaml")
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts/orders.odcs.yaml", "--format",
                           "json"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    failing = [(r["name"], r["severity"]) for r in json.loads(proc.stdout)["results"] if not r["passed"]]
    assert failing == [("status_is_known", "WARN")]
    assert proc.returncode == 2


def test_an_unknown_server_name_fails_cleanly(demo_dir):
    proc = check(demo_dir, "--server", "prod")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr + proc.stdout
    assert "no server named 'prod'" in proc.stdout
    # nothing ran: the problems, then why nothing ran, and no empty table of results above them
    assert not proc.stdout.startswith("asset"), proc.stdout
    assert proc.stdout.rstrip().endswith("(no contract could run: the problems above say why)"), proc.stdout


WORKING_DIRECTORIES = [
    # (name, working directory relative to the shop, how the contracts are named from there)
    ("shop root", ".", "contracts"),
    ("the contracts folder", "contracts", "."),
    ("somewhere else", "../elsewhere", None),  # None: an absolute path
]


def test_the_same_contracts_give_the_same_results_from_any_working_directory(demo_dir):
    """A relative DuckDB path means one thing: the contract file's folder, never the process's."""
    (demo_dir.parent / "elsewhere").mkdir(exist_ok=True)
    outcomes = {}
    for name, cwd, contracts in WORKING_DIRECTORIES:
        proc = check((demo_dir / cwd).resolve(), "--format", "json", contracts=contracts or demo_dir / "contracts")
        results = json.loads(proc.stdout)["results"]
        outcomes[name] = sorted((r["asset_key"][-1], r["name"], r["passed"], r["error"]) for r in results)
        assert {(a, n) for a, n, passed, _ in outcomes[name] if not passed} == {(a, n) for a, n, _ in DOCUMENTED}
    assert outcomes["shop root"] == outcomes["the contracts folder"] == outcomes["somewhere else"]


# What a plain `check` of a DuckDB contract with no SQL rule, no cron and no lake server has no use
# for: each costs start-up before the first query (pandas and numpy: DuckDB's client imports them at
# the first statement that binds parameters, 0.3 s)
NOT_IMPORTED_BY_A_DUCKDB_CHECK = (
    "pandas", "numpy", "pyarrow", "deltalake", "pyiceberg", "sqlglot", "croniter", "jsonschema", "dagster",
    "psycopg2", "pymysql", "pyhive", "snowflake", "sqlalchemy.dialects.mysql", "dq_contracts.dagster_defs",
    "dq_contracts.engine.lake",
)


def test_a_duckdb_check_imports_only_what_it_uses(tmp_path):
    import duckdb

    with duckdb.connect(str(tmp_path / "shop.duckdb")) as db:  # failing clauses, so samples are fetched too
        db.execute("CREATE TABLE orders AS SELECT range AS id, 'X' || (range % 3) AS code, "
                   "TIMESTAMP '2020-01-01' + INTERVAL (range) HOUR AS at FROM range(10)")
    (tmp_path / "shop.odcs.yaml").write_text("""
apiVersion: v3.0.2
kind: DataContract
id: urn:test:imports
version: 1.0.0
status: active
servers: [{server: local, type: duckdb, database: shop.duckdb}]
schema:
  - name: orders
    properties:
      - {name: id, physicalType: BIGINT, unique: true, logicalType: integer, logicalTypeOptions: {minimum: 3}}
      - {name: code, physicalType: VARCHAR, logicalType: string, logicalTypeOptions: {pattern: '^X[01]$'},
         quality: [{metric: invalidValues, arguments: {validValues: [X0, X1]}, mustBe: 0}]}
      - {name: at, physicalType: TIMESTAMP, logicalType: timestamp}
slaProperties: [{property: latency, value: 1, unit: d, element: orders.at}]
""")
    script = ("import json, sys; from dq_contracts.cli import main; code = main(['check', '--format', 'json', "
              "'shop.odcs.yaml']); print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    code, modules = json.loads(proc.stderr.strip().splitlines()[-1])
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    assert code == 1 and all(r["error"] is None for r in results.values()), proc.stdout
    assert results["code__pattern"]["samples"] == ["X2"] and not results["id__minimum"]["passed"]
    imported = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_IMPORTED_BY_A_DUCKDB_CHECK))
    assert imported == []


def test_plan_text_lists_every_rewrite_of_a_v30_contract(tmp_path):
    """What a v3.0 document is read as (its v3.1 words) is in the text plan, not only in its JSON."""
    (tmp_path / "c.odcs.yaml").write_text("""apiVersion: v3.0.2
kind: DataContract
id: urn:test:rw
version: 1.0.0
status: active
slaDefaultElement: orders.at
schema:
  - name: orders
    properties:
      - {name: id, logicalType: integer, logicalTypeOptions: {minimum: 0, exclusiveMinimum: true}}
      - {name: at, logicalType: date}
slaProperties: [{property: latency, value: 1, unit: d}]
""")
    text = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "plan", "c.odcs.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120).stdout
    as_json = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "plan", "c.odcs.yaml", "--format", "json"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120).stdout
    rewrites = json.loads(as_json)["contracts"][0]["rewrites"]
    assert len(rewrites) == 2 and "  read as v3.1:" in text
    for rewrite in rewrites:
        assert f"    {rewrite['clause']}  {rewrite['message']}" in text, text


def test_plan_text_says_an_age_as_people_read_it(tmp_path):
    """A latency's threshold and freshness window in the text plan: the seconds, and the same in days."""
    (tmp_path / "c.odcs.yaml").write_text("""apiVersion: v3.1.0
kind: DataContract
id: urn:test:age
version: 1.0.0
status: active
schema:
  - name: orders
    properties:
      - {name: at, logicalType: timestamp}
slaProperties: [{property: latency, value: 2, unit: d, element: orders.at}]
""")
    text = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "plan", "c.odcs.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120).stdout
    assert re.search(r"at__freshness +ERROR +freshness +≤ 172800\.0 \(≤ 2 d\)", text), text
    assert "  freshness orders.at: fail after 2 d (172800 s)  /slaProperties/0" in text, text


def test_a_file_server_check_imports_no_pandas_either(tmp_path):
    """A parquet file server's paths reach DuckDB as a literal list, its session's allowed folders too."""
    import duckdb

    with duckdb.connect() as db:
        db.execute(f"COPY (SELECT range AS id, 'X' || (range % 3) AS code FROM range(10)) TO '{tmp_path / 't.parquet'}'")
    (tmp_path / "files.odcs.yaml").write_text("""
apiVersion: v3.1.0
kind: DataContract
id: urn:test:file-imports
version: 1.0.0
status: active
servers: [{server: lake, type: local, format: parquet, path: '{model}.parquet'}]
schema:
  - name: t
    properties:
      - {name: id, physicalType: BIGINT, unique: true, logicalType: integer, logicalTypeOptions: {minimum: 3}}
      - {name: code, physicalType: VARCHAR, logicalType: string, logicalTypeOptions: {pattern: '^X[01]$'}}
""")
    script = ("import json, sys; from dq_contracts.cli import main; code = main(['check', '--format', 'json', "
              "'files.odcs.yaml']); print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    code, modules = json.loads(proc.stderr.strip().splitlines()[-1])
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    assert code == 1 and all(r["error"] is None for r in results.values()), proc.stdout
    assert results["code__pattern"]["samples"] == ["X2"] and results["id__minimum"]["samples"] == [0, 1, 2]
    assert results["schema"]["passed"] and results["id__unique"]["passed"]
    imported = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_IMPORTED_BY_A_DUCKDB_CHECK))
    assert imported == []


# The command leaves its process at once after flushing (cli.script: no teardown of the imported
# modules): whatever it writes must still arrive whole, and its exit code stand.
# (arguments after `check <demo contracts>`, how stdout is read, what must have arrived)
LEFT_AT_ONCE = [
    ("json on a pipe", ["--format", "json"], "read", "every result in one JSON document"),
    ("junit to a file", ["--format", "junit", "--output", "report.xml"], "read", "the whole XML report"),
    ("a pipe closed after one line", [], "first line", "no traceback"),
]


@pytest.mark.parametrize("case, args, reading, arrived", LEFT_AT_ONCE, ids=[c[0] for c in LEFT_AT_ONCE])
def test_the_command_leaves_with_its_output_whole_and_its_exit_code(demo_dir, case, args, reading, arrived):
    from xml.etree import ElementTree

    import os

    command = [sys.executable, "-m", "dq_contracts.cli", "check", "contracts", *args]
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as a user's shell has it
    with subprocess.Popen(command, cwd=demo_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=environ) as proc:
        if reading == "first line":
            first = proc.stdout.readline()
            proc.stdout.close()  # as `| head -1` does
            err = proc.stderr.read()
        else:
            out, err = proc.stdout.read(), proc.stderr.read()
        code = proc.wait(timeout=120)
    if arrived == "every result in one JSON document":
        assert code == 1 and len(json.loads(out)["results"]) > 20, err
    elif arrived == "the whole XML report":
        root = ElementTree.parse(demo_dir / "report.xml").getroot()
        told = {n: sum(int(s.get(n)) for s in root.iter("testsuite")) for n in ("failures", "skipped")}
        assert code == 1 and told == {"failures": sum(d[2] == "ERROR" for d in DOCUMENTED),  # a WARN is skipped
                                      "skipped": sum(d[2] == "WARN" for d in DOCUMENTED)}, err
        assert out.startswith("dq-contracts check: wrote report.xml")
    else:
        assert first.split()[:2] == ["asset", "check"]
        assert "Traceback" not in err and "BrokenPipe" not in err, err
        assert code == 1, err  # the checks' own code, not 0: `check | head` under pipefail fails as they do


# Where stdout cannot take the output (buffered, as a user's shell has it): a full disk or an I/O
# error is said in one line on stderr and exits 120 (Python's own code for it), the report being
# lost; a pipe closed before anything is read (`| head -c 10` already gone) keeps the checks' code.
# (arguments after `check <demo contracts>`, where stdout goes, exit code, what stderr says)
UNWRITTEN = [
    ("text on a full disk", [], "/dev/full", 120, "dq-contracts: the output could not be written (No space left on device): it is lost"),
    ("json on a full disk", ["--format", "json"], "/dev/full", 120, "dq-contracts: the output could not be written (No space left on device): it is lost"),
    ("junit on a full disk", ["--format", "junit"], "/dev/full", 120, "dq-contracts: the output could not be written (No space left on device): it is lost"),
    ("text on a closed pipe", [], "closed pipe", 1, ""),
    ("json on a closed pipe", ["--format", "json"], "closed pipe", 1, ""),
    ("junit on a closed pipe", ["--format", "junit"], "closed pipe", 1, ""),
    ("a usage error on a closed pipe", ["--format", "nope"], "closed pipe", 4, None),
]


@pytest.mark.parametrize("case, args, target, code, said", UNWRITTEN, ids=[c[0] for c in UNWRITTEN])
def test_output_that_cannot_be_written_is_said_and_keeps_the_exit_code(demo_dir, case, args, target, code, said):
    import os

    environ = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if target == "closed pipe":
        reader, stdout = os.pipe()
        os.close(reader)  # gone before the first byte, as `| head -c 10` once it has read them
    else:
        stdout = os.open(target, os.O_WRONLY)
    try:
        proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts", *args], cwd=demo_dir,
                              stdout=stdout, stderr=subprocess.PIPE, text=True, env=environ, timeout=120)
    finally:
        os.close(stdout)
    assert proc.returncode == code, proc.stderr
    if said is not None:
        assert proc.stderr == (said + "\n" if said else ""), proc.stderr


# A value of the data or a contract's text holding a line break, in `check`'s text output: (where it is, what it
# would forge). Each stays on its own line, escaped, so the summary and the table read as the run's.
FORGED = "\n20 check(s): 20 pass, 0 warn, 0 fail, 0 error"
FORGING = [
    ("a sample value", "samples", "2 check(s): 1 pass, 0 warn, 1 fail, 0 error"),
    ("a contract problem", "problems", "0 check(s): 0 pass, 0 warn, 0 fail, 0 error"),
]


@pytest.mark.parametrize("where, kind, summary", FORGING, ids=[c[0] for c in FORGING])
def test_no_text_of_a_table_or_contract_adds_a_line_to_checks_output(tmp_path, where, kind, summary):
    import duckdb

    with duckdb.connect(str(tmp_path / "w.duckdb")) as db:
        db.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('ok'), (?)) AS v(code)", ["bad" + FORGED])
    description = ("x" + FORGED) if kind == "problems" else "x"
    (tmp_path / "c.odcs.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "forge", "version": "1.0.0", "status": "active",
        "servers": [{"server": "local", "type": "duckdb", "database": "w.duckdb"}],
        "schema": [{"name": "t", "properties": [
            {"name": "code", "logicalType": "string", "logicalTypeOptions": {"maxLength": 2},
             # an unknown key: a warning that names it (its text is the contract's)
             **({description: 1} if kind == "problems" else {})}]}]}))
    proc = check(tmp_path, contracts="c.odcs.yaml")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [line for line in lines if line.startswith("20 check(s)")] == [], proc.stdout
    assert [line for line in lines if line.startswith(summary)] and len(lines) == len(set(lines)), proc.stdout
