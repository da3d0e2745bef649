"""`dq_contracts.ContractsComponent`: the contracts of a folder as a Dagster component.

    # src/<project>/defs/contracts/defs.yaml  (as `dg scaffold defs dq_contracts.ContractsComponent contracts` writes it)
    type: dq_contracts.ContractsComponent
    attributes:
      contracts_dir: "{{ context.project_root }}/contracts"   # or a path relative to this file's folder
      server: prod                                            # optional: the ODCS server to check against
      key_prefix: warehouse                                   # optional translation settings:
      group_name: contracts                                   #   key prefix, group, tags, owners
      automation_sensor: running                              # run checks when their table changes
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

import dagster as dg
from pydantic import Field

from dq_contracts.odcs.names import dagster_name
from dq_contracts.dagster_defs.definitions import RESOURCE_KEY, ContractsRefused, build_contract_defs
from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts.dagster_defs.translator import ContractObjectData, DqContractsTranslator
from dq_contracts.engine.sessions import DEFAULT_TIMEOUT_SECONDS

PROJECT_CONTRACTS = "{{ context.project_root }}/contracts"


class ContractsScaffolder(dg.Scaffolder):
    """`dg scaffold defs dq_contracts.ContractsComponent NAME`: a defs.yaml that loads as written,
    pointing at the project's `contracts/` folder (made empty when missing)."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        dg.scaffold_component(request, {"contracts_dir": PROJECT_CONTRACTS})
        if request.project_root is not None:
            (Path(request.project_root) / "contracts").mkdir(exist_ok=True)


class ContractsDirError(ValueError):
    """The component's contracts_dir is not a folder."""


@dg.scaffold_with(ContractsScaffolder)
class ContractsComponent(dg.Component, dg.Resolvable, dg.Model):
    """Every ODCS v3 contract in a folder: one asset per schema object, one asset check per clause,
    freshness policies from SLA latency, schedules from contract crons."""

    contracts_dir: str | None = Field(
        default=None, description="Folder of ODCS contracts: absolute, relative to this defs.yaml's folder, or "
        f"'{PROJECT_CONTRACTS}' (the default: the project's contracts/ folder)")
    server: str | None = Field(default=None, description="ODCS server name to check against (default: "
                               "each contract's first SQL server)")
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, description="Statement timeout for each "
                                   "check query")
    freshness_sensor: bool = Field(default=True, description="Report runless materialisations of external "
                                   "tables when their SLA freshness column advances")
    contract_jobs: bool = Field(default=False, description="A checks-only job per contract, one for every "
                                "contract check, and contract crons as schedules (each job costs Dagster a pass "
                                "over the asset graph at load; by default crons are automation conditions)")
    partition_jobs: bool = Field(default=True, description="A partitioned job of the per-partition checks of "
                                 "each external partitioned table, to run one partition or backfill a range "
                                 "from the UI, and for time windows its schedule (stopped)")
    automation_sensor: Literal["running", "stopped", "none"] = Field(
        default="stopped", description="Sensor dq_contracts_automation, which runs checks when their table "
        "changes and at contract crons: starts 'running' or 'stopped' (as Dagster's own), or 'none' to leave "
        "the checks' automation conditions to default_automation_condition_sensor")
    alert_sensor: Literal["running", "stopped", "none"] = Field(
        default="stopped", description="Sensor dq_contracts_alerts, which tells each contract's support channels "
        "(inside the operator's DQ_ALERTS_* allow-list) when a clause fails and when it passes again: starts "
        "'running' or 'stopped' (as Dagster's own), or 'none'")
    alert_ui_url: str | None = Field(default=None, description="The Dagster UI that alerts link to (default: "
                                     "DQ_ALERTS_UI_URL, else http://127.0.0.1:3000)")
    strict: bool = Field(default=False, description="Refuse to load any contract when one has an error (for "
                         "CI); by default a broken contract shows a failing contract_valid check instead")
    key_prefix: str | list[str] | None = Field(default=None, description="Prefix for every asset key "
                                               "(as dagster-dbt's and dagster-sling's translation settings)")
    group_name: str | None = Field(default=None, description="Group of every asset (default: the contract's domain)")
    tags: dict[str, str] | None = Field(default=None, description="Tags added to every asset")
    owners: list[str] | None = Field(default=None, description="Owners added to every asset (besides the "
                                     "contract's team)")

    def contracts_folder(self, context: dg.ComponentLoadContext) -> Path:
        folder = (Path(context.path) / self.contracts_dir if self.contracts_dir
                  else Path(context.project_root) / "contracts")
        if not folder.exists():
            given = self.contracts_dir or f"the default {PROJECT_CONTRACTS}"
            raise ContractsDirError(f"{context.path / 'defs.yaml'}: attributes.contracts_dir: {given} is "
                                    f"{folder.resolve()}, which does not exist; create it or point "
                                    "contracts_dir at the folder (or file) holding your ODCS contracts")
        return folder

    def translator(self) -> DqContractsTranslator:
        return SettingsTranslator(key_prefix=self.key_prefix, group_name=self.group_name,
                                  tags=self.tags or {}, owners=self.owners or [])

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        key, resource = shared_resource(self.server, self.timeout_seconds)
        statuses = {"running": dg.DefaultSensorStatus.RUNNING, "stopped": dg.DefaultSensorStatus.STOPPED,
                    "none": None}
        try:
            return build_contract_defs(self.contracts_folder(context), resource=resource, resource_key=key,
                                       translator=self.translator(), freshness_sensor=self.freshness_sensor,
                                       automation_sensor=statuses[self.automation_sensor],
                                       alert_sensor=statuses[self.alert_sensor], alert_ui_url=self.alert_ui_url,
                                       contract_jobs=self.contract_jobs,
                                       partition_jobs=self.partition_jobs,
                                       strict=self.strict, name=Path(context.path).name)
        except ContractsRefused as refused:  # the problems are the message: no frames of ours under it
            raise refused.with_traceback(None) from None


class SettingsTranslator(DqContractsTranslator):
    """The component's YAML translation settings on top of the default translator."""

    def __init__(self, *, key_prefix: str | list[str] | None = None, group_name: str | None = None,
                 tags: dict[str, str] | None = None, owners: list[str] | None = None):
        self.key_prefix = [key_prefix] if isinstance(key_prefix, str) else list(key_prefix or [])
        self.group_name, self.extra_tags, self.extra_owners = group_name, dict(tags or {}), list(owners or [])

    def get_asset_spec(self, data: ContractObjectData) -> dg.AssetSpec:
        spec = super().get_asset_spec(data)
        if self.key_prefix:
            spec = spec.replace_attributes(key=spec.key.with_prefix(self.key_prefix))
        if self.group_name:
            spec = spec.replace_attributes(group_name=self.group_name)
        return spec.merge_attributes(tags=self.extra_tags,
                                     owners=[o for o in self.extra_owners if o not in spec.owners])


@functools.lru_cache(maxsize=None)
def shared_resource(server: str | None, timeout_seconds: float) -> tuple[str, WarehouseResource]:
    """One resource object per setting, so that several components in one project merge (Dagster
    refuses two different objects under one key); components that check other servers get a key
    of their own."""
    default = server is None and timeout_seconds == DEFAULT_TIMEOUT_SECONDS
    key = RESOURCE_KEY if default else dagster_name(f"{RESOURCE_KEY}__{server or 'first'}__{timeout_seconds:g}s")
    return key, WarehouseResource(server=server, timeout_seconds=timeout_seconds)
