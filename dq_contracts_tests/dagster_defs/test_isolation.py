"""A bad contract is that contract's problem: in a code location of many teams' contracts the valid
ones load with every check, the broken one shows a failing `contract_valid` check on the assets it
names, a refused SQL rule fails its own clause only, and a server name no contract has is found at
load. `strict=True` refuses everything, as before, for CI."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa

from dq_contracts import ContractError, DqContractsTranslator, WarehouseResource, build_contract_defs

HEAD = """\
apiVersion: v3.1.0
kind: DataContract
id: {id}
version: 1.0.0
status: active
servers:
  - server: local
    type: duckdb
    database: wh.duckdb
"""

VALID = HEAD + """\
schema:
  - name: {table}
    properties:
      - name: a
        logicalType: integer
        physicalType: INTEGER
        required: true
        unique: true
"""

# a validation error at line 16 (`minimum` must be a number)
INVALID = HEAD + """\
schema:
  - name: broken_table
    properties:
      - name: a
        logicalType: integer
        logicalTypeOptions:
          minimum: zero
"""

# ten good clauses and one SQL rule that writes
REFUSED = HEAD + """\
schema:
  - name: refused_table
    quality:
      - type: library
        metric: rowCount
        mustBeGreaterOrEqualTo: 1
      - type: sql
        name: no_deletes_please
        query: DELETE FROM refused_table
        mustBe: 0
    properties:
      - name: a
        logicalType: integer
        physicalType: INTEGER
        required: true
        unique: true
      - name: b
        logicalType: integer
        physicalType: INTEGER
        required: true
        logicalTypeOptions: {{minimum: 0, maximum: 100}}
      - name: c
        logicalType: string
        physicalType: VARCHAR
        required: true
        logicalTypeOptions: {{maxLength: 5, pattern: "^[a-z]+$"}}
"""

VALID_TABLES = [f"team{i}_table" for i in range(1, 6)]
REFUSED_GOOD_CHECKS = {"schema", "a__not_null", "a__unique", "b__not_null", "b__minimum", "b__maximum",
                       "c__not_null", "c__max_length", "c__pattern", "row_count"}


def estate(folder: Path) -> Path:
    """Five valid contracts, one invalid, one with a refused rule, and the warehouse they check."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, table in enumerate(VALID_TABLES, 1):
        (folder / f"team{i}.odcs.yaml").write_text(VALID.format(id=f"team{i}", table=table))
    (folder / "broken.odcs.yaml").write_text(INVALID.format(id="broken"))
    (folder / "refused.odcs.yaml").write_text(REFUSED.format(id="refused"))
    engine = sa.create_engine(f"duckdb:///{folder / 'wh.duckdb'}")
    with engine.begin() as c:
        for table in VALID_TABLES:
            c.exec_driver_sql(f"CREATE TABLE {table} (a INTEGER)")
            c.exec_driver_sql(f"INSERT INTO {table} VALUES (1), (2)")
        c.exec_driver_sql("CREATE TABLE refused_table (a INTEGER, b INTEGER, c VARCHAR)")
        c.exec_driver_sql("INSERT INTO refused_table VALUES (1, 5, 'ab'), (2, 99, 'xyz')")
    engine.dispose()
    return folder


def run_every_check(defs: dg.Definitions) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    job = dg.Definitions.merge(defs, dg.Definitions(jobs=[dg.define_asset_job(
        "every_check", selection=dg.AssetSelection.all_asset_checks())])).resolve_job_def("every_check")
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    return {(e.asset_key.to_user_string(), e.check_name): e for e in result.get_asset_check_evaluations()}


def test_a_folder_built_twice_in_one_process_logs_each_problem_once(tmp_path, caplog):
    """`dg check defs` builds a component's definitions twice in one process: each problem, and each
    "not loaded" line, is logged once, not once per build."""
    folder = estate(tmp_path / "contracts")
    with caplog.at_level(logging.WARNING, logger="dq_contracts"):
        build_contract_defs(folder)
        build_contract_defs(folder)
    lines = [r.getMessage() for r in caplog.records]
    assert any("broken.odcs.yaml:16" in line for line in lines), lines
    assert len(lines) == len(set(lines)), lines


def test_the_valid_contracts_load_and_the_broken_one_shows_its_problems(tmp_path, caplog):
    folder = estate(tmp_path / "contracts")
    with caplog.at_level(logging.ERROR, logger="dq_contracts"):
        defs = build_contract_defs(folder)
    dg.Definitions.validate_loadable(defs)
    specs = {(s.asset_key.to_user_string(), s.name): s for c in defs.asset_checks for s in c.check_specs}
    for table in VALID_TABLES:  # the five valid contracts, each with all its checks
        assert {n for a, n in specs if a == table} == {"schema", "a__not_null", "a__unique"}, table
    assert {n for a, n in specs if a == "refused_table"} == REFUSED_GOOD_CHECKS | {"no_deletes_please"}
    assert {n for a, n in specs if a == "broken_table"} == {"contract_valid"}

    # the broken contract's asset is on the graph, with its problem, file and line
    broken = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}["broken_table"]
    assert "broken.odcs.yaml:16" in broken.description and "minimum" in broken.description
    check = specs[("broken_table", "contract_valid")]
    assert check.blocking is False and "broken.odcs.yaml:16" in check.description
    # and it was logged at load, with file and line
    assert any("broken.odcs.yaml:16" in r.getMessage() for r in caplog.records)

    results = run_every_check(defs)
    assert len(results) == len(specs)  # every check reported
    failed = {k: e for k, e in results.items() if not e.passed}
    assert set(failed) == {("broken_table", "contract_valid"), ("refused_table", "no_deletes_please")}
    invalid = failed[("broken_table", "contract_valid")]
    assert invalid.severity == dg.AssetCheckSeverity.ERROR
    rows = invalid.metadata["dq_contracts/problems"].value.records
    assert [(Path(r.data["file"]).name, r.data["line"], r.data["path"]) for r in rows] == [
        ("broken.odcs.yaml", "16", "schema.broken_table.properties.a.logicalTypeOptions.minimum")]
    refused = failed[("refused_table", "no_deletes_please")]
    assert refused.severity == dg.AssetCheckSeverity.ERROR
    assert "SQL rule refused" in refused.metadata["dq_contracts/error"].value
    assert "DELETE" in refused.metadata["dq_contracts/error"].value


def test_the_problems_sensor_shows_the_failure_without_a_run(tmp_path):
    defs = build_contract_defs(estate(tmp_path / "contracts"))
    sensor = defs.resolve_sensor_def("dq_contracts_contract_problems")
    instance = dg.DagsterInstance.ephemeral()
    first = sensor.evaluate_tick(dg.build_sensor_context(instance=instance))
    assert [(e.asset_key.to_user_string(), e.check_name, e.passed, e.severity) for e in first.asset_events] == [
        ("broken_table", "contract_valid", False, dg.AssetCheckSeverity.ERROR)]
    assert "broken.odcs.yaml:16" in first.asset_events[0].metadata["dq_contracts/error"].value
    again = sensor.evaluate_tick(dg.build_sensor_context(instance=instance, cursor=first.cursor))
    assert list(again.asset_events) == []  # reported once per distinct set of problems


def test_strict_refuses_everything_with_every_problem(tmp_path):
    with pytest.raises(ContractError) as caught:
        build_contract_defs(estate(tmp_path / "contracts"), strict=True)
    text = str(caught.value)
    assert "broken.odcs.yaml:16" in text and "refused.odcs.yaml" in text and "SQL rule refused" in text


UNREADABLE = [
    # (file name, text, asset key the problem is shown on)
    ("garbage.odcs.yaml", "a: [\n", "dq_contracts_invalid/garbage_odcs_yaml"),
    ("no_objects.odcs.yaml", "apiVersion: v3.1.0\nkind: DataContract\nid: 5\n",
     "dq_contracts_invalid/no_objects_odcs_yaml"),
    # a valid document rejected for another reason, with no object to show it on
    ("z_same_id.odcs.yaml", HEAD.format(id="team1"), "dq_contracts_invalid/z_same_id_odcs_yaml"),
]


@pytest.mark.parametrize("name, text, key", UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_a_contract_naming_no_asset_still_shows_on_the_graph(tmp_path, monkeypatch, name, text, key):
    monkeypatch.chdir(tmp_path)
    folder = estate(tmp_path / "contracts")
    (folder / name).write_text(text)
    defs = build_contract_defs(Path("contracts"))
    dg.Definitions.validate_loadable(defs)
    assets = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
    assert name in assets[key].description
    results = run_every_check(defs)
    assert results[(key, "contract_valid")].passed is False
    # an id taken twice is neither contract's: team1 shows the problem too, on its own table
    contested = {"team1_table"} if name == "z_same_id.odcs.yaml" else set()
    assert all(results[(t, "a__unique")].passed for t in VALID_TABLES if t not in contested)
    assert all(results[(t, "contract_valid")].passed is False and (t, "a__unique") not in results for t in contested)


def test_an_invalid_contract_for_your_own_asset_fails_a_check_on_it(tmp_path):
    folder = estate(tmp_path / "contracts")

    @dg.asset(name="broken_table")
    def broken_table():
        return None

    defs = build_contract_defs(folder, assets=[broken_table])
    result = dg.Definitions.merge(defs, dg.Definitions(executor=dg.in_process_executor)).resolve_job_def(
        "__ASSET_JOB").execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False,
                                          asset_selection=[dg.AssetKey("broken_table")])
    evaluations = [(e.check_name, e.passed) for e in result.get_asset_check_evaluations()]
    assert evaluations == [("contract_valid", False)]
    # not blocking: a typo in a contract does not stop the pipeline that builds the table
    assert [e.asset_key.to_user_string() for e in result.get_asset_materialization_events()] == ["broken_table"]


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


def test_check_runs_the_good_clauses_of_a_contract_with_a_refused_rule(tmp_path):
    folder = estate(tmp_path / "contracts")
    proc = cli("check", str(folder / "refused.odcs.yaml"), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    assert set(results) == REFUSED_GOOD_CHECKS | {"no_deletes_please"}
    assert all(results[n]["passed"] and results[n]["error"] is None for n in REFUSED_GOOD_CHECKS)
    refused = results["no_deletes_please"]
    assert refused["passed"] is False and refused["severity"] == "ERROR"
    assert "SQL rule refused" in refused["error"] and "DELETE" in refused["error"]

    plan = cli("plan", str(folder / "refused.odcs.yaml"), cwd=tmp_path)
    line = next(l for l in plan.stdout.splitlines() if "no_deletes_please" in l)
    assert "WILL FAIL" in line and "DELETE" in line
    planned = json.loads(cli("plan", str(folder / "refused.odcs.yaml"), "--format", "json", cwd=tmp_path).stdout)
    will_fail = {c["name"]: c["will_fail"] for c in planned["contracts"][0]["checks"]}
    assert "DELETE" in will_fail["no_deletes_please"] and will_fail["schema"] is None
    assert cli("validate", str(folder / "refused.odcs.yaml"), cwd=tmp_path).returncode == 1


def test_check_on_a_folder_runs_every_usable_contract(tmp_path):
    folder = estate(tmp_path / "contracts")
    proc = cli("check", str(folder), "--format", "json", cwd=tmp_path)
    payload = json.loads(proc.stdout)
    assert proc.returncode == 1
    ran = {r["asset_key"][-1] for r in payload["results"]}
    assert ran == set(VALID_TABLES) | {"refused_table"}
    assert any(p["file"].endswith("broken.odcs.yaml") and p["line"] == 16 for p in payload["problems"])


SERVER_CASES = [
    # (how the server is named, how loading reacts)
    ("resource", "contract_valid"),
    ("component", "contract_valid"),
    ("strict", "raises"),
]


@pytest.mark.parametrize("where, outcome", SERVER_CASES, ids=[c[0] for c in SERVER_CASES])
def test_a_server_name_no_contract_has_is_found_at_load(tmp_path, where, outcome):
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "team1.odcs.yaml").write_text(VALID.format(id="team1", table="team1_table"))
    message = "no server named 'prod' to check against; this contract declares 'local'"
    if outcome == "raises":
        with pytest.raises(ContractError, match=message):
            build_contract_defs(folder, resource=WarehouseResource(server="prod"), strict=True)
        return
    if where == "component":
        from dagster.components.testing.utils import component_defs

        from dq_contracts.dagster_defs.component import ContractsComponent

        defs = component_defs(component=ContractsComponent(contracts_dir=str(folder), server="prod"))
    else:
        defs = build_contract_defs(folder, resource=WarehouseResource(server="prod"))
    specs = {(s.asset_key.to_user_string(), s.name): s for c in defs.asset_checks for s in c.check_specs}
    assert set(specs) == {("team1_table", "contract_valid")}
    assert message in specs[("team1_table", "contract_valid")].description


def test_check_with_an_unknown_server_names_the_ones_the_contract_has(tmp_path):
    folder = estate(tmp_path / "contracts")
    proc = cli("check", str(folder / "team1.odcs.yaml"), "--server", "prod", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert "team1.odcs.yaml:6: servers: no server named 'prod' to check against; this contract declares " \
           "'local'" in proc.stdout
    assert "0 check(s)" in proc.stdout  # nothing ran against a guessed server


def test_the_key_of_a_contract_naming_no_asset_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    folder = estate(tmp_path / "contracts")
    (folder / "garbage.odcs.yaml").write_text("a: [\n")
    keys = []
    for cwd in (tmp_path, folder, tmp_path.parent):
        monkeypatch.chdir(cwd)
        keys.append({s.key.to_user_string() for s in build_contract_defs(folder).resolve_all_asset_specs()
                     if s.key.path[0] == "dq_contracts_invalid"})
    assert keys[0] == keys[1] == keys[2] == {"dq_contracts_invalid/garbage_odcs_yaml"}


def test_your_own_check_named_contract_valid_is_left_alone(tmp_path):
    folder = estate(tmp_path / "contracts")

    @dg.asset(name="broken_table")
    def broken_table():
        return None

    @dg.asset_check(asset=broken_table, name="contract_valid")
    def mine():
        return dg.AssetCheckResult(passed=True)

    defs = build_contract_defs(folder, defs=dg.Definitions(assets=[broken_table], asset_checks=[mine]))
    dg.Definitions.validate_loadable(defs)
    names = {k.name for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key.path == ["broken_table"]}
    assert names == {"contract_valid", "contract_valid_2"}


class PrefixByDomain(DqContractsTranslator):
    def get_asset_spec(self, data):
        spec = super().get_asset_spec(data)
        return spec.replace_attributes(key=spec.key.with_prefix(data.contract.domain or "nodomain"))


class LastPartOnly(DqContractsTranslator):
    def get_asset_spec(self, data):
        spec = super().get_asset_spec(data)
        return spec.replace_attributes(key=dg.AssetKey(spec.key.path[-1:]))


class RaisesForTeam2(DqContractsTranslator):
    def get_asset_spec(self, data):
        if data.contract.id == "team2":
            raise KeyError("no owner mapping for team2")
        return super().get_asset_spec(data)


TRANSLATOR_CASES = [
    # (translator, extra contract text by file name, asset showing the problem, what it says)
    (PrefixByDomain(), {"broken.odcs.yaml": INVALID.format(id="broken").replace("status: active\n",
                                                                              "status: active\ndomain: sales\n")},
     "sales/broken_table", "is not of type"),
    (LastPartOnly(), {"team3.odcs.yaml": VALID.format(id="team3", table="main.team1_table")},
     "team1_table", "is also the asset of"),
    (RaisesForTeam2(), {}, "team2_table", "KeyError: 'no owner mapping for team2'"),
]


@pytest.mark.parametrize("translator, extra, asset, says", TRANSLATOR_CASES,
                         ids=["prefix by domain", "two keys made one", "translator raises"])
def test_a_translator_costs_only_the_contract_it_fails_on(tmp_path, translator, extra, asset, says):
    folder = estate(tmp_path / "contracts")
    for name, text in extra.items():
        (folder / name).write_text(text)
    defs = build_contract_defs(folder, translator=translator)
    dg.Definitions.validate_loadable(defs)
    specs = {(s.asset_key.to_user_string(), s.name): s for c in defs.asset_checks for s in c.check_specs}
    assert says in specs[(asset, "contract_valid")].description
    loaded = {a for a, n in specs if n == "a__unique"}
    assert len(loaded) >= 4  # the other contracts load with their checks


def test_an_asset_spec_of_your_own_gets_the_contract(tmp_path):
    folder = estate(tmp_path / "contracts")
    defs = build_contract_defs(folder, assets=[dg.AssetSpec("team1_table", description="mine")])
    spec = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}["team1_table"]
    assert spec.description == "mine"  # what it declares stays
    assert "dagster/column_schema" in spec.metadata and spec.metadata["dq_contracts/contract_id"] == "team1"


def test_an_unreachable_server_keeps_a_refused_rule_s_own_reason(tmp_path):
    folder = estate(tmp_path / "contracts")
    text = (folder / "refused.odcs.yaml").read_text().replace("    database: wh.duckdb\n",
                                                             "    database: missing/nowhere.duckdb\n")
    (folder / "refused.odcs.yaml").write_text(text)
    proc = cli("check", str(folder / "refused.odcs.yaml"), "--format", "json", cwd=tmp_path)
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    assert "SQL rule refused" in results["no_deletes_please"]["error"]
    assert all(not r["passed"] and r["error"] for r in results.values())
