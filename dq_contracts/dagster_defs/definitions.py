"""`build_contract_defs`: every ODCS contract under some paths as Dagster definitions.

Per schema object: an asset (an external AssetSpec, or the user's own asset with the same key), one
`@multi_asset_check` with one AssetCheckSpec per clause, and the SLA latency as a freshness policy.
Per contract: a checks-only job, and one schedule per cron the contract declares.

The parts are built in modules of their own: the check ops (ops.py), jobs and schedules (jobs.py),
the freshness sensor (freshness_sensor.py), the contract_valid checks (problem_defs.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dq_contracts.dagster_defs.alerts import alert_sensor as build_alert_sensor
from dq_contracts.dagster_defs.freshness_sensor import freshness_sensor as build_freshness_sensor
from dq_contracts.dagster_defs.jobs import contract_defs
from dq_contracts.dagster_defs.problem_defs import LoadLog, problem_defs
from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts.dagster_defs.specs import ContractSpecs, ObjectSpecs, build_contract_specs
from dq_contracts.dagster_defs.translator import DqContractsTranslator
from dq_contracts.odcs.load import LoadResult, gc_paused, load_contracts
from dq_contracts.odcs.loader import CONTRACT_SUFFIXES
from dq_contracts.odcs.names import ALL_CHECKS_JOB, AUTOMATION_SENSOR, dagster_name
from dq_contracts.odcs.plans import ContractPlan, ObjectPlan
from dq_contracts.odcs.problems import ContractError, Problem, errors_of


RESOURCE_KEY = "dq_warehouse"

# Set by `dg check defs` and `dagster definitions validate` (Dagster's documented switch for code
# that behaves otherwise when checked): a check of the definitions is a CI gate, so a contract with
# an error, or a folder with none, fails it, where `dagster dev` loads the rest and shows the problem.
VALIDATION_CLI = "DAGSTER_IS_DEFS_VALIDATION_CLI"


class ContractsRefused(ContractError):
    """Contracts refused at load (`strict`, or a definitions check): the problems are the message."""

    def __init__(self, problems: Sequence[Problem], reason: str):
        super().__init__(problems)
        self.args = (f"{self.args[0]}\n{reason}",)


def _refusal(paths: Sequence[Any], loaded: LoadResult, rejected: Sequence[Any],
             settings: _Settings) -> ContractsRefused | None:
    """What refuses these contracts: with `strict` or under a definitions check, any error, and a
    folder that holds no contract (a gate must not pass by checking nothing)."""
    checking = os.environ.get(VALIDATION_CLI) == "1"
    if not (settings.strict or checking):
        return None
    problems = list(dict.fromkeys([*loaded.problems, *(p for r in rejected for p in r.problems)]))
    if not loaded.files_read:
        problems.append(_nothing_read(paths))
    if not errors_of(problems):
        return None
    reason = ("strict: true refuses every contract while one has an error" if settings.strict else
              f"dg check defs ({VALIDATION_CLI}=1) fails on these; dagster dev loads every valid contract "
              "and shows each broken one on a failing contract_valid check")
    return ContractsRefused(problems, reason)


def _nothing_read(paths: Sequence[Any]) -> Problem:
    return Problem(file=", ".join(map(str, paths)),
                   message=f"no contract file ({', '.join('*' + s for s in CONTRACT_SUFFIXES)}) here: nothing to check")


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


def _tables_of(items: Iterable[Any]) -> dict[dg.AssetKey, str]:
    """The table each of the user's assets says it builds (its `dagster/table_name` metadata)."""
    found: dict[dg.AssetKey, str] = {}
    for item in items:
        specs = item.specs if isinstance(item, dg.AssetsDefinition) else [item] if isinstance(item, dg.AssetSpec) else []
        for spec in specs:
            value = (spec.metadata or {}).get("dagster/table_name")
            value = getattr(value, "value", value)
            if isinstance(value, str):
                found[spec.key] = value
    return found


def _with_contract(contract_specs: dict[dg.AssetKey, dg.AssetSpec]):
    """A spec mapper: the user's asset keeps what it says and gains what the contract adds (column
    schema, owners, tags, links, the not-enforced list, the freshness policy)."""

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        ours = contract_specs.get(spec.key)
        if ours is None:
            return spec
        spec = spec.merge_attributes(
            # never the table's name: which table the asset builds is its own word (whether a contract's
            # ERROR clauses may block it), which no contract that names its key can give it
            metadata={k: v for k, v in (ours.metadata or {}).items()
                      if k not in (spec.metadata or {}) and k != "dagster/table_name"},
            owners=[o for o in ours.owners if o not in spec.owners],
            tags={k: v for k, v in (ours.tags or {}).items() if k not in (spec.tags or {})},
        )
        return spec.replace_attributes(
            description=spec.description or ours.description,
            freshness_policy=spec.freshness_policy or ours.freshness_policy,
        )

    return apply


@dataclass(frozen=True)
class _Settings:
    """build_contract_defs's settings, defaulted: what each step of the build reads."""

    assets: tuple[Any, ...]
    defs: dg.Definitions | None
    translator: DqContractsTranslator
    resource: WarehouseResource
    resource_key: str
    freshness_sensor: bool
    automation_sensor: dg.DefaultSensorStatus | None
    alert_sensor: dg.DefaultSensorStatus | None
    alert_ui_url: str | None
    contract_jobs: bool
    partition_jobs: bool
    strict: bool
    name: str | None
    blocking_assets: tuple[dg.AssetKey, ...] = ()

    @property
    def theirs(self) -> list[Any]:
        """The user's own assets: those given, and those of `defs`."""
        return [*self.assets, *((self.defs.assets or []) if self.defs is not None else [])]

    @property
    def suffix(self) -> str:
        return f"__{dagster_name(self.name)}" if self.name else ""


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
    alert_sensor: dg.DefaultSensorStatus | None = dg.DefaultSensorStatus.STOPPED,
    alert_ui_url: str | None = None,
    contract_jobs: bool = False,
    partition_jobs: bool = True,
    strict: bool = False,
    name: str | None = None,
    blocking_assets: Sequence[Any] = (),
) -> dg.Definitions:
    """Definitions for every contract under `paths`.

    `assets` (and the assets of `defs`) are the user's own: a schema object whose asset key one of
    them has gets its checks attached to it (they run after each materialisation) instead of an
    external AssetSpec. Its ERROR clauses block its downstream assets, as long as the operator binds
    no server of the contracts to a folder (`DQ_CONTRACTS_<SERVER>_CONTRACTS`, the resource's
    `contracts`: no line between teams). Once the operator does, they block where the contract is in
    the folder its server is bound to, where the asset says it builds the table they read (its
    `dagster/table_name` metadata is the object's, as the translator writes it:
    `warehouse.analytics.orders`), or where `blocking_assets` lists its key (your word that every
    contract naming it may stop its runs); elsewhere a contract that names its key cannot stop its
    run, and each such check says so (`dq_contracts/blocks`).

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
    A refused SQL rule fails its own check only. `strict=True` raises ContractsRefused (a
    ContractError), listing every problem, when any contract has an error or the paths hold no
    contract (for CI); every load under `dg check defs` is strict.

    Sensor `dq_contracts_alerts` (`alert_sensor`: stopped by default, None for none) tells each
    contract's support channels, inside the operator's DQ_ALERTS_* allow-list, when an ERROR clause
    fails, a WARN clause fails twice in a row, and when it passes again (README: "Telling the
    contract's owners"); its links point to `alert_ui_url` (else DQ_ALERTS_UI_URL, else
    http://127.0.0.1:3000).

    `name` tells apart several sets of contracts in one code location: it suffixes the names of the
    sensors, of the all-checks job and of the contract-problems check.
    """
    # Every object made here stays alive in the Definitions returned: a collection in between finds
    # no garbage, and each full one scans the whole heap so far, so their cost grows faster than the
    # number of contracts (a fifth of the build's CPU time at 3,000). It collects once, after.
    settings = _Settings(
        assets=tuple(assets), defs=defs, translator=translator or DqContractsTranslator(),
        resource=resource or WarehouseResource(), resource_key=resource_key, freshness_sensor=freshness_sensor,
        automation_sensor=automation_sensor, alert_sensor=alert_sensor, alert_ui_url=alert_ui_url,
        contract_jobs=contract_jobs, partition_jobs=partition_jobs,
        strict=strict, name=name, blocking_assets=tuple(dg.AssetKey.from_coercible(k) for k in blocking_assets))
    with gc_paused():
        try:
            return _build_defs(paths, settings)
        except ContractsRefused as refused:
            # the problems are the message: a stack of dq_contracts' own frames under it buries them
            raise refused.with_traceback(None) from None


def _build_defs(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                settings: _Settings) -> dg.Definitions:
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    resource, defs = settings.resource, settings.defs
    server = resource.server.get_value() if isinstance(resource.server, dg.EnvVar) else resource.server
    loaded = load_contracts(paths, server=server, environ=resource.environ())
    own = _keys_of(settings.theirs)
    built = build_contract_specs(loaded.usable_plans, settings.translator, server=server,
                                 crons_as_conditions=not settings.contract_jobs, own_keys=own,
                                 own_partitions=_partitions_of(settings.theirs),
                                 own_tables=_tables_of(settings.theirs), blocking_assets=settings.blocking_assets,
                                 keepers=loaded.keepers, bindings=loaded.bindings)
    refused = _refusal(paths, loaded, built.rejected, settings)
    if refused is not None:
        raise refused
    said = LoadLog((tuple(os.path.abspath(p) for p in paths), settings.name))
    if not loaded.files_read:
        said.warning(_nothing_read(paths).render())
    rejected_files = {r.file for r in loaded.rejected}
    for problem in loaded.problems:
        if problem.file not in rejected_files:  # a rejected contract's problems are logged with it
            said.warning(problem.render())
    for problem in loaded.advice:  # what `validate` warns of too: a server no check will reach
        if problem.file not in rejected_files:
            said.warning(problem.render())
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
        contract = contract_defs(objects[0].plan, objects, loaded.prefixes[file], resource_key=settings.resource_key,
                                 contract_jobs=settings.contract_jobs, partition_jobs=settings.partition_jobs,
                                 own=own)
        checks.extend(contract.checks)
        jobs.extend(contract.jobs)
        schedules.extend(contract.schedules)
    jobs.extend(_all_checks_job(built, settings))

    mapper = _with_contract(for_own)
    user_assets = [a.map_asset_specs(mapper) if isinstance(a, dg.AssetsDefinition)
                   else mapper(a) if isinstance(a, dg.AssetSpec) else a for a in settings.assets]
    ours = dg.Definitions.merge(
        dg.Definitions(
            assets=[*specs, *user_assets],
            asset_checks=checks,
            jobs=jobs,
            schedules=schedules,
            sensors=_sensors(built, watched, settings),
            resources={settings.resource_key: resource},
        ),
        problem_defs([*loaded.rejected, *built.rejected], settings.translator,
                     _check_names(own | {spec.key for spec in specs}, checks, settings),
                     dagster_name(settings.name) if settings.name else None, said),
    )
    said.flush()
    if defs is not None:
        return dg.Definitions.merge(defs.map_asset_specs(func=mapper) if for_own else defs, ours)
    return ours


def _check_keys(built: ContractSpecs) -> list[dg.AssetCheckKey]:
    return [spec.key for o in built.objects for _, spec in o.checks]


def _all_checks_job(built: ContractSpecs, settings: _Settings) -> list[dg.UnresolvedAssetJobDefinition]:
    """With `contract_jobs`, one job of every contract check (a job costs Dagster a pass over the whole
    graph at load: none by default)."""
    check_keys = _check_keys(built)
    if not (settings.contract_jobs and check_keys):
        return []
    return [dg.define_asset_job(ALL_CHECKS_JOB + settings.suffix, selection=dg.AssetSelection.checks(*check_keys),
                                description="Every clause of every contract (checks only)")]


def _sensors(built: ContractSpecs, watched: list[tuple[ContractPlan, ObjectPlan, str, dg.AssetKey]],
             settings: _Settings) -> list[dg.SensorDefinition]:
    """The freshness sensor for the external tables with an SLA latency, the automation sensor, and
    the alert sensor."""
    sensors: list[dg.SensorDefinition] = []
    if settings.freshness_sensor and watched:
        sensors.append(build_freshness_sensor(watched, settings.resource_key, settings.suffix))
    check_keys = _check_keys(built)
    if (check_keys and settings.automation_sensor is not None
            and any(s.automation_condition for o in built.objects for _, s in o.checks)):
        sensors.append(dg.AutomationConditionSensorDefinition(
            AUTOMATION_SENSOR + settings.suffix, target=dg.AssetSelection.checks(*check_keys),
            default_status=settings.automation_sensor,
            description="Runs contract checks when their table changes, after the tables relationships "
                        "read, and at contract crons (the checks' automation conditions)"))
    if check_keys and settings.alert_sensor is not None:
        sensors.append(build_alert_sensor(built, settings.alert_sensor, settings.suffix, settings.alert_ui_url))
    return sensors


def _check_names(keys: set[dg.AssetKey], checks: list[dg.AssetChecksDefinition],
                 settings: _Settings) -> dict[dg.AssetKey, set[str]]:
    """The check names each asset already has (ours and the user's): a contract_valid check must not
    collide with any of them."""
    defs = settings.defs
    existing: dict[dg.AssetKey, set[str]] = {key: set() for key in keys}
    theirs = [*settings.theirs, *((defs.asset_checks or []) if defs is not None else [])]
    for definition in [*checks, *theirs]:
        for check_key in getattr(definition, "check_keys", ()):
            existing.setdefault(check_key.asset_key, set()).add(check_key.name)
    return existing
