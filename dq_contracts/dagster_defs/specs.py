"""The spec-building step (as dagster-dbt's `build_dbt_specs`): plans in, Dagster asset specs and
asset check specs out, no ops. `build_contract_defs` and the component both build on it; a user who
wants to write their own ops can too.

Every asset is named first, so that a relationship's check can name the asset it reads (in this
contract or another one of the folder) in `additional_deps`, as the translator keyed it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from dq_contracts.engine.contracts import ServerChoiceError, choose_server
from dq_contracts.odcs.declaration import server_name
from dq_contracts.odcs.load import RejectedContract
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, ObjectPlan
from dq_contracts.odcs.problems import Problem
from dq_contracts.dagster_defs.translator import ContractCheckData, ContractObjectData, DqContractsTranslator


@dataclass(frozen=True)
class ObjectSpecs:
    """One schema object: its asset spec and the spec of each of its checks."""

    plan: ContractPlan
    object: ObjectPlan
    asset: dg.AssetSpec
    checks: tuple[tuple[CheckPlan, dg.AssetCheckSpec], ...]
    pool: str | None  # the Dagster concurrency pool of its check ops: the server they query (pool_of)


@dataclass
class ContractSpecs:
    objects: list[ObjectSpecs] = field(default_factory=list)
    rejected: list[RejectedContract] = field(default_factory=list)  # translator errors, keys claimed twice


def server_of(plan: ContractPlan, server: str | None = None) -> dict[str, Any] | None:
    try:
        return choose_server(plan, server)
    except ServerChoiceError:
        return None


def pool_of(server: dict[str, Any] | None) -> str | None:
    """The Dagster concurrency pool of the checks against `server`: its ODCS name, the one the
    operator's `DQ_CONTRACTS_<SERVER>_*` declaration has, so that a pool limit bounds the queries
    every contract sends to that warehouse at once (Dagster's pool names hold no whitespace)."""
    return re.sub(r"\s+", "_", server_name(server)) if server is not None else None


def build_contract_specs(plans: Iterable[ContractPlan], translator: DqContractsTranslator | None = None, *,
                         server: str | None = None, crons_as_conditions: bool = True,
                         own_keys: Iterable[dg.AssetKey] = (),
                         own_partitions: dict[dg.AssetKey, dg.PartitionsDefinition] | None = None,
                         own_tables: dict[dg.AssetKey, str] | None = None,
                         blocking_assets: Iterable[dg.AssetKey] = (),
                         keepers: Iterable[str] = (), bindings: Iterable[str] = ()) -> ContractSpecs:
    """Asset and check specs of every plan. A translator exception, or two contracts the translator
    maps to one asset key, cost that contract only (it is returned in `rejected`).

    `crons_as_conditions`: a contract cron becomes part of its clauses' automation condition
    (False when the crons are Dagster schedules instead). `own_keys`: the keys of the user's own
    assets, which Dagster materialises (their ERROR clauses are blocking checks); `own_partitions`:
    their partitions definitions, which their checks judged per partition take.

    `keepers`: the contract files the operator's binding protects (LoadResult.keepers), which keep a
    key the translator gives an unbound contract too; `bindings`: the operator's variables that bind
    the contracts' servers to folders (LoadResult.bindings). A contract's ERROR clauses block one of
    the user's assets where the operator drew no line between teams (no `bindings`), where the
    contract is a keeper, where the asset says it builds the table they read (`own_tables`: its
    `dagster/table_name`, equal to the one the translator gives the object) or where the user lists
    it in `blocking_assets`: any other contract naming its key attaches checks that run and show, but
    never stop its run or its downstream."""
    # code references are a beta API of Dagster 1.13, partitioned checks a preview: not the user's concern
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return _build(list(plans), translator or DqContractsTranslator(), server, crons_as_conditions,
                      _Own(set(own_keys), own_partitions or {}, own_tables or {}, set(blocking_assets)),
                      set(keepers), tuple(bindings))


@dataclass(frozen=True)
class _Own:
    """What the user's own assets say: their keys, partitions, table names, and those listed to block."""

    keys: set[dg.AssetKey]
    partitions: dict[dg.AssetKey, dg.PartitionsDefinition]
    tables: dict[dg.AssetKey, str]
    blocking: set[dg.AssetKey]

    def builds(self, asset: dg.AssetSpec) -> bool:
        """Whether the user's asset of this key builds the table the contract's object reads."""
        ours, theirs = _text((asset.metadata or {}).get("dagster/table_name")), self.tables.get(asset.key)
        return asset.key in self.blocking or (theirs is not None and ours is not None
                                              and theirs.strip().lower() == ours.strip().lower())


def _text(value: Any) -> str | None:
    """A metadata entry's text (a plain string, or Dagster's TextMetadataValue), else None."""
    value = getattr(value, "value", value)
    return value if isinstance(value, str) else None


def _build(plans: list[ContractPlan], translator: DqContractsTranslator, server: str | None,
           crons_as_conditions: bool, own: _Own, keepers: set[str], bindings: tuple[str, ...]) -> ContractSpecs:
    own_keys, own_partitions = own.keys, own.partitions
    out = ContractSpecs()
    named: list[tuple[ContractPlan, list[tuple[ObjectPlan, dg.AssetSpec]]]] = []
    claimed: dict[dg.AssetKey, list[ContractPlan]] = {}
    key_of: dict[tuple[str, str], dg.AssetKey] = {}  # (contract id, object name) -> asset key
    for plan in sorted(plans, key=lambda p: p.id):
        chosen = server_of(plan, server)
        try:
            assets = [(obj, translator.get_asset_spec(ContractObjectData(
                plan, obj, next((f for f in plan.freshness if f.object == obj.name), None), chosen)))
                for obj in plan.objects]
        except Exception as exc:
            out.rejected.append(_rejected(plan, f"building its Dagster definitions failed: {type(exc).__name__}: {exc}"))
            continue
        for _, spec in assets:
            claimed.setdefault(spec.key, []).append(plan)
        named.append((plan, assets))
    # a key two objects take (of two contracts, or of one) is a problem of each: none wins by order
    contested = {key: claimants for key, claimants in claimed.items() if len(claimants) > 1}
    # the one claimant the operator's binding protects keeps the key (load.py, the same rule)
    kept_by = {key: bound[0] for key, claimants in contested.items()
               if len(bound := [p.file for p in claimants if p.file in keepers]) == 1}
    kept = []
    for plan, assets in named:
        clash = next((spec.key for _, spec in assets if spec.key in contested and kept_by.get(spec.key) != plan.file),
                     None)
        if clash is None:
            kept.append((plan, assets))
            key_of.update({(plan.id, obj.name): spec.key for obj, spec in assets})
            continue
        keeper = kept_by.get(clash)
        if keeper is not None:
            out.rejected.append(_rejected(plan, f"asset {clash.to_user_string()}, once the translator has named it, "
                                          f"is also the asset of {keeper}, in a folder the operator binds to the "
                                          "server it uses, and this contract's folder is not: that contract keeps "
                                          "it, and this one is not loaded; give this one another key"))
            continue
        others = sorted({p.file for p in contested[clash]} - {plan.file}) or ["another object of this contract"]
        out.rejected.append(_rejected(plan, f"asset {clash.to_user_string()}, once the translator has named it, "
                                      f"is also the asset of {', '.join(others)}: none of them is loaded until "
                                      "only one claims it; give one of them another key"))
    named = kept

    for plan, assets in named:
        crons: dict[tuple[str, str], tuple[str, ...]] = {}
        for schedule in plan.schedules if crons_as_conditions else ():
            for pair in schedule.checks:
                crons[pair] = (*crons.get(pair, ()), schedule.cron)
        pool = pool_of(server_of(plan, server))
        # no team line drawn (as before any binding), or one the operator drew around this contract
        may_block = not bindings or plan.file in keepers
        try:
            objects = []
            for obj, asset in assets:
                checks = []
                for check in obj.checks:
                    target = None
                    if check.kind == "relationship" and check.params.get("target_object"):
                        target = key_of.get((check.params.get("target_contract") or plan.id,
                                             check.params["target_object"]))
                    # the user's asset keeps its partitions (Dagster wants its checks' equal to them)
                    partitions = own_partitions.get(asset.key) if asset.key in own_keys else asset.partitions_def
                    data = ContractCheckData(plan, obj, check, asset.key, target if target != asset.key else None,
                                             crons.get((obj.name, check.name), ()), asset.key in own_keys,
                                             partitions, asset.key in own_keys and (may_block or own.builds(asset)),
                                             _text((asset.metadata or {}).get("dagster/table_name")), bindings)
                    checks.append((check, translator.get_asset_check_spec(data)))
                objects.append(ObjectSpecs(plan, obj, asset, tuple(checks), pool))
        except Exception as exc:
            out.rejected.append(_rejected(plan, f"building its Dagster definitions failed: {type(exc).__name__}: {exc}"))
            continue
        out.objects.extend(objects)
    return out


def _rejected(plan: ContractPlan, message: str) -> RejectedContract:
    return RejectedContract(plan.file, (Problem(plan.file, message),), plan)
