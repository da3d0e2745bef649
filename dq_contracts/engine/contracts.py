"""Run every check of whole contracts against their servers: pick the server, open one engine per
server, and turn a server that cannot be reached into failed results, never into passes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from dq_contracts.odcs.servers import checkable
from dq_contracts.engine.connections import Connection, connection_for, engine_for
from dq_contracts.odcs.partitions import DECLARATION, Partition, PartitionKeyError, partition_for
from dq_contracts.odcs.plans import ContractPlan, ObjectPlan
from dq_contracts.engine.runner import run_object
from dq_contracts.engine.sessions import DEFAULT_TIMEOUT_SECONDS
from dq_contracts.engine.results import CheckResult, result_of
from dq_contracts.engine.results import scrub
from dq_contracts.odcs.declaration import declared_secrets


class ServerChoiceError(ValueError):
    """The contract has no server that can be used (none declared, or not the one asked for)."""


def choose_server(plan: ContractPlan, name: str | None = None) -> dict[str, Any]:
    """The server named `name`, or else the contract's first SQL server."""
    if name is not None:
        for server in plan.servers:
            if str(server.get("server") or server.get("id")) == name:
                return server
        known = ", ".join(str(s.get("server")) for s in plan.servers) or "none"
        raise ServerChoiceError(f"contract {plan.id!r} has no server named {name!r} (it has: {known})")
    for server in plan.servers:
        if checkable(server):
            return server
    raise ServerChoiceError(f"contract {plan.id!r} declares no server to check against; add a `servers` "
                            "entry (type duckdb or postgres, with database and schema; or type local with "
                            "format csv, parquet or json and a path)")


def failed_results(plan: ContractPlan, obj: ObjectPlan, error: str,
                   selected: Iterable[str] | None = None) -> list[CheckResult]:
    """Every selected check of the object, failed at its severity with the same error."""
    wanted = set(selected) if selected is not None else None
    return [result_of(plan, obj, c, passed=False,
                      error=f"not run: {c.params['refusal']}" if c.params.get("refusal") else error)
            for c in obj.checks if wanted is None or c.name in wanted]


@dataclass
class Warehouses:
    """One engine per distinct connection, reused across contracts, disposed at the end."""

    environ: Mapping[str, str] | None = None
    _engines: dict[tuple, tuple[sa.Engine, Connection]] = field(default_factory=dict)

    def engine(self, server: Mapping[str, Any], folder: str | None = None,
               root: str | None = None) -> tuple[sa.Engine, Connection]:
        """`folder`: the contract file's folder, which a relative DuckDB path is read from; `root`:
        the default root of what was loaded (ContractPlan.root)."""
        connection = connection_for(server, self.environ, folder, root)
        # file servers all open :memory:; their files and session settings tell them apart
        key = (connection.url.render_as_string(hide_password=False), connection.files, connection.duckdb)
        if key not in self._engines:
            self._engines[key] = (engine_for(connection), connection)
        # the engine is shared; the schema (and everything else the contract's server says) is this
        # contract's own: another contract on the same endpoint must not choose where this one reads
        return self._engines[key][0], connection

    def dispose(self) -> None:
        for engine, _ in self._engines.values():
            engine.dispose()
        self._engines.clear()

    def __enter__(self) -> Warehouses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()


def run_contract(
    plan: ContractPlan,
    warehouses: Warehouses,
    *,
    server_name: str | None = None,
    objects: Iterable[str] | None = None,
    selected: Mapping[str, Iterable[str]] | None = None,
    now: dt.datetime | None = None,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    partition: Partition | str | None = None,
) -> list[CheckResult]:
    """Results of the contract's checks; `objects` limits the schema objects, `selected` maps an object
    name to the check names to run in it. `partition`: one partition of each object, as a Partition
    or as a key its `dagsterPartitions` declaration reads (PartitionKeyError if it cannot)."""
    wanted_objects = set(objects) if objects is not None else None
    chosen = [o for o in plan.objects if wanted_objects is None or o.name in wanted_objects]
    partition_of = {o.name: partition_of_key(plan, o, partition) if isinstance(partition, str) else partition
                    for o in chosen}  # a bad key is the caller's error, before anything runs
    now = now or dt.datetime.now(dt.timezone.utc)
    secrets: tuple[str, ...] = ()
    try:
        server = choose_server(plan, server_name)
        engine, connection = warehouses.engine(server, plan.folder, plan.root)
        secrets = tuple(dict.fromkeys((*connection.secrets, *declared_secrets(warehouses.environ))))
        # one connection attempt first: an unreachable server fails every check once, quickly
        with engine.connect():
            pass
    except Exception as exc:  # no server, no driver, refused password, host down: all checks fail with it
        error = scrub(f"{type(exc).__name__}: {exc}", secrets)
        return [r for o in chosen for r in failed_results(plan, o, error, (selected or {}).get(o.name))]
    results: list[CheckResult] = []
    for obj in chosen:
        results.extend(run_object(plan, obj, engine, schema=connection.schema, files=connection.files,
                                  selected=(selected or {}).get(obj.name), now=now,
                                  timeout_seconds=timeout_seconds, secrets=secrets,
                                  partition=partition_of[obj.name]))
    return results


def partition_of_key(plan: ContractPlan, obj: ObjectPlan, key: str) -> Partition:
    """The partition `key` names in the object's `dagsterPartitions` declaration."""
    if obj.partitioning is None:
        raise PartitionKeyError(f"{plan.file}: object {obj.name} is not partitioned (declare a customProperties "
                                f"entry `{DECLARATION}` on it)")
    try:
        return partition_for(obj.partitioning, key)
    except PartitionKeyError as exc:
        raise PartitionKeyError(f"{plan.file}: object {obj.name}: {exc}") from None
