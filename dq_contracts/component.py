"""`dq_contracts.ContractsComponent`: the contracts of a folder as a Dagster component.

    # src/<project>/defs/contracts/defs.yaml  (as `dg scaffold defs dq_contracts.ContractsComponent contracts` writes it)
    type: dq_contracts.ContractsComponent
    attributes:
      contracts_dir: "{{ context.project_root }}/contracts"   # or a path relative to this file's folder
      server: prod                                            # optional: the ODCS server to check against
"""

from __future__ import annotations

import functools
from pathlib import Path

import dagster as dg
from pydantic import Field

from dq_contracts.compiler import dagster_name
from dq_contracts.definitions import RESOURCE_KEY, build_contract_defs
from dq_contracts.resource import WarehouseResource
from dq_contracts.runner import DEFAULT_TIMEOUT_SECONDS

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
    contract_jobs: bool = Field(default=True, description="A checks-only job per contract (turn off for "
                                "hundreds of contracts: each job costs Dagster a pass over the asset graph)")
    strict: bool = Field(default=False, description="Refuse to load any contract when one has an error (for "
                         "CI); by default a broken contract shows a failing contract_valid check instead")

    def contracts_folder(self, context: dg.ComponentLoadContext) -> Path:
        folder = (Path(context.path) / self.contracts_dir if self.contracts_dir
                  else Path(context.project_root) / "contracts")
        if not folder.exists():
            given = self.contracts_dir or f"the default {PROJECT_CONTRACTS}"
            raise ContractsDirError(f"{context.path / 'defs.yaml'}: attributes.contracts_dir: {given} is "
                                    f"{folder.resolve()}, which does not exist; create it or point "
                                    "contracts_dir at the folder (or file) holding your ODCS contracts")
        return folder

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        key, resource = shared_resource(self.server, self.timeout_seconds)
        return build_contract_defs(self.contracts_folder(context), resource=resource, resource_key=key,
                                   freshness_sensor=self.freshness_sensor, contract_jobs=self.contract_jobs,
                                   strict=self.strict, name=Path(context.path).name)


@functools.lru_cache(maxsize=None)
def shared_resource(server: str | None, timeout_seconds: float) -> tuple[str, WarehouseResource]:
    """One resource object per setting, so that several components in one project merge (Dagster
    refuses two different objects under one key); components that check other servers get a key
    of their own."""
    default = server is None and timeout_seconds == DEFAULT_TIMEOUT_SECONDS
    key = RESOURCE_KEY if default else dagster_name(f"{RESOURCE_KEY}__{server or 'first'}__{timeout_seconds:g}s")
    return key, WarehouseResource(server=server, timeout_seconds=timeout_seconds)
