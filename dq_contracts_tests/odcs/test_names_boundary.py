"""Principle 5: one contract cannot take anything from another.

An asset, an (id, version), a Dagster name (op, job, schedule, sensor) that two contracts claim is a
problem of each of them, whatever order their files are read in; a name or cron Dagster would refuse
is the contract's problem, never a `DagsterInvalidDefinitionError` that takes the code location down.
Each attack is one row; every row loads through `build_contract_defs` + `validate_loadable` in every
way of building.
"""

from __future__ import annotations

import warnings

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.utils import DISALLOWED_NAMES

from dq_contracts.cli import main
from dq_contracts.odcs.names import _unique_names
from dq_contracts.odcs.names import DAGSTER_RESERVED, UniqueNames
from dq_contracts.odcs.load import load_contracts
from dq_contracts.dagster_defs.definitions import build_contract_defs
from dq_contracts.odcs.plans import CheckPlan
from dq_contracts.dagster_defs.translator import DqContractsTranslator

SERVER = [{"server": "local", "type": "duckdb", "database": "warehouse.duckdb"}]
DAILY = {"property": "dagsterPartitions", "value": {"type": "daily", "start": "2026-06-01"}}


def obj(name, physical=None, partitioned=False, quality=()):
    props = [{"name": "a", "logicalType": "string", "required": True}]
    if partitioned:
        props.append({"name": "day", "logicalType": "date", "partitioned": True, "partitionKeyPosition": 1})
    out = {"name": name, "properties": props, "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}, *quality]}
    if physical:
        out["physicalName"] = physical
    if partitioned:
        out["customProperties"] = [DAILY]
    return out


def contract(cid, *objects, name=None, version="1.0.0", sla=None):
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": cid, "version": version, "status": "active",
           "servers": SERVER, "schema": list(objects) or [obj(f"{cid}_t")]}
    if name:
        doc["name"] = name
    if sla:
        doc["slaProperties"] = [sla]
    return doc


def cron(expression):
    return {"property": "frequency", "value": 1, "scheduler": "cron", "schedule": expression}


# (files: name -> document, files that must be rejected). Every row also holds innocent.odcs.yaml,
# which must load with its checks.
ATTACKS = {
    "two contracts, one asset": (
        {"a.odcs.yaml": contract("one", obj("t")), "b.odcs.yaml": contract("two", obj("t"))}, {"a", "b"}),
    "three contracts, one asset": (
        {"a.odcs.yaml": contract("one", obj("t")), "b.odcs.yaml": contract("two", obj("t")),
         "c.odcs.yaml": contract("three", obj("u", physical="t"))}, {"a", "b", "c"}),
    # two spellings are two tables: transliterated alike, each takes a key of its own (KEYS)
    "physicalNames that differ only by characters made _": (
        {"a.odcs.yaml": contract("one", obj("t1", physical="order-lines")),
         "b.odcs.yaml": contract("two", obj("t2", physical="order lines"))}, set()),
    "a physicalName that transliterates to another's": (
        {"a.odcs.yaml": contract("one", obj("people")), "b.odcs.yaml": contract("two", obj("péople"))}, set()),
    "a dagsterAssetKey that transliterates to another's": (
        {"a.odcs.yaml": contract("one", obj("people")), "b.odcs.yaml": contract("two", {**obj("t"), "customProperties": [
            {"property": "dagsterAssetKey", "value": "péople"}]})}, set()),
    "the same transliterated physicalName twice": (
        {"a.odcs.yaml": contract("one", obj("people")), "b.odcs.yaml": contract("two", obj("péople")),
         "c.odcs.yaml": contract("three", obj("t", physical="péople"))}, {"b", "c"}),
    "same id and version": (
        {"a.odcs.yaml": contract("same", obj("t1")), "b.odcs.yaml": contract("same", obj("t2"))}, {"a", "b"}),
    "one physicalName for two objects of one contract": (
        {"a.odcs.yaml": contract("one", obj("t1", physical="t"), obj("t2", physical="t"))}, {"a"}),
    "names that differ only by characters made _": (
        {"a.odcs.yaml": contract("urn:x:orders-v1", obj("t1"), name="orders-v1"),
         "b.odcs.yaml": contract("urn:y:orders_v1", obj("t2"), name="orders_v1"),
         "c.odcs.yaml": contract("urn:z:orders.v1", obj("t3"), name="orders.v1")}, set()),
    "two objects whose names differ only by characters made _": (
        {"a.odcs.yaml": contract("one", obj("order-lines"), obj("order_lines", physical="order_lines2"))}, {"a"}),
    "a contract named dq_contracts_checks, object of the set name": (
        {"a.odcs.yaml": contract("one", obj("checks"), name="dq_contracts_checks")}, {"a"}),
    "a contract named dq_contracts_freshness": (
        {"a.odcs.yaml": contract("one", obj("t", partitioned=True), name="dq_contracts_freshness")}, {"a"}),
    "a contract named dq_contracts_contract_problems": (
        {"a.odcs.yaml": contract("one", obj("t"), name="dq_contracts_contract_problems")}, {"a"}),
    "<a>__<b> equals <a__b>: op against op": (
        {"a.odcs.yaml": contract("one", obj("b"), name="p__a"),
         "b.odcs.yaml": contract("two", obj("a__b"), name="p")}, {"a", "b"}),
    "an object named like another's table-wide op": (
        {"a.odcs.yaml": contract("one", obj("t", partitioned=True), name="p"),
         "b.odcs.yaml": contract("two", obj("table"), name="p__t")}, {"a", "b"}),
    "an object named like another's partitions job": (
        {"a.odcs.yaml": contract("one", obj("t", partitioned=True), obj("t__partitions"), name="p")}, {"a"}),
    "a contract id that sanitises to another's name": (
        {"a.odcs.yaml": contract("Orders", obj("t1"), name="shop"),
         "b.odcs.yaml": contract("urn:shop", obj("t2"), name="SHOP!")}, set()),
    "a checks job against an op": (
        {"a.odcs.yaml": contract("one", obj("checks"), name="p"),
         "b.odcs.yaml": contract("two", obj("t"), name="p__checks__x")}, {"a"}),
    "six-field cron with seconds": (
        {"a.odcs.yaml": contract("one", obj("t"), sla=cron("* * * * * *"))}, {"a"}),
    "30 February": (
        {"a.odcs.yaml": contract("one", obj("t"), sla=cron("0 0 30 2 *"))}, {"a"}),
    "31 April, a cron that never fires": (
        {"a.odcs.yaml": contract("one", obj("t"), sla=cron("0 0 31 4 *"))}, {"a"}),
    "an asset under dq_contracts_invalid/": (
        {"a.odcs.yaml": contract("one", {**obj("t"), "customProperties": [
            {"property": "dagsterAssetKey", "value": "dq_contracts_invalid/broken_odcs_yaml"}]})}, {"a"}),
}

INNOCENT = contract("innocent", obj("innocent_table", partitioned=True), sla=cron("0 6 * * *"))


def write(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for file, document in {**files, "innocent.odcs.yaml": INNOCENT}.items():
        (folder / file).write_text(yaml.safe_dump(document, sort_keys=False))
    return folder


def rejected_stems(loaded):
    return {r.file.rsplit("/", 1)[-1].split(".")[0] for r in loaded.rejected}


# (file -> physicalName, file -> the asset key it takes): a spelling that is its key keeps it; every
# other spelling of that key takes a hash of itself, the same whatever else the folder holds
KEYS = [
    ({"a": "people", "b": "péople"}, {"a": "people", "b": "people_055242"}),
    ({"b": "péople"}, {"b": "people"}),  # alone, a transliterated name keeps its plain key
    ({"a": "people", "b": "péople", "c": "pèople"}, {"a": "people", "b": "people_055242", "c": "people_75e99f"}),
    ({"b": "péople", "c": "pèople"}, {"b": "people_055242", "c": "people_75e99f"}),
    ({"a": "order_lines", "b": "order-lines"}, {"a": "order_lines", "b": "order_lines_52bea9"}),
    ({"a": "People", "b": "people"}, {"a": "People", "b": "people"}),  # case is kept: two keys already
]


@pytest.mark.parametrize("physical, keys", KEYS, ids=[" ".join(p.values()) for p, _ in KEYS])
def test_a_name_transliterated_to_another_s_key_takes_a_key_of_its_own(tmp_path, physical, keys):
    folder = write(tmp_path / "c", {f"{f}.odcs.yaml": contract(f, obj("t", physical=p)) for f, p in physical.items()})
    loaded = load_contracts([folder])
    assert not loaded.rejected
    found = {p.file.rsplit("/", 1)[-1].split(".")[0]: "/".join(o.asset_key) for p in loaded.plans for o in p.objects}
    assert {f: k for f, k in found.items() if f != "innocent"} == keys


BUILDS = [dict(contract_jobs=False, partition_jobs=True), dict(contract_jobs=True, partition_jobs=True),
          dict(contract_jobs=True, partition_jobs=False), dict(contract_jobs=True, name="checks")]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_costs_only_the_contracts_that_make_it(tmp_path, attack):
    files, expected = ATTACKS[attack]
    folder = write(tmp_path / "c", files)
    loaded = load_contracts([folder])
    assert rejected_stems(loaded) == expected
    assets = {"/".join(o.asset_key) for r in loaded.rejected for o in r.plan.objects}
    for build in BUILDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            defs = build_contract_defs(folder, **build)
            dg.Definitions.validate_loadable(defs)  # never a DagsterInvalidDefinitionError
        checks = {(k.asset_key.to_user_string(), k.name) for k in defs.resolve_asset_graph().asset_check_keys}
        assert ("innocent_table", "row_count") in checks, build
        shown = {a for a, n in checks if n == "contract_valid"}
        assert assets <= shown, build  # every asset of a rejected contract shows it
        assert not any(n == "row_count" and a in shown for a, n in checks), build  # none of its checks attach


def test_a_contested_asset_names_every_claimant_whatever_the_file_order(tmp_path):
    """The same three contracts under names that sort in both orders: the same verdict, on the asset."""
    documents = [contract("one", obj("t")), contract("two", obj("t")), contract("three", obj("t"))]
    seen = []
    for names in (("a", "b", "c"), ("c", "b", "a")):
        folder = write(tmp_path / "".join(names), {f"{n}.odcs.yaml": d for n, d in zip(names, documents)})
        defs = build_contract_defs(folder)
        spec = next(s for c in defs.asset_checks for s in c.check_specs
                    if s.asset_key.to_user_string() == "t" and s.name == "contract_valid")
        assert all(f"{n}.odcs.yaml" in spec.description for n in names), spec.description
        by_contract = {}
        for problem in load_contracts([folder]).errors:
            by_contract[yaml.safe_load((folder / problem.file.rsplit("/", 1)[-1]).read_text())["id"]] = problem
        seen.append({cid: (p.path, p.line) for cid, p in by_contract.items()})
        assert set(by_contract) == {"one", "two", "three"}
        assert "innocent" not in by_contract
    assert seen[0] == seen[1]


# (a cron croniter takes, what refuses it: Dagster's rule, or that it never fires, which would make
# Dagster's automation fail for every contract)
CRONS = [("* * * * * *", "Dagster refuses this cron"), ("0 0 30 2 *", "never fires"), ("0 0 31 2 *", "never fires"),
         ("0 0 31 4 *", "never fires")]


@pytest.mark.parametrize("expression, says", CRONS, ids=[c for c, _ in CRONS])
def test_validate_reports_a_cron_dagster_refuses(tmp_path, capsys, expression, says):
    folder = write(tmp_path / "c", {"a.odcs.yaml": contract("one", obj("t"), sla=cron(expression))})
    assert main(["validate", str(folder)]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "a.odcs.yaml" in x)
    assert "a.odcs.yaml:23: slaProperties[0].schedule: cron" in line and says in line, out


def test_validate_reports_names_taken_twice(tmp_path, capsys):
    files, _ = ATTACKS["<a>__<b> equals <a__b>: op against op"]
    assert main(["validate", str(write(tmp_path / "c", files))]) == 1
    out = capsys.readouterr().out
    assert "Dagster name 'p__a__b'" in out and "a.odcs.yaml" in out and "b.odcs.yaml" in out, out


def test_the_reserved_words_are_dagsters():
    assert DAGSTER_RESERVED == DISALLOWED_NAMES


def _check(name, i):
    return CheckPlan(name=name, kind="row_count", clause=f"/schema/0/quality/{i}", object="t", property=None,
                     severity="ERROR", description="")


@pytest.mark.parametrize("names", [["x"] * 5000, [f"x_{i % 7}" for i in range(5000)] + ["x"] * 5000])
def test_unique_names_are_made_in_linear_work(names):
    """5,000 identical rules (one hash for all): about 2 probes a name, not N/2."""
    taker = UniqueNames()
    made = _unique_names([_check(n, i) for i, n in enumerate(names)], taker)
    assert len({c.name for c in made}) == len(names)
    assert taker.probes <= 3 * len(names), taker.probes


class LastPartOnly(DqContractsTranslator):
    """A translator that keys `one.t` and `two.t` alike."""

    def get_asset_spec(self, data):
        spec = super().get_asset_spec(data)
        return spec.replace_attributes(key=dg.AssetKey(spec.key.path[-1:]))


@pytest.mark.parametrize("first, second", [("a", "z"), ("z", "a")])
def test_two_objects_the_translator_keys_alike_are_neither_contracts(tmp_path, first, second):
    folder = write(tmp_path / "c", {f"{first}.odcs.yaml": contract("one", obj("t1", physical="one.t")),
                                    f"{second}.odcs.yaml": contract("two", obj("t2", physical="two.t"))})
    defs = build_contract_defs(folder, translator=LastPartOnly())
    dg.Definitions.validate_loadable(defs)
    checks = {(k.asset_key.to_user_string(), k.name) for k in defs.resolve_asset_graph().asset_check_keys}
    assert ("t", "row_count") not in checks and ("innocent_table", "row_count") in checks
    spec = next(s for c in defs.asset_checks for s in c.check_specs
                if s.asset_key.to_user_string() == "t" and s.name == "contract_valid")
    assert "a.odcs.yaml" in spec.description and "z.odcs.yaml" in spec.description, spec.description


@pytest.mark.parametrize("new_id", ["aaa", "zzz"])
def test_a_new_contract_with_the_same_name_takes_nothing_of_the_other(tmp_path, new_id):
    """Before, the contract whose id sorted first kept the short name (and the jobs, schedules and UI
    state on it): now neither takes it, whatever the ids, and validate says so."""
    folder = write(tmp_path / "c", {"old.odcs.yaml": contract("mmm", obj("t1"), name="orders", sla=cron("0 6 * * *")),
                                    "new.odcs.yaml": contract(new_id, obj("t2"), name="orders")})
    loaded = load_contracts([folder])
    prefixes = {k.rsplit("/", 1)[-1]: v for k, v in loaded.prefixes.items()}
    assert prefixes["old.odcs.yaml"] == "mmm" and prefixes["new.odcs.yaml"] == new_id
    warned = {p.file.rsplit("/", 1)[-1] for p in loaded.problems if p.severity == "warning" and "'orders'" in p.message}
    assert warned == {"old.odcs.yaml", "new.odcs.yaml"}
    defs = build_contract_defs(folder, contract_jobs=True)
    dg.Definitions.validate_loadable(defs)
    assert {j.name for j in defs.jobs if j.name.endswith("__checks")} >= {"mmm__checks", f"{new_id}__checks"}
