"""The Dagster layer on the bundled contracts: specs, metadata, jobs, schedules, attached checks,
subsetting, blocking, the freshness sensor, the translator and the component."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys

import dagster as dg
import duckdb
import pytest
import sqlalchemy as sa

from dq_contracts import ContractError, DqContractsTranslator, build_contract_defs
from dq_contracts.demo import write_tables
from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts.dagster_defs.translator import with_check_attributes
from dq_contracts_tests.support import CONTRACTS, DEMO_CHECKS, REPO, SKIPPED_IN_A_FULL_RUN, demo_shop, run_checks
from dq_contracts_tests.support import dg_project, dg_run
from dq_contracts_tests.support import DOCUMENTED


@pytest.fixture(scope="module")
def defs():
    return build_contract_defs(CONTRACTS)


@pytest.fixture
def in_demo_dir(tmp_path, monkeypatch):
    """A copy of the bundled contracts with the demo warehouse beside them; returns the contracts
    folder (the working directory is elsewhere: the contracts' DuckDB path is relative to them)."""
    contracts = demo_shop(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return contracts


def asset_specs(defs):
    return {spec.key.to_user_string(): spec for spec in defs.resolve_all_asset_specs()}


def check_specs(defs):
    return {(s.asset_key.to_user_string(), s.name): s for checks in defs.asset_checks or []
            for s in checks.check_specs}


def test_one_external_asset_per_schema_object_with_the_contract_in_its_metadata(defs):
    dg.Definitions.validate_loadable(defs)
    specs = asset_specs(defs)
    assert set(specs) == {"orders", "order_items", "customers", "payments"}
    orders = specs["orders"]
    columns = {c.name: c for c in orders.metadata["dagster/column_schema"].columns}
    assert columns["order_total"].type == "DECIMAL(12,2)"
    assert columns["order_id"].constraints.nullable is False and columns["order_id"].constraints.unique
    assert "primary key" in columns["order_id"].constraints.other
    assert orders.owners == ["team:sales_data", "ana.owner@example.com"]
    assert orders.tags["dq_contracts/contract"] == "urn_dq-contracts_demo_orders"
    assert orders.tags["dq_contracts/version"] == "1.0.0" and orders.tags["dq_contracts/domain"] == "sales"
    assert orders.metadata["dq_contracts/contract_id"] == "urn:dq-contracts:demo:orders"
    assert orders.metadata["dq_contracts/owners_not_mapped"] == "bob"  # not an email: Dagster refuses it
    assert orders.metadata["dq_contracts/link/businessDefinition"].value == "https://example.com/glossary/orders"
    assert orders.freshness_policy.fail_window.to_timedelta() == dt.timedelta(days=1)
    not_enforced = orders.metadata["dq_contracts/not_enforced"].value.records
    reasons = {r.data["clause"]: r.data["code"] for r in not_enforced}
    assert "/schema/0/quality/2" in reasons  # the `type: text` rule, with its reason code
    assert all(r.data["reason"] for r in not_enforced)
    assert "Governed by data contract `urn:dq-contracts:demo:orders` version 1.0.0" in orders.description
    assert specs["customers"].group_name == "sales" and specs["payments"].group_name == "finance"
    # standard metadata: the table as the server names it, where it lives (no credentials), the
    # contract version as code version, a link to the contract file and the object's line
    assert orders.metadata["dagster/table_name"] == "warehouse.analytics.orders"
    assert orders.metadata["dagster/uri"] == "duckdb:../demo_data/warehouse.duckdb/analytics.orders"
    assert orders.code_version == "1.0.0"
    [reference] = orders.metadata["dagster/code_references"].code_references
    lines = (CONTRACTS / "orders.odcs.yaml").read_text().splitlines()
    assert reference.file_path == str(CONTRACTS / "orders.odcs.yaml")
    assert lines[reference.line_number - 1].strip() == "- name: orders"


def test_one_check_spec_per_clause_with_its_metadata(defs):
    specs = check_specs(defs)
    assert len(specs) == DEMO_CHECKS
    minimum = specs[("orders", "order_total__minimum")]
    assert minimum.blocking is False  # an external table: Dagster builds nothing downstream of it to block
    # beside severity ERROR, the spec says in words that it does not block, and why
    assert minimum.metadata["dq_contracts/blocks"].startswith("no: Dagster does not materialise this table")
    assert minimum.metadata["dq_contracts/pointer"] == "/schema/0/properties/4/logicalTypeOptions/minimum"
    line = next(i for i, text in enumerate((CONTRACTS / "orders.odcs.yaml").read_text().splitlines(), 1)
                if text.strip() == "minimum: 0")
    assert minimum.metadata["dq_contracts/clause"] == (
        f"{os.path.relpath(CONTRACTS / 'orders.odcs.yaml')}:{line} "
        "schema.orders.properties.order_total.logicalTypeOptions.minimum")
    reference = minimum.metadata["dagster/code_references"].code_references[0]
    assert reference.file_path == str(CONTRACTS / "orders.odcs.yaml") and reference.line_number == line
    assert minimum.metadata["dq_contracts/kind"] == "range"
    assert minimum.metadata["dq_contracts/contract_version"] == "1.0.0"
    assert minimum.metadata["dq_contracts/severity"] == "ERROR"
    assert minimum.metadata["dq_contracts/property"] == "order_total"
    assert minimum.description and "\n" not in minimum.description
    warn = specs[("orders", "status_is_known")]
    assert warn.blocking is False and warn.metadata["dq_contracts/dimension"] == "conformity"
    assert warn.metadata["dq_contracts/blocks"].startswith("no: a WARN clause")
    # a relationship's page says why it may show an execution with no result
    reference = specs[("orders", "customer_id__references_customers")]
    assert "It reads customers: in a run where customers fails a blocking (ERROR) check, Dagster skips this check" \
        in reference.description, reference.description
    assert "Dagster skips" not in minimum.description


def test_a_result_says_what_its_check_spec_says_without_the_plan(defs):
    """A result carries its clause's place and dimension from where the engine made it: the check
    op's metadata is the spec's, with no look-up of the plan (a failed result, made with no warehouse)."""
    from dq_contracts.dagster_defs.ops import check_result_of
    from dq_contracts.engine.contracts import failed_results
    from dq_contracts.odcs.load import load_contracts

    plan = next(p for p in load_contracts([CONTRACTS]).usable_plans if p.file.endswith("orders.odcs.yaml"))
    specs = check_specs(defs)
    results = failed_results(plan, plan.object("orders"), "unreachable")
    assert results
    for result in results:
        spec = specs[("orders", result.name)]
        evaluation = check_result_of(result, spec)
        for key in ("dq_contracts/clause", "dq_contracts/pointer", "dq_contracts/dimension", "dq_contracts/severity"):
            ours, spec_says = evaluation.metadata.get(key), spec.metadata.get(key)  # the spec's are not wrapped
            assert getattr(ours, "value", ours) == spec_says, (result.name, key)
        assert type(evaluation.metadata["dq_contracts/severity"].value) is str  # Dagster stores no Enum
        assert evaluation.description == result.message
        assert result.message == "could not be evaluated: unreachable" or result.message.startswith("not run: ")


def test_with_contract_jobs_jobs_and_schedules_run_exactly_the_declared_clauses():
    defs = build_contract_defs(CONTRACTS, contract_jobs=True)
    jobs = {j.name for j in defs.resolve_all_job_defs()}
    assert {"orders__checks", "customers__checks", "payments__checks", "dq_contracts_checks"} <= jobs
    hourly = defs.resolve_schedule_def("orders__orders__orders_volume")
    assert hourly.cron_schedule == "0 * * * *" and hourly.execution_timezone == "UTC"
    daily = defs.resolve_schedule_def("orders__daily_check")
    assert daily.cron_schedule == "0 6 * * *"
    # each schedule's job runs exactly the clauses its cron covers
    hourly_job = defs.resolve_job_def(hourly.job_name)
    assert {k.name for k in hourly_job.asset_layer.asset_graph.asset_check_keys} == {"orders_volume"}
    daily_job = defs.resolve_job_def(daily.job_name)
    # an SLA-level cron schedules every clause of the object its element names
    assert {k for k in daily_job.asset_layer.asset_graph.asset_check_keys} == {
        k for k in check_specs(defs).values() and [] or
        [s.key for (asset, _), s in check_specs(defs).items() if asset == "orders"]}


def test_checks_only_job_on_external_tables_records_every_clause(in_demo_dir):
    defs = build_contract_defs(in_demo_dir)
    result = run_checks(defs, dg.AssetSelection.checks_for_assets(dg.AssetKey("payments")))
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert len(evaluations) == len([k for k in check_specs(defs) if k[0] == "payments"])
    failing = {name for name, e in evaluations.items() if not e.passed}
    assert failing == {"payment_id_unique", "amount__exclusive_minimum"}
    duplicate = evaluations["payment_id_unique"]
    assert duplicate.severity == dg.AssetCheckSeverity.ERROR
    metadata = duplicate.metadata
    assert metadata["dq_contracts/observed"].value == 1 and metadata["dq_contracts/threshold"].value == "= 0"
    assert metadata["dagster/row_count"].value == 100
    assert metadata["dq_contracts/kind"].value == "duplicate_values" and metadata["dq_contracts/severity"].value == "ERROR"
    assert re.search(r"GROUP BY .*payment_id.*HAVING", metadata["dq_contracts/sql"].value, re.S)  # its own query
    assert metadata["dq_contracts/samples"].value == ["P00041"]
    assert metadata["dq_contracts/samples_text"].value == "'P00041'"  # shown inline, without a click
    # an age in the units people read beside the raw seconds Dagster plots
    age = evaluations["paid_at__freshness"].metadata
    assert isinstance(age["dq_contracts/observed"].value, (int, float))
    assert re.fullmatch(r"\d+(\.\d)? (s|min|h|d)", age["dq_contracts/age"].value), age["dq_contracts/age"]
    assert age["dq_contracts/threshold_age"].value == "≤ 2 d" and age["dq_contracts/threshold"].value == "≤ 172800.0"


def test_a_failing_check_on_a_classified_column_shows_none_of_its_values(in_demo_dir, tmp_path):
    """customers.email is classified pii and its format check fails (one 'not-an-email'): no value of
    the column in the evaluation's metadata or description, nor anywhere in the instance's storage
    (event log, compute logs); segment is not classified, and its failure shows its sample."""
    defs = build_contract_defs(in_demo_dir)
    home = tmp_path / "home"
    home.mkdir()
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        result = run_checks(defs, dg.AssetSelection.checks_for_assets(dg.AssetKey("customers")), instance=instance)
        evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    email, segment = evaluations["email__format"], evaluations["segment__accepted_values"]
    assert not email.passed and email.metadata["dq_contracts/observed"].value == 1  # a failure: samples were due
    assert "dq_contracts/samples" not in email.metadata and "dq_contracts/samples_text" not in email.metadata
    assert not segment.passed and segment.metadata["dq_contracts/samples"].value == ["vip"]
    assert segment.metadata["dq_contracts/samples_text"].value == "'vip'"

    def shown(evaluation):
        return json.dumps([evaluation.description, {k: str(v) for k, v in evaluation.metadata.items()}])

    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert "vip" in shown(segment) and b"vip" in stored  # where a value is shown, these searches find it
    for value in ("not-an-email", "@example.com"):  # the failing value, and every other value of the column
        assert value not in shown(email), value
        assert value.encode() not in stored, value


def test_the_demo_materialises_and_fails_exactly_the_documented_clauses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DQ_CONTRACTS_DIR", str(demo_shop(tmp_path, tables=[])))
    sys.modules.pop("dq_contracts.demo_defs", None)
    from dq_contracts.demo_defs import defs as demo

    instance = dg.DagsterInstance.ephemeral()
    result = demo.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance,
                                                                             raise_on_error=False)
    evaluations = result.get_asset_check_evaluations()
    # every clause reported, after its table was built, but the one that reads a table failing ERROR clauses
    assert len(evaluations) == DEMO_CHECKS - len(SKIPPED_IN_A_FULL_RUN)
    assert SKIPPED_IN_A_FULL_RUN.isdisjoint({(e.asset_key.to_user_string(), e.check_name) for e in evaluations})
    failing = {(e.asset_key.to_user_string(), e.check_name, e.severity.value) for e in evaluations if not e.passed}
    assert failing == DOCUMENTED
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()
                    if hasattr(e, "asset_key")} or {m.asset_key.to_user_string() for m in
                                                     result.asset_materializations_for_node("orders")}
    assert "orders" in materialized
    # the lineage the data has, drawn on the graph; orders fails only a WARN clause, so every table builds
    assert {k: {d.asset_key.to_user_string() for d in s.deps} for k, s in asset_specs(demo).items()} == {
        "orders": set(), "order_items": {"orders"}, "payments": {"orders"}, "customers": set()}
    assert {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()} == {
        "orders", "order_items", "customers", "payments"}
    # the run's log names contract, version and clause of each outcome, one line per clause
    messages = [r.user_message for r in instance.all_logs(result.run_id) if r.user_message]
    lines = [m for m in messages if re.match(r"^(PASS|FAIL|WARN|ERROR)\s+urn:dq-contracts", m)]
    assert len(lines) == DEMO_CHECKS - len(SKIPPED_IN_A_FULL_RUN)
    assert any(m.startswith("FAIL  urn:dq-contracts:demo:orders 1.0.0 order_items.order_id__references_orders "
                            "[/schema/1/properties/0/relationships/0]") for m in lines)
    # the demo's assets are built by Dagster: their ERROR clauses block; relationships never do
    demo_checks = check_specs(demo)
    assert demo_checks[("orders", "order_total__minimum")].blocking is True
    assert demo_checks[("order_items", "order_id__references_orders")].blocking is False
    # the user's asset gained the contract's metadata and freshness policy
    orders = asset_specs(demo)["orders"]
    assert "dagster/column_schema" in orders.metadata and orders.freshness_policy is not None
    assert orders.kinds >= {"duckdb"}


def test_by_default_no_job_is_defined_and_crons_are_automation_conditions(defs):
    assert {j.name for j in defs.resolve_all_job_defs()} == {"__ASSET_JOB"}  # Dagster's own, always there
    assert not list(defs.schedules or [])
    specs = check_specs(defs)
    volume = specs[("orders", "orders_volume")].automation_condition
    assert "contract cron 0 * * * * (UTC)" in {c.get_label() for c in volume.children}
    assert specs[("customers", "row_count")].automation_condition.get_label() == (
        "its table was updated since it last ran")
    sensor = defs.resolve_sensor_def("dq_contracts_automation")
    assert isinstance(sensor, dg.AutomationConditionSensorDefinition)
    assert sensor.default_status == dg.DefaultSensorStatus.STOPPED  # as Dagster's own: turned on by a person


def test_a_single_clause_can_run_alone(in_demo_dir):
    defs = build_contract_defs(in_demo_dir)
    instance = dg.DagsterInstance.ephemeral()
    key = dg.AssetCheckKey(dg.AssetKey(["customers"]), "segment__accepted_values")
    result = run_checks(defs, dg.AssetSelection.checks(key), instance)
    evaluations = result.get_asset_check_evaluations()
    assert [(e.check_name, e.passed) for e in evaluations] == [("segment__accepted_values", False)]


def test_error_clauses_block_downstream_assets_warn_clauses_do_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = demo_shop(tmp_path, tables=[])
    database = tmp_path / "demo_data" / "warehouse.duckdb"

    @dg.asset(name="orders")
    def orders():
        write_tables(database, ["orders", "order_items"])
        with duckdb.connect(str(database)) as connection:  # one negative total: an ERROR clause breaks
            connection.execute("UPDATE analytics.orders SET order_total = -5 WHERE order_id = 10")

    @dg.asset(deps=[orders])
    def revenue_report():
        return 1

    defs = build_contract_defs(contracts / "orders.odcs.yaml", assets=[orders, revenue_report])
    instance = dg.DagsterInstance.ephemeral()
    job = dg.Definitions.merge(defs, dg.Definitions(executor=dg.in_process_executor))
    result = job.resolve_job_def("__ASSET_JOB").execute_in_process(
        instance=instance, raise_on_error=False, asset_selection=[dg.AssetKey("orders"),
                                                                   dg.AssetKey("revenue_report")])
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
    assert "order_total__minimum" in failed
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {"orders"}  # the report was not built on data that broke an ERROR clause


def test_freshness_sensor_reports_a_materialisation_when_the_column_advances(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    database = tmp_path / "demo_data" / "warehouse.duckdb"
    contracts = demo_shop(tmp_path, ["customers"], now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    defs = build_contract_defs(contracts / "customers.odcs.yaml")
    sensor = defs.resolve_sensor_def("dq_contracts_freshness")
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor=None):
        context = dg.build_sensor_context(instance=instance, cursor=cursor,
                                          resources={"dq_warehouse": WarehouseResource()})
        return sensor.evaluate_tick(context)

    first = tick()
    assert [e.asset_key.to_user_string() for e in first.asset_events] == ["customers"]
    assert list(tick(first.cursor).asset_events) == []  # nothing new
    write_tables(database, ["customers"], now=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
    third = tick(first.cursor)
    assert len(third.asset_events) == 1 and "2026-03-01" in third.asset_events[0].metadata[
        "dq_contracts/newest"].value


def test_the_translator_customises_specs_through_one_code_path(in_demo_dir):
    class Mine(DqContractsTranslator):
        def get_asset_spec(self, data):
            spec = super().get_asset_spec(data)
            return spec.replace_attributes(key=spec.key.with_prefix("warehouse"), group_name="contracts")

        def get_asset_check_spec(self, data):
            spec = super().get_asset_check_spec(data)
            return with_check_attributes(spec, description=f"[{data.contract.domain}] {spec.description}",
                                         merge_metadata={"team": "data"})

    defs = build_contract_defs(in_demo_dir / "customers.odcs.yaml", translator=Mine())
    dg.Definitions.validate_loadable(defs)
    assert {s.key.to_user_string(): s.group_name for s in defs.resolve_all_asset_specs()} == {
        "warehouse/customers": "contracts"}
    # checks, jobs and the freshness sensor follow the new key
    assert {k[0] for k in check_specs(defs)} == {"warehouse/customers"}
    spec = check_specs(defs)[("warehouse/customers", "email__format")]
    assert spec.description.startswith("[sales] ") and spec.metadata["team"] == "data"
    assert spec.metadata["dq_contracts/severity"] == "ERROR"
    result = run_checks(defs)
    evaluations = result.get_asset_check_evaluations()
    assert len(evaluations) == len(check_specs(defs))
    assert {e.asset_key.to_user_string() for e in evaluations} == {"warehouse/customers"}


def test_strict_stops_the_code_location_on_a_broken_contract_with_every_problem(write_contract):
    path = write_contract("""
        apiVersion: v3.1.0
        kind: DataContract
        id: broken
        version: 1.0.0
        status: active
        schema:
          - name: t
            properties:
              - name: a
                logicalType: integer
                logicalTypeOptions: {minimum: "zero"}
    """)
    with pytest.raises(ContractError) as caught:
        build_contract_defs(path, strict=True)
    assert "c.odcs.yaml:" in str(caught.value) and "schema.t.properties.a" in str(caught.value)


def test_warehouse_credentials_come_through_the_resource(pg_database, tmp_path):
    url = sa.make_url(pg_database)
    engine = sa.create_engine(pg_database)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a INTEGER)")
        c.exec_driver_sql("INSERT INTO t VALUES (1)")
    engine.dispose()
    contract = tmp_path / "pg.odcs.yaml"
    contract.write_text(f"""
apiVersion: v3.1.0
kind: DataContract
id: pg
version: 1.0.0
status: active
servers:
  - server: prod
    type: postgres
    host: 127.0.0.1
    port: {url.port}
    database: {url.database}
    schema: public
schema:
  - name: t
    properties:
      - name: a
        logicalType: integer
        required: true
""")
    os.environ["TEST_WH_PASSWORD"] = url.password
    try:
        resource = WarehouseResource(servers={"prod": {"host": url.host, "port": url.port, "user": url.username,
                                                       "password": dg.EnvVar("TEST_WH_PASSWORD")}})
        defs = build_contract_defs(contract, resource=resource)
        result = run_checks(defs)
    finally:
        del os.environ["TEST_WH_PASSWORD"]
    assert [(e.check_name, e.passed) for e in result.get_asset_check_evaluations()] == [
        ("schema", True), ("a__not_null", True)]


def test_the_component_loads_with_dg_offline(tmp_path):
    project, env = dg_project(tmp_path)
    (project / "src" / "shop" / "defs" / "contracts").mkdir()
    (project / "src" / "shop" / "defs" / "contracts" / "defs.yaml").write_text(
        f"type: dq_contracts.ContractsComponent\nattributes:\n  contracts_dir: {CONTRACTS}\n")
    listed = dg_run(project, env, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    payload = json.loads(listed.stdout)
    assert {a["asset_key"] for a in payload["assets"]} == {"orders", "order_items", "customers", "payments"}
    assert len(payload["asset_checks"]) == DEMO_CHECKS
    checked = dg_run(project, env, "check", "defs")
    assert checked.returncode == 0, checked.stderr
    components = dg_run(project, env, "list", "components", "--json")
    assert "dq_contracts.ContractsComponent" in components.stdout


def test_dg_scaffold_writes_a_defs_yaml_that_loads_and_passes_dg_check_once_it_holds_a_contract(tmp_path):
    project, env = dg_project(tmp_path)
    scaffolded = dg_run(project, env, "scaffold", "defs", "dq_contracts.ContractsComponent", "contracts")
    assert scaffolded.returncode == 0, scaffolded.stderr
    written = (project / "src" / "shop" / "defs" / "contracts" / "defs.yaml").read_text()
    assert "contracts_dir: '{{ context.project_root }}/contracts'" in written
    assert (project / "contracts").is_dir()  # made empty, so the scaffold loads as written
    assert dg_run(project, env, "list", "defs", "--json").returncode == 0
    checked = dg_run(project, env, "check", "defs")  # a gate: a folder with no contract checks nothing
    assert checked.returncode == 1 and "no contract file" in checked.stdout + checked.stderr, checked.stdout
    # the user drops contracts into the project's folder: they load from there
    for contract in CONTRACTS.glob("*.odcs.yaml"):
        (project / "contracts" / contract.name).write_text(contract.read_text())
    listed = dg_run(project, env, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["asset_checks"]) == DEMO_CHECKS
    checked = dg_run(project, env, "check", "defs")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_readme_component_example_is_right_for_a_create_dagster_project(tmp_path):
    readme = (REPO / "README.md").read_text()
    example = re.search(r"```yaml\n# src/<project>/defs/contracts/defs.yaml\n(.*?)```", readme, re.S).group(1)
    project, env = dg_project(tmp_path)
    (project / "src" / "shop" / "defs" / "contracts").mkdir()
    (project / "src" / "shop" / "defs" / "contracts" / "defs.yaml").write_text(example.replace("server: prod",
                                                                                               "server: local"))
    demo_shop(project)  # contracts/ at the project root, as the README says
    listed = dg_run(project, env, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["asset_checks"]) == DEMO_CHECKS
    # with the README's `server: prod`, which the bundled contracts do not declare: found at load
    (project / "src" / "shop" / "defs" / "contracts" / "defs.yaml").write_text(example)
    listed = dg_run(project, env, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    checks = json.loads(listed.stdout)["asset_checks"]
    assert {c["key"].split(":")[-1] for c in checks} == {"contract_valid"}, checks[:3]


def test_a_missing_contracts_dir_is_a_clear_load_error(tmp_path):
    project, env = dg_project(tmp_path)
    (project / "src" / "shop" / "defs" / "contracts").mkdir()
    (project / "src" / "shop" / "defs" / "contracts" / "defs.yaml").write_text(
        "type: dq_contracts.ContractsComponent\nattributes:\n  contracts_dir: ../nowhere\n")
    checked = dg_run(project, env, "check", "defs")
    assert checked.returncode != 0
    assert "attributes.contracts_dir: ../nowhere is " in checked.stdout + checked.stderr
    assert "which does not exist" in checked.stdout + checked.stderr


def test_definitions_read_the_same_warehouse_from_any_working_directory(tmp_path, monkeypatch):
    contracts = demo_shop(tmp_path / "shop")
    (tmp_path / "elsewhere").mkdir()
    seen = []
    for cwd in (tmp_path / "shop", tmp_path / "elsewhere"):
        monkeypatch.chdir(cwd)
        defs = build_contract_defs(contracts)
        result = run_checks(defs, dg.AssetSelection.checks_for_assets(dg.AssetKey("payments")))
        seen.append(sorted((e.check_name, e.passed) for e in result.get_asset_check_evaluations()))
    assert seen[0] == seen[1]
    assert {name for name, passed in seen[0] if not passed} == {"payment_id_unique", "amount__exclusive_minimum"}


def test_two_contract_folders_in_one_project_load_side_by_side(tmp_path):
    project, env = dg_project(tmp_path)
    for name in ("sales", "finance"):
        assert dg_run(project, env, "scaffold", "defs", "dq_contracts.ContractsComponent", name).returncode == 0
        folder = project / name
        folder.mkdir()
        (folder / "broken.odcs.yaml").write_text("a: [\n")
        (project / "src" / "shop" / "defs" / name / "defs.yaml").write_text(
            f"type: dq_contracts.ContractsComponent\nattributes:\n  contracts_dir: ../../../../{name}\n")
    demo_shop(tmp_path / "demo")
    (project / "sales" / "orders.odcs.yaml").write_text((tmp_path / "demo" / "contracts" / "orders.odcs.yaml").read_text())
    (project / "finance" / "payments.odcs.yaml").write_text(
        (tmp_path / "demo" / "contracts" / "payments.odcs.yaml").read_text())
    checked = dg_run(project, env, "check", "defs")  # a gate: the broken files fail it
    assert checked.returncode == 1 and "broken.odcs.yaml" in checked.stdout + checked.stderr, checked.stdout
    listed = json.loads(dg_run(project, env, "list", "defs", "--json").stdout)
    sensors = {s["name"] for s in listed["sensors"]}
    assert {"dq_contracts_freshness__sales", "dq_contracts_freshness__finance",
            "dq_contracts_contract_problems__sales", "dq_contracts_contract_problems__finance"} <= sensors


def test_the_component_takes_the_translation_settings_in_yaml(tmp_path):
    project, env = dg_project(tmp_path)
    (project / "src" / "shop" / "defs" / "contracts").mkdir()
    (project / "src" / "shop" / "defs" / "contracts" / "defs.yaml").write_text(
        f"type: dq_contracts.ContractsComponent\nattributes:\n  contracts_dir: {CONTRACTS}\n"
        "  key_prefix: warehouse\n  group_name: contracts\n  tags: {team: data}\n"
        "  owners: [team:platform]\n  automation_sensor: running\n")
    listed = dg_run(project, env, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    payload = json.loads(listed.stdout)
    assets = {a["asset_key"]: a for a in payload["assets"]}
    assert set(assets) == {"warehouse/orders", "warehouse/order_items", "warehouse/customers", "warehouse/payments"}
    assert {a["group_name"] for a in assets.values()} == {"contracts"}
    assert all({"key": "team", "value": "data"} in a["tags"] and {"team": "platform"} in a["owners"]
               for a in assets.values())
    # checks and the relationship dependency follow the prefixed keys
    assert {c["asset_key"] for c in payload["asset_checks"]} == set(assets)
    relationship = next(c for c in payload["asset_checks"] if c["key"] == "warehouse/order_items:order_id__references_orders")
    assert "warehouse/orders" in relationship["additional_deps"]
    assert "dq_contracts_automation__contracts" in {s["name"] for s in payload["sensors"]}
