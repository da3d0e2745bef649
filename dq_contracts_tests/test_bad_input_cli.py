"""Malformed and hostile contracts through the command line, one subprocess per case.

`dq-contracts validate FILE...` must exit 1, print no traceback, and print a line that names the
file and says what is wrong (a document path or a clear message). The 10 s limit per run is a
ceiling against hangs on a slow CI machine, not a benchmark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dq_contracts_tests.support import REPO
from dq_contracts_tests.bad_inputs import CASES as LOAD_CASES
from dq_contracts_tests.bad_inputs import GOOD


@dataclass(frozen=True)
class Case:
    files: dict[str, str | bytes | Callable[[Path], None]]  # written in this order, all named on the command line
    expect: tuple[str, ...]  # all on one output line, with the basename of `file`
    file: str = ""  # whose line it is; default: the only (or last) file
    xfail: str = ""  # a known defect: strict xfail with this reason
    absent: tuple[str, ...] = field(default=())  # files that must not exist afterwards

    @property
    def reported_file(self) -> str:
        return self.file or list(self.files)[-1]


def good(contract_id: str = "x", table: str = "t") -> str:
    return GOOD.format(id=contract_id, table=table)


HEAD = "apiVersion: v3.1.0\nkind: DataContract\nid: x\nversion: 1.0.0\nstatus: active\n"
QUALITY = good() + "        quality:\n"  # a property-level quality list under schema.t.properties.a


def sla(item: str) -> str:
    return good() + "slaProperties:\n  - " + item.replace("\n", "\n    ") + "\n"


def sql_rule(query: str) -> str:
    return QUALITY + f"          - type: sql\n            query: {json.dumps(query)}\n            mustBe: 0\n"


def fifty_mib(path: Path) -> None:
    with path.open("w") as f:
        f.write(good() + "# ")
        chunk = "x" * (1024 * 1024)
        for _ in range(50):
            f.write(chunk)
        f.write("\n")


NEW_CASES: dict[str, Case] = {
    "50 MiB file": Case({"huge.odcs.yaml": fifty_mib}, ("over the limit of 10 MiB", "refused")),
    "duplicate id across two files": Case(
        {"a.odcs.yaml": good("same", "t"), "b.odcs.yaml": good("same", "u")},
        ("id: contract id 'same' version 1.0.0 is also defined in", "a.odcs.yaml"), file="b.odcs.yaml"),
    "asset key claimed by two files": Case(
        {"a.odcs.yaml": good("one", "t"), "b.odcs.yaml": good("two", "t")},
        ("schema.t: asset t is also claimed by", "a.odcs.yaml"), file="b.odcs.yaml"),
    "object name used twice": Case(
        {"samename.odcs.yaml": good() + "  - name: t\n    properties:\n      - {name: b, logicalType: string}\n"},
        ("schema.t.name: another schema object is already named 't'",)),
    "asset key claimed twice in one file": Case(
        {"twice.odcs.yaml": good() + "  - name: t2\n    physicalName: t\n    properties:\n"
                                     "      - {name: b, logicalType: string}\n"},
        ("schema.t2: asset t is also claimed by",)),
    "malformed json": Case({"bad.odcs.json": '{"apiVersion": "v3.1.0", "kind": "DataContract",, }'},
                           ("invalid JSON", "property name")),
    "json nested too deep": Case({"deep.odcs.json": "[" * 100_000 + "]" * 100_000}, ("nesting is deeper than",)),
    "json top-level list": Case({"list.odcs.json": "[1, 2]"}, ("a mapping of keys", "a list")),
    "utf-16 file": Case({"utf16.odcs.yaml": good().encode("utf-16")}, ("refused",)),
    "latin-1 file": Case({"latin1.odcs.yaml": good("café").encode("latin-1")}, ("not UTF-8 text",)),
    "nul byte in a comment": Case({"nul.odcs.yaml": good().encode() + b"# \x00\n"}, ("contains NUL bytes",)),
    "control character": Case({"bell.odcs.yaml": good("x\x07")}, ("control characters are not allowed",)),
    "tab in indentation": Case({"tabs.odcs.yaml": good().replace("        logicalType", "\t\tlogicalType")},
                               ("invalid YAML", "tab")),
    "undefined alias": Case({"alias.odcs.yaml": good() + "        description: *nope\n"}, ("undefined alias",)),
    "python tag is not executed": Case(
        {"tag.odcs.yaml": good() + "        description: !!python/object/apply:os.system ['touch pwned']\n"},
        ("could not determine a constructor",), absent=("pwned",)),
    "two yaml documents": Case({"two.odcs.yaml": good() + "---\n" + good()}, ("holds 2 YAML documents",)),
    "top-level scalar": Case({"scalar.odcs.yaml": "just a sentence\n"}, ("a mapping of keys", "holds text")),
    "kind not DataContract named explicitly": Case(
        {"product.yaml": good().replace("kind: DataContract", "kind: DataProduct")},
        ('kind: "DataProduct" is not one of DataContract',)),
    "schema is a mapping": Case({"schemamap.odcs.yaml": HEAD + "schema:\n  t:\n    properties: []\n"},
                                ("schema: ", 'is not of type "array"')),
    "properties are strings": Case({"props.odcs.yaml": HEAD + "schema:\n  - name: t\n    properties: [a, b]\n"},
                                   ('schema.t.properties[0]: "a" is not of type "object"',)),
    "operator with a string": Case(
        {"opstring.odcs.yaml": QUALITY + "          - metric: nullValues\n            mustBeLessThan: five\n"},
        ("schema.t.properties.a.quality[0]:", "does not match any of the forms")),
    "mustBeBetween with one element": Case(
        {"between.odcs.yaml": QUALITY + "          - metric: rowCount\n            mustBeBetween: [1]\n"},
        ("schema.t.properties.a.quality[0]:", "does not match any of the forms")),
    "unknown operator": Case(
        {"wrongop.odcs.yaml": QUALITY + "          - metric: nullValues\n            mustBeEqualTo: 0\n"},
        ("schema.t.properties.a.quality[0].mustBeEqualTo:", "unexpected key", "did you mean")),
    "unknown logicalType": Case({"lt.odcs.yaml": good().replace("logicalType: string", "logicalType: varchar")},
                                ('schema.t.properties.a.logicalType: "varchar" is not one of',)),
    "options without logicalType": Case(
        {"untyped.odcs.yaml": good().replace("logicalType: string", "logicalTypeOptions: {minLength: 1}")},
        ("schema.t.properties.a.logicalTypeOptions",)),
    "minLength not an integer": Case(
        {"minlen.odcs.yaml": good() + "        logicalTypeOptions: {minLength: 1.5}\n"},
        ('logicalTypeOptions.minLength: 1.5 is not of type "integer"',)),
    "invalid regex pattern": Case(
        {"regex.odcs.yaml": good() + "        logicalTypeOptions: {pattern: '[unclosed'}\n"},
        ("schema.t.properties.a.logicalTypeOptions.pattern: pattern is not a valid regular expression",)),
    "primaryKeyPosition a string": Case(
        {"pkpos.odcs.yaml": good() + "        primaryKey: true\n        primaryKeyPosition: first\n"},
        ('schema.t.properties.a.primaryKeyPosition: "first" is not of type "integer"',)),
    "enum on a v3.1 contract": Case({"enum31.odcs.yaml": good() + "        enum: [{value: x}]\n"},
                                    ("schema.t.properties.a.enum: property enum is not allowed before v3.2.0",)),
    "v3.0 exclusive flag in v3.1": Case(
        {"excl.odcs.yaml": good().replace("string", "integer")
         + "        logicalTypeOptions: {minimum: 1, exclusiveMinimum: true}\n"},
        ('logicalTypeOptions.exclusiveMinimum: true is not of type "number"',)),
    "relationship with from at property level": Case(
        {"relfrom.odcs.yaml": good() + "        relationships: [{from: t.a, to: t.a}]\n"},
        ("schema.t.properties.a.relationships[0]:",)),
    "apiVersion a number": Case({"apinum.odcs.yaml": good().replace("apiVersion: v3.1.0", "apiVersion: 3.1")},
                                ("apiVersion: '3.1' is not a version like v3.1.0",)),
    "apiVersion missing": Case({"noapi.odcs.yaml": good().replace("apiVersion: v3.1.0\n", "")},
                               ("missing required key 'apiVersion'",)),
    "status missing before v3.2": Case({"nostatus.odcs.yaml": good().replace("status: active\n", "")},
                                       ("status:", "required before v3.2")),
    "sla without value": Case({"slanovalue.odcs.yaml": sla("property: latency\nunit: d\nelement: t.a")},
                              ("slaProperties[0]: missing required key 'value'",)),
    "sla cron with three fields": Case(
        {"slacron.odcs.yaml": sla("property: frequency\nvalue: 1\nscheduler: cron\nschedule: '* * *'")},
        ("slaProperties[0].schedule: invalid cron expression",)),
    "rule-level invalid cron": Case(
        {"rulecron.odcs.yaml": QUALITY + "          - metric: nullValues\n            mustBe: 0\n"
         "            scheduler: cron\n            schedule: every 5 minutes\n"},
        ("schema.t.properties.a.quality[0].schedule: invalid cron expression 'every 5 minutes'",)),
    "sql insert": Case({"insert.odcs.yaml": sql_rule("INSERT INTO t VALUES (1)")},
                       ("quality[0].query: SQL rule refused", "not a SELECT")),
    "sql select into": Case({"into.odcs.yaml": sql_rule("SELECT * INTO t2 FROM t")},
                            ("quality[0].query: SQL rule refused", "INTO")),
    "sql injection in a literal": Case({"inject.odcs.yaml": sql_rule("SELECT COUNT(*) FROM t WHERE a = ''; DROP TABLE x; --")},
                                       ("quality[0].query: SQL rule refused", "statements")),
    "sql side-effect function": Case({"sleep.odcs.yaml": sql_rule("SELECT pg_sleep(100)")},
                                     ("quality[0].query: SQL rule refused", "pg_sleep")),
    "sql syntax error": Case({"syntax.odcs.yaml": sql_rule("SELEC COUNT(* FROM")},
                             ("quality[0].query: SQL rule refused", "does not parse")),
    "sql empty query": Case({"emptysql.odcs.yaml": sql_rule("")}, ("quality[0].query: SQL rule refused", "empty")),
    "column placeholder on an object rule": Case(
        {"objph.odcs.yaml": good() + "    quality:\n      - type: sql\n        query: SELECT COUNT(*) FROM "
         "{object} WHERE {column} IS NULL\n        mustBe: 0\n"},
        ("schema.t.quality[0].query: unresolved placeholder(s) {column}",)),
    "no such file": Case({"missing.odcs.yaml": lambda path: None}, ("no such file or folder",)),
    # named relative to a folder that is not the current one: where it looked, and from where
    "no such file, relative": Case({"missing.odcs.yaml": lambda path: None},
                                   ("missing.odcs.yaml: no such file or folder (looked for /",
                                    "/missing.odcs.yaml: a relative path is read from the current folder)")),
    "duplicate key in a yaml mapping": Case(
        {"dupkey.odcs.yaml": good().replace("version: 1.0.0\n", "version: 1.0.0\nid: y\n")}, ("id", "duplicate")),
    "duplicate key in a json object": Case(
        {"dupkey.odcs.json": '{"apiVersion": "v3.1.0", "kind": "DataContract", "id": "x", "id": "y", '
                             '"version": "1.0.0", "status": "active"}'},
        ("id", "duplicate")),
    "integer mapping key": Case(
        {"intkey.odcs.yaml": good() + "1: one\n"}, ("'1' is not text",)),
    "yaml 1.1 boolean key": Case(
        {"boolkey.odcs.yaml": good() + "        on: x\n"}, ("'on' is not text", "boolean")),
    "over-long integer": Case(
        {"bigint.odcs.yaml": QUALITY + "          - metric: rowCount\n            mustBeGreaterThan: "
         + "9" * 5000 + "\n"}, ("digits",)),
    "json lone surrogate in a name": Case(
        {"surrogate.odcs.json": json.dumps({
            "apiVersion": "v3.1.0", "kind": "DataContract", "id": "x", "version": "1.0.0", "status": "active",
            "schema": [{"name": "\ud800", "properties": [{"name": "a", "logicalType": "varchar"}]}]})},
        ('"varchar" is not one of',)),
    # where the official schema refuses the value itself, the Rust validator is handed the surrogate
    "json lone surrogate in a refused value": Case(
        {"surrogate_value.odcs.json": json.dumps({
            "apiVersion": "v3.1.0", "kind": "DataContract", "id": "x", "version": "1.0.0", "status": "active",
            "schema": [{"name": "t", "properties": [{"name": "a", "logicalType": "varchar\ud800"}]}]})},
        ("schema.t.properties.a.logicalType:", "ud800", "is not one of")),
}

CASES: dict[str, Case] = {
    **{f"load-{name}": Case({name: content}, (expected,)) for name, (content, expected) in LOAD_CASES.items()},
    **NEW_CASES,
}


def _param(name: str, case: Case):
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=name.replace(" ", "-"), marks=marks)


def run_validate(tmp_path: Path, names: list[str]) -> subprocess.CompletedProcess:
    """`validate`; a file that makes it hang fails the test when the subprocess's timeout expires (how
    fast it refuses is the benchmarks' business, not a test's)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", "validate", *names], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env, check=False)


@pytest.mark.parametrize("case", [_param(n, c) for n, c in CASES.items()])
def test_validate_refuses_bad_input(tmp_path, case):
    for name, content in case.files.items():
        path = tmp_path / name
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    proc = run_validate(tmp_path, list(case.files))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output and "internal error" not in output, output
    lines = [line for line in proc.stdout.splitlines() if line.startswith(case.reported_file + ":")]
    assert any(all(e in line for e in case.expect) for line in lines), (case.expect, output)
    for name in case.absent:
        assert not (tmp_path / name).exists(), f"{name} was created"


def test_there_are_at_least_30_cases():
    assert len(CASES) >= 30 and len(NEW_CASES) >= 14


# (what the command is given) → every command says no contract was there, and exits 1: a CI gate over an
# empty or misnamed folder must not pass by checking nothing
NOTHING_TO_READ = {
    "an empty folder": {},
    "a folder of YAML not named *.odcs.yaml": {"orders.yaml": "apiVersion: v3.1.0\n"},
    "a hidden contract only": {".hidden.odcs.yaml": "apiVersion: v3.1.0\n"},
}


@pytest.mark.parametrize("command", ["validate", "plan", "check"])
@pytest.mark.parametrize("files", list(NOTHING_TO_READ.values()), ids=list(NOTHING_TO_READ))
def test_a_folder_without_contracts_is_an_error(tmp_path, command, files):
    folder = tmp_path / "contracts"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", command, "contracts"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"dq-contracts {command}: no contract file (*.odcs.yaml" in proc.stderr and "contracts" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


# (a clause that loads but cannot run) → the warning `validate` prints at its line, and `--strict` fails on it
NOT_ENFORCED = {
    "a typo in an SLA unit": (sla("property: latency\nvalue: 2\nunit: hors\nelement: t.a"), "slaProperties[0]",
                              "not enforced (unknown_unit): the unit is not a time unit this tool knows: 'hors' "
                              "(did you mean 'hours'?)"),
    "a typo in a format": (good().replace("        logicalType: string",
                                          "        logicalType: string\n        logicalTypeOptions: {format: emial}"),
                           "schema.t.properties.a.logicalTypeOptions.format", "(did you mean 'email'?)"),
    "an unknown format": (good().replace("        logicalType: string",
                                         "        logicalType: string\n        logicalTypeOptions: {format: colour}"),
                          "schema.t.properties.a.logicalTypeOptions.format", "not enforced (unknown_format)"),
    "a text rule": (QUALITY + "          - type: text\n            description: be nice\n",
                    "schema.t.properties.a.quality[0]", "not enforced (prose)"),
}


@pytest.mark.parametrize("text,path,said", list(NOT_ENFORCED.values()), ids=list(NOT_ENFORCED))
def test_validate_says_every_clause_that_will_not_run(tmp_path, text, path, said):
    # with a server: a contract without one has a warning of its own (its checks cannot run)
    (tmp_path / "c.odcs.yaml").write_text(text.replace("status: active\n", "status: active\nservers:\n"
                                                       "  - server: mem\n    type: duckdb\n    database: ':memory:'\n", 1))
    plain = run_validate(tmp_path, ["c.odcs.yaml"])
    assert plain.returncode == 0, plain.stdout + plain.stderr
    line = next((ln for ln in plain.stdout.splitlines() if f": warning: {path}: " in ln), None)
    assert line is not None and said in line and line.startswith("c.odcs.yaml:"), plain.stdout
    assert "1 valid, 0 error(s), 1 warning(s)" in plain.stdout, plain.stdout
    strict = run_validate(tmp_path, ["c.odcs.yaml", "--strict"])
    assert strict.returncode == 1 and "1 error(s), 0 warning(s)" in strict.stdout, strict.stdout


def test_report_on_a_production_home_without_its_variables_says_which(tmp_path):
    """The production dagster.yaml reads PostgreSQL's settings from the environment: without them,
    `report` names the variables in one sentence and exits 1, with no traceback."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / "deploy" / "dagster.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_")}
    env.update(DAGSTER_HOME=str(home), PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "report", str(REPO / "contracts")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("dq-contracts report: ") and "DAGSTER_PG_PASSWORD" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# `report` with no DAGSTER_HOME: what the folder holds → what the one line on stderr names
NO_HOME = [
    ([], ".tmp_dagster_home_* folder of the folder it runs in"),
    ([".tmp_dagster_home_ab12cd34"], "DAGSTER_HOME=$PWD/.tmp_dagster_home_ab12cd34"),
]


@pytest.mark.parametrize("folders,said", NO_HOME)
def test_report_without_dagster_home_names_where_dagster_dev_keeps_history(tmp_path, folders, said):
    """The demo's `dagster dev` keeps its history in a hidden temporary folder of the clone: `report`
    run there without DAGSTER_HOME names it (exit 1, one line, no traceback)."""
    for name in folders:
        (tmp_path / name).mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_")}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "report", str(REPO / "contracts")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 1 and said in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr


# (a typo, where it is) → exactly one error, at the typo, naming what was meant: the schema validator's
# cascade (a valid `metric` called "unexpected" beside a misspelt operator) is reduced to its cause
TYPOS = {
    "an operator": (QUALITY + "          - metric: nullValues\n            mustBeGreaterThen: 0\n",
                    "schema.t.properties.a.quality[0].mustBeGreaterThen", "did you mean 'mustBeGreaterThan'?"),
    "a server type": (good() + "servers:\n  - server: s\n    type: lokal\n    format: csv\n    path: x.csv\n",
                      "servers[0].type", "did you mean 'local'?"),
    "a property key": (good() + "        requird: true\n", "schema.t.properties.a.requird", "did you mean 'required'?"),
    "a logicalType": (good().replace("logicalType: string", "logicalType: strng"),
                      "schema.t.properties.a.logicalType", "did you mean 'string'?"),
    "a top-level key": (good().replace("status: active", "status: active\ndescripton: {purpose: x}"),
                        "descripton", "did you mean 'description'?"),
}


@pytest.mark.parametrize("text,path,hint", list(TYPOS.values()), ids=list(TYPOS))
def test_a_typo_is_one_error_that_says_what_was_meant(tmp_path, text, path, hint):
    (tmp_path / "c.odcs.yaml").write_text(text)
    proc = run_validate(tmp_path, ["c.odcs.yaml"])
    errors = [line for line in proc.stdout.splitlines() if line.startswith("c.odcs.yaml:") and ": warning: " not in line]
    assert proc.returncode == 1 and len(errors) == 1, proc.stdout
    assert f": {path}: " in errors[0] and hint in errors[0], errors[0]


def test_an_enum_error_lists_every_valid_value(tmp_path):
    (tmp_path / "c.odcs.yaml").write_text(good() + "servers:\n  - server: s\n    type: lokal\n")
    proc = run_validate(tmp_path, ["c.odcs.yaml"])
    line = next(ln for ln in proc.stdout.splitlines() if "servers[0].type" in ln)
    assert "other candidates" not in line and all(t in line for t in ("api", "duckdb", "postgres", "local", "sqlserver"))
