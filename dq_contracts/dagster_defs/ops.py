"""The check ops: one `@multi_asset_check` per object and part (its own clauses, the table-wide ones
of a partitioned asset, its relationships), each running the engine on the run's partition and
yielding the engine's results as Dagster's."""

from __future__ import annotations

import json
from typing import Any

import dagster as dg

from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts.dagster_defs.specs import ObjectSpecs
from dq_contracts.dagster_defs.translator import dimension_columns, partition_column
from dq_contracts.engine.contracts import Warehouses, failed_results, run_contract
from dq_contracts.engine.results import CheckResult, error_of, touches_classified
from dq_contracts.engine.sentences import AGE, code_block, duration, in_durations, said, samples_text
from dq_contracts.odcs.names import OBJECT_OPS, object_op_name
from dq_contracts.odcs.partitions import Partition, multi_partition, window_partition
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, ObjectPlan, Severity
from dq_contracts.odcs.check_kinds import CHECK_KINDS
from dq_contracts.odcs.visible import described, visible, visible_all


def check_result_of(result: CheckResult, spec: dg.AssetCheckSpec) -> dg.AssetCheckResult:
    """The engine's result as Dagster's: what was measured in words and units first, then what a
    person needs to act on it (the clause's file:line, its own failing-rows query, samples), all of it
    carried by the result."""
    message = visible(said(result))  # every text for people: what hides or reorders text shows escaped
    metadata: dict[str, Any] = {
        "dq_contracts/result": dg.MetadataValue.text(message),
        "dq_contracts/clause": result.location,
        "dq_contracts/pointer": result.clause,
        # every clause it answers (a compound key: each column's primaryKey), the first being the two above
        "dq_contracts/clauses": dg.MetadataValue.text(visible("\n".join(result.locations))),
        "dq_contracts/pointers": dg.MetadataValue.json(visible_all(list(result.clauses))),
        "dq_contracts/severity": str(result.severity),
        "dq_contracts/kind": result.kind,
        "dq_contracts/dimension": result.dimension,
        "dq_contracts/threshold": result.threshold,
        "dq_contracts/unit": _unit(result),
        "dq_contracts/status": str(result.status),
        # a clause with a warn level: the level reached and both thresholds (`threshold` is the fail level)
        **({"dq_contracts/level": str(result.level), "dq_contracts/warn_threshold": result.warn_threshold,
            "dq_contracts/fail_threshold": result.threshold} if result.warn_threshold else {}),
        "dq_contracts/contract_id": result.contract_id,
        "dq_contracts/contract_version": result.contract_version,
        "dq_contracts/partition": result.partition,
    }
    metadata = {k: visible_all(v) for k, v in metadata.items()}
    if result.observed is not None:
        observed = result.observed
        metadata["dq_contracts/observed"] = (observed if isinstance(observed, (int, float))
                                             else dg.MetadataValue.text(visible(observed)))
        if CHECK_KINDS[result.kind].observed_unit == AGE and isinstance(observed, (int, float)):
            # for people "30 min" and "≤ 2 d"; the raw seconds above stay numeric, for Dagster's plot over time
            metadata["dq_contracts/age"] = duration(observed)
            metadata["dq_contracts/threshold_age"] = in_durations(result.threshold)
    if result.row_count is not None:
        metadata["dagster/row_count"] = result.row_count
    if result.error:
        metadata["dq_contracts/error"] = dg.MetadataValue.text(visible(result.error))
    if result.sql:
        metadata["dq_contracts/sql"] = dg.MetadataValue.md(code_block(visible(result.sql)))
    if result.samples:
        metadata["dq_contracts/samples"] = dg.MetadataValue.json(visible_all(result.samples))
        # the same values as text, which Dagster shows inline (JSON waits behind "[Show JSON]")
        metadata["dq_contracts/samples_text"] = dg.MetadataValue.text(visible(samples_text(result.samples)))
    observed_schema = (result.details or {}).get("observed_columns")
    if observed_schema:
        metadata["dagster/column_schema"] = dg.TableSchema(columns=[
            dg.TableColumn(name=visible(name), type=visible(kind)) for name, kind in observed_schema])
    if result.details:
        details = {k: v for k, v in result.details.items() if k != "observed_columns"}
        if details:
            metadata["dq_contracts/details"] = dg.MetadataValue.json(
                visible_all(json.loads(json.dumps(details, default=str))))
    return dg.AssetCheckResult(
        asset_key=spec.asset_key,
        check_name=spec.name,
        passed=result.passed,
        severity=SEVERITIES[result.severity],
        metadata={k: v for k, v in metadata.items() if v is not None},
        description=described(message),
    )


SEVERITIES = {Severity.ERROR: dg.AssetCheckSeverity.ERROR, Severity.WARN: dg.AssetCheckSeverity.WARN}
def _unit(result: CheckResult) -> str:
    """What the observed number counts."""
    if result.unit == "percent":
        return "percent of all rows"
    return CHECK_KINDS[result.kind].observed_unit


def _outcome_line(result: CheckResult) -> str:
    """The run log's line of a result: what was measured against what was wanted, as the engine has them."""
    status = result.status.upper()
    observed = "-" if result.observed is None else result.observed
    line = (f"{status:<5} {result.contract_id} {result.contract_version} {'/'.join(result.asset_key)}."
            f"{result.name} [{', '.join(result.clauses)}] observed {observed}, expected {result.threshold}")
    return line + (f": {result.error}" if result.error else "")


def _checks_op(name: str, plan: ContractPlan, obj: ObjectPlan, pairs: list[tuple[CheckPlan, dg.AssetCheckSpec]],
               resource_key: str, description: str, pool: str | None) -> dg.AssetChecksDefinition:
    spec_of = {check.name: spec for check, spec in pairs}
    partitions = next((spec.partitions_def for _, spec in pairs if spec.partitions_def is not None), None)

    # `pool`: the server's name, so the operator's pool limit bounds the queries sent to one warehouse
    @dg.multi_asset_check(name=name, specs=[spec for _, spec in pairs], can_subset=True,
                          required_resource_keys={resource_key}, description=described(description), pool=pool)
    def contract_checks(context):
        warehouse: WarehouseResource = getattr(context.resources, resource_key)
        selected = context.selected_asset_check_keys
        names = [check.name for check, spec in pairs if spec.key in selected]
        context.log.info(visible(f"contract {plan.id} version {plan.version} ({plan.file}), object {obj.name}: "
                                 f"{len(names)} clause(s)")
                         + (_run_partitions_text(context) if partitions is not None else ""))
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
            context.log.debug(visible(f"{obj.name}: one scan for the counting clauses:\n{sql}"))
        for result in results:
            context.log.info(visible(_outcome_line(result)))
            yield check_result_of(result, spec_of[result.name])

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


def object_checks(specs: ObjectSpecs, prefix: str, resource_key: str) -> list[dg.AssetChecksDefinition]:
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
                              + (", per partition" if partitioned else ""), specs.pool))
    if wide:
        ops.append(_checks_op(table_op, plan, obj, wide, resource_key,
                              f"Table-wide clauses of contract {plan.id} {plan.version}, object {obj.name} "
                              "(partitioned): they read the whole table", specs.pool))
    if reading:  # a relationship is judged per partition, like the object's rows (its kind's reach)
        ops.append(_checks_op(relationships_op, plan, obj, reading, resource_key,
                              f"Relationships of contract {plan.id} {plan.version}, object {obj.name}: "
                              "run after the assets they read", specs.pool))
    return ops

