"""A contract that cannot run is that contract's problem, shown where its owners look.

Each asset a rejected contract names gets a `contract_valid` check (ERROR, not blocking: a typo in
a contract must not stop the pipeline that builds the table) that fails with every problem, file
and line in its metadata. It fails when it runs with the asset, and a sensor reports the same
failure without any run, so the asset graph shows it as soon as the daemon ticks. A contract that
names no readable asset gets an asset of its own under `dq_contracts_invalid/`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import dagster as dg

from dq_contracts.odcs.names import dagster_name
from dq_contracts.odcs.names import CONTRACT_VALID, INVALID_ASSET_PREFIX, PROBLEMS_CHECKS
from dq_contracts.odcs.load import RejectedContract
from dq_contracts.engine.results import Status
from dq_contracts.odcs.plans import Severity
from dq_contracts.odcs.problems import Problem, errors_of
from dq_contracts.odcs.visible import described, visible
from dq_contracts.dagster_defs.translator import ContractObjectData, DqContractsTranslator

log = logging.getLogger("dq_contracts")
PROBLEMS_SENSOR = PROBLEMS_CHECKS  # an op and a sensor may share a name
INVALID_PREFIX = INVALID_ASSET_PREFIX

class LoadLog:
    """What one build of a set of contracts says at load, said once: Dagster builds a code
    location's definitions twice in one process (`get_loadable_targets`, then the reconstruction),
    and the same problems printed twice read as twice the problems. A build that says what the
    previous build of the same set said stays silent; one that says anything else says it all."""

    _last: dict[object, tuple[tuple[int, str], ...]] = {}  # per set of contracts: what its last build said

    def __init__(self, key: object):
        self.key, self.lines = key, []

    def error(self, text: str) -> None:
        self.lines.append((logging.ERROR, text))

    def warning(self, text: str) -> None:
        self.lines.append((logging.WARNING, text))

    def flush(self) -> None:
        said = tuple(self.lines)
        if LoadLog._last.get(self.key) == said:
            return
        LoadLog._last[self.key] = said
        for level, text in said:
            log.log(level, text)


_PROBLEM_COLUMNS = dg.TableSchema(columns=[dg.TableColumn(name, "string")
                                           for name in ("file", "line", "path", "message")])


def invalid_key(file: str, group: str | None = None, folder: bool = False) -> dg.AssetKey:
    """Where a contract that names no asset shows its problems: its file name, whatever the working
    directory (under the set's name when there are several; the folder joins in only to tell two
    files of one name apart)."""
    path = Path(file)
    name = f"{path.parent.name}_{path.name}" if folder else path.name
    return dg.AssetKey([INVALID_PREFIX, *([group] if group else []), dagster_name(name)])


def asset_keys_of(rejected: RejectedContract, translator: DqContractsTranslator,
                  group: str | None = None) -> list[dg.AssetKey]:
    """The assets the rejected contract names, keyed as the translator would key them."""
    if rejected.plan is None or not rejected.plan.objects:
        return [invalid_key(rejected.file, group)]
    keys = []
    for obj in rejected.plan.objects:
        try:
            keys.append(translator.get_asset_spec(ContractObjectData(rejected.plan, obj)).key)
        except Exception:  # an outline of a broken document may not satisfy a custom translator
            keys.append(dg.AssetKey(list(obj.asset_key)))
    return list(dict.fromkeys(keys))


def _problem_metadata(problems: Sequence[Problem]) -> dict[str, object]:
    files = sorted({p.file for p in problems})
    return {
        "dq_contracts/problems": dg.MetadataValue.table(
            records=[dg.TableRecord({"file": visible(p.file), "line": str(p.line or ""), "path": p.path,
                                     "message": p.message}) for p in problems],
            schema=_PROBLEM_COLUMNS),
        "dq_contracts/problem_count": len(problems),
        "dq_contracts/contract_file": visible(", ".join(files)),
        "dq_contracts/error": dg.MetadataValue.text("\n".join(p.render() for p in problems)),
    }


def _summary(problems: Sequence[Problem]) -> str:
    files = sorted({p.file for p in problems})
    head = "; ".join(p.render() for p in problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return described(f"The data contract {', '.join(files)} cannot be checked: {head}{more}")


def problem_defs(rejected: Iterable[RejectedContract], translator: DqContractsTranslator,
                 existing: Mapping[dg.AssetKey, set[str]], group: str | None, said: LoadLog) -> dg.Definitions:
    """A failing `contract_valid` check on every asset a rejected contract names; `existing` maps the
    assets already defined to their check names (an asset no one else defines gets an external spec).
    Their problems go to `said`, which the caller flushes."""
    problems_by_key: dict[dg.AssetKey, list[Problem]] = {}
    rejected = list(rejected)
    by_name: dict[dg.AssetKey, set[str]] = {}
    for contract in rejected:
        if contract.plan is None or not contract.plan.objects:
            by_name.setdefault(invalid_key(contract.file, group), set()).add(contract.file)
    for contract in rejected:
        errors = errors_of(contract.problems)
        for problem in errors:
            said.error(problem.render())
        keys = asset_keys_of(contract, translator, group)
        if len(by_name.get(keys[0], ())) > 1:  # two broken files of one name in different folders
            keys = [invalid_key(contract.file, group, folder=True)]
        said.error(visible(f"{contract.file}: not loaded ({len(errors)} error(s)); the `{CONTRACT_VALID}` check of "
                          f"{', '.join(k.to_user_string() for k in keys)} shows why"))
        for key in keys:
            problems_by_key.setdefault(key, []).extend(errors)
    if not problems_by_key:
        return dg.Definitions()
    suffix = f"__{group}" if group else ""

    specs: list[dg.AssetCheckSpec] = []
    assets: list[dg.AssetSpec] = []
    shown: dict[dg.AssetKey, tuple[str, dict[str, object], str]] = {}  # summary, metadata, fingerprint
    for key, problems in problems_by_key.items():
        summary, metadata = _summary(problems), _problem_metadata(problems)
        shown[key] = (summary, metadata, hashlib.sha1("\n".join(p.render() for p in problems).encode()).hexdigest())
        taken = existing.get(key, set())
        name, n = CONTRACT_VALID, 2
        while name in taken:  # a contract rule may already be called that
            name, n = f"{CONTRACT_VALID}_{n}", n + 1
        specs.append(dg.AssetCheckSpec(name=name, asset=key, blocking=False, description=summary,
                                       metadata={"dq_contracts/kind": "contract_valid",
                                                 "dq_contracts/severity": str(Severity.ERROR), **metadata}))
        if key not in existing:
            assets.append(dg.AssetSpec(key=key, description=summary, kinds={"odcs"}, metadata=metadata))

    def evaluation(spec: dg.AssetCheckSpec) -> dict[str, object]:
        summary, metadata, _ = shown[spec.asset_key]
        return dict(asset_key=spec.asset_key, check_name=spec.name, passed=False,
                    severity=dg.AssetCheckSeverity.ERROR, description=summary,
                    metadata={"dq_contracts/status": str(Status.ERROR), **metadata})

    @dg.multi_asset_check(name=PROBLEMS_CHECKS + suffix, specs=specs, can_subset=True,
                          description="Contracts that cannot be checked, and why")
    def contract_problems(context):
        for spec in specs:
            if spec.key in context.selected_asset_check_keys:
                yield dg.AssetCheckResult(**evaluation(spec))

    @dg.sensor(name=PROBLEMS_SENSOR + suffix, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
               description="Reports the failing contract_valid check of each contract that cannot be checked, "
                           "without a run, whenever its problems change")
    def problems_sensor(context):
        cursor = json.loads(context.cursor) if context.cursor else {}
        events = []
        for spec in specs:
            fingerprint = shown[spec.asset_key][2]
            label = spec.key.to_user_string()
            if cursor.get(label) != fingerprint:
                cursor[label] = fingerprint
                events.append(dg.AssetCheckEvaluation(**evaluation(spec)))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(cursor, sort_keys=True))

    return dg.Definitions(assets=assets, asset_checks=[contract_problems], sensors=[problems_sensor])

