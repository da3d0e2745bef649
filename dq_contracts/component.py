"""`dq_contracts.ContractsComponent`: the contracts of a folder as a Dagster component.

    # defs/contracts/defs.yaml
    type: dq_contracts.ContractsComponent
    attributes:
      contracts_dir: ../../contracts     # relative to this defs.yaml's folder
      server: prod                       # optional: the ODCS server to check against
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from dq_contracts.definitions import RESOURCE_KEY, build_contract_defs
from dq_contracts.resource import WarehouseResource


class ContractsComponent(dg.Component, dg.Resolvable, dg.Model):
    """Every ODCS v3 contract in a folder: one asset per schema object, one asset check per clause,
    freshness policies from SLA latency, schedules from contract crons."""

    contracts_dir: str = Field(description="Folder of ODCS contracts, relative to this defs.yaml's folder")
    server: str | None = Field(default=None, description="ODCS server name to check against (default: "
                               "each contract's first SQL server)")
    timeout_seconds: float = Field(default=300, description="Statement timeout for each check query")
    freshness_sensor: bool = Field(default=True, description="Report runless materialisations of external "
                                   "tables when their SLA freshness column advances")

    contract_jobs: bool = Field(default=True, description="A checks-only job per contract (turn off for "
                                "hundreds of contracts: each job costs Dagster a pass over the asset graph)")

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        folder = Path(context.path) / self.contracts_dir
        resource = WarehouseResource(server=self.server, timeout_seconds=self.timeout_seconds)
        return build_contract_defs(folder, resource=resource, resource_key=RESOURCE_KEY,
                                   freshness_sensor=self.freshness_sensor, contract_jobs=self.contract_jobs)
