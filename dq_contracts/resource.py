"""The warehouse connection settings the check ops use, as a Dagster resource.

Settings per ODCS server name; anything not set here falls back to the `DQ_CONTRACTS_<SERVER>_*`
environment variables (see connections.py), so the resource works with no configuration at all:

    WarehouseResource(servers={"prod": ServerSettings(host="db.internal", user=dg.EnvVar("WH_USER"),
                                                      password=dg.EnvVar("WH_PASSWORD"))})
"""

from __future__ import annotations

import os

import dagster as dg
from pydantic import Field

from dq_contracts.connections import env_prefix
from dq_contracts.runner import DEFAULT_TIMEOUT_SECONDS


class ServerSettings(dg.Config):
    """The operator's endpoint for one ODCS server: credentials go here and nowhere else."""

    url: str | None = Field(default=None, description="The whole endpoint as a SQLAlchemy URL; wins over the rest")
    host: str | None = Field(default=None, description="Host the credentials are sent to (required without url)")
    port: int | None = Field(default=None, description="Port on that host")
    database: str | None = Field(default=None, description="Database (default: the contract's)")
    user: str | None = Field(default=None, description="User")
    password: str | None = Field(default=None, description="Password; pass it as dg.EnvVar(...)")
    sslmode: str | None = Field(default=None, description="libpq sslmode, e.g. verify-full")
    require_auth: str | None = Field(default=None, description="libpq require_auth, e.g. scram-sha-256")


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
            for key in ("url", "host", "port", "database", "user", "password", "sslmode", "require_auth"):
                value = getattr(settings, key)
                if value not in (None, ""):
                    environ[f"{prefix}_{key.upper()}"] = str(value)
        return environ
