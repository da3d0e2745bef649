"""Every ODCS server type of every schema version has a row saying how it is handled (run, emulated,
compiled, untested, not enforced and why), `plan` says it per contract, and the README's warehouse
table and pyproject's extras follow the rows."""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources

import pytest
import yaml

from dq_contracts.cli import main
from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.servers import SERVER_TYPES, Handling, checkable, server_handling, server_type
from dq_contracts_tests.support import REPO, SCHEMAS


def _types_of(schema: dict) -> set[str]:
    definitions = schema.get("$defs") or schema.get("definitions") or {}
    return set(definitions["Server"]["properties"]["type"]["enum"])


def _schemas() -> dict[str, dict]:
    """The schema the validator loads (always here), and every official version beside the checkout."""
    found = {"open-data-contract-standard package": json.loads(
        resources.files("open_data_contract_standard").joinpath("schema.json").read_text(encoding="utf-8"))}
    for path in sorted(SCHEMAS.rglob("*.json")) if SCHEMAS.is_dir() else ():
        found[str(path.relative_to(SCHEMAS))] = json.loads(path.read_text(encoding="utf-8"))
    return found


SCHEMA_FILES = _schemas()
ODCS_TYPES = sorted(set().union(*(_types_of(s) for s in SCHEMA_FILES.values())))


@pytest.mark.parametrize("name", list(SCHEMA_FILES))
def test_every_server_type_of_every_schema_version_has_a_row(name):
    missing = sorted(t for t in _types_of(SCHEMA_FILES[name]) if server_type(t) is None)
    assert not missing, f"{name}: server types with no row in odcs/servers.py: {missing}"


def test_the_official_versions_are_all_read():
    if not SCHEMAS.is_dir():
        pytest.skip(f"{SCHEMAS} (the official schemas) is not beside the checkout")
    versions = {s.get("properties", {}).get("apiVersion", {}).get("default") for s in SCHEMA_FILES.values()}
    assert {"v3.0.0", "v3.0.1", "v3.0.2", "v3.1.0", "v3.2.0"} <= versions, versions
    assert len(ODCS_TYPES) >= 44, ODCS_TYPES  # 3.2 names 44 types


@pytest.mark.parametrize("row", SERVER_TYPES, ids=[r.names[0] for r in SERVER_TYPES])
def test_a_row_says_how_it_is_handled(row):
    assert isinstance(row.handling, Handling) and row.how.strip()
    if row.handling is Handling.NOT_ENFORCED:  # nothing reaches it: no dialect, no files, no driver
        assert row.dialect is None and not row.files and not row.database_file and row.extra is None
        assert not checkable({"server": "x", "type": row.names[0], "host": "h", "format": "csv", "path": "p"})


KAFKA_CONTRACT = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "events", "version": "1.0.0", "status": "active",
    "servers": [{"server": "bus", "type": "kafka", "host": "broker:9092"},
                {"server": "drop", "type": "sftp", "location": "sftp://files.example/x/"}],
    "schema": [{"name": "clicks", "properties": [{"name": "id", "logicalType": "integer", "required": True}]}],
}


def _folder(tmp_path, contract: dict) -> str:
    folder = tmp_path / "contracts"
    folder.mkdir(exist_ok=True)
    (folder / f"{contract['id']}.odcs.yaml").write_text(yaml.safe_dump(contract))
    return str(folder)


def test_a_stream_leaves_every_clause_not_enforced_saying_why(tmp_path):
    loaded = load_contracts([_folder(tmp_path, KAFKA_CONTRACT)], environ={})
    assert not loaded.errors, loaded.problems
    plan = loaded.plans[0]
    assert not any(o.checks for o in plan.objects) and plan.not_enforced
    for item in plan.not_enforced:
        assert item.code == "no_sql_server"
        assert "kafka: a stream, not a table" in item.reason and "sftp: files we cannot reach here" in item.reason


def test_plan_says_per_contract_how_its_servers_are_handled(tmp_path, capsys):
    folder = _folder(tmp_path, KAFKA_CONTRACT)
    _folder(tmp_path, {**KAFKA_CONTRACT, "id": "lake", "schema": [{**KAFKA_CONTRACT["schema"][0], "name": "views"}],
                       "servers": [
        {"server": "bus", "type": "kafka", "host": "broker:9092"},
        {"server": "files", "type": "local", "format": "parquet", "path": "data/{model}.parquet"}]})
    assert main(["plan", "--format", "json", folder]) == 0
    said = {c["id"]: c["servers"] for c in json.loads(capsys.readouterr().out)["contracts"]}
    assert said["events"] == [
        {"server": "bus", "type": "kafka", "handling": "not enforced", "how": "kafka: a stream, not a table",
         "used": False},
        {"server": "drop", "type": "sftp", "handling": "not enforced",
         "how": "sftp: files we cannot reach here: DuckDB reads no sftp:// location", "used": False}]
    assert [(s["server"], s["handling"], s["used"]) for s in said["lake"]] == [
        ("bus", "not enforced", False), ("files", "run", True)]
    assert main(["plan", folder]) == 0
    text = capsys.readouterr().out
    assert "  server bus: not enforced (kafka: a stream, not a table)" in text
    assert "  checked against server files: run (local: csv, parquet or json files read by DuckDB)" in text


def test_a_file_server_in_a_format_not_read_here_says_so():
    handling, how = server_handling({"server": "lake", "type": "s3", "location": "s3://b/t/", "format": "avro"})
    assert handling is Handling.NOT_ENFORCED and how.startswith("s3: format 'avro' is not read here")


def test_a_stream_is_refused_where_a_connection_is_made_even_with_a_url():
    from dq_contracts.engine.connections import EndpointError, connection_for

    with pytest.raises(EndpointError, match="kafka: a stream, not a table; no check runs against it"):
        connection_for({"server": "bus", "type": "kafka"}, {"DQ_CONTRACTS_BUS_URL": "sqlite://",
                                                            "DQ_CONTRACTS_BUS_READ_ONLY": "true"})


def _warehouse_table() -> dict[str, list[str]]:
    """README "Warehouses": each ODCS type name of the first cell, with the row's cells."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("### Warehouses\n", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table: dict[str, list[str]] = {}
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 5, line
        for name in re.findall(r"`([a-z0-9]+)`", cells[0]):
            assert name not in table, f"README Warehouses: {name} in two rows"
            table[name] = cells
    return table


def test_the_readme_table_has_a_row_per_server_type_saying_what_its_row_says():
    table = _warehouse_table()
    assert sorted(set(ODCS_TYPES) - set(table)) == [], "ODCS types missing from README's Warehouses table"
    for name, cells in table.items():
        row = server_type(name)
        assert row is not None, f"README Warehouses: {name} has no row in odcs/servers.py"
        assert cells[1].startswith(str(row.handling)), f"README Warehouses: {name} says {cells[1]!r}, its row " \
                                                       f"{row.handling!r}"
        if row.extra:
            assert f"`[{row.extra}]`" in cells[2], f"README Warehouses: {name} does not name its extra [{row.extra}]"


def test_every_extra_a_row_names_is_in_pyproject_and_the_tests_install_it():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    named = {row.extra for row in SERVER_TYPES if row.extra}
    assert named - set(extras) == set(), "rows name extras pyproject lacks"
    tested = {e for req in extras["test"] if req.startswith("dq-contracts[")
              for e in req.split("[", 1)[1].rstrip("]").split(",")}
    assert (set(extras) - {"test"}) - tested == set(), "the test extra leaves out a warehouse's extra"
