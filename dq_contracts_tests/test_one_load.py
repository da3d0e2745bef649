"""Every command judges a contract as `validate` does: one load, the same rules, whatever the entry point.

A newcomer's contract (a DuckDB file, a table `orders`) with one defect a row: `validate` refuses
it, so `check`, `plan`, `diff`, `init --against`, `report` and the Dagster layer must refuse it too,
each saying the same problem at the same file:line (README: "A contract with validation errors is
not run"). And what `validate` reports, it reports at once: every problem of a file in one run.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import dagster as dg
import pytest
from dagster._utils.schedules import is_valid_cron_schedule

from dq_contracts.cli import main
from dq_contracts_tests.support import duckdb_with

CONTRACT = """\
apiVersion: v3.1.0
kind: DataContract
id: urn:newcomer:orders
version: 1.0.0
status: active
name: orders
servers:
  - server: local
    type: duckdb
    database: {database}
    schema: main
schema:
  - name: orders
    properties:
      - name: order_id
        logicalType: integer
        required: true
      - name: amount
        logicalType: number
{sla}"""

SIX_FIELDS = "slaProperties:\n  - property: frequency\n    value: 1\n    scheduler: cron\n    schedule: '0 0 6 * * *'\n"
REFUSED = re.compile(r"orders\.odcs\.yaml:\d+: slaProperties\[0\]\.schedule: cron '0 0 6 \* \* \*': Dagster refuses")


def project(tmp_path: Path, sla: str = SIX_FIELDS, database: str = "../data/shop.duckdb") -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    if not (tmp_path / "data" / "shop.duckdb").exists():
        duckdb_with(tmp_path / "data" / "shop.duckdb", "CREATE TABLE orders (order_id INTEGER, amount DOUBLE)",
                    "INSERT INTO orders VALUES (1, 9.5), (2, 3.0)")
    folder = tmp_path / "contracts"
    folder.mkdir(exist_ok=True)
    (folder / "orders.odcs.yaml").write_text(CONTRACT.format(database=database, sla=sla))
    return folder


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def test_validate_refuses_a_six_field_cron(tmp_path, capsys):
    code, out = run(capsys, "validate", str(project(tmp_path)))
    assert code == 1 and REFUSED.search(out), out


# (command, its arguments after the folder or file): each must exit 1 and say validate's problem
COMMANDS = {
    "check": lambda folder: ["check", str(folder)],
    "check --format json": lambda folder: ["check", str(folder), "--format", "json"],
    "plan": lambda folder: ["plan", str(folder)],
    "plan --format json": lambda folder: ["plan", str(folder), "--format", "json"],
    "diff, the refused cron on the new side": lambda folder: ["diff", str(folder.parent / "old.odcs.yaml"),
                                                              str(folder / "orders.odcs.yaml")],
    "init --against": lambda folder: ["init", "--against", str(folder / "orders.odcs.yaml")],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_command_runs_or_passes_what_validate_refuses(tmp_path, capsys, command):
    folder = project(tmp_path)
    (tmp_path / "old.odcs.yaml").write_text(CONTRACT.format(database="data/shop.duckdb", sla=""))
    code, out = run(capsys, *COMMANDS[command](folder))
    assert code == 1, out
    if "json" in command:
        assert "Dagster refuses this cron" in out and "slaProperties[0].schedule" in out, out
    else:
        assert REFUSED.search(out), out
    assert "0 0 6 * * *' (UTC) runs" not in out  # plan promises no schedule it cannot make


def test_report_says_validate_s_problem(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    code, out = run(capsys, "report", str(project(tmp_path)))
    assert code == 1 and REFUSED.search(out), out


def test_dagster_shows_validate_s_problem_on_the_contract(tmp_path):
    from dq_contracts.dagster_defs.definitions import build_contract_defs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        defs = build_contract_defs(project(tmp_path))
        dg.Definitions.validate_loadable(defs)
    checks = {k.name for k in defs.resolve_asset_graph().asset_check_keys}
    assert checks == {"contract_valid"}, checks  # none of its checks attach; its problem is shown


# crons croniter takes or refuses: the pure rule every command applies is Dagster's own
CRONS = ["0 6 * * *", "*/5 * * * *", "@daily", "@hourly", "0 0 6 * * *", "* * * * * *", "0 0 1 1 * 2030",
         "0 0 30 2 *", "0 0 31 2 *", "0 0 29 2 *", "0 0 31 4 *", "61 * * * *", "0 6 * * MON-FRI", "0 6 L * *",
         "0 0 1-7 * 1#1", "H 6 * * *", "0 6 * * * *"]


@pytest.mark.parametrize("cron", CRONS)
def test_the_pure_cron_rule_is_dagster_s(cron):
    from dq_contracts.odcs.compiler import cron_refusal

    try:
        dagster_takes = is_valid_cron_schedule(cron)
    except Exception:
        dagster_takes = False
    if cron == "0 0 31 4 *":  # Dagster takes it, and its automation then fails for every contract
        assert dagster_takes and cron_refusal(cron) is not None
        return
    assert (cron_refusal(cron) is None) == dagster_takes, cron_refusal(cron)


# --- every problem at once, and a server no check can reach said before anything runs ------------

def test_a_refused_cron_hides_no_other_problem(tmp_path, capsys):
    # the database outside the roots is said with the cron, not only once the cron is fixed
    code, out = run(capsys, "validate", str(project(tmp_path, database="/etc/shop.duckdb")))
    assert code == 1 and REFUSED.search(out), out
    assert re.search(r"orders\.odcs\.yaml:\d+: servers\[0\]\.database: server 'local': database '/etc/shop.duckdb' "
                     r"resolves to .*outside the folders", out), out
    assert "0 valid, 2 error(s)" in out, out


NO_SERVER = CONTRACT.replace("servers:\n  - server: local\n    type: duckdb\n    database: {database}\n    schema: main\n",
                             "")
NO_ENDPOINT = CONTRACT.replace("type: duckdb\n    database: {database}\n    schema: main\n",
                               "type: postgresql\n    host: db.example.com\n    port: 5432\n    database: shop\n"
                               "    schema: public\n")
# (the contract, what validate says of it at its line, what check says once)
UNREACHABLE = {
    "no servers": (NO_SERVER, r"orders\.odcs\.yaml:1: warning: servers: the contract declares no server to check "
                   r"against: add a `servers` entry", "declares no server to check against"),
    "postgresql, no endpoint": (NO_ENDPOINT, r"orders\.odcs\.yaml:8: warning: servers\[0\]: server 'local': no "
                                r"endpoint declared by the operator; set DQ_CONTRACTS_LOCAL_URL",
                                "no endpoint declared by the operator"),
}


@pytest.mark.parametrize("case", sorted(UNREACHABLE))
def test_a_server_no_check_can_reach_is_said_by_validate_at_its_line(tmp_path, capsys, case):
    text, says, _ = UNREACHABLE[case]
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "orders.odcs.yaml").write_text(text.format(database="x", sla=""))
    code, out = run(capsys, "validate", str(folder))
    assert code == 0 and re.search(says, out) and "1 valid, 0 error(s), 1 warning(s)" in out, out
    code, out = run(capsys, "validate", "--strict", str(folder))
    assert code == 1 and "warning:" not in out and "1 error(s), 0 warning(s)" in out, out


@pytest.mark.parametrize("case", sorted(UNREACHABLE))
def test_check_says_an_unreachable_server_once_not_once_per_check(tmp_path, capsys, case, monkeypatch):
    for variable in [v for v in __import__("os").environ if v.startswith("DQ_CONTRACTS_")]:
        monkeypatch.delenv(variable)
    text, _, once = UNREACHABLE[case]
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "orders.odcs.yaml").write_text(text.format(database="x", sla=""))
    code, out = run(capsys, "check", str(folder))
    assert code == 1, out
    said = [line for line in out.splitlines() if once in line and "warning" not in line]
    assert len(said) == 1 and "2 check(s) could not be evaluated" in said[0], out
    assert out.count("could not be evaluated: the error said below") == 2, out


# --- validate --strict: what it prints and what it counts agree -----------------------------------

def test_strict_prints_as_errors_what_it_counts_as_errors(tmp_path, capsys):
    folder = project(tmp_path, sla="")
    text = (folder / "orders.odcs.yaml").read_text().replace("logicalType: number\n",
                                                             "logicalType: number\n        logicalTypeOptions:\n          multipleOf: 1.0e-300\n")
    (folder / "orders.odcs.yaml").write_text(text)
    code, out = run(capsys, "validate", str(folder))
    assert code == 0 and "warning: schema.orders.properties.amount" in out and "0 error(s), 1 warning(s)" in out, out
    code, out = run(capsys, "validate", "--strict", str(folder))
    assert code == 1 and "warning:" not in out and "1 error(s), 0 warning(s)" in out, out


# --- a freshness element no engine can read the age of: every non-date family alike -------------

FRESH = """\
apiVersion: v3.1.0
kind: DataContract
id: urn:newcomer:events
version: 1.0.0
status: active
schema:
  - name: events
    properties:
      - name: placed
{declared}slaProperties:
  - property: latency
    value: 1
    unit: d
    element: events.placed
"""


@pytest.mark.parametrize("logical", ["string", "integer", "number", "boolean"])
def test_validate_warns_of_freshness_on_a_column_of_no_date_family(tmp_path, capsys, logical):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "events.odcs.yaml").write_text(FRESH.format(declared=f"        logicalType: {logical}\n"))
    code, out = run(capsys, "validate", str(tmp_path / "c"))
    assert re.search(rf"events\.odcs\.yaml:15: warning: slaProperties\[0\]\.element: the SLA element placed is "
                     rf"declared logicalType {logical}: freshness needs a date or timestamp column", out), out


# --- checks on a column the schema check found missing or of another type say so in words ------

TABLE = """\
apiVersion: v3.1.0
kind: DataContract
id: urn:newcomer:orders
version: 1.0.0
status: active
servers:
  - server: files
    type: local
    format: csv
    path: {path}
schema:
  - name: orders
    properties:
      - name: order_id
        logicalType: integer
        classification: pii
      - name: note
        logicalType: number
        logicalTypeOptions:
          minimum: 0
      - name: gone
        logicalType: integer
        required: true
      - name: placed
slaProperties:
  - property: latency
    value: 1
    unit: d
    element: orders.placed
"""
# (check, what its row says): the catalog's words, never the engine's error or a withheld one
IN_WORDS = {
    "gone__not_null": "column gone is missing from the table (see the schema check)",
    "note__minimum": "note is VARCHAR, not a number (see the schema check)",
    "placed__freshness": "placed is VARCHAR, not a date or timestamp: freshness needs one",
}


def csv_project(tmp_path: Path, path: str) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "orders.csv").write_text("order_id,note,placed\n1,a,x\n2,b,y\n")
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "orders.odcs.yaml").write_text(TABLE.format(path=path))
    return tmp_path / "contracts"


@pytest.mark.parametrize("check", sorted(IN_WORDS))
def test_a_check_says_what_the_schema_check_knows_in_words(tmp_path, capsys, check):
    code, out = run(capsys, "check", str(csv_project(tmp_path, "../data/orders.csv")))
    row = next(line for line in out.splitlines() if f" {check} " in line)
    assert f"could not be evaluated: {IN_WORDS[check]}" in row, out
    assert "Error" not in row and "withheld" not in row, out


# --- a path that matches no file: said where it is written, and once -----------------------------

def test_a_path_that_matches_no_file_is_said_at_its_line_and_once(tmp_path, capsys):
    folder = csv_project(tmp_path, "data/orders.csv")  # written from the project's folder, read from the contract's
    code, out = run(capsys, "validate", str(folder))
    assert code == 0 and re.search(
        r"orders\.odcs\.yaml:10: warning: servers\[0\]\.path: server 'files': path 'data/orders.csv' matches no file "
        r"for object 'orders': looked for .*contracts/data/orders\.csv; a relative path is read from the contract "
        r"file's folder", out), out
    code, out = run(capsys, "check", str(folder))
    assert code == 1, out
    said = [line for line in out.splitlines() if "no regular file inside" in line]
    assert len(said) == 1 and "(the server's path 'data/orders.csv': a relative path is read from the contract " \
        "file's folder" in said[0], out
    assert re.search(r"orders\.odcs\.yaml:10: warning: servers\[0\]\.path", out), out


# --- a newcomer's slips: each says what to write instead ----------------------------------------

def test_a_server_typed_as_its_file_format_says_local(tmp_path, capsys):
    folder = csv_project(tmp_path, "../data/orders.csv")
    text = (folder / "orders.odcs.yaml").read_text().replace("    type: local\n    format: csv\n", "    type: csv\n")
    (folder / "orders.odcs.yaml").write_text(text)
    code, out = run(capsys, "validate", str(folder))
    assert code == 1 and re.search(r"orders\.odcs\.yaml:8: servers\[0\]\.type: \"csv\" is not one of .* \(did you mean "
                                   r"`type: local` with `format: csv` and a `path`\?\)", out), out


@pytest.mark.parametrize("alone", [False, True], ids=["beside a contract", "alone"])
def test_a_misspelt_kind_is_said_not_skipped_silently(tmp_path, capsys, alone):
    folder = project(tmp_path, sla="")
    text = (folder / "orders.odcs.yaml").read_text()
    (folder / "events.yaml").write_text(text.replace("kind: DataContract", "kind: Datacontract")
                                        .replace("urn:newcomer:orders", "urn:newcomer:events"))
    if alone:
        (folder / "orders.odcs.yaml").unlink()
    code, out = run(capsys, "validate", str(folder))
    assert "events.yaml: warning: kind: skipped: `kind: Datacontract` is not `kind: DataContract`" in out, out
    assert code == (1 if alone else 0), out  # alone, the folder holds no contract: a CI gate must not pass


def test_an_unknown_option_shows_the_command_s_usage(capsys):
    code, out = run(capsys, "check", "--bogus", "contracts")
    assert code == 4 and "usage: dq-contracts check" in out and "--partition KEY" in out, out
    assert "dq-contracts check: error: unrecognized arguments: --bogus" in out, out


@pytest.mark.parametrize("command", ["validate", "plan", "check"])
def test_server_is_judged_alike_by_every_command(tmp_path, capsys, command):
    code, out = run(capsys, command, str(project(tmp_path, sla="")), "--server", "prod")
    assert code == 1 and re.search(r"orders\.odcs\.yaml:\d+: servers: no server named 'prod' to check against; this "
                                   r"contract declares 'local'", out), out


@pytest.mark.parametrize("case", sorted(UNREACHABLE))
def test_dagster_logs_what_validate_warns_of_a_server(tmp_path, caplog, case, monkeypatch):
    import logging

    from dq_contracts.dagster_defs.definitions import build_contract_defs

    for variable in [v for v in __import__("os").environ if v.startswith("DQ_CONTRACTS_")]:
        monkeypatch.delenv(variable)
    text, says, _ = UNREACHABLE[case]
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "orders.odcs.yaml").write_text(text.format(database="x", sla="").replace("urn:newcomer:orders",
                                                                                      f"urn:newcomer:{len(case)}"))
    with caplog.at_level(logging.WARNING, logger="dq_contracts"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_contract_defs(folder)
    assert any(re.search(says, r.getMessage()) for r in caplog.records), [r.getMessage() for r in caplog.records]
