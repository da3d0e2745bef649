"""Principle 5 on the Dagster side: one contract cannot take anything from another.

Where the operator bound a server to a folder (`DQ_CONTRACTS_<SERVER>_CONTRACTS`), a contract there
keeps its asset key, id and Dagster names against any contract outside it: the intruder is refused
at its line, naming the keeper's file, and the keeper's checks load and run. A symbolic link to a
contract is that contract, read once. And a contract that only names one of the user's own assets
(`dagsterAssetKey`, or a physicalName that keys alike) attaches checks that run and show; its ERROR
clauses stop the asset's run as before where the operator binds no server to a folder (no line
between teams), and otherwise only where the contract is in its server's bound folder, the asset
says it builds the table they read (`dagster/table_name`) or the user lists it in
`blocking_assets`. Every row builds real Definitions and runs them in process.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import dagster as dg
import pytest
import yaml

from dq_contracts.cli import main
from dq_contracts.dagster_defs.definitions import build_contract_defs
from dq_contracts.dagster_defs.resource import ServerSettings, WarehouseResource
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import duckdb_with, run_checks

WH = {"server": "wh", "type": "duckdb", "database": "../../data/w.duckdb", "schema": "analytics"}
ELSEWHERE = {"server": "evilfiles", "type": "local", "format": "csv", "path": "../../nothing/{model}.csv"}


def contract(id_: str, objects: list[dict], server: dict = WH, name: str | None = None) -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": id_, "version": "1.0.0", "status": "active",
            **({"name": name} if name else {}), "servers": [server], "schema": objects}


def obj(name: str, physical: str | None = None, key: str | None = None, quality: list | None = None) -> dict:
    out = {"name": name, "physicalName": physical or name,
           "properties": [{"name": "id", "logicalType": "integer"}]}
    if key:
        out["customProperties"] = [{"property": "dagsterAssetKey", "value": key}]
    if quality:
        out["quality"] = quality
    return out


PAYROLL = contract("urn:payroll:pay", [obj("orders")], name="pay")
# Each row: what another team drops in contracts/evil. On main every one knocked payroll out.
INTRUDERS = {
    "the same physicalName on a server of its own": {"x.odcs.yaml": contract("urn:evil:x", [obj("orders")],
                                                                             ELSEWHERE)},
    "a dagsterAssetKey naming payroll's asset": {"x.odcs.yaml": contract("urn:evil:x", [obj("mine", key="orders")],
                                                                         ELSEWHERE)},
    "payroll's id and version": {"x.odcs.yaml": contract("urn:payroll:pay", [obj("other")], ELSEWHERE)},
    "a byte-for-byte copy of payroll's file": {"copy.odcs.yaml": PAYROLL},
    "payroll's op name (name pay__orders, object table)": {
        "x.odcs.yaml": contract("urn:evil:x", [obj("table", physical="evil_t")], ELSEWHERE, name="pay__orders")},
    "a symbolic link to payroll's file": {"link.odcs.yaml": "../payroll/pay.odcs.yaml"},
}


def project(tmp_path, intruder: dict, monkeypatch, bind: str | None = "contracts/payroll"):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    duckdb_with(tmp_path / "data" / "w.duckdb", "CREATE SCHEMA analytics",
                "CREATE TABLE analytics.orders (id INTEGER)", "INSERT INTO analytics.orders VALUES (1)",
                "CREATE TABLE analytics.t (id INTEGER)")
    for folder in ("payroll", "evil", "other"):
        (tmp_path / "contracts" / folder).mkdir(parents=True)
    (tmp_path / "contracts" / "payroll" / "pay.odcs.yaml").write_text(yaml.safe_dump(PAYROLL, sort_keys=False))
    # a third team's contract, which nothing touches: it loads whatever happens
    (tmp_path / "contracts" / "other" / "o.odcs.yaml").write_text(yaml.safe_dump(
        contract("urn:other:o", [obj("t")], {**WH, "server": "ot"}), sort_keys=False))
    for file, content in intruder.items():
        path = tmp_path / "contracts" / "evil" / file
        if isinstance(content, str):
            os.symlink(content, path)
        else:
            path.write_text(yaml.safe_dump(content, sort_keys=False))
    if bind:
        monkeypatch.setenv("DQ_CONTRACTS_WH_CONTRACTS", bind)
        monkeypatch.setenv("DQ_CONTRACTS_OT_CONTRACTS", "contracts/other")
    return tmp_path / "contracts"


def checks_of(defs) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for definition in defs.asset_checks or []:
        for spec in definition.check_specs:
            out.setdefault(spec.asset_key.to_user_string(), set()).add(spec.name)
    return out


@pytest.mark.parametrize("intruder", INTRUDERS.values(), ids=INTRUDERS.keys())
def test_a_contract_in_its_bound_folder_keeps_what_another_claims(tmp_path, monkeypatch, intruder):
    contracts = project(tmp_path, intruder, monkeypatch)
    defs = build_contract_defs(contracts)
    checks = checks_of(defs)
    # payroll's checks are on its asset, and nothing of the intruder's is
    assert checks["orders"] == {"schema"}, checks
    assert checks["t"] == {"schema"}  # the rest loads
    result = run_checks(defs, dg.AssetSelection.checks_for_assets("orders"))
    assert [(e.check_name, e.passed) for e in result.get_asset_check_evaluations()] == [("schema", True)]
    # the intruder is refused at its line, naming the file that keeps what it claimed (a link is
    # the file it points to, read once: nothing is refused)
    loaded = load_contracts([contracts])
    assert loaded.prefixes["contracts/payroll/pay.odcs.yaml"] == "pay"
    if "link.odcs.yaml" in intruder:
        assert not loaded.rejected
        return
    [evil] = [r for r in loaded.rejected]
    assert evil.file.startswith("contracts/evil/")
    problems = [p for p in evil.problems if "contracts/payroll/pay.odcs.yaml" in p.message and p.severity == "error"]
    assert problems and all(p.line is not None and "DQ_CONTRACTS_WH_CONTRACTS" in p.message for p in problems)
    # and its Dagster names stay its own: its ops are still called after its `name`
    assert {n.name for c in defs.asset_checks for n in [c.node_def] if "orders" in n.name} == {"pay__orders"}


def test_check_runs_the_bound_contract_and_says_why_the_other_is_refused(tmp_path, monkeypatch, capsys):
    contracts = project(tmp_path, INTRUDERS["the same physicalName on a server of its own"], monkeypatch)
    assert main(["check", str(contracts.relative_to(tmp_path))]) == 1  # an error of the intruder's
    out = capsys.readouterr()
    text = out.out + out.err
    assert "orders  schema  ERROR     pass" in text and "2 check(s): 2 pass" in text
    assert ("contracts/evil/x.odcs.yaml:12: schema.orders: asset orders is also claimed by "
            "contracts/payroll/pay.odcs.yaml") in text


def test_the_resource_s_binding_draws_the_same_line(tmp_path, monkeypatch):
    """The resource's `contracts` is the operator's binding too (it wins over the environment)."""
    contracts = project(tmp_path, INTRUDERS["the same physicalName on a server of its own"], monkeypatch, bind=None)
    resource = WarehouseResource(servers={"wh": ServerSettings(contracts=["contracts/payroll"])})
    defs = build_contract_defs(contracts, resource=resource)
    assert checks_of(defs)["orders"] == {"schema"}
    result = run_checks(defs, dg.AssetSelection.checks_for_assets("orders"))
    assert [(e.check_name, e.passed) for e in result.get_asset_check_evaluations()] == [("schema", True)]


def test_a_symbolic_link_is_the_contract_it_points_to_read_once(tmp_path, monkeypatch):
    contracts = project(tmp_path, INTRUDERS["a symbolic link to payroll's file"], monkeypatch, bind=None)
    defs = build_contract_defs(contracts)
    assert checks_of(defs)["orders"] == {"schema"}
    result = run_checks(defs, dg.AssetSelection.checks_for_assets("orders"))
    assert [(e.check_name, e.passed) for e in result.get_asset_check_evaluations()] == [("schema", True)]
    loaded = load_contracts([contracts])
    assert not loaded.rejected and sorted(p.file for p in loaded.usable_plans) == [
        "contracts/other/o.odcs.yaml", "contracts/payroll/pay.odcs.yaml"]
    [warning] = [p for p in loaded.problems if p.file == "contracts/evil/link.odcs.yaml"]
    assert warning.severity == "warning" and "read once, as contracts/payroll/pay.odcs.yaml" in warning.message


@pytest.mark.parametrize("bind", [None, "contracts"], ids=["nothing bound", "both folders bound"])
def test_where_the_operator_draws_no_line_between_them_neither_claimant_loads(tmp_path, monkeypatch, bind):
    """The rule as before where no binding tells the two apart: both refused, each naming the other."""
    contracts = project(tmp_path, {"x.odcs.yaml": contract("urn:evil:x", [obj("orders")])}, monkeypatch, bind)
    defs = build_contract_defs(contracts)
    assert "schema" not in checks_of(defs).get("orders", set())
    loaded = load_contracts([contracts])
    assert sorted(r.file for r in loaded.rejected) == ["contracts/evil/x.odcs.yaml", "contracts/payroll/pay.odcs.yaml"]


# --- finding 6: checks on the user's own asset ------------------------------------------------------

def own_assets(table_name=None):
    metadata = {"dagster/table_name": table_name} if table_name is not None else None

    @dg.asset(description="payroll's own salaries", metadata=metadata)
    def salaries():
        return 1

    @dg.asset(deps=[salaries])
    def payroll_report():
        return 2

    return salaries, payroll_report


EV = {**WH, "server": "ev"}  # the intruder's own server, on the same warehouse file
ROW_COUNT = [{"metric": "rowCount", "mustBe": 12345}]
EVIL = contract("urn:evil:t", [obj("t", key="salaries", quality=ROW_COUNT)], EV, name="t")
EVIL_ON_WH = contract("urn:evil:t", [obj("t", key="salaries", quality=ROW_COUNT)], name="t")
EVIL_BY_NAME = contract("urn:evil:s", [obj("salaries", quality=ROW_COUNT)], EV, name="s")
# what the operator declared: nothing; servers, none bound to a folder; payroll's server bound to
# payroll's folder (the intruder's server declared, not bound); and the intruder's bound to its own
NOTHING: dict[str, str] = {}
DECLARED = {"DQ_CONTRACTS_WH_TYPE": "duckdb", "DQ_CONTRACTS_EV_TYPE": "duckdb"}
PAYROLL_BOUND = {"DQ_CONTRACTS_WH_CONTRACTS": "contracts/payroll", "DQ_CONTRACTS_EV_TYPE": "duckdb"}
BOTH_BOUND = {"DQ_CONTRACTS_WH_CONTRACTS": "contracts/payroll", "DQ_CONTRACTS_EV_CONTRACTS": "contracts/evil"}


class Own(NamedTuple):
    document: dict  # the contract another team drops in contracts/evil
    bind: dict[str, str] = PAYROLL_BOUND  # the operator's variables
    table: object = None  # the table salaries says it builds (`dagster/table_name`)
    blocking: tuple[str, ...] = ()  # build_contract_defs(blocking_assets=...)
    via_defs: bool = False  # the user's assets given through defs= rather than assets=
    via_resource: bool = False  # the binding given as the resource's `contracts` rather than the environment
    blocks: bool = False


OWN = {
    # (a) no line between teams: as before fix28d, a contract naming the asset blocks it (the single-team use)
    "nothing bound: a dagsterAssetKey naming the asset blocks it": Own(EVIL, NOTHING, blocks=True),
    "nothing bound: a physicalName keyed as the asset": Own(EVIL_BY_NAME, NOTHING, blocks=True),
    "nothing bound: the asset given in defs=": Own(EVIL, NOTHING, via_defs=True, blocks=True),
    "servers declared, none bound to a folder": Own(EVIL, DECLARED, blocks=True),
    # the attacker's repro (finding 6) with payroll's folder bound: nothing of payroll's is stopped
    "payroll bound: the intruder on payroll's server (refused)": Own(EVIL_ON_WH),
    "payroll bound: a dagsterAssetKey naming the asset, which names no table": Own(EVIL),
    "payroll bound: a physicalName keyed as the asset, which names no table": Own(EVIL_BY_NAME),
    "payroll bound: the asset names another table": Own(EVIL, table="w.hr.salaries"),
    "payroll bound: the asset given in defs=": Own(EVIL, via_defs=True),
    "payroll bound by the resource's contracts": Own(EVIL, {"DQ_CONTRACTS_EV_TYPE": "duckdb"}, via_resource=True),
    # (b) the operator bound the contract's own server to its folder
    "the contract is in the folder its server is bound to": Own(EVIL, BOTH_BOUND, blocks=True),
    # (c) the asset says it builds the table; (d) the user lists it
    "payroll bound: the asset names the table the checks read": Own(EVIL, table="w.analytics.t", blocks=True),
    "payroll bound: the same, case apart, as a text metadata value": Own(
        EVIL, table=dg.MetadataValue.text("W.Analytics.T"), blocks=True),
    "payroll bound: the user lists it in blocking_assets": Own(EVIL, blocking=("salaries",), blocks=True),
}


@pytest.mark.parametrize("case", OWN.values(), ids=OWN.keys())
def test_a_contract_stops_the_user_s_asset_only_where_the_operator_or_the_asset_lets_it(tmp_path, monkeypatch,
                                                                                        case: Own):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    duckdb_with(tmp_path / "data" / "w.duckdb", "CREATE SCHEMA analytics", "CREATE TABLE analytics.t (id INTEGER)",
                "CREATE TABLE analytics.orders (id INTEGER)")
    for folder, file, document in (("payroll", "pay", PAYROLL), ("evil", "t", case.document)):
        (tmp_path / "contracts" / folder).mkdir(parents=True)
        (tmp_path / "contracts" / folder / f"{file}.odcs.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    for variable, value in case.bind.items():
        monkeypatch.setenv(variable, value)
    salaries, report = own_assets(case.table)
    kwargs = {"blocking_assets": case.blocking} if case.blocking else {}
    if case.via_resource:
        kwargs["resource"] = WarehouseResource(servers={"wh": ServerSettings(contracts=["contracts/payroll"])})
    built = (build_contract_defs(tmp_path / "contracts", defs=dg.Definitions(assets=[salaries, report]), **kwargs)
             if case.via_defs else build_contract_defs(tmp_path / "contracts", assets=[salaries, report], **kwargs))
    defs = dg.Definitions.merge(built, dg.Definitions(executor=dg.in_process_executor))
    # the intruder on payroll's bound server is refused: salaries shows its problems, stopping nothing
    name = "contract_valid" if case.document is EVIL_ON_WH else "row_count"
    [spec] = [s for c in defs.asset_checks for s in c.check_specs if s.name == name]
    assert spec.asset_key == dg.AssetKey("salaries") and spec.blocking is case.blocks
    # the asset's table is its own word: no contract writes one onto it
    [asset] = [s for s in (defs.assets or []) if isinstance(s, dg.AssetsDefinition) and s.key.path == ["salaries"]]
    assert (asset.specs_by_key[asset.key].metadata or {}).get("dagster/table_name") == case.table
    if not case.blocks and name == "row_count":
        assert spec.metadata["dq_contracts/blocks"].startswith("no: asset salaries does not say it builds w.analytics.")
        assert "the operator binds servers to folders (DQ_CONTRACTS_WH_CONTRACTS)" in spec.description
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(raise_on_error=False)
    [evaluation] = [e for e in result.get_asset_check_evaluations() if e.check_name == name]
    assert not evaluation.passed  # the check ran and shows its failure either way
    built_keys = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert ("payroll_report" in built_keys) is not case.blocks and result.success is not case.blocks
