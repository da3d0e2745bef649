"""`build_contract_defs`: every ODCS contract under some paths as Dagster definitions.

Per schema object: an asset (an external AssetSpec, or the user's own asset with the same key), one
`@multi_asset_check` with one AssetCheckSpec per clause, and the SLA latency as a freshness policy.
Per contract: a checks-only job, and one schedule per cron the contract declares.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import sqlalchemy as sa

from dq_contracts.checking import Warehouses, choose_server, failed_results, run_contract
from dq_contracts.compiler import checks_job_name, dagster_name, op_name, schedule_job_name
from dq_contracts.core import RejectedContract, load_contracts
from dq_contracts.plans import ContractPlan, ObjectPlan
from dq_contracts.problem_defs import problem_defs
from dq_contracts.problems import ContractError, Problem
from dq_contracts.resource import WarehouseResource
from dq_contracts.runner import CheckResult, read_only, scrub
from dq_contracts.sql import table_for
from dq_contracts.translator import (
    ContractCheckData,
    ContractObjectData,
    DqContractsTranslator,
    tag_value,
)

log = logging.getLogger("dq_contracts")

RESOURCE_KEY = "dq_warehouse"
FRESHNESS_SENSOR = "dq_contracts_freshness"


def _keys_of(items: Iterable[Any]) -> set[dg.AssetKey]:
    keys: set[dg.AssetKey] = set()
    for item in items:
        if isinstance(item, dg.AssetsDefinition):
            keys.update(item.keys)
        elif isinstance(item, (dg.AssetSpec, dg.SourceAsset)):
            keys.add(item.key)
    return keys


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



def check_result_of(result: CheckResult, spec: dg.AssetCheckSpec) -> dg.AssetCheckResult:
    """The engine's result as Dagster's, with what a person needs to act on it in the metadata."""
    metadata: dict[str, Any] = {
        "dq_contracts/contract_id": result.contract_id,
        "dq_contracts/contract_version": result.contract_version,
        "dq_contracts/clause": result.clause,
        "dq_contracts/threshold": result.threshold,
        "dq_contracts/status": result.status,
    }
    if result.observed is not None:
        observed = result.observed
        metadata["dq_contracts/observed"] = (observed if isinstance(observed, (int, float))
                                             else dg.MetadataValue.text(str(observed)))
    if result.row_count is not None:
        metadata["dq_contracts/row_count"] = result.row_count
    if result.error:
        metadata["dq_contracts/error"] = dg.MetadataValue.text(result.error)
    if result.sql:
        metadata["dq_contracts/sql"] = dg.MetadataValue.md(f"```sql\n{result.sql}\n```")
    if result.samples:
        metadata["dq_contracts/samples"] = dg.MetadataValue.json(result.samples)
    if result.details:
        metadata["dq_contracts/details"] = dg.MetadataValue.json(json.loads(json.dumps(result.details,
                                                                                       default=str)))
    return dg.AssetCheckResult(
        asset_key=spec.asset_key,
        check_name=spec.name,
        passed=result.passed,
        severity=dg.AssetCheckSeverity.ERROR if result.severity == "ERROR" else dg.AssetCheckSeverity.WARN,
        metadata=metadata,
        description=result.error or None,
    )


def _outcome_line(result: CheckResult, plan: ContractPlan) -> str:
    status = result.status.upper()
    observed = "-" if result.observed is None else result.observed
    line = (f"{status:<5} {plan.id} {plan.version} {'/'.join(result.asset_key)}.{result.name} "
            f"[{result.clause}] observed {observed}, expected {result.threshold}")
    return line + (f": {result.error}" if result.error else "")


def _object_checks(plan: ContractPlan, obj: ObjectPlan, asset_key: dg.AssetKey,
                   translator: DqContractsTranslator, resource_key: str) -> tuple[dg.AssetChecksDefinition, dict[str, dg.AssetCheckKey]]:
    pairs = [(translator.get_asset_check_spec(ContractCheckData(plan, obj, c, asset_key)), c) for c in obj.checks]
    spec_of = {check.name: spec for spec, check in pairs}

    @dg.multi_asset_check(
        name=op_name(plan, obj),
        specs=[spec for spec, _ in pairs],
        can_subset=True,
        required_resource_keys={resource_key},
        description=f"Clauses of contract {plan.id} {plan.version}, object {obj.name}",
    )
    def contract_checks(context):
        warehouse: WarehouseResource = getattr(context.resources, resource_key)
        selected = context.selected_asset_check_keys
        names = [check.name for spec, check in pairs if spec.key in selected]
        context.log.info(f"contract {plan.id} version {plan.version} ({plan.file}), object {obj.name}: "
                         f"{len(names)} clause(s)")
        try:
            with Warehouses(warehouse.environ()) as warehouses:
                results = run_contract(plan, warehouses, server_name=warehouse.server, objects=[obj.name],
                                       selected={obj.name: names}, timeout_seconds=warehouse.timeout_seconds)
        except Exception as exc:  # whatever happened, every selected check still reports, failed
            results = failed_results(plan, obj, scrub(f"{type(exc).__name__}: {exc}"), names)
        for result in results:
            context.log.info(_outcome_line(result, plan))
            yield check_result_of(result, spec_of[result.name])

    return contract_checks, {name: spec.key for name, spec in spec_of.items()}


@dataclass
class _Built:
    specs: list[tuple[dg.AssetKey, tuple[dg.AssetSpec, ObjectPlan]]]
    checks: list[dg.AssetChecksDefinition]
    jobs: list[dg.UnresolvedAssetJobDefinition]
    schedules: list[dg.ScheduleDefinition]


def _contract_defs(plan: ContractPlan, translator: DqContractsTranslator, resource_key: str,
                   contract_jobs: bool) -> _Built:
    """One contract's assets, checks, job and schedules (nothing is added until all of it is built)."""
    built = _Built([], [], [], [])
    check_keys: dict[tuple[str, str], dg.AssetCheckKey] = {}
    for obj in plan.objects:
        spec = translator.get_asset_spec(ContractObjectData(plan, obj))
        built.specs.append((spec.key, (spec, obj)))
        definition, keys = _object_checks(plan, obj, spec.key, translator, resource_key)
        built.checks.append(definition)
        check_keys.update({(obj.name, name): key for name, key in keys.items()})
    if check_keys and contract_jobs:
        built.jobs.append(dg.define_asset_job(
            checks_job_name(plan), selection=dg.AssetSelection.checks(*check_keys.values()),
            description=f"All clauses of contract {plan.id} {plan.version}",
            tags={"dq_contracts/contract": tag_value(plan.id)}))
    for schedule in plan.schedules:
        keys = [check_keys[pair] for pair in schedule.checks if pair in check_keys]
        if not keys:
            continue
        job = dg.define_asset_job(schedule_job_name(schedule), selection=dg.AssetSelection.checks(*keys),
                                  description=f"Clauses scheduled by {plan.id} {schedule.clause}")
        built.jobs.append(job)
        built.schedules.append(dg.ScheduleDefinition(
            name=schedule.name, cron_schedule=schedule.cron, job=job, execution_timezone="UTC",
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
                    engine, connection = warehouses.engine(choose_server(plan, warehouse.server), plan.folder)
                    table = table_for(obj.physical_name, connection.schema, [column],
                                      engine.dialect.identifier_preparer, connection.files)
                    with read_only(engine, warehouse.timeout_seconds) as conn:
                        newest = conn.execute(sa.select(sa.func.max(table.c[column]))).scalar()
                except Exception as exc:  # one unreachable table must not stop the others
                    context.log.warning(f"{key.to_user_string()}: {scrub(str(exc))}")
                    continue
                if newest is None:
                    continue
                seen = str(newest)
                if cursor.get(key.to_user_string()) != seen:
                    cursor[key.to_user_string()] = seen
                    events.append(dg.AssetMaterialization(
                        asset_key=key, description=f"{obj.physical_name}.{column} advanced to {seen}",
                        metadata={"dq_contracts/newest": seen, "dq_contracts/contract_id": plan.id}))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(cursor, sort_keys=True))

    return freshness_sensor


def build_contract_defs(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    assets: Sequence[Any] = (),
    defs: dg.Definitions | None = None,
    translator: DqContractsTranslator | None = None,
    resource: WarehouseResource | None = None,
    resource_key: str = RESOURCE_KEY,
    freshness_sensor: bool = True,
    contract_jobs: bool = True,
    strict: bool = False,
    name: str | None = None,
) -> dg.Definitions:
    """Definitions for every contract under `paths`.

    `assets` (and the assets of `defs`) are the user's own: a schema object whose asset key one of
    them has gets its checks attached to it (they run after each materialisation, and ERROR clauses
    block downstream assets) instead of an external AssetSpec.

    A contract with errors does not take the others down: every valid contract loads, and each asset
    the broken one names gets a failing `contract_valid` check listing its problems (also logged).
    A refused SQL rule fails its own check only. `strict=True` raises ContractError, listing every
    problem, when any contract has an error (for CI).

    `name` tells apart several sets of contracts in one code location: it suffixes the names of the
    sensors (`dq_contracts_freshness__<name>`) and of the contract-problems check.

    `contract_jobs=False` leaves out the checks-only job per contract (schedules keep theirs): Dagster
    resolves every job against the whole asset graph, which dominates loading past a few hundred
    contracts.
    """
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    translator = translator or DqContractsTranslator()
    resource = resource or WarehouseResource()
    server = resource.server.get_value() if isinstance(resource.server, dg.EnvVar) else resource.server
    loaded = load_contracts(paths, server=server)
    if strict and loaded.errors:
        raise ContractError(loaded.problems)
    rejected_files = {r.file for r in loaded.rejected}
    for problem in loaded.problems:
        if problem.file not in rejected_files:  # a rejected contract's problems are logged with it
            log.warning(problem.render())

    own = _keys_of(assets) | (_keys_of(defs.assets or []) if defs is not None else set())
    specs: list[dg.AssetSpec] = []
    for_own: dict[dg.AssetKey, dg.AssetSpec] = {}
    checks: list[dg.AssetChecksDefinition] = []
    jobs: list[dg.UnresolvedAssetJobDefinition] = []
    schedules: list[dg.ScheduleDefinition] = []
    watched: list[tuple[ContractPlan, ObjectPlan, str, dg.AssetKey]] = []
    rejected = list(loaded.rejected)
    claimed: dict[dg.AssetKey, ContractPlan] = {}
    for plan in sorted(loaded.usable_plans, key=lambda p: p.id):
        try:  # a translator's exception, or two contracts it maps to one key, cost that contract only
            built = _contract_defs(plan, translator, resource_key, contract_jobs)
        except Exception as exc:
            rejected.append(RejectedContract(plan.file, (Problem(
                plan.file, f"building its Dagster definitions failed: {type(exc).__name__}: {exc}"),), plan))
            continue
        clash = next((key for key, _ in built.specs if key in claimed), None)
        if clash is not None:
            rejected.append(RejectedContract(plan.file, (Problem(
                plan.file, f"asset {clash.to_user_string()} is also the asset of {claimed[clash].file} (contract "
                f"{claimed[clash].id!r}) once the translator has named it; give one of them another key"),), plan))
            continue
        for key, (spec, obj) in built.specs:
            claimed[key] = plan
            if key in own:
                for_own[key] = spec
            else:
                specs.append(spec)
                fresh = next((f for f in plan.freshness if f.object == obj.name), None)
                if fresh:
                    watched.append((plan, obj, fresh.element, key))
        checks.extend(built.checks)
        jobs.extend(built.jobs)
        schedules.extend(built.schedules)

    suffix = f"__{dagster_name(name)}" if name else ""
    sensors = [_freshness_sensor(watched, resource_key, suffix)] if freshness_sensor and watched else []
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
