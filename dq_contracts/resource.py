"""The warehouse connection settings the check ops use, as a Dagster resource.

Settings per ODCS server name; anything not set here falls back to the `DQ_CONTRACTS_<SERVER>_*`
environment variables (see connections.py), so the resource works with no configuration at all:

    WarehouseResource(servers={"prod": ServerSettings(user=dg.EnvVar("WH_USER"),
                                                      password=dg.EnvVar("WH_PASSWORD"))})
"""

from __future__ import annotations

import os

import dagster as dg
from pydantic import Field

from dq_contracts.connections import env_prefix
from dq_contracts.runner import DEFAULT_TIMEOUT_SECONDS


class ServerSettings(dg.Config):
    url: str | None = Field(default=None, description="A full SQLAlchemy URL; wins over the rest")
    user: str | None = Field(default=None, description="User joined to the contract's host, port, database")
    password: str | None = Field(default=None, description="Password; pass it as dg.EnvVar(...)")


class WarehouseResource(dg.ConfigurableResource):
    """Where and how the contracts' checks run."""

    servers: dict[str, ServerSettings] = Field(default_factory=dict,
                                               description="Settings per ODCS `server` name")
    server: str | None = Field(default=None, description="The server to check against (default: each "
                               "contract's first SQL server)")
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, description="Statement timeout")

    def environ(self) -> dict[str, str]:
        """The process environment with this resource's settings laid over it."""
        environ = dict(os.environ)
        for name, settings in self.servers.items():
            prefix = env_prefix(name)
            for key, value in (("URL", settings.url), ("USER", settings.user), ("PASSWORD", settings.password)):
                if value:
                    environ[f"{prefix}_{key}"] = value
        return environ
