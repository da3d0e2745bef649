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
