"""A classified table is classified under every name it has (principle 3): the folder of a Delta
table, read as a Delta table spelt otherwise or as the parquet files below it; and, in the warehouse,
a PostgreSQL partition or inheritance child, a view (PostgreSQL, DuckDB) over the classified table.
One row per attack; each is run with the command a user runs, and the planted values are searched for
in all it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dq_contracts_tests.support import write_lake

SSNS = ["123-45-6789", "987-65-4321", "555-11-2222"]


def contract(name: str, server: dict, obj: dict) -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": name, "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [obj]}


STOLEN = [{"property": "dagsterAssetKey", "value": "stolen"}]  # an asset of its own, whatever it reads


def ssn(classified: bool) -> dict:
    column = {"name": "ssn", "logicalType": "string", "logicalTypeOptions": {"pattern": "^X"}}
    return {**column, "classification": "pii"} if classified else column


def lake(path: str, fmt: str = "delta", server: str = "lake") -> dict:
    return {"server": server, "type": "local", "format": fmt, "path": path}


def write(folder: Path, name: str, doc: dict) -> None:
    (folder / "contracts").mkdir(parents=True, exist_ok=True)
    (folder / "contracts" / f"{name}.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def check(folder: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts", "--format", "json"],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def attacker_results(proc: subprocess.CompletedProcess, victim: list[str]) -> list[dict]:
    return [r for r in json.loads(proc.stdout)["results"] if r["asset_key"] != victim and r["name"] == "ssn__pattern"]


def classified_in_plan(folder: Path, contract_id: str) -> bool:
    """Whether the loaded plan of `contract_id` classifies its object's ssn (another file saying so)."""
    from dq_contracts.odcs.load import load_contracts

    loaded = load_contracts([folder / "contracts"])
    plan = next(p for p in loaded.plans if p.id == contract_id)
    return all(o.column("ssn").classified for o in plan.objects)


# -- a table that is a folder: Delta ------------------------------------------------------------

# (attack, the victim's server, the attacker's server, its object's physicalName): each reads the
# files of the Delta table data/people (or the Delta table over data/people's parquet files)
LAKE_ATTACKS = [
    ("delta: the folder named by the server's path", lake("../data/{model}"), lake("../data/people", server="l2"), "x"),
    ("delta: './' and '..' in the path", lake("../data/{model}"), lake("./../data/sub/../people", server="l2"), "x"),
    ("delta: a symlinked folder", lake("../data/{model}"), lake("../mirror/people", server="l2"), "x"),
    ("delta: another case", lake("../data/{model}"), lake("../data/People", server="l2"), "x"),
    ("parquet: a glob of the table's files", lake("../data/{model}"), lake("../data/people/*.parquet", "parquet", "pq"),
     "x"),
    ("parquet: '**' over the lake", lake("../data/{model}"), lake("../data/**/*.parquet", "parquet", "pq"), "x"),
    ("parquet: one data file by a set", lake("../data/{model}"), lake("../data/[p]eople/*.parquet", "parquet", "pq"),
     "x"),
    # the other way: the parquet files classified, read as the Delta table they belong to
    ("delta over classified parquet files", lake("../data/people/*.parquet", "parquet", "pq"),
     lake("../data/people", server="l2"), "x"),
]


@pytest.mark.parametrize("attack, victim, server, physical", LAKE_ATTACKS, ids=[a[0] for a in LAKE_ATTACKS])
def test_a_delta_table_is_classified_under_every_path_of_its_files(tmp_path, attack, victim, server, physical):
    import pyarrow as pa

    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "mirror").symlink_to(tmp_path / "data", target_is_directory=True)
    write_lake("delta", tmp_path / "data", "people", pa.table({"id": [1, 2, 3], "ssn": SSNS}))
    write(tmp_path, "victim", contract("victim", victim, {"name": "people", "physicalName": "people",
                                                          "properties": [ssn(True)]}))
    write(tmp_path, "attacker", contract("attacker", server, {"name": "stolen", "physicalName": physical,
                                                              "customProperties": STOLEN, "properties": [ssn(False)]}))
    assert classified_in_plan(tmp_path, "attacker"), attack
    proc = check(tmp_path)
    assert len(attacker_results(proc, ["people"])) == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    for value in SSNS:
        assert value not in proc.stdout + proc.stderr, attack


def test_a_delta_table_elsewhere_shares_nothing(tmp_path):
    """The other side: a Delta table in another folder is not classified by this one."""
    import pyarrow as pa

    write_lake("delta", tmp_path / "data", "people", pa.table({"id": [1], "ssn": SSNS[:1]}))
    write_lake("delta", tmp_path / "data", "others", pa.table({"id": [1], "ssn": ["none"]}))
    write(tmp_path, "victim", contract("victim", lake("../data/{model}"), {"name": "people", "properties": [ssn(True)]}))
    write(tmp_path, "other", contract("other", lake("../data/{model}", server="l2"),
                                      {"name": "others", "properties": [ssn(False)]}))
    assert not classified_in_plan(tmp_path, "other")
