"""What CI reads of `dq-contracts check` and `validate`: the exit code (0 pass, 1 an ERROR clause
broken or a contract with errors, 2 only WARN clauses broken, 3 an internal error), JUnit XML
validated against the JUnit schema Jenkins reads (junit-10.xsd, taken from pytest's own sdist at run
time), and GitHub Actions workflow commands read back as the runner parses them. Each row is one
real DuckDB table checked under a contract made of the row's clauses."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from dq_contracts.cli import main
from dq_contracts.odcs.visible import visible
from dq_contracts_tests.support import REPO, demo_shop

XSD = "testing/example_scripts/junit-10.xsd"


@pytest.fixture(scope="session")
def junit_schema(tmp_path_factory):
    """Jenkins' JUnit schema (junit-10.xsd), which pytest validates its own `--junitxml` against and
    ships in its sdist: fetched from the registry at run time (never copied into this repository),
    for the pytest installed here. Without the registry a local run skips; CI must have it."""
    import xmlschema

    folder = tmp_path_factory.mktemp("pytest_sdist")
    release = version("pytest")
    # --no-binary pytest, not :all:, which would build pytest's build backend from source too
    proc = subprocess.run([sys.executable, "-m", "pip", "download", f"pytest=={release}", "--no-binary", "pytest",
                           "--no-deps", "--quiet", "-d", str(folder)], capture_output=True, text=True, timeout=300)
    sdists = list(folder.glob("pytest-*.tar.gz"))
    if proc.returncode != 0 or not sdists:
        if os.environ.get("CI"):
            raise AssertionError(f"could not download pytest {release}'s sdist for {XSD}: {proc.stderr[-2000:]}")
        pytest.skip(f"pytest {release}'s sdist is not reachable here: {proc.stderr.strip()[-300:]}")
    with tarfile.open(sdists[0]) as sdist:
        member = sdist.extractfile(f"pytest-{release}/{XSD}")
        assert member is not None, f"{XSD} is no longer in pytest {release}'s sdist"
        return xmlschema.XMLSchema(io.BytesIO(member.read()))


# --- a contract of a row's clauses on one real table ---------------------------------------------------

TABLE = "CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'b')) v(id, code)"

HEAD = """\
apiVersion: v3.1.0
kind: DataContract
id: urn:test:ci
version: 1.0.0
status: active
servers: [{server: local, type: duckdb, database: shop.duckdb}]
schema:
  - name: t
    properties:
      - name: id
        physicalType: INTEGER
        logicalType: integer
        unique: true
      - name: code
        physicalType: VARCHAR
        logicalType: string
        quality:
"""

BROKEN_SQL = "SELECT COUNT(*) FROM {object} WHERE CAST(code AS INTEGER) > 0"  # 'a' is no integer: an error

# a clause of `code` by what it does on the table: (the quality rule, its check's name)
CLAUSES = {
    "ERROR passes": ("{name: only_known, metric: invalidValues, arguments: {validValues: [a, b]}, mustBe: 0}",
                     "only_known"),
    "ERROR fails": ("{name: only_a, metric: invalidValues, arguments: {validValues: [a]}, mustBe: 0}", "only_a"),
    "WARN passes": ("{name: few_b, metric: invalidValues, arguments: {validValues: [a, b]}, mustBe: 0, "
                    "severity: warning}", "few_b"),
    "WARN fails": ("{name: no_b, metric: invalidValues, arguments: {validValues: [a]}, mustBe: 0, "
                   "severity: warning}", "no_b"),
    "ERROR unevaluated": (f"{{name: cast_error, type: sql, query: '{BROKEN_SQL}', mustBe: 0}}", "cast_error"),
    "WARN unevaluated": (f"{{name: cast_warn, type: sql, query: '{BROKEN_SQL}', mustBe: 0, severity: warning}}",
                         "cast_warn"),
    # refused when the contract loads: an error of the contract confined to its clause, which is not run
    "ERROR refused": ("{name: writes, type: sql, query: 'DELETE FROM {object}', mustBe: 0}", "writes"),
}

INVALID = HEAD.replace("id: urn:test:ci", "id: urn:test:ci_bad").replace("logicalType: string",
                                                                        "logicalType: varchar") + \
    "          - {metric: rowCount, mustBeGreaterThan: 0}\n"


def shop(folder: Path, clauses: list[str], invalid: bool = False) -> Path:
    import duckdb

    (folder / "contracts").mkdir()
    with duckdb.connect(str(folder / "contracts" / "shop.duckdb")) as db:
        db.execute(TABLE)
    rules = "".join(f"          - {CLAUSES[c][0]}\n" for c in clauses)
    (folder / "contracts" / "c.odcs.yaml").write_text(HEAD + rules)
    if invalid:
        (folder / "contracts" / "bad.odcs.yaml").write_text(INVALID)
    return folder / "contracts"


def run_cli(capsysbinary, monkeypatch, cwd: Path, *argv: str) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    code = main(list(argv))
    out, err = capsysbinary.readouterr()
    return int(code), out.decode("utf-8"), err.decode("utf-8")


@dataclass(frozen=True)
class Row:
    clauses: list[str]
    exit: int
    junit: dict[str, str]  # check (or contract_valid) name -> failure | error | skipped | pass
    invalid: bool = False  # a second contract with a validation error beside it


ROWS = {
    "every clause passes": Row(["ERROR passes", "WARN passes"], 0, {"only_known": "pass", "few_b": "pass"}),
    "only a WARN clause fails": Row(["ERROR passes", "WARN fails"], 2, {"only_known": "pass", "no_b": "skipped"}),
    "an ERROR clause fails": Row(["ERROR fails", "WARN passes"], 1, {"only_a": "failure", "few_b": "pass"}),
    "an ERROR and a WARN clause fail": Row(["ERROR fails", "WARN fails"], 1, {"only_a": "failure", "no_b": "skipped"}),
    "an ERROR clause cannot be evaluated": Row(["ERROR unevaluated", "WARN passes"], 1,
                                               {"cast_error": "error", "few_b": "pass"}),
    # a WARN clause fails at its own severity, even unevaluated: a warning, not a failed run
    "only a WARN clause cannot be evaluated": Row(["ERROR passes", "WARN unevaluated"], 2,
                                                  {"only_known": "pass", "cast_warn": "skipped"}),
    # its problem is its own case's error, not a contract_valid case as well (Dagster has none either)
    "a refused SQL rule beside a passing clause": Row(["ERROR passes", "ERROR refused"], 1,
                                                      {"only_known": "pass", "writes": "error"}),
    "a contract with an error beside a passing one": Row(["ERROR passes"], 1,
                                                         {"only_known": "pass", "contract_valid": "failure"},
                                                         invalid=True),
}


def outcome(case: ET.Element) -> str:
    children = [child.tag for child in case]
    assert len(children) <= 1, children
    return children[0] if children else "pass"


@pytest.mark.parametrize("name", ROWS)
def test_exit_codes_junit_and_annotations_follow_the_clauses(name, tmp_path, capsysbinary, monkeypatch, junit_schema):
    row = ROWS[name]
    shop(tmp_path, row.clauses, row.invalid)
    codes = {}
    for fmt in ("text", "json", "junit", "github"):
        codes[fmt], out, err = run_cli(capsysbinary, monkeypatch, tmp_path, "check", "contracts", "--format", fmt)
        assert "internal error" not in err, err
        if fmt == "junit":
            xml = out
        if fmt == "github":
            github = out
    assert codes == dict.fromkeys(codes, row.exit), codes

    junit_schema.validate(xml)
    root = ET.fromstring(xml.encode())
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert {n: outcome(cases[n]) for n in row.junit} == row.junit
    assert ("contract_valid" in cases) is row.invalid
    failing = [n for n, o in row.junit.items() if o in ("failure", "error")]
    assert int(root.get("failures")) + int(root.get("errors")) == len(failing)
    suites = {s.get("file"): s for s in root.iter("testsuite")}
    assert suites["contracts/c.odcs.yaml"].get("name") == "urn:test:ci (contracts/c.odcs.yaml)"
    for check, expected in row.junit.items():
        case = cases[check]
        if check == "contract_valid":
            assert case.get("classname") == "contracts/bad.odcs.yaml"
            assert 'logicalType: "varchar" is not one of' in case[0].text
            continue
        assert case.get("classname") == "t"
        if expected != "pass":  # the sentence, observed, threshold and the clause's file:line
            text = case[0].text
            assert case[0].get("message").split(": ", 1)[1] == text.splitlines()[0]
            label = next(c for c in row.clauses if CLAUSES[c][1] == check)  # "WARN unevaluated"
            severity = label.split()[0]
            status = "error" if label.endswith(("unevaluated", "refused")) else "warn" if severity == "WARN" else "fail"
            assert case[0].get("message").startswith(f"{status} ({severity}): "), case[0].get("message")
            assert "\nobserved: " in text and "\nthreshold: " in text, text
            assert "\nclause: contracts/c.odcs.yaml:" in text and ".quality[" in text, text

    annotations = [parsed(line) for line in github.splitlines() if line.startswith("::")]
    expected_commands = sorted({"failure": "error", "error": "error", "skipped": "warning"}[o]
                               for o in row.junit.values() if o != "pass")
    assert sorted(command for command, _, _ in annotations) == expected_commands
    for _, properties, _ in annotations:
        assert properties["file"].startswith("contracts/") and int(properties["line"]) > 0, properties


def parsed(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command read back as the GitHub runner reads it (actions/runner ActionCommand
    TryParseV2): the command info ends at the first `::` after the prefix, properties split on `,`
    then on the first `=`, and each is unescaped, `%25` last."""
    assert line.startswith("::"), line
    end = line.index("::", 2)
    info, data = line[2:end], line[end + 2:]
    command, _, props = info.partition(" ")
    properties = {}
    for item in filter(None, props.split(",")):
        key, _, value = item.partition("=")
        for escape, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
            value = value.replace(escape, char)
        properties[key] = value
    for escape, char in (("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        data = data.replace(escape, char)
    return command, properties, data


# (options) → exit code, the commands: a clause that will not run is a warning, an error under --strict
VALIDATE_ROWS = {"plain": ([], 0, ["warning"]), "strict": (["--strict"], 1, ["error"])}


@pytest.mark.parametrize("name", VALIDATE_ROWS)
def test_validate_annotates_each_problem_where_it_is_written(name, tmp_path, capsysbinary, monkeypatch):
    options, exit, commands = VALIDATE_ROWS[name]
    (tmp_path / "c.odcs.yaml").write_text(HEAD + "          - {type: text, description: be nice}\n")
    code, out, _ = run_cli(capsysbinary, monkeypatch, tmp_path, "validate", "c.odcs.yaml", "--format", "github",
                           *options)
    lines = out.splitlines()
    assert code == exit and lines[-1].startswith("read 1 contract file(s)"), out
    annotations = [parsed(line) for line in lines[:-1]]
    assert [c for c, _, _ in annotations] == commands
    (_, properties, data), = annotations
    line = HEAD.count("\n") + 1  # the rule's own line
    assert properties == {"file": "c.odcs.yaml", "line": str(line),
                          "title": "dq-contracts: schema.t.properties.code.quality[0]"}, properties
    assert "not enforced" in data, data


# (command, message, properties) → the line: the runner's escapes, `%` first; a CR is already shown as
# `\u000d` by `visible` (a control), so only LF reaches its escape
COMMANDS = {
    "plain": (("error", "1 row", {"file": "c.yaml", "line": 3, "title": "t"}), "::error file=c.yaml,line=3,title=t::1 row"),
    "percent in the message": (("warning", "0.4 %", {}), "::warning::0.4 %25"),
    "an escape in the text stays text": (("error", "%0A", {"title": "%2C"}), "::error title=%252C::%250A"),
    "a newline cannot start a command": (("error", "a\n::warning::b", {}), "::error::a%0A::warning::b"),
    "a carriage return is shown": (("error", "a\rb", {"title": "x\ry"}), "::error title=x\\u000dy::a\\u000db"),
    "separators in a property": (("error", "m", {"file": "a,b:c.yaml", "title": "k=v::w"}),
                                 "::error file=a%2Cb%3Ac.yaml,title=k=v%3A%3Aw::m"),
    "a property of None is left out": (("error", "m", {"file": "c.yaml", "line": None}), "::error file=c.yaml::m"),
    "a hidden character is shown": (("error", "\u202ex", {}), "::error::\\u202ex"),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_workflow_command_is_escaped_as_the_runner_reads_it(name):
    from dq_contracts.engine.ci_output import workflow_command

    (command, message, properties), line = COMMANDS[name]
    assert workflow_command(command, message, **properties) == line
    assert parsed(line)[0] == command


# --- hostile text -------------------------------------------------------------------------------------

# what a contract may put in the text a check's sentence quotes (an enum's values) or a problem's
# message quotes (an unknown logicalType): XML's forbidden characters, a lone surrogate, a newline
# that would start a workflow command of its own, and the runner's escapes and separators
HOSTILE = ["a\x07b", "x\n::error file=evil::pwned", "50%0A%,x:y", "\u202egnp.exe", "\r::warning::z", "\ufffe"]
# in the invalid contract only: no driver binds a lone surrogate, and DuckDB's parser ends a string
# at NUL, so a check quoting either is an error (its sentence says so) rather than a failure
SURROGATE, NUL = "\ud800", "\x00"
NAME = "id\n::warning::injected,x:y%0A\r"


def test_hostile_contract_text_cannot_break_the_xml_or_the_annotations(tmp_path, capsysbinary, monkeypatch,
                                                                       junit_schema):
    import duckdb

    with duckdb.connect(str(tmp_path / "shop.duckdb")) as db:
        db.execute(TABLE)
    document = {
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": "urn:test:hostile", "version": "1.0.0",
        "status": "active", "servers": [{"server": "local", "type": "duckdb", "database": "shop.duckdb"}],
        "schema": [{"name": "t", "properties": [
            {"name": "id", "physicalType": "INTEGER", "logicalType": "integer"},
            {"name": "code", "physicalType": "VARCHAR", "logicalType": "string", "quality": [
                {"name": "hostile", "metric": "invalidValues", "arguments": {"validValues": HOSTILE}, "mustBe": 0},
                {"name": "hostile_warn", "metric": "invalidValues", "arguments": {"validValues": HOSTILE},
                 "mustBe": 0, "severity": "warning"}]}]}]}
    # json.dumps writes the lone surrogate as \ud800, which the loader reads back as one
    (tmp_path / "h.odcs.json").write_text(json.dumps(document))
    bad = json.loads(json.dumps(document))
    bad["id"] = "urn:test:hostile_bad"
    bad["schema"][0]["properties"][0]["logicalType"] = HOSTILE[1] + SURROGATE + NUL
    # a problem's path names the property as written: its newline reaches the annotation's title
    bad["schema"][0]["properties"][0]["name"] = NAME
    (tmp_path / "bad.odcs.json").write_text(json.dumps(bad))

    code, xml, _ = run_cli(capsysbinary, monkeypatch, tmp_path, "check", ".", "--format", "junit")
    assert code == 1
    junit_schema.validate(xml)
    root = ET.fromstring(xml.encode())  # a strict parser: one forbidden character and this raises
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert outcome(cases["hostile"]) == "failure" and outcome(cases["hostile_warn"]) == "skipped"
    assert outcome(cases["contract_valid"]) == "failure"
    text = "".join(root.itertext()) + "".join(v for e in root.iter() for v in e.attrib.values())
    for char in (NUL, "\x07", SURROGATE, "\r", "\u202e", "\ufffe"):
        assert char not in text, repr(char)
    # the sentence quotes the contract's values as Python literals: escapes, never the characters
    assert "'a\\x07b', 'x\\n::error file=evil::pwned'" in cases["hostile"][0].text

    for argv in (["check", ".", "--format", "github"], ["validate", ".", "--format", "github"]):
        code, out, _ = run_cli(capsysbinary, monkeypatch, tmp_path, *argv)
        assert code == 1
        lines = out.splitlines()
        commands = [parsed(line) for line in lines if line.lstrip().startswith("::")]
        assert lines[-1].startswith(("3 check(s)", "read 2 contract file(s)")), lines[-1]
        # each broken clause or problem is exactly one command: no text of the contract started another
        assert len(commands) == len(lines) - 1, lines
        assert {c for c, _, _ in commands} <= {"error", "warning"}
        for _, properties, data in commands:
            assert set(properties) <= {"file", "line", "title"} and properties["file"].endswith(".odcs.json")
            assert "\r" not in data and data == visible(data), data  # read back: the visible text
        titles = [p["title"] for _, p, _ in commands]
        assert f"dq-contracts: schema.t.properties.{visible(NAME)}.logicalType" in titles, titles
        if argv[0] == "check":
            messages = [d for _, _, d in commands]
            assert any("'50%0A%,x:y'" in m for m in messages), messages


# what a CI runner takes for a command of its own in any line a job prints (GitHub's `::…` at a line's
# start, `##[…]` anywhere, Azure's `##vso[…]`, TeamCity's `##teamcity[…]`), in a contract's names
RUNNER_COMMANDS = ["a\n::warning file=evil.py,line=1::injected", "b ##[error]legacy", "c ##vso[task.complete]x",
                   "d\n  ::stop-commands::token"]


def runner_would_read_a_command(line: str) -> bool:
    return line.lstrip().startswith("::") or bool(re.search(r"##\w*\[", line))


@pytest.mark.parametrize("argv", [["validate", "."], ["plan", "."], ["plan", ".", "--format", "json"],
                                  ["check", "."], ["check", ".", "--format", "json"], ["check", ".", "--format", "junit"]],
                         ids=" ".join)
def test_no_text_of_a_contract_reads_as_a_ci_runner_command(argv, tmp_path, capsysbinary, monkeypatch):
    import duckdb

    with duckdb.connect(str(tmp_path / "shop.duckdb")) as db:
        db.execute(TABLE)
    base = {"apiVersion": "v3.1.0", "kind": "DataContract", "version": "1.0.0", "status": "active",
            "servers": [{"server": "local", "type": "duckdb", "database": "shop.duckdb"}]}
    # valid, its texts quoted in the output: enum values in a sentence, a description in JSON
    values = [{"name": "code", "physicalType": "VARCHAR", "logicalType": "string", "description": RUNNER_COMMANDS[1],
               "quality": [{"metric": "invalidValues", "arguments": {"validValues": RUNNER_COMMANDS}, "mustBe": 0}]}]
    (tmp_path / "good.odcs.json").write_text(json.dumps({**base, "id": "urn:good", "schema": [
        {"name": "t", "properties": [{"name": "id", "physicalType": "INTEGER", "logicalType": "integer"}, *values]}]}))
    # invalid, its property names in the problems' paths
    (tmp_path / "bad.odcs.json").write_text(json.dumps({**base, "id": "urn:bad", "schema": [
        {"name": "u", "properties": [{"name": name, "logicalType": "varchar"} for name in RUNNER_COMMANDS]}]}))
    code, out, err = run_cli(capsysbinary, monkeypatch, tmp_path, *argv)
    assert code == 1 and "internal error" not in err, err
    said = [line for line in (out + err).splitlines() if runner_would_read_a_command(line)]
    assert said == [], said
    assert "legacy" in out and "injected" in out  # the texts are there, shown


# --- the exit code of an internal error, and the README's command -----------------------------------------

def test_an_internal_error_exits_3_not_a_code_check_gives_clauses(tmp_path, capsys, monkeypatch):
    import dq_contracts.cli as cli

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "cmd_validate", broken)
    assert main(["validate", str(tmp_path)]) == 3
    assert "dq-contracts: internal error: RuntimeError: a bug" in capsys.readouterr().err


def test_a_usage_error_exits_4_not_the_code_of_warnings(tmp_path, capsys):
    """argparse's own exit code for a usage error is 2, which `check` gives to WARN clauses alone."""
    assert main(["check", str(tmp_path), "--no-such-option"]) == 4
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    assert main(["check", "--help"]) == 0


def readme_ci_command() -> str:
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    (command,) = [b.strip() for b in blocks if "--format junit" in b]
    return command


def test_the_readme_ci_command_writes_junit_and_exits_as_documented(tmp_path, junit_schema):
    """The README's CI command as written, from a shop's root in a shell holding only PATH and HOME:
    the demo's 5 failing ERROR clauses exit 1, and the file holds them as failures, the WARN one
    as skipped."""
    demo_shop(tmp_path)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))  # the README's first command made it
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    command = readme_ci_command()
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "52 check(s): 46 pass, 1 warn, 5 fail, 0 error" in proc.stdout, proc.stdout
    report = next(tmp_path.glob("*.xml"))
    junit_schema.validate(str(report))
    root = ET.parse(report).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("52", "5", "0")
    assert [c.get("name") for c in root.iter("testcase") if outcome(c) == "skipped"] == ["status_is_known"]
    # and the README's example annotation, from the same shop
    github = subprocess.run(["bash", "-c", command.replace("--format junit --output dq-contracts-junit.xml",
                                                           "--format github")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert github.returncode == 1, github.stderr
    example = next(line for line in github.stdout.splitlines() if "line=123," in line)
    assert example.startswith("::error file=contracts/orders.odcs.yaml,line=123,title=")
    assert example.endswith("::1 row of 262 pointing at no orders.order_id (0.4 %25); observed 1, threshold = 0")


# (what the check is given) → the failing case's message: a check that runs nothing still writes its
# report, so that a report an earlier run left at --output never stands for this one
RAN_NOTHING = {
    "an empty folder": ([], "no contract file (*.odcs.yaml, *.odcs.yml, *.odcs.json) in empty"),
    "a partition key of no partition": (["--partition", "not-a-day"], "--partition not-a-day: contracts/c.odcs.yaml"),
    "a partition and no partitioned object": (["--partition", "2026-06-01"],
                                              "no object of these contracts is partitioned"),
}


@pytest.mark.parametrize("name", RAN_NOTHING)
def test_a_check_that_runs_nothing_replaces_the_report_with_a_failing_one(name, tmp_path, capsysbinary,
                                                                         monkeypatch, junit_schema):
    options, said = RAN_NOTHING[name]
    (tmp_path / "empty").mkdir()
    shop(tmp_path, ["ERROR passes"])
    if "key" in name:  # a daily-partitioned object, for a key that is no day
        text = (tmp_path / "contracts" / "c.odcs.yaml").read_text()
        (tmp_path / "contracts" / "c.odcs.yaml").write_text(text + (
            "    customProperties:\n      - property: dagsterPartitions\n"
            "        value: {type: static, values: [a, b], column: code}\n"))
    report = tmp_path / "report.xml"
    report.write_text("<testsuites/>")  # an earlier run's, that passed
    target = "empty" if name == "an empty folder" else "contracts"
    code, out, err = run_cli(capsysbinary, monkeypatch, tmp_path, "check", target, "--format", "junit",
                             "--output", str(report), *options)
    assert code == 1, err
    junit_schema.validate(str(report))
    root = ET.parse(report).getroot()
    (case,) = root.iter("testcase")
    assert (root.get("failures"), outcome(case)) == ("1", "failure")
    assert said in case[0].get("message"), case[0].get("message")


# (options, where --output points) → what stderr says; exit 1 and nothing checked
OUTPUT_REFUSED = {
    "another format": (["--format", "json"], "report.xml", "--output is for --format junit"),
    "a folder that does not exist": (["--format", "junit"], "no/such/report.xml", "No such file or directory"),
    "a folder": (["--format", "junit"], ".", "Is a directory"),
}


@pytest.mark.parametrize("name", OUTPUT_REFUSED)
def test_an_output_that_cannot_be_written_is_said_before_anything_runs(name, tmp_path, capsys, monkeypatch):
    options, output, said = OUTPUT_REFUSED[name]
    shop(tmp_path, ["ERROR passes"])
    monkeypatch.chdir(tmp_path)
    assert main(["check", "contracts", *options, "--output", output]) == 1
    err = capsys.readouterr().err
    assert said in err and "internal error" not in err, err

