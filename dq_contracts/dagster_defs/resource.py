"""The warehouse connection settings the check ops use, as a Dagster resource.

Settings per ODCS server name, one per field of the operator's declaration (declaration.FIELDS);
anything not set here falls back to the `DQ_CONTRACTS_<SERVER>_*` environment variables (see
declaration.py), so the resource works with no configuration at all:

    WarehouseResource(servers={"prod": ServerSettings(host="db.internal", user=dg.EnvVar("WH_USER"),
                                                      password=dg.EnvVar("WH_PASSWORD"))})
"""

from __future__ import annotations

import os

import dagster as dg
from pydantic import Field

from dq_contracts.odcs.declaration import FIELDS, env_prefix
from dq_contracts.engine.sessions import DEFAULT_TIMEOUT_SECONDS


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
    type: str | None = Field(default=None, description="The server's ODCS type; a contract saying another is refused")
    memory_limit: str | None = Field(default=None, description="DuckDB and file servers: a session's memory limit")
    temp_directory: str | None = Field(default=None, description="DuckDB and file servers: the spill root (each run spills into a folder of its own below it)")
    threads: int | None = Field(default=None, description="DuckDB and file servers: threads per session")
    max_temp_directory_size: str | None = Field(default=None, description="DuckDB and file servers: the most a "
                                                "session may spill to disk (default 4GB)")
    roots: list[str] | None = Field(default=None, description="DuckDB and file servers: the files or folders "
                                    "they may open (default: the folder holding the contracts folder loaded)")
    remote: list[str] | None = Field(default=None, description="DuckDB and file servers: the remote location "
                                     "prefixes they may open (md:, s3://bucket/, https://host/; none by default)")
    contracts: list[str] | None = Field(default=None, description="The folders of the contracts bound to this "
                                        "server (default: every contract loaded)")
    schemas: list[str] | None = Field(default=None, description="Schemas beside the server's own that objects "
                                      "may name in a dotted physicalName (none by default)")
    schema_: str | None = Field(default=None, alias="schema", description="The server's schema (an Iceberg "
                                "namespace); a contract's server naming another is refused (default: its URL's, else "
                                "the contract's, never a system schema)")
    catalog: str | None = Field(default=None, description="The server's catalog (Databricks; an Iceberg catalog's "
                                "name); a contract's server naming another is refused")
    read_only: bool | None = Field(default=None, description="True: the operator vouches that the credentials "
                                   "can only read, so a dialect whose session cannot be made read-only and "
                                   "time-limited here still runs (with no timeout); refused otherwise")
    catalog_url: str | None = Field(default=None, description="Iceberg servers: the catalog's uri, as pyiceberg "
                                    "takes it (sqlite:///catalog.db, https://rest-catalog/); pass secrets as dg.EnvVar")
    catalog_type: str | None = Field(default=None, description="Iceberg servers: pyiceberg's catalog type (default sql)")
    warehouse: str | None = Field(default=None, description="Iceberg servers: the catalog's warehouse location")


# a field whose name pydantic's models keep for themselves, under another attribute
_ATTRIBUTES = {"schema": "schema_"}


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
            for key, suffix, separator in FIELDS:
                value = getattr(settings, _ATTRIBUTES.get(key, key))
                if isinstance(value, dg.EnvVar):  # read when the declaration is, at load and at run
                    value = value.get_value()
                if value not in (None, "", []):
                    environ[f"{prefix}_{suffix}"] = separator.join(value) if separator else str(value)
        return environ
