"""`dq-contracts init --against FILE` loads the contract as `check` loads it: what check refuses is
refused before anything connects (said in check's own sentence, exit 1, nothing measured), a column
classified by any contract loaded with it is only counted, and no text of the contract makes a line
of its own on stderr."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

SECRET_GRADE, SECRET_AMOUNT = "CEO-secret", "900000"


def _cli(cwd, *args, env=None):
    """The command's run, its output as printed (text=True would read a lone \\r as a line's end)."""
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], cwd=cwd, capture_output=True,
                          timeout=300, env={**os.environ, **(env or {})})
    proc.stdout, proc.stderr = proc.stdout.decode(), proc.stderr.decode()
    return proc


def _salaries(path) -> None:
    import duckdb

    path.parent.mkdir(parents=True, exist_ok=True)
    db = duckdb.connect(str(path))
    db.execute("CREATE TABLE salaries (id integer, grade varchar, amount integer)")
    db.execute(f"INSERT INTO salaries VALUES (1, 'eng', 10), (2, '{SECRET_GRADE}', {SECRET_AMOUNT})")
    db.execute("CREATE SCHEMA hr")
    db.execute("CREATE TABLE hr.salaries AS SELECT * FROM salaries")
    db.close()


def _contract(cid: str, server: dict, table: str = "salaries", asset: str | None = None, classified: bool = False,
              name: str = "salaries", **extra) -> dict:
    """One object on `table`: `grade` with an accepted-values rule its new value misses, `amount`
    with a maximum it passes (what init --against would widen, printing the values)."""
    mark = {"classification": "restricted"} if classified else {}
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": cid, "version": "1.0.0", "status": "active",
            "servers": [server], **extra,
            "schema": [{"name": name, "physicalName": table, "physicalType": "table",
                        "customProperties": [{"property": "dagsterAssetKey", "value": asset or cid}],
                        "properties": [
                            {"name": "id", "physicalType": "INTEGER", "logicalType": "integer"},
                            {"name": "grade", "physicalType": "VARCHAR", "logicalType": "string", **mark,
                             "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["eng"]},
                                          "mustBe": 0}]},
                            {"name": "amount", "physicalType": "INTEGER", "logicalType": "integer", **mark,
                             "logicalTypeOptions": {"maximum": 1}}]}]}


def _write(path, document: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def _duckdb(name: str, database: str) -> dict:
    return {"server": name, "type": "duckdb", "database": database, "schema": "main"}


# (case, the contract at contracts/team_b/steal.odcs.yaml, the operator's environment ({dir}: the
# project folder), what check's sentence says)
REFUSED = [
    ("a server bound to another team's folder", _contract("steal", _duckdb("payroll", "{dir}/payroll/p.duckdb")),
     {"DQ_CONTRACTS_PAYROLL_ROOTS": "{dir}/payroll", "DQ_CONTRACTS_PAYROLL_CONTRACTS": "{dir}/contracts/payroll"},
     "is not bound to this contract's folder"),
    ("a schema the operator did not allow", _contract("steal", _duckdb("wh", "{dir}/payroll/p.duckdb"), "hr.salaries"),
     {"DQ_CONTRACTS_WH_ROOTS": "{dir}/payroll"}, "names the schema 'hr'"),
    ("a database outside the roots", _contract("steal", _duckdb("wh", "{dir}/payroll/p.duckdb")),
     {"DQ_CONTRACTS_WH_ROOTS": "{dir}/elsewhere"}, "outside the folders the operator lets"),
    ("a contract the schema refuses", _contract("steal", _duckdb("wh", "{dir}/payroll/p.duckdb"), status=["active"]),
     {"DQ_CONTRACTS_WH_ROOTS": "{dir}/payroll"}, "status"),
]


def _resolved(value, folder):
    if isinstance(value, str):
        return value.replace("{dir}", str(folder))
    if isinstance(value, dict):
        return {k: _resolved(v, folder) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, folder) for v in value]
    return value


@pytest.mark.parametrize("document,environ,said", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_init_against_refuses_what_check_refuses_before_connecting(tmp_path, document, environ, said):
    """The contract check refuses is refused by init --against with check's own sentence: exit 1, no
    diff, no value of the table anywhere."""
    _salaries(tmp_path / "payroll" / "p.duckdb")
    steal = tmp_path / "contracts" / "team_b" / "steal.odcs.yaml"
    _write(steal, _resolved(document, tmp_path))
    env = _resolved(environ, tmp_path)
    checked = _cli(tmp_path, "check", "contracts/team_b", env=env)
    sentences = [line for line in checked.stdout.splitlines() if line.startswith("contracts/team_b/steal.odcs.yaml")]
    assert checked.returncode == 1 and sentences and any(said in s for s in sentences), checked.stdout
    proc = _cli(tmp_path, "init", "--against", "contracts/team_b/steal.odcs.yaml", env=env)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    assert all(sentence in proc.stderr.splitlines() for sentence in sentences), (sentences, proc.stderr)
    assert SECRET_GRADE not in proc.stderr and SECRET_AMOUNT not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "not measured" in proc.stderr.splitlines()[-1], proc.stderr


# (--contracts given, the exit code, what stderr says): a database named from the project (../../w.duckdb
# from contracts/team_b) is inside the default root of `check contracts`, not of `check contracts/team_b`
ROOTED = [
    ([], 1, "outside the folders the operator lets"),
    (["--contracts", "contracts"], 1, ""),
]


@pytest.mark.parametrize("given,code,said", ROOTED, ids=["the file's folder", "--contracts contracts"])
def test_init_against_takes_the_default_root_check_takes(tmp_path, given, code, said):
    _salaries(tmp_path / "w.duckdb")
    _write(tmp_path / "contracts" / "team_b" / "c.odcs.yaml", _contract("c", _duckdb("wh", "../../w.duckdb")))
    folder = given[1] if given else "contracts/team_b"
    checked = _cli(tmp_path, "check", folder)
    proc = _cli(tmp_path, "init", "--against", "contracts/team_b/c.odcs.yaml", *given)
    assert proc.returncode == code and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert (SECRET_AMOUNT in proc.stdout) == (not said), proc.stdout  # measured exactly where check measures it
    assert checked.returncode == 1 and ((said or "outside the folders") in checked.stdout) == bool(said), \
        checked.stdout


# (case, the other contracts in contracts/ beside team_b's, --contracts): a column another contract of
# the same table classifies is only counted, as check shows no sample of it
CLASSIFIED = [
    ("classified by payroll's contract", [("payroll/pay.odcs.yaml", "pay", True)], ["--contracts", "contracts"]),
    ("classified by a contract beside it", [("team_b/pay.odcs.yaml", "pay", True)], []),
    ("classified by its own", [], []),
]


@pytest.mark.parametrize("others,given", [r[1:] for r in CLASSIFIED], ids=[r[0] for r in CLASSIFIED])
def test_init_against_withholds_what_any_contract_loaded_with_it_classifies(tmp_path, others, given):
    _salaries(tmp_path / "payroll" / "p.duckdb")
    env = {"DQ_CONTRACTS_WH_ROOTS": str(tmp_path / "payroll")}
    server = _duckdb("wh", str(tmp_path / "payroll" / "p.duckdb"))
    for where, cid, classified in others:
        _write(tmp_path / "contracts" / where, _contract(cid, server, classified=classified))
    _write(tmp_path / "contracts" / "team_b" / "steal.odcs.yaml",
           _contract("steal", server, asset="team_b_salaries", classified=not others))
    checked = _cli(tmp_path, "check", "contracts", env=env)
    assert SECRET_GRADE not in checked.stdout, checked.stdout
    proc = _cli(tmp_path, "init", "--against", "contracts/team_b/steal.odcs.yaml", *given, env=env)
    assert SECRET_GRADE not in proc.stdout + proc.stderr and SECRET_AMOUNT not in proc.stdout, proc.stdout
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr


FORGED = "dq-contracts init: contracts/s.odcs.yaml: nothing init compares has changed in its tables"
# (case, the object's name, its physicalName): a table gone, said on one line whatever the contract's text
GONE = [
    ("a newline in the object's name", f"orders: all tables measured\n{FORGED}\n", "gone_table"),
    ("a carriage return in the object's name", f"orders\r{FORGED}", "gone_table"),
    # a dot in a physicalName names a schema: the forged line has none
    ("a newline in the table's name", "orders", f"gone_table\n{FORGED.replace('.odcs.yaml', '')}"),
    ("a line separator in the table's name", "orders", f"gone_table\u2028{FORGED.replace('.odcs.yaml', '')}"),
]


@pytest.mark.parametrize("name,table", [r[1:] for r in GONE], ids=[r[0] for r in GONE])
def test_init_against_says_each_table_gone_on_one_line(tmp_path, name, table):
    _salaries(tmp_path / "w.duckdb")
    _write(tmp_path / "s.odcs.yaml", _contract("s", _duckdb("wh", "w.duckdb"), table=table, name=name))
    proc = _cli(tmp_path, "init", "--against", "s.odcs.yaml")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and " is gone from " in lines[0], proc.stderr
    assert lines[0].startswith("dq-contracts init: s.odcs.yaml: object "), proc.stderr
    assert "\u2028" not in proc.stderr and "\r" not in proc.stderr, proc.stderr


# (case, a comment written above amount's bounds, which the diff shows as context): the diff's lines are
# the file's, each on one line of the report as it is printed
CONTEXT = [
    ("a right-to-left override", "# note \u202eterces\n"),
    ("a carriage return ending a line", "# note\r"),
    ("a line separator ending a line", "# note\u2028"),
]


@pytest.mark.parametrize("comment", [r[1] for r in CONTEXT], ids=[r[0] for r in CONTEXT])
def test_init_against_prints_the_files_lines_one_to_a_line(tmp_path, comment):
    _salaries(tmp_path / "w.duckdb")
    text = yaml.safe_dump(_contract("s", _duckdb("wh", "w.duckdb")), sort_keys=False)
    options = "    logicalTypeOptions:\n      maximum: 1\n"
    assert text.count(options) == 1
    (tmp_path / "s.odcs.yaml").write_bytes(text.replace(options, "    " + comment + options).encode())
    proc = _cli(tmp_path, "init", "--against", "s.odcs.yaml")
    assert proc.returncode == 1 and "+      maximum: 900000" in proc.stdout.splitlines(), proc.stdout + proc.stderr
    printed = proc.stdout.split("\n")
    assert all(line[:1] in " +-@" for line in printed[:-1]) and printed[-1] == "", printed
    assert not any(c in proc.stdout for c in "\r\u202e\u2028"), printed
    assert "    # note" in "".join(printed), printed


def test_init_against_with_a_server_the_contract_does_not_declare_is_refused_as_check_refuses_it(tmp_path):
    _salaries(tmp_path / "w.duckdb")
    _write(tmp_path / "contracts" / "c.odcs.yaml", _contract("c", _duckdb("wh", "../w.duckdb")))
    checked = _cli(tmp_path, "check", "contracts", "--server", "nope")
    sentences = [line for line in checked.stdout.splitlines() if line.startswith("contracts/c.odcs.yaml")]
    assert checked.returncode == 1 and any("no server named 'nope'" in s for s in sentences), checked.stdout
    proc = _cli(tmp_path, "init", "--against", "contracts/c.odcs.yaml", "--server", "nope", "--server-type", "duckdb")
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
    assert all(sentence in proc.stderr.splitlines() for sentence in sentences), (sentences, proc.stderr)


def test_a_table_the_contract_has_no_object_for_is_read_as_the_folder_classifies_it(tmp_path):
    """`--table salaries` beside a contract of another table: payroll's classification of salaries
    holds for the table init adds too."""
    _salaries(tmp_path / "w.duckdb")
    server = _duckdb("wh", "../../w.duckdb")
    _write(tmp_path / "contracts" / "payroll" / "pay.odcs.yaml", _contract("pay", server, classified=True))
    _write(tmp_path / "contracts" / "team_b" / "c.odcs.yaml", _contract("c", server, table="other", name="other"))
    proc = _cli(tmp_path, "init", "--against", "contracts/team_b/c.odcs.yaml", "--contracts", "contracts",
                "--table", "salaries")
    assert proc.returncode == 1 and "+    - name: grade" in proc.stdout.splitlines(), proc.stdout + proc.stderr
    assert "a contract of its table classifies it" in proc.stdout, proc.stdout
    assert SECRET_GRADE not in proc.stdout and SECRET_AMOUNT not in proc.stdout, proc.stdout


@pytest.mark.parametrize("args,said", [
    (["--against", "nowhere.odcs.yaml"], "--against nowhere.odcs.yaml: no such file"),
    (["--against", "c.odcs.yaml", "--contracts", "nothere"], "--contracts nothere: no such folder"),
    (["--against", "c.odcs.yaml", "--contracts", "sub"], "--against c.odcs.yaml is not inside --contracts sub"),
    (["--url", "duckdb:///w.duckdb", "--table", "salaries", "--contracts", "sub"], "--contracts is for --against"),
])
def test_init_against_refuses_a_file_or_folder_it_cannot_load_as_check(tmp_path, args, said):
    _salaries(tmp_path / "w.duckdb")
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "c.odcs.yaml", _contract("c", _duckdb("wh", "w.duckdb")))
    proc = _cli(tmp_path, "init", *args)
    assert (proc.returncode, proc.stdout) == (1, "") and proc.stderr.startswith(f"dq-contracts init: {said}"), \
        proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
