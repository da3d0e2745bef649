"""A contract moving from 1.0.0 to 1.1.0 keeps each unchanged clause's history on the same check;
a removed clause's check leaves the definitions while its past results stay readable."""

from __future__ import annotations

import dagster as dg
import sqlalchemy as sa

from dq_contracts import build_contract_defs

V1 = """
apiVersion: v3.1.0
kind: DataContract
id: urn:shop:items
version: {version}
status: active
servers:
  - server: local
    type: duckdb
    database: wh.duckdb
    schema: main
schema:
  - name: items
    properties:
      - name: id
        logicalType: integer
        required: true
      - name: price
        logicalType: number
        logicalTypeOptions:
          minimum: {minimum}
{extra}"""

REMOVED = """      - name: sku
        logicalType: string
        logicalTypeOptions:
          maxLength: 8
"""
ADDED = """      - name: sku
        logicalType: string
        logicalTypeOptions:
          pattern: "^S"
"""


def run_checks(path, instance):
    defs = build_contract_defs(path, contract_jobs=True)
    job = defs.resolve_job_def("items__checks")
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    return defs, result.run_id


def history(instance, name):
    key = dg.AssetCheckKey(dg.AssetKey(["items"]), name)
    return instance.event_log_storage.get_asset_check_execution_history(key, limit=10)


def test_upgrading_a_contract_keeps_unchanged_clauses_history(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    engine = sa.create_engine("duckdb:///wh.duckdb")
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE items (id INTEGER, price DOUBLE, sku VARCHAR)")
        c.exec_driver_sql("INSERT INTO items VALUES (1, 0.5, 'S1'), (2, 2.0, 'S2')")
    engine.dispose()
    contract = tmp_path / "items.odcs.yaml"
    (tmp_path / "home").mkdir()
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "home"))

    contract.write_text(V1.format(version="1.0.0", minimum=0, extra=REMOVED))
    defs_v1, run_1 = run_checks(contract, instance)
    names_v1 = {s.name for c in defs_v1.asset_checks for s in c.check_specs}
    assert names_v1 == {"schema", "id__not_null", "price__minimum", "sku__max_length"}

    # 1.1.0: the price minimum changes (0 → 1), the sku length clause goes, a sku pattern arrives
    contract.write_text(V1.format(version="1.1.0", minimum=1, extra=ADDED))
    defs_v2, run_2 = run_checks(contract, instance)
    names_v2 = {s.name for c in defs_v2.asset_checks for s in c.check_specs}
    assert names_v2 == {"schema", "id__not_null", "price__minimum", "sku__pattern"}

    # unchanged and changed clauses: one check, two executions, newest first
    for name in ("id__not_null", "schema", "price__minimum"):
        assert [r.run_id for r in history(instance, name)] == [run_2, run_1], name
    changed = history(instance, "price__minimum")
    versions = [r.event.dagster_event.event_specific_data.metadata["dq_contracts/contract_version"].value
                for r in changed]
    assert versions == ["1.1.0", "1.0.0"]
    assert [r.event.dagster_event.event_specific_data.passed for r in changed] == [False, True]
    # the new clause starts its own history; the removed one is gone from the definitions but readable
    assert [r.run_id for r in history(instance, "sku__pattern")] == [run_2]
    removed = history(instance, "sku__max_length")
    assert [r.run_id for r in removed] == [run_1]
    assert removed[0].event.dagster_event.event_specific_data.passed is True
