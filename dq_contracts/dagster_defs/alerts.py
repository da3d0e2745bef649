"""The alert sensor: reads new evaluations of the contracts' checks from the instance's event log
and tells the contract's owners (odcs/alerting.py decides what, engine/notify.py delivers it).

It reads runs as they end (the run status changes, as Dagster's run status sensors do), then each
ended run's check evaluations in order: a cross-run query of check evaluations by storage id is not
possible on the default SQLite storage, whose events are sharded by run."""

from __future__ import annotations

from dataclasses import replace

import dagster as dg

from dq_contracts.dagster_defs.specs import ContractSpecs
from dq_contracts.engine.notify import deliver
from dq_contracts.odcs.alerting import AlertState, Evaluation, Watched, observe, to_send
from dq_contracts.odcs.names import ALERT_SENSOR
from dq_contracts.odcs.support import alert_policy

BATCH = 200  # ended runs read a tick, per kind of end; a longer backlog is read over the next ticks
RUN_ENDS = (dg.DagsterEventType.RUN_SUCCESS, dg.DagsterEventType.RUN_FAILURE, dg.DagsterEventType.RUN_CANCELED)


def watched_checks(built: ContractSpecs) -> dict[str, Watched]:
    """Every contract check by Watched.key, with its clause's place and its contract's support block."""
    found: dict[str, Watched] = {}
    for specs_of in built.objects:
        plan = specs_of.plan
        for check, spec in specs_of.checks:
            watched = Watched(tuple(spec.key.asset_key.path), spec.key.name, f"{plan.id} {plan.version}",
                              check.locations(plan.file)[0], plan.support)
            found[watched.key] = watched
    return found


def alert_sensor(built: ContractSpecs, status: dg.DefaultSensorStatus, suffix: str = "",
                 ui_url: str | None = None) -> dg.SensorDefinition:
    """`ui_url`, when given, is the Dagster UI the links point to (else DQ_ALERTS_UI_URL, else the
    local default)."""
    watched = watched_checks(built)

    @dg.sensor(name=ALERT_SENSOR + suffix, minimum_interval_seconds=60, default_status=status,
               description="Tells each contract's support channels (mail, Slack, Teams: those the operator's "
                           "DQ_ALERTS_* allow-list allows) when an ERROR clause fails, a WARN clause fails twice "
                           "in a row, and when it passes again; once per failure episode")
    def tell_owners(context: dg.SensorEvaluationContext):
        state = AlertState.from_cursor(context.cursor)
        instance = context.instance
        if state.read is None:  # turned on: from now on, not the whole history
            state.read = {end.value: instance.fetch_run_status_changes(end, limit=1).cursor or None
                          for end in RUN_ENDS}
        ended = []
        for end in RUN_ENDS:
            found = instance.fetch_run_status_changes(end, limit=BATCH, cursor=state.read.get(end.value),
                                                      ascending=True)
            ended.extend(found.records)
            state.read[end.value] = found.cursor or state.read.get(end.value)
        evaluations = [_evaluation(run_id, record)
                       for run_id in dict.fromkeys(r.run_id for r in sorted(ended, key=lambda r: r.timestamp))
                       for record in instance.get_records_for_run(
                           run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records]
        policy = alert_policy()
        policy = replace(policy, ui_url=ui_url) if ui_url else policy
        for line in observe(state, evaluations, watched, policy):
            context.log.info(line)
        sendable, dropped = to_send(state.pending, watched, policy)
        outcome = deliver(sendable, policy)
        state.pending = [d.stored() for d in outcome.pending]
        for line in [*dropped, *outcome.log]:
            context.log.info(line)
        context.update_cursor(state.to_cursor())
        return dg.SkipReason(f"{len(ended)} ended runs read, {len(evaluations)} check evaluations, {len(outcome.delivered)} notifications sent, "
                             f"{len(outcome.pending)} pending")

    return tell_owners


def _evaluation(run_id: str, record: dg.EventLogRecord) -> Evaluation:
    data: dg.AssetCheckEvaluation = record.event_log_entry.dagster_event.event_specific_data
    result = data.metadata.get("dq_contracts/result")
    sentence = result.value if result is not None else (data.description or "")
    return Evaluation(f"{'/'.join(data.asset_key.path)}:{data.check_name}", data.passed, data.severity.value,
                      str(sentence), data.partition, f"{run_id}:{record.storage_id}")
