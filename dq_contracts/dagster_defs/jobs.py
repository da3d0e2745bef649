"""Opt-in jobs and schedules: a partitioned job per external partitioned table (with a stopped
schedule for time windows), and with `contract_jobs` a checks-only job per contract and a schedule
per contract cron."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dagster as dg

from dq_contracts.dagster_defs.ops import object_checks
from dq_contracts.dagster_defs.specs import ObjectSpecs
from dq_contracts.dagster_defs.translator import tag_value
from dq_contracts.odcs.names import (checks_job_name, partitions_job_name, partitions_schedule_name, schedule_job_name,
                                     schedule_name)
from dq_contracts.odcs.plans import ContractPlan
from dq_contracts.odcs.visible import described


@dataclass
class ContractDefs:
    """What one contract adds besides its specs: its check ops, jobs and schedules."""

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
        description=described(f"The per-partition clauses of contract {plan.id} {plan.version}, object {obj.name}: "
                            "launch one partition, or backfill a range from the job's Partitions tab"),
        tags={"dq_contracts/contract": tag_value(plan.id)})


def _no_config(_key: str) -> dict[str, Any]:
    return {}


def contract_defs(plan: ContractPlan, objects: list[ObjectSpecs], prefix: str, *, resource_key: str,
                 contract_jobs: bool, partition_jobs: bool = True,
                 own: frozenset[dg.AssetKey] | set[dg.AssetKey] = frozenset()) -> ContractDefs:
    """One contract's check ops, a partitioned job per external partitioned table (`partition_jobs`),
    and with `contract_jobs` its checks-only job and cron schedules."""
    built = ContractDefs([], [], [])
    for specs in objects:
        built.checks.extend(object_checks(specs, prefix, resource_key))
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
                    description=described(f"The per-partition clauses of {plan.id}, object {specs.object.name}, "
                                        "each partition once its window has ended")))
    if not contract_jobs:
        return built
    # only jobs select by key (a spec makes a new key each time it is asked for one)
    check_keys = {(specs.object.name, c.name): s.key for specs in objects for c, s in specs.checks}
    if check_keys:
        built.jobs.append(dg.define_asset_job(
            checks_job_name(prefix), selection=dg.AssetSelection.checks(*check_keys.values()),
            description=described(f"All clauses of contract {plan.id} {plan.version}"),
            tags={"dq_contracts/contract": tag_value(plan.id)}))
    for schedule in plan.schedules:
        keys = [check_keys[pair] for pair in schedule.checks if pair in check_keys]
        if not keys:
            continue
        name = schedule_name(plan, schedule, prefix)
        job = dg.define_asset_job(schedule_job_name(name), selection=dg.AssetSelection.checks(*keys),
                                  description=described(f"Clauses scheduled by {plan.id} {schedule.clause}"))
        built.jobs.append(job)
        built.schedules.append(dg.ScheduleDefinition(
            name=name, cron_schedule=schedule.cron, job=job, execution_timezone="UTC",
            description=described(f"Contract {plan.id} {plan.version}: {schedule.clause} '{schedule.cron}'")))
    return built
