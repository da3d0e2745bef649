"""`build_contract_defs`: every ODCS contract under some paths as Dagster definitions.

Per schema object: an asset (an external AssetSpec, or the user's own asset with the same key), one
`@multi_asset_check` with one AssetCheckSpec per clause, and the SLA latency as a freshness policy.
Per contract: a checks-only job, and one schedule per cron the contract declares.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import sqlalchemy as sa

from dq_contracts.engine.contracts import Warehouses, choose_server, failed_results, run_contract
from dq_contracts.odcs.check_kinds import CHECK_KINDS
from dq_contracts.odcs.names import dagster_name
from dq_contracts.odcs.names import ALL_CHECKS_JOB, AUTOMATION_SENSOR, FRESHNESS_SENSOR, OBJECT_OPS, checks_job_name, object_op_name, partitions_job_name, partitions_schedule_name, schedule_job_name, schedule_name
from dq_contracts.odcs.load import gc_paused, load_contracts
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.odcs.partitions import Partition, multi_partition, window_partition
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, ObjectPlan
from dq_contracts.dagster_defs.problem_defs import problem_defs
from dq_contracts.odcs.problems import ContractError
from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts.engine.results import CheckResult, error_of, touches_classified
from dq_contracts.engine.sessions import read_only
from dq_contracts.engine.schema_check import read_catalog
from dq_contracts.engine.sql import table_for
from dq_contracts.dagster_defs.specs import ObjectSpecs, build_contract_specs, cron_refusal
from dq_contracts.dagster_defs.translator import (DqContractsTranslator, clause_text, dimension_columns, partition_column,
                                     tag_value)
from dq_contracts.engine.sentences import code_block

log = logging.getLogger("dq_contracts")

RESOURCE_KEY = "dq_warehouse"


def _keys_of(items: Iterable[Any]) -> set[dg.AssetKey]:
    keys: set[dg.AssetKey] = set()
    for item in items:
        if isinstance(item, dg.AssetsDefinition):
            keys.update(item.keys)
        elif isinstance(item, (dg.AssetSpec, dg.SourceAsset)):
            keys.add(item.key)
    return keys


def _partitions_of(items: Iterable[Any]) -> dict[dg.AssetKey, dg.PartitionsDefinition]:
    """The partitions definition of each of the user's partitioned assets."""
    found: dict[dg.AssetKey, dg.PartitionsDefinition] = {}
    for item in items:
        specs = item.specs if isinstance(item, dg.AssetsDefinition) else [item] if isinstance(item, dg.AssetSpec) else []
        found.update({spec.key: spec.partitions_def for spec in specs if spec.partitions_def is not None})
    return found


def _with_contract(contract_specs: dict[dg.AssetKey, dg.AssetSpec]):
    """A spec mapper: the user's asset keeps what it says and gains what the contract adds (column
    schema, owners, tags, links, the not-enforced list, the freshness policy)."""

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        ours = contract_specs.get(spec.key)
        if ours is None:
            return spec
        spec = spec.merge_attributes(
            metadata={k: v for k, v in (ours.metadata or {}).items() if k not in (spec.metadata or {})},
            owners=[o for o in ours.owners if o not in spec.owners],
            tags={k: v for k, v in (ours.tags or {}).items() if k not in (spec.tags or {})},
        )
        return spec.replace_attributes(
            description=spec.description or ours.description,
            freshness_policy=spec.freshness_policy or ours.freshness_policy,
        )

    return apply



def check_result_of(result: CheckResult, spec: dg.AssetCheckSpec, plan: ContractPlan | None = None,
                    obj: ObjectPlan | None = None) -> dg.AssetCheckResult:
    """The engine's result as Dagster's: what was measured in words and units first, then what a
    person needs to act on it (the clause's file:line, its own failing-rows query, samples)."""
    check = next((c for c in obj.checks if c.name == result.name), None) if obj is not None else None
    message = getattr(result, "message", None) or result.error or ""
    metadata: dict[str, Any] = {
        "dq_contracts/result": dg.MetadataValue.text(message) if message else None,
        "dq_contracts/clause": (clause_text(plan, check) if plan is not None and check is not None
                                else result.clause),
        "dq_contracts/pointer": result.clause,
        "dq_contracts/severity": result.severity,
        "dq_contracts/kind": result.kind,
        "dq_contracts/dimension": check.dimension if check is not None else None,
        "dq_contracts/threshold": result.threshold,
        "dq_contracts/unit": _unit(result),
        "dq_contracts/status": result.status,
        "dq_contracts/contract_id": result.contract_id,
        "dq_contracts/contract_version": result.contract_version,
        "dq_contracts/partition": getattr(result, "partition", None),
    }
    if result.observed is not None:
        observed = result.observed
        metadata["dq_contracts/observed"] = (observed if isinstance(observed, (int, float))
                                             else dg.MetadataValue.text(str(observed)))
    if result.row_count is not None:
        metadata["dagster/row_count"] = result.row_count
    if result.error:
        metadata["dq_contracts/error"] = dg.MetadataValue.text(result.error)
    if result.sql:
        metadata["dq_contracts/sql"] = dg.MetadataValue.md(code_block(result.sql))
    if result.samples:
        metadata["dq_contracts/samples"] = dg.MetadataValue.json(result.samples)
    observed_schema = (result.details or {}).get("observed_columns")
    if observed_schema:
        metadata["dagster/column_schema"] = dg.TableSchema(columns=[
            dg.TableColumn(name=str(name), type=str(kind)) for name, kind in observed_schema])
    if result.details:
        details = {k: v for k, v in result.details.items() if k != "observed_columns"}
        if details:
            metadata["dq_contracts/details"] = dg.MetadataValue.json(json.loads(json.dumps(details, default=str)))
    return dg.AssetCheckResult(
        asset_key=spec.asset_key,
        check_name=spec.name,
        passed=result.passed,
        severity=dg.AssetCheckSeverity.ERROR if result.severity == "ERROR" else dg.AssetCheckSeverity.WARN,
        metadata={k: v for k, v in metadata.items() if v is not None},
        description=message or None,
    )


def _unit(result: CheckResult) -> str:
    """What the observed number counts."""
    if result.unit == "percent":
        return "percent of all rows"
    return CHECK_KINDS[result.kind].observed_unit


def _outcome_line(result: CheckResult, plan: ContractPlan) -> str:
    status = result.status.upper()
    observed = "-" if result.observed is None else result.observed
    line = (f"{status:<5} {plan.id} {plan.version} {'/'.join(result.asset_key)}.{result.name} "
            f"[{result.clause}] observed {observed}, expected {result.threshold}")
    return line + (f": {result.error}" if result.error else "")


def _checks_op(name: str, plan: ContractPlan, obj: ObjectPlan, pairs: list[tuple[CheckPlan, dg.AssetCheckSpec]],
               resource_key: str, description: str) -> dg.AssetChecksDefinition:
    spec_of = {check.name: spec for check, spec in pairs}
    partitions = next((spec.partitions_def for _, spec in pairs if spec.partitions_def is not None), None)

    @dg.multi_asset_check(name=name, specs=[spec for _, spec in pairs], can_subset=True,
                          required_resource_keys={resource_key}, description=description)
    def contract_checks(context):
        warehouse: WarehouseResource = getattr(context.resources, resource_key)
        selected = context.selected_asset_check_keys
        names = [check.name for check, spec in pairs if spec.key in selected]
        context.log.info(f"contract {plan.id} version {plan.version} ({plan.file}), object {obj.name}: "
                         f"{len(names)} clause(s)" + (_run_partitions_text(context) if partitions is not None else ""))
        try:
            partition = _partition_of(context, obj, partitions)
            with Warehouses(warehouse.environ()) as warehouses:
                results = run_contract(plan, warehouses, server_name=warehouse.server, objects=[obj.name],
                                       selected={obj.name: names}, timeout_seconds=warehouse.timeout_seconds,
                                       partition=partition)
        except Exception as exc:  # whatever happened, every selected check still reports, failed
            results = failed_results(plan, obj, error_of(exc, f"object {obj.name}", touches_classified(plan, obj)),
                                     names)
        aggregates = {r.aggregate_sql for r in results if getattr(r, "aggregate_sql", None)}
        for sql in sorted(aggregates):  # the one scan that answered the counting clauses, once
            context.log.debug(f"{obj.name}: one scan for the counting clauses:\n{sql}")
        for result in results:
            context.log.info(_outcome_line(result, plan))
            yield check_result_of(result, spec_of[result.name], plan, obj)

    return contract_checks


def _run_partitions_text(context: Any) -> str:
    if context.has_partition_key:
        return f", partition {context.partition_key}"
    if context.has_partition_key_range:
        return f", partitions {_range_key(context)}"
    return ""


def _range_key(context: Any) -> str:
    """A range of partitions as Dagster writes it: `2026-06-02...2026-06-03`."""
    return f"{context.partition_key_range.start}...{context.partition_key_range.end}"


def _partition_of(context: Any, obj: ObjectPlan, partitions: dg.PartitionsDefinition | None) -> Partition | None:
    """The run's partition of a partitioned op, in ODCS words: a time window or a static value of the
    object's partition column, or one of each dimension's column for a multi-partitioned asset. None
    for the whole table (an op of table-wide clauses, or a run with no partition key)."""
    if partitions is None:
        return None
    if not context.has_partition_key:
        return _range_of(context, obj, partitions) if context.has_partition_key_range else None
    key = context.partition_key
    if isinstance(partitions, dg.MultiPartitionsDefinition):
        columns = dimension_columns(obj, partitions) or {}
        by_dimension = partitions.get_partition_key_from_str(key).keys_by_dimension
        return multi_partition(key, tuple(
            _one_partition(by_dimension[d.name], obj, columns[d.name], d.partitions_def)
            for d in partitions.partitions_defs))
    return _one_partition(key, obj, partition_column(obj), partitions)


def _range_of(context: Any, obj: ObjectPlan, partitions: dg.PartitionsDefinition) -> Partition | None:
    """A run of a range of partitions (a single-run backfill): the rows of the whole range, checked
    once. Dagster records such a run's evaluations without a partition (it gives one only to a run of
    one partition); the result's `dq_contracts/partition` metadata names the range. A range of a
    multi-partitioned asset is checked on the whole table."""
    key, column = _range_key(context), partition_column(obj)
    if isinstance(partitions, dg.TimeWindowPartitionsDefinition):
        window = context.partition_time_window  # from the first's start to the last's end
        return window_partition(key, column, _logical_type(obj, column), window.start, window.end)
    if isinstance(partitions, dg.StaticPartitionsDefinition):
        return Partition(key, column, _logical_type(obj, column),
                         values=tuple(_static_value(obj, k) for k in context.partition_keys))
    return None


def _static_value(obj: ObjectPlan, key: str) -> Any:
    """The value a static partition key stands for, as the declaration writes it (a key is text)."""
    values = obj.partitioning.values if obj.partitioning is not None else ()
    return next((v for v in values if str(v) == key), key)


def _logical_type(obj: ObjectPlan, column: str) -> str | None:
    declared = obj.column(column)
    return (declared.logical_type or "").lower() or None if declared is not None else None


def _one_partition(key: str, obj: ObjectPlan, column: str, partitions: dg.PartitionsDefinition) -> Partition:
    logical = _logical_type(obj, column)
    if isinstance(partitions, dg.TimeWindowPartitionsDefinition):
        window = partitions.time_window_for_partition_key(key)
        return window_partition(key, column, logical, window.start, window.end)
    return Partition(key, column, logical, value=_static_value(obj, key))


def _object_checks(specs: ObjectSpecs, prefix: str, resource_key: str) -> list[dg.AssetChecksDefinition]:
    """One op for the object's own clauses, and one for its relationships to other assets: those
    wait for the assets they read (their `additional_deps`), which the others need not do. On a
    partitioned asset, the clauses that stay table-wide (schema, freshness, …) are an unpartitioned
    op of their own: Dagster runs one op for one partitions definition."""
    plan, obj = specs.plan, specs.object
    partitioned = any(s.partitions_def is not None for _, s in specs.checks)
    own = [(c, s) for c, s in specs.checks if not s.additional_deps and (s.partitions_def is not None or not partitioned)]
    wide = [(c, s) for c, s in specs.checks if not s.additional_deps and s.partitions_def is None and partitioned]
    reading = [(c, s) for c, s in specs.checks if s.additional_deps]
    own_op, table_op, relationships_op = (object_op_name(prefix, obj.name, part) for part in OBJECT_OPS)
    ops = []
    if own:
        ops.append(_checks_op(own_op, plan, obj, own, resource_key,
                              f"Clauses of contract {plan.id} {plan.version}, object {obj.name}"
                              + (", per partition" if partitioned else "")))
    if wide:
        ops.append(_checks_op(table_op, plan, obj, wide, resource_key,
                              f"Table-wide clauses of contract {plan.id} {plan.version}, object {obj.name} "
                              "(partitioned): they read the whole table"))
    if reading:  # a relationship is judged per partition, like the object's rows (its kind's reach)
        ops.append(_checks_op(relationships_op, plan, obj, reading, resource_key,
                              f"Relationships of contract {plan.id} {plan.version}, object {obj.name}: "
                              "run after the assets they read"))
    return ops


@dataclass
class _Built:
    checks: list[dg.AssetChecksDefinition]
    jobs: list[dg.UnresolvedAssetJobDefinition]
    schedules: list[Any]  # ScheduleDefinition; a partitioned job's is resolved by Dagster


def _partitions_job(specs: ObjectSpecs, prefix: str) -> dg.UnresolvedAssetJobDefinition | None:
    """The job that runs an external partitioned table's per-partition clauses, one partition per run:
    the only way Dagster 1.13 backfills such checks. An asset backfill of an external asset fails
    ("Could not find an implicit asset job"), the UI does not execute partitioned checks on their
    own, and a checks-only asset job takes its partitions from executable assets alone (its
    `partitions_def` argument is dropped): a PartitionedConfig is what gives it partitions."""
    partitioned = [s for _, s in specs.checks if s.partitions_def is not None]
    if not partitioned:
        return None
    keys, partitions = [s.key for s in partitioned], partitioned[0].partitions_def
    plan, obj = specs.plan, specs.object
    return dg.define_asset_job(
        partitions_job_name(prefix, obj.name), selection=dg.AssetSelection.checks(*keys),
        config=dg.PartitionedConfig(partitions_def=partitions, run_config_for_partition_key_fn=_no_config),
        # one run per partition, each a few statements: a process per op would cost more than the checks
        executor_def=dg.in_process_executor,
        description=f"The per-partition clauses of contract {plan.id} {plan.version}, object {obj.name}: "
                    "launch one partition, or backfill a range from the job's Partitions tab",
        tags={"dq_contracts/contract": tag_value(plan.id)})


def _no_config(_key: str) -> dict[str, Any]:
    return {}


def _contract_defs(plan: ContractPlan, objects: list[ObjectSpecs], prefix: str, resource_key: str,
                   contract_jobs: bool, partition_jobs: bool = True,
                   own: frozenset[dg.AssetKey] | set[dg.AssetKey] = frozenset()) -> _Built:
    """One contract's check ops, a partitioned job per external partitioned table (`partition_jobs`),
    and with `contract_jobs` its checks-only job and cron schedules."""
    built = _Built([], [], [])
    for specs in objects:
        built.checks.extend(_object_checks(specs, prefix, resource_key))
        # the user's own partitioned asset is backfilled by materialising it, its checks along
        job = _partitions_job(specs, prefix) if partition_jobs and specs.asset.key not in own else None
        if job is not None:
            built.jobs.append(job)
            if isinstance(specs.asset.partitions_def, dg.TimeWindowPartitionsDefinition):
                # each window's checks once it has ended (the daily job at midnight UTC checks
                # yesterday); stopped, like Dagster's own, until someone turns it on
                built.schedules.append(dg.build_schedule_from_partitioned_job(
                    job, name=partitions_schedule_name(prefix, specs.object.name),
                    default_status=dg.DefaultScheduleStatus.STOPPED,
                    description=f"The per-partition clauses of {plan.id}, object {specs.object.name}, each "
                                "partition once its window has ended"))
    if not contract_jobs:
        return built
    # only jobs select by key (a spec makes a new key each time it is asked for one)
    check_keys = {(specs.object.name, c.name): s.key for specs in objects for c, s in specs.checks}
    if check_keys:
        built.jobs.append(dg.define_asset_job(
            checks_job_name(prefix), selection=dg.AssetSelection.checks(*check_keys.values()),
            description=f"All clauses of contract {plan.id} {plan.version}",
            tags={"dq_contracts/contract": tag_value(plan.id)}))
    for schedule in plan.schedules:
        keys = [check_keys[pair] for pair in schedule.checks if pair in check_keys]
        if not keys:
            continue
        name = schedule_name(plan, schedule, prefix)
        job = dg.define_asset_job(schedule_job_name(name), selection=dg.AssetSelection.checks(*keys),
                                  description=f"Clauses scheduled by {plan.id} {schedule.clause}")
        built.jobs.append(job)
        built.schedules.append(dg.ScheduleDefinition(
            name=name, cron_schedule=schedule.cron, job=job, execution_timezone="UTC",
            description=f"Contract {plan.id} {plan.version}: {schedule.clause} '{schedule.cron}'"))
    return built


def _freshness_sensor(watched: list[tuple[ContractPlan, ObjectPlan, str, dg.AssetKey]],
                      resource_key: str, suffix: str = "") -> dg.SensorDefinition:
    """Dagster's freshness counts materialisations only; for tables built outside Dagster, report a
    runless materialisation whenever the contract's freshness column advances."""

    @dg.sensor(name=FRESHNESS_SENSOR + suffix, minimum_interval_seconds=300, required_resource_keys={resource_key},
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Reports a materialisation of each external contract table when its SLA "
                           "freshness column advances, so the UI's freshness means what the contract means")
    def freshness_sensor(context):
        warehouse: WarehouseResource = getattr(context.resources, resource_key)
        cursor = json.loads(context.cursor) if context.cursor else {}
        events = []
        with Warehouses(warehouse.environ()) as warehouses:
            for plan, obj, column, key in watched:
                if obj.column(column) is not None and obj.column(column).classified:
                    continue  # its newest value is classified: not even a hash of it is kept (the check still runs)
                try:
                    engine, connection = warehouses.engine(choose_server(plan, warehouse.server), plan.folder,
                                                         plan.root)
                    table = table_for(obj.physical_name, connection.schema, [column],
                                      engine.dialect.identifier_preparer, connection.files)
                    with read_only(engine, warehouse.timeout_seconds) as conn:
                        newest = conn.execute(sa.select(sa.func.max(table.c[column]))).scalar()
                        columns = _observed_columns(obj, table, engine, connection, conn)
                except Exception as exc:  # one unreachable table must not stop the others
                    context.log.warning(f"{key.to_user_string()}: "
                                        f"{error_of(exc, f'{obj.name}.{column}', touches_classified(plan, obj))}")
                    continue
                if newest is None:
                    continue
                seen = str(newest)
                if cursor.get(key.to_user_string()) != seen:
                    cursor[key.to_user_string()] = seen
                    metadata: dict[str, Any] = {"dq_contracts/newest": seen, "dq_contracts/contract_id": plan.id}
                    if columns:  # so that Dagster's column-schema-change checks work on external tables
                        metadata["dagster/column_schema"] = dg.TableSchema(
                            columns=[dg.TableColumn(name, kind) for name, kind in columns])
                    events.append(dg.AssetMaterialization(
                        asset_key=key, description=f"{obj.physical_name}.{column} advanced to {seen}",
                        metadata=metadata))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(cursor, sort_keys=True))

    return freshness_sensor




def _observed_columns(obj: ObjectPlan, table: Any, engine: sa.Engine, connection: Any,
                      conn: sa.Connection) -> list[tuple[str, str]]:
    """The table's columns and types as the catalog has them; none when it cannot say."""
    try:
        checked = CheckedObject(obj, table, engine.dialect.name, connection.schema, engine.dialect.identifier_preparer,
                                dt.datetime.now(dt.timezone.utc), connection.files)
        found = read_catalog(checked, conn)
        return [(str(c["name"]), str(c.get("type_text") or c["type"].compile(dialect=engine.dialect)))
                for c in found.values()]
    except Exception:  # a courtesy: the materialisation is reported all the same
        return []


def build_contract_defs(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    assets: Sequence[Any] = (),
    defs: dg.Definitions | None = None,
    translator: DqContractsTranslator | None = None,
    resource: WarehouseResource | None = None,
    resource_key: str = RESOURCE_KEY,
    freshness_sensor: bool = True,
    automation_sensor: dg.DefaultSensorStatus | None = dg.DefaultSensorStatus.STOPPED,
    contract_jobs: bool = False,
    partition_jobs: bool = True,
    strict: bool = False,
    name: str | None = None,
) -> dg.Definitions:
    """Definitions for every contract under `paths`.

    `assets` (and the assets of `defs`) are the user's own: a schema object whose asset key one of
    them has gets its checks attached to it (they run after each materialisation, and ERROR clauses
    block downstream assets) instead of an external AssetSpec.

    What runs when: each check has an automation condition (the translator's
    `automation_condition`): it runs when its table is updated (materialised in Dagster, or reported
    by the freshness sensor), relationships after the table they read, and each contract cron runs
    the clauses it lists. Sensor `dq_contracts_automation` evaluates those conditions; like Dagster's
    own automation sensor it starts stopped (`automation_sensor=dg.DefaultSensorStatus.RUNNING` to
    start it, None to leave the conditions to Dagster's `default_automation_condition_sensor`). No
    job is defined by default but one per external partitioned table (`partition_jobs` below): each
    job costs Dagster a pass over the whole asset graph at load.

    `contract_jobs=True` adds a checks-only job per contract, job `dq_contracts_checks` for every
    contract check, and makes each contract cron a Dagster schedule instead of a condition; past a
    few hundred contracts those jobs dominate loading.

    `partition_jobs` (on by default): each external partitioned table gets job
    `<contract>__<object>__partitions` of its per-partition clauses, partitioned like the table, to
    launch one partition or backfill a range from the UI (Dagster 1.13 backfills partitioned
    checks of an external asset no other way), and for time windows a stopped schedule of it that
    checks each window once it has ended.

    A contract with errors does not take the others down: every valid contract loads, and each asset
    the broken one names gets a failing `contract_valid` check listing its problems (also logged).
    A refused SQL rule fails its own check only. `strict=True` raises ContractError, listing every
    problem, when any contract has an error (for CI).

    `name` tells apart several sets of contracts in one code location: it suffixes the names of the
    sensors, of the all-checks job and of the contract-problems check.
    """
    # Every object made here stays alive in the Definitions returned: a collection in between finds
    # no garbage, and each full one scans the whole heap so far, so their cost grows faster than the
    # number of contracts (a fifth of the build's CPU time at 3,000). It collects once, after.
    with gc_paused():
        return _build_defs(paths, assets, defs, translator, resource, resource_key, freshness_sensor,
                           automation_sensor, contract_jobs, partition_jobs, strict, name)


def _build_defs(paths, assets, defs, translator, resource, resource_key, freshness_sensor, automation_sensor,
                contract_jobs, partition_jobs, strict, name) -> dg.Definitions:
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    translator = translator or DqContractsTranslator()
    resource = resource or WarehouseResource()
    server = resource.server.get_value() if isinstance(resource.server, dg.EnvVar) else resource.server
    loaded = load_contracts(paths, server=server, environ=resource.environ(), cron_rule=cron_refusal)
    if strict and loaded.errors:
        raise ContractError(loaded.problems)
    rejected_files = {r.file for r in loaded.rejected}
    for problem in loaded.problems:
        if problem.file not in rejected_files:  # a rejected contract's problems are logged with it
            log.warning(problem.render())

    own = _keys_of(assets) | (_keys_of(defs.assets or []) if defs is not None else set())
    theirs_partitioned = _partitions_of([*assets, *((defs.assets or []) if defs is not None else [])])
    built = build_contract_specs(loaded.usable_plans, translator, server=server,
                                 crons_as_conditions=not contract_jobs, own_keys=own,
                                 own_partitions=theirs_partitioned)
    rejected = [*loaded.rejected, *built.rejected]
    specs: list[dg.AssetSpec] = []
    for_own: dict[dg.AssetKey, dg.AssetSpec] = {}
    checks: list[dg.AssetChecksDefinition] = []
    jobs: list[dg.UnresolvedAssetJobDefinition] = []
    schedules: list[Any] = []
    watched: list[tuple[ContractPlan, ObjectPlan, str, dg.AssetKey]] = []
    by_plan: dict[str, list[ObjectSpecs]] = {}
    for specs_of in built.objects:
        by_plan.setdefault(specs_of.plan.file, []).append(specs_of)
        key, plan, obj = specs_of.asset.key, specs_of.plan, specs_of.object
        if key in own:
            for_own[key] = specs_of.asset
        else:
            specs.append(specs_of.asset)
            fresh = next((f for f in plan.freshness if f.object == obj.name), None)
            if fresh:
                watched.append((plan, obj, fresh.element, key))
    for file, objects in by_plan.items():  # the names the load checked (compiler.definition_names)
        contract = _contract_defs(objects[0].plan, objects, loaded.prefixes[file], resource_key, contract_jobs,
                                  partition_jobs, own)
        checks.extend(contract.checks)
        jobs.extend(contract.jobs)
        schedules.extend(contract.schedules)

    suffix = f"__{dagster_name(name)}" if name else ""
    check_keys = [spec.key for o in built.objects for _, spec in o.checks]
    sensors: list[dg.SensorDefinition] = []
    if freshness_sensor and watched:
        sensors.append(_freshness_sensor(watched, resource_key, suffix))
    if check_keys:
        if contract_jobs:  # a job costs Dagster a pass over the whole graph at load: none by default
            jobs.append(dg.define_asset_job(ALL_CHECKS_JOB + suffix, selection=dg.AssetSelection.checks(*check_keys),
                                            description="Every clause of every contract (checks only)"))
        if automation_sensor is not None and any(s.automation_condition for o in built.objects for _, s in o.checks):
            sensors.append(dg.AutomationConditionSensorDefinition(
                AUTOMATION_SENSOR + suffix, target=dg.AssetSelection.checks(*check_keys),
                default_status=automation_sensor,
                description="Runs contract checks when their table changes, after the tables relationships "
                            "read, and at contract crons (the checks' automation conditions)"))
    mapper = _with_contract(for_own)
    user_assets = [a.map_asset_specs(mapper) if isinstance(a, dg.AssetsDefinition)
                   else mapper(a) if isinstance(a, dg.AssetSpec) else a for a in assets]
    existing: dict[dg.AssetKey, set[str]] = {key: set() for key in own | {spec.key for spec in specs}}
    theirs = [*assets, *((defs.assets or []) if defs is not None else []),
              *((defs.asset_checks or []) if defs is not None else [])]
    for definition in [*checks, *theirs]:  # a contract_valid check must not collide with any of these
        for check_key in getattr(definition, "check_keys", ()):
            existing.setdefault(check_key.asset_key, set()).add(check_key.name)
    ours = dg.Definitions.merge(
        dg.Definitions(
            assets=[*specs, *user_assets],
            asset_checks=checks,
            jobs=jobs,
            schedules=schedules,
            sensors=sensors,
            resources={resource_key: resource},
        ),
        problem_defs(rejected, translator, existing, dagster_name(name) if name else None),
    )
    if defs is not None:
        return dg.Definitions.merge(defs.map_asset_specs(func=mapper) if for_own else defs, ours)
    return ours
