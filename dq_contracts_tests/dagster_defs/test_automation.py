"""What runs when, without anyone clicking: the checks' automation conditions after a
materialisation, after a freshness-sensor report, at a contract cron; relationships wait for the
table they read (in this contract or another one of the folder); Dagster's own column-schema-change
check works on an external contract table."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import duckdb

from dq_contracts import build_contract_defs
from dq_contracts.odcs.load import load_contracts
from dq_contracts.demo import write_tables
from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts_tests.support import demo_shop, run_checks

UTC = dt.timezone.utc


def requested(result) -> set[tuple[str, str]]:
    """(asset, check) of every check an automation tick asked Dagster to run."""
    return {(r.key.asset_key.to_user_string(), r.key.name) for r in result.results
            if isinstance(r.key, dg.AssetCheckKey) and r.true_subset.size}


def checks_of(defs, asset: str) -> set[tuple[str, str]]:
    return {(s.asset_key.to_user_string(), s.name) for c in defs.asset_checks for s in c.check_specs
            if s.asset_key.to_user_string() == asset}


def freshness_tick(defs, instance, cursor=None):
    sensor = defs.resolve_sensor_def("dq_contracts_freshness")
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"dq_warehouse": WarehouseResource()})
    return sensor.evaluate_tick(context)


def test_a_materialisation_in_dagster_makes_its_checks_run_and_only_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = demo_shop(tmp_path, tables=[])

    @dg.asset(name="orders")
    def orders():
        write_tables(tmp_path / "demo_data" / "warehouse.duckdb", ["orders"])

    defs = build_contract_defs(contracts / "orders.odcs.yaml", assets=[orders])
    instance = dg.DagsterInstance.ephemeral()
    start = dt.datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC)
    before = dg.evaluate_automation_conditions(defs, instance, evaluation_time=start)
    assert requested(before) == set()  # nothing was built yet: nothing to check
    instance.report_runless_asset_event(dg.AssetMaterialization("orders"))  # as a run outside the checks would
    after = dg.evaluate_automation_conditions(defs, instance, cursor=before.cursor,
                                              evaluation_time=start + dt.timedelta(seconds=30))
    assert requested(after) == checks_of(defs, "orders")
    again = dg.evaluate_automation_conditions(defs, instance, cursor=after.cursor,
                                              evaluation_time=start + dt.timedelta(seconds=50))
    assert requested(again) == set()  # requested once per update, not at every tick


def test_a_freshness_report_on_an_external_table_makes_its_checks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    database = tmp_path / "demo_data" / "warehouse.duckdb"
    contracts = demo_shop(tmp_path, ["customers"], now=dt.datetime(2026, 1, 1, tzinfo=UTC))
    defs = build_contract_defs(contracts / "customers.odcs.yaml")
    instance = dg.DagsterInstance.ephemeral()
    start = dt.datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC)
    idle = dg.evaluate_automation_conditions(defs, instance, evaluation_time=start)
    assert requested(idle) == set()

    first = freshness_tick(defs, instance)
    for event in first.asset_events:  # what the sensor daemon does with a sensor's asset events
        instance.report_runless_asset_event(event)
    tick = dg.evaluate_automation_conditions(defs, instance, cursor=idle.cursor,
                                             evaluation_time=start + dt.timedelta(seconds=30))
    assert requested(tick) == checks_of(defs, "customers")

    # the checks ran; new rows arrive; the sensor reports them; the checks are asked for again
    result = run_checks(defs, instance=instance)
    assert result.get_asset_check_evaluations()
    settled = dg.evaluate_automation_conditions(defs, instance, cursor=tick.cursor,  # the daemon ticks on
                                                evaluation_time=start + dt.timedelta(minutes=1))
    assert requested(settled) == set()  # the checks ran: nothing more to ask for
    write_tables(database, ["customers"], now=dt.datetime(2026, 3, 1, tzinfo=UTC))
    second = freshness_tick(defs, instance, first.cursor)
    assert len(second.asset_events) == 1
    instance.report_runless_asset_event(second.asset_events[0])
    later = dg.evaluate_automation_conditions(defs, instance, cursor=settled.cursor,
                                              evaluation_time=start + dt.timedelta(minutes=5))
    assert requested(later) == checks_of(defs, "customers")


def test_a_contract_cron_runs_exactly_the_clauses_it_lists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = demo_shop(tmp_path, tables=[])  # no table at all: a cron runs its clauses regardless
    defs = build_contract_defs(contracts / "orders.odcs.yaml")
    instance = dg.DagsterInstance.ephemeral()
    start = dt.datetime(2026, 6, 1, 12, 10, tzinfo=UTC)
    first = dg.evaluate_automation_conditions(defs, instance, evaluation_time=start)
    assert requested(first) == set()
    hourly = dg.evaluate_automation_conditions(defs, instance, cursor=first.cursor,
                                               evaluation_time=start + dt.timedelta(hours=1))
    assert requested(hourly) == {("orders", "orders_volume")}  # `0 * * * *` on that one rule
    daily = dg.evaluate_automation_conditions(defs, instance, cursor=hourly.cursor,
                                              evaluation_time=dt.datetime(2026, 6, 2, 6, 0, 30, tzinfo=UTC))
    plan = next(p for p in load_contracts([contracts / "orders.odcs.yaml"]).plans)
    sla_cron = next(s for s in plan.schedules if s.cron == "0 6 * * *")
    assert requested(daily) == {(o, c) for o, c in sla_cron.checks} | {("orders", "orders_volume")}


def test_a_relationship_runs_after_the_table_it_reads_in_the_same_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = demo_shop(tmp_path, tables=[])
    database = tmp_path / "demo_data" / "warehouse.duckdb"
    # orders is built second and is what the relationship of order_items reads: before it is
    # built the table does not exist, so a check that ran early would fail with "no such table"
    @dg.asset(name="order_items")
    def order_items():
        write_tables(database, ["order_items"])

    @dg.asset(name="orders", deps=[])
    def orders():
        write_tables(database, ["orders"])

    defs = dg.Definitions.merge(build_contract_defs(contracts / "orders.odcs.yaml", assets=[order_items, orders]),
                                dg.Definitions(executor=dg.in_process_executor))
    spec = next(s for c in defs.asset_checks for s in c.check_specs if s.name == "order_id__references_orders")
    assert [d.asset_key for d in spec.additional_deps] == [dg.AssetKey("orders")]
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, raise_on_error=False)
    order = [(e.event_type_value, e.step_key) for e in result.all_events
             if e.event_type_value in ("ASSET_MATERIALIZATION", "STEP_START")]
    built = order.index(("ASSET_MATERIALIZATION", "orders"))
    started = order.index(("STEP_START", "orders__order_items__relationships"))
    assert built < started
    evaluation = next(e for e in result.get_asset_check_evaluations() if e.check_name == "order_id__references_orders")
    assert not evaluation.passed and "dq_contracts/error" not in evaluation.metadata  # a verdict: the orphan item
    assert evaluation.metadata["dq_contracts/result"].value.startswith("1 ")


def test_a_relationship_to_another_contract_on_the_same_server_is_enforced_and_drawn(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = demo_shop(tmp_path)
    defs = build_contract_defs(contracts)
    graph = defs.resolve_asset_graph()
    key = dg.AssetCheckKey(dg.AssetKey("orders"), "customer_id__references_customers")
    assert dg.AssetKey("customers") in graph.get(key).parent_entity_keys  # the dependency is drawn
    with duckdb.connect(str(tmp_path / "demo_data" / "warehouse.duckdb")) as connection:
        connection.execute("UPDATE analytics.orders SET customer_id = 'C99999' WHERE order_id = 3")
    result = run_checks(defs, dg.AssetSelection.checks(key))
    [evaluation] = result.get_asset_check_evaluations()
    assert not evaluation.passed and evaluation.metadata["dq_contracts/observed"].value == 1
    assert evaluation.metadata["dq_contracts/samples"].value == ["C99999"]  # the orphan key, of orders


def test_a_relationship_to_a_table_on_another_server_is_not_enforced_and_says_why(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    contracts = demo_shop(tmp_path, tables=[])
    customers = contracts / "customers.odcs.yaml"
    customers.write_text(customers.read_text().replace("../demo_data/warehouse.duckdb", "../demo_data/crm.duckdb"))
    plan = next(p for p in load_contracts([contracts]).plans if p.id.endswith("orders"))
    [reason] = [n for n in plan.not_enforced if n.clause == "/schema/0/properties/1/relationships/0"]
    assert reason.code == "target_other_server"
    assert reason.reason.startswith("the referenced table is in another contract of the folder, on another server")
    assert "customer_id__references_customers" not in {c.name for o in plan.objects for c in o.checks}


def test_dagsters_column_schema_change_check_works_on_an_external_contract_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    database = tmp_path / "demo_data" / "warehouse.duckdb"
    contracts = demo_shop(tmp_path, ["customers"], now=dt.datetime(2026, 1, 1, tzinfo=UTC))
    ours = build_contract_defs(contracts / "customers.odcs.yaml")
    schema_checks = dg.build_column_schema_change_checks(assets=[dg.AssetKey("customers")])
    defs = dg.Definitions.merge(ours, dg.Definitions(asset_checks=schema_checks))
    instance = dg.DagsterInstance.ephemeral()
    first = freshness_tick(defs, instance)
    instance.report_runless_asset_event(first.asset_events[0])
    columns = first.asset_events[0].metadata["dagster/column_schema"].value.columns
    assert "email" in {c.name for c in columns}
    write_tables(database, ["customers"], now=dt.datetime(2026, 3, 1, tzinfo=UTC))
    with duckdb.connect(str(database)) as connection:
        connection.execute("ALTER TABLE analytics.customers ADD COLUMN loyalty_tier VARCHAR")
    second = freshness_tick(defs, instance, first.cursor)
    instance.report_runless_asset_event(second.asset_events[0])
    key = next(iter(schema_checks[0].check_keys))
    result = run_checks(defs, dg.AssetSelection.checks(key), instance)
    [evaluation] = result.get_asset_check_evaluations()
    assert not evaluation.passed and "Added columns: loyalty_tier" in evaluation.description
