"""From plans (ODCS words) to Dagster specs (Dagster words): one frozen record in, one spec out.

Customise by subclassing and calling `super()`, then `replace_attributes` / `merge_attributes` on
the AssetSpec (as with dagster-sling and dagster-dlt translators), or `with_check_attributes` on
the AssetCheckSpec:

    class MyTranslator(DqContractsTranslator):
        def get_asset_spec(self, data):
            return super().get_asset_spec(data).replace_attributes(group_name="contracts")
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dq_contracts.plans import CheckPlan, ContractPlan, ObjectPlan

TAG_MAX = 63


def tag_value(text: Any) -> str:
    """A Dagster tag value: [A-Za-z0-9_.-], at most 63 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(text))[:TAG_MAX]


@dataclass(frozen=True)
class ContractObjectData:
    """One schema object of one contract: what becomes one asset."""

    contract: ContractPlan
    object: ObjectPlan

    @property
    def server_type(self) -> str | None:
        return next((str(s.get("type")).lower() for s in self.contract.servers if s.get("type")), None)


@dataclass(frozen=True)
class ContractCheckData:
    """One check of one schema object: what becomes one asset check."""

    contract: ContractPlan
    object: ObjectPlan
    check: CheckPlan
    asset_key: dg.AssetKey  # the key get_asset_spec gave this object's asset (it may be customised)


def with_check_attributes(spec: dg.AssetCheckSpec, **changes: Any) -> dg.AssetCheckSpec:
    """AssetCheckSpec has no replace_attributes in Dagster 1.13; this is its equivalent."""
    metadata = changes.pop("merge_metadata", None)
    if metadata:
        changes["metadata"] = {**(spec.metadata or {}), **metadata}
    return spec._replace(**changes)


class DqContractsTranslator:
    """Override `get_asset_spec` and `get_asset_check_spec`; both take one frozen record."""

    def get_asset_spec(self, data: ContractObjectData) -> dg.AssetSpec:
        plan, obj = data.contract, data.object
        freshness = next((f for f in plan.freshness if f.object == obj.name), None)
        return dg.AssetSpec(
            key=dg.AssetKey(list(obj.asset_key)),
            description=self.description(data),
            metadata=self.metadata(data),
            owners=list(plan.owners),
            tags=self.tags(data),
            kinds={k for k in (data.server_type, "odcs") if k},
            group_name=re.sub(r"[^A-Za-z0-9_]", "_", plan.domain) if plan.domain else None,
            freshness_policy=dg.FreshnessPolicy.time_window(
                fail_window=dt.timedelta(seconds=freshness.fail_window_seconds)) if freshness else None,
        )

    def get_asset_check_spec(self, data: ContractCheckData) -> dg.AssetCheckSpec:
        plan, obj, check = data.contract, data.object, data.check
        return dg.AssetCheckSpec(
            name=check.name,
            asset=data.asset_key,
            description=check.description,
            blocking=check.blocking,
            metadata={k: v for k, v in {
                "dq_contracts/contract_id": plan.id,
                "dq_contracts/contract_version": plan.version,
                "dq_contracts/object": obj.name,
                "dq_contracts/property": check.property,
                "dq_contracts/clause": check.clause,
                "dq_contracts/kind": check.kind,
                "dq_contracts/dimension": check.dimension,
                "dq_contracts/severity": check.severity,
                "dq_contracts/threshold": check.threshold_text(),
            }.items() if v is not None},
        )

    # --- pieces, each overridable on its own -----------------------------------------------------

    def description(self, data: ContractObjectData) -> str:
        plan, obj = data.contract, data.object
        purpose = (plan.description or {}).get("purpose") if isinstance(plan.description, dict) else None
        lines = [obj.description or purpose or f"Table {obj.physical_name}",
                 "", f"Governed by data contract `{plan.id}` version {plan.version} ({plan.file})."]
        return "\n".join(lines)

    def tags(self, data: ContractObjectData) -> dict[str, str]:
        plan = data.contract
        tags = {"dq_contracts/contract": tag_value(plan.id), "dq_contracts/version": tag_value(plan.version)}
        if plan.domain:
            tags["dq_contracts/domain"] = tag_value(plan.domain)
        if plan.status:
            tags["dq_contracts/status"] = tag_value(plan.status)
        return tags

    def metadata(self, data: ContractObjectData) -> dict[str, Any]:
        plan, obj = data.contract, data.object
        metadata: dict[str, Any] = {
            "dagster/column_schema": dg.TableSchema(columns=[
                dg.TableColumn(
                    name=c.physical_name or c.name,
                    type=c.physical_type or c.logical_type or "unknown",
                    description=c.description,
                    constraints=dg.TableColumnConstraints(
                        nullable=not (c.required or c.primary_key), unique=c.unique or c.primary_key,
                        other=[t for t, on in (("primary key", c.primary_key),
                                               (f"classification: {c.classification}", bool(c.classification)))
                               if on]),
                ) for c in obj.columns]),
            "dagster/table_name": obj.physical_name,
            "dq_contracts/contract_id": plan.id,
            "dq_contracts/contract_version": plan.version,
            "dq_contracts/contract_file": plan.file,
            "dq_contracts/checks": len(obj.checks),
        }
        for i, link in enumerate((*plan.authoritative_definitions, *obj.authoritative_definitions)):
            if link.get("url"):
                metadata[f"dq_contracts/link/{tag_value(link.get('type') or i)}"] = dg.MetadataValue.url(
                    str(link["url"]))
        if plan.dropped_owners:
            metadata["dq_contracts/owners_not_mapped"] = ", ".join(plan.dropped_owners)
        # this object's entries, and the contract-wide ones (SLA, servers…) shown on every asset
        not_enforced = [n for n in plan.not_enforced if n.object in (None, obj.name)]
        metadata["dq_contracts/not_enforced"] = dg.MetadataValue.table(
            records=[dg.TableRecord({"clause": n.clause, "code": n.code, "reason": n.reason})
                     for n in not_enforced],
            schema=dg.TableSchema(columns=[dg.TableColumn("clause", "string"), dg.TableColumn("code", "string"),
                                           dg.TableColumn("reason", "string")]),
        )
        return metadata
