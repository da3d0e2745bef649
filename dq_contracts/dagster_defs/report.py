"""`dq-contracts report`: each contract clause's latest status, read from the Dagster instance that
DAGSTER_HOME points at (the storage the UI reads), beside the clauses that are not enforced."""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from typing import Any

import dagster as dg
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from dq_contracts.engine.results import Status, status_of
from dq_contracts.odcs.plans import ContractPlan, Severity
from dq_contracts.odcs.visible import one_line

NOT_RUN = "not_run"  # no evaluation recorded: never run, or its run ended before it
STATUSES = (*Status, NOT_RUN)
# A partitioned clause's status is the worst of its partitions' latest ones: a bad day stays
# visible after a good day is checked.
WORST_FIRST = (Status.FAIL, Status.ERROR, Status.WARN, NOT_RUN, Status.PASS)


def _status(record: Any) -> str:
    """A result's status (results.status_of) from one execution record, or not_run."""
    # PLANNED with no evaluation: the run ended before the check ran (upstream failed, run crashed)
    if record is None or record.status == AssetCheckExecutionRecordStatus.PLANNED:
        return NOT_RUN
    evaluation = record.event.dagster_event.event_specific_data if record.event and record.event.dagster_event \
        else None
    if evaluation is None:
        return NOT_RUN
    status = evaluation.metadata.get("dq_contracts/status")  # what the result said: error, it was not evaluated
    return status_of(evaluation.passed, Severity(evaluation.severity.value),
                     getattr(status, "value", None) == Status.ERROR)


def _when(record: Any) -> str | None:
    return dt.datetime.fromtimestamp(record.create_timestamp, dt.timezone.utc).isoformat() if record else None


def _partitions(instance: dg.DagsterInstance, key: dg.AssetCheckKey) -> list[dict[str, Any]]:
    """Each partition's latest status of a partitioned check (an evaluation of the whole table, with
    no partition, is one more entry), in partition order."""
    from dagster._core.event_api import PartitionKeyFilter

    storage = instance.event_log_storage
    out = []
    for info in sorted(storage.get_asset_check_partition_info([key]), key=lambda i: (i.partition_key is None,
                                                                                    i.partition_key or "")):
        latest = storage.get_latest_asset_check_execution_by_key(
            [key], partition_filter=PartitionKeyFilter(key=info.partition_key)).get(key)
        out.append({"partition": info.partition_key, "status": _status(latest), "last_run_at": _when(latest),
                    "run_id": latest.run_id if latest is not None else None})
    return out


def build_report(plans: list[ContractPlan], instance: dg.DagsterInstance) -> dict[str, Any]:
    contracts = []
    for plan in sorted(plans, key=lambda p: (p.id, p.version)):
        keys = {(obj.name, check.name): dg.AssetCheckKey(dg.AssetKey(list(obj.asset_key)), check.name)
                for obj in plan.objects for check in obj.checks}
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(keys.values()))
        assets = []
        for obj in plan.objects:
            clauses = []
            for check in obj.checks:
                key = keys[(obj.name, check.name)]
                record = latest.get(key)
                clause = {"name": check.name, "clause": check.clause, "clauses": list(check.clauses),
                          "locations": check.locations(plan.file), "severity": check.severity,
                          "status": _status(record), "last_run_at": _when(record),
                          "run_id": record.run_id if record is not None else None}
                if record is not None and record.partition is not None:  # a partitioned check
                    partitions = _partitions(instance, key)
                    clause["partitions"] = partitions
                    clause["status"] = min((p["status"] for p in partitions), key=WORST_FIRST.index)
                clauses.append(clause)
            assets.append({"asset_key": "/".join(obj.asset_key), "clauses": clauses})
        contracts.append({"id": plan.id, "version": plan.version, "file": plan.file, "assets": assets,
                          "not_enforced": len(plan.not_enforced)})
    return {"contracts": contracts}


class _NoMissingConfigWarning(logging.Filter):
    """A DAGSTER_HOME without dagster.yaml is a local instance (SQLite in that folder): nothing to warn of."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No dagster instance configuration file")


class InstanceUnreadable(Exception):
    """The instance at DAGSTER_HOME cannot be opened as its dagster.yaml says (a variable it names is
    not set, its settings are wrong): said in one sentence, not Dagster's stack of config errors."""


def _unreadable(exc: Exception) -> InstanceUnreadable:
    missing = sorted(set(re.findall(r'environment variable "(\w+)" which is not set', str(exc))))
    home = os.environ.get("DAGSTER_HOME", "")
    if missing:
        return InstanceUnreadable(f"the Dagster instance at DAGSTER_HOME={home} reads {', '.join(missing)} from the "
                                  "environment (its dagster.yaml), and they are not set; set them as the webserver "
                                  "and daemon have them (README, Production)")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InstanceUnreadable(f"the Dagster instance at DAGSTER_HOME={home} cannot be opened: {first}")


def report_from_instance(plans: list[ContractPlan]) -> dict[str, Any]:
    """The report from the instance DAGSTER_HOME points at."""
    quiet = _NoMissingConfigWarning()
    logger = logging.getLogger("dagster")
    logger.addFilter(quiet)
    try:
        try:
            instance = dg.DagsterInstance.get()
        except (dg.DagsterInvalidConfigError, dg.DagsterError) as exc:
            raise _unreadable(exc) from None
        with instance:
            return build_report(plans, instance)
    finally:
        logger.removeFilter(quiet)


def report_text(report: dict[str, Any]) -> str:
    """The report as text: its lines, each on one line (`one_line`), as the command prints them."""
    return "\n".join(one_line(line) for line in report_lines(report))


def report_lines(report: dict[str, Any]) -> list[str]:
    """The report's lines, as built; a writer puts each on one line (visible.say_lines)."""
    lines = []
    totals = dict.fromkeys(STATUSES, 0)
    for contract in report["contracts"]:
        counts = dict.fromkeys(STATUSES, 0)
        for asset in contract["assets"]:
            for clause in asset["clauses"]:
                counts[clause["status"]] += 1
        for status, n in counts.items():
            totals[status] += n
        summary = "  ".join(f"{s} {n}" for s, n in counts.items())
        lines.append(f"{contract['id']} {contract['version']}: {summary}  not_enforced {contract['not_enforced']}")
        for asset in contract["assets"]:
            for clause in asset["clauses"]:
                shown = [p for p in clause.get("partitions") or [clause] if p["status"] != Status.PASS]
                for p in shown:
                    where = f"partition {p['partition']}, " if p.get("partition") else ""
                    lines.append(f"  {p['status']:<7} {asset['asset_key']}.{clause['name']}  "
                                 f"({where}last run {p['last_run_at'] or 'never'})")
                if shown:  # where each clause it answers is written (a compound key: every column's)
                    lines.extend(f"            {location}" for location in clause.get("locations") or ())
    lines.append("total: " + "  ".join(f"{s} {n}" for s, n in totals.items()))
    return lines
