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
import functools
import os
import re
from dataclasses import dataclass
from typing import Any

import dagster as dg

from dq_contracts.odcs.servers import is_file_server, schema_of_server, server_type
from dq_contracts.odcs.check_kinds import PER_PARTITION, reach_of
from dq_contracts.odcs.partitions import PartitionPlan
from dq_contracts.odcs.paths import clause_location
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, FreshnessPlan, ObjectPlan
from dq_contracts.odcs.visible import described, visible, visible_all

TAG_MAX = 63


def tag_value(text: Any) -> str:
    """A Dagster tag value: [A-Za-z0-9_.-], at most 63 characters."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(text))[:TAG_MAX]


@dataclass(frozen=True)
class ContractObjectData:
    """One schema object of one contract: what becomes one asset."""

    contract: ContractPlan
    object: ObjectPlan
    freshness: FreshnessPlan | None = None  # the contract's SLA latency on this object
    server: dict[str, Any] | None = None  # the server its checks run against (the contract's first SQL server)

    @property
    def server_type(self) -> str | None:
        return str(self.server.get("type")).lower() if self.server and self.server.get("type") else None


@dataclass(frozen=True)
class ContractCheckData:
    """One check of one schema object: what becomes one asset check."""

    contract: ContractPlan
    object: ObjectPlan
    check: CheckPlan
    asset_key: dg.AssetKey  # the key get_asset_spec gave this object's asset (it may be customised)
    target_asset_key: dg.AssetKey | None = None  # a relationship's referenced asset, as get_asset_spec named it
    crons: tuple[str, ...] = ()  # contract crons that list this clause (UTC)
    materialised_in_dagster: bool = False  # the asset is one of the user's own (not an external AssetSpec)
    # the asset's partitions (the user's asset's, or the contract's declaration): a clause judged per
    # partition gets them, when the object names its partition column
    partitions_def: dg.PartitionsDefinition | None = None
    # whether its ERROR clauses may block the user's asset: the operator binds no server of the
    # contracts to a folder, or binds this one's to its folder; or the asset says it builds the table
    # the check reads (its `dagster/table_name` is the object's), or the user lists it in `blocking_assets`
    may_block: bool = True
    table_name: str | None = None  # the table the check reads, as the object's asset spec names it
    bindings: tuple[str, ...] = ()  # the operator's variables binding the contracts' servers to folders

    @property
    def per_partition(self) -> bool:
        """Whether this check runs per partition (its kind's reach, odcs.check_kinds) of a partitioned asset."""
        # one column filters a time window or a static value; a multi-dimensional key one column per
        # dimension, each named as the dimension
        if isinstance(self.partitions_def, dg.MultiPartitionsDefinition):
            filterable = dimension_columns(self.object, self.partitions_def) is not None
        else:
            filterable = (isinstance(self.partitions_def, ONE_DIMENSION)
                          and partition_column(self.object) is not None)
        return filterable and reach_of(self.check.kind, self.check.params.get("query"))[0] == PER_PARTITION


def with_check_attributes(spec: dg.AssetCheckSpec, **changes: Any) -> dg.AssetCheckSpec:
    """AssetCheckSpec has no replace_attributes in Dagster 1.13; this is its equivalent."""
    metadata = changes.pop("merge_metadata", None)
    if metadata:
        changes["metadata"] = {**(spec.metadata or {}), **metadata}
    return spec._replace(**changes)


class DqContractsTranslator:
    """Override `get_asset_spec` and `get_asset_check_spec`; both take one frozen record."""

    def get_asset_spec(self, data: ContractObjectData) -> dg.AssetSpec:
        plan, obj, freshness = data.contract, data.object, data.freshness
        return dg.AssetSpec(
            key=dg.AssetKey(list(obj.asset_key)),
            description=described(self.description(data)),  # for people: nothing hidden or reordered
            metadata=self.metadata(data),
            owners=list(plan.owners),
            tags=self.tags(data),
            kinds={k for k in (data.server_type, "odcs") if k},
            group_name=re.sub(r"[^A-Za-z0-9_]", "_", plan.domain) if plan.domain else None,
            code_version=plan.version,
            freshness_policy=dg.FreshnessPolicy.time_window(
                fail_window=dt.timedelta(seconds=freshness.fail_window_seconds)) if freshness else None,
            partitions_def=self.partitions_def(data),
        )

    def partitions_def(self, data: ContractObjectData) -> dg.PartitionsDefinition | None:
        """The external table's partitions, from the object's `dagsterPartitions` declaration (your own
        assets keep theirs: their checks take the asset's). Override to partition otherwise."""
        return partitions_def_of(data.object.partitioning)

    def get_asset_check_spec(self, data: ContractCheckData) -> dg.AssetCheckSpec:
        plan, obj, check = data.contract, data.object, data.check
        # ERROR clauses block where Dagster materialises the asset. A relationship waits for the
        # table it reads; were it blocking too, one table failing an ERROR clause would skip
        # checks across every table downstream of it, chained. Where the operator draws lines between
        # teams, a contract outside them that only names the user's asset (its key) cannot stop its run
        blocking = (check.blocking and data.materialised_in_dagster and data.may_block
                    and data.target_asset_key is None)
        return dg.AssetCheckSpec(
            name=check.name,
            asset=data.asset_key,
            description=described(check_description(plan, check) + waits_for(data) + not_blocking(check, data)),
            blocking=blocking,
            additional_deps=[data.target_asset_key] if data.target_asset_key else None,
            automation_condition=self.automation_condition(data),
            partitions_def=data.partitions_def if data.per_partition else None,
            metadata={k: visible_all(v) for k, v in {
                "dq_contracts/contract_id": plan.id,
                "dq_contracts/contract_version": plan.version,
                "dq_contracts/object": obj.name,
                "dq_contracts/property": check.property,
                "dq_contracts/clause": clause_text(plan, check),
                "dq_contracts/pointer": check.clause,
                # every clause it answers (a compound key: each column's primaryKey), first the two above
                "dq_contracts/clauses": dg.MetadataValue.text(visible("\n".join(check.locations(plan.file)))),
                "dq_contracts/pointers": dg.MetadataValue.json(visible_all(list(check.clauses))),
                "dq_contracts/kind": check.kind,
                "dq_contracts/dimension": check.dimension,
                "dq_contracts/severity": str(check.severity),  # Dagster stores no Enum, not even a StrEnum
                "dq_contracts/blocks": blocks_text(check, blocking, data),
                "dq_contracts/threshold": check.threshold_text(),
                "dagster/code_references": code_references(plan, [a.line for a in check.answers], check.name),
            }.items() if v is not None},
        )

    def automation_condition(self, data: ContractCheckData) -> dg.AutomationCondition | None:
        """When Dagster runs the check by itself: each time its table is updated (materialised in
        Dagster, or reported by the freshness sensor), after any table a relationship reads, and at
        each contract cron that lists the clause. Return None to run it only in jobs you define."""
        return checks_condition(data.crons)

    # --- pieces, each overridable on its own -----------------------------------------------------

    def table_name(self, data: ContractObjectData) -> str:
        """The table as the server names it: database.schema.table where the server says them."""
        return qualified_table(data.server, data.object.physical_name)

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
                    name=visible(c.physical_name or c.name),
                    type=visible(c.physical_type or c.logical_type or "unknown"),
                    description=described(c.description) if isinstance(c.description, str) else None,
                    constraints=dg.TableColumnConstraints(
                        nullable=not (c.required or c.primary_key), unique=c.unique or c.primary_key,
                        other=[visible(t) for t, on in (("primary key", c.primary_key),
                                               (f"classification: {c.classification_text}",
                                                bool(c.classification) or c.classified_below is not None))
                               if on]),
                ) for c in obj.columns]),
            "dagster/table_name": visible(self.table_name(data)),
            "dagster/code_references": code_references(plan, getattr(obj, "line", None), visible(obj.name)),
            "dq_contracts/contract_id": visible(plan.id),
            "dq_contracts/contract_version": visible(plan.version),
            "dq_contracts/contract_file": visible(plan.file),
            "dq_contracts/checks": len(obj.checks),
        }
        for i, link in enumerate((*plan.authoritative_definitions, *obj.authoritative_definitions)):
            if link.get("url"):
                metadata[f"dq_contracts/link/{tag_value(link.get('type') or i)}"] = dg.MetadataValue.url(
                    visible(link["url"]))
        uri = server_uri(data.server, data.object.physical_name)
        if uri:
            metadata["dagster/uri"] = visible(uri)
        if plan.dropped_owners:
            metadata["dq_contracts/owners_not_mapped"] = visible(", ".join(plan.dropped_owners))
        # this object's entries, and the contract-wide ones (SLA, servers…) shown on every asset
        not_enforced = [n for n in plan.not_enforced if n.object in (None, obj.name)]
        metadata["dq_contracts/not_enforced"] = dg.MetadataValue.table(
            records=[dg.TableRecord({"clause": visible(n.clause), "code": str(n.code), "reason": n.reason})
                     for n in not_enforced],
            schema=dg.TableSchema(columns=[dg.TableColumn("clause", "string"), dg.TableColumn("code", "string"),
                                           dg.TableColumn("reason", "string")]),
        )
        return metadata


# A check is "missing" while it has not run since its table's latest update. Requested once, when
# that becomes true and nothing it reads is missing or being built: a run that builds the table
# and checks it leaves nothing to ask for, and a check that could not run is not asked for again
# at every tick. (`eager()` resets on the table's update itself for checks, so it would miss a
# second update of an external table.)
AC = dg.AutomationCondition
CHECK_WHEN_UPDATED: dg.AutomationCondition = (
    AC.missing() & ~AC.any_deps_missing() & ~AC.any_deps_in_progress() & ~AC.in_progress()
).newly_true().with_label("its table was updated since it last ran")


@functools.lru_cache(maxsize=None)
def checks_condition(crons: tuple[str, ...]) -> dg.AutomationCondition:
    """The table was updated since the check last ran (CHECK_WHEN_UPDATED), or a contract cron ticked. One object per set of crons: conditions are immutable."""
    condition: dg.AutomationCondition = CHECK_WHEN_UPDATED
    for cron in crons:
        condition = condition | dg.AutomationCondition.cron_tick_passed(cron, "UTC").with_label(
            f"contract cron {cron} (UTC)")
    return condition


def partition_column(obj: ObjectPlan) -> str | None:
    """The column a partition filters on: the declaration's, else the first `partitioned: true` one."""
    if obj.partitioning is not None:
        return obj.partitioning.column
    return obj.partition_columns[0] if obj.partition_columns else None


ONE_DIMENSION = (dg.TimeWindowPartitionsDefinition, dg.StaticPartitionsDefinition)


def dimension_columns(obj: ObjectPlan, partitions_def: dg.MultiPartitionsDefinition) -> dict[str, str] | None:
    """The column each dimension of a multi-partitioned asset filters on: the property named as the
    dimension (its physical name, else its name, in any case); None unless every dimension, each of
    a time window or static values, has one."""
    named = {}
    for column in obj.columns:
        for name in (column.name, column.physical_name):
            if name:
                named.setdefault(name.lower(), column.physical_name or column.name)
    out = {}
    for dimension in partitions_def.partitions_defs:
        column = named.get(dimension.name.lower())
        if column is None or not isinstance(dimension.partitions_def, ONE_DIMENSION):
            return None
        out[dimension.name] = column
    return out


# The declaration's types as Dagster's partitions definitions (all in UTC, as the engine's windows).
TIME_PARTITIONS = {"hourly": (dg.HourlyPartitionsDefinition, "%Y-%m-%d-%H:%M"),
                   "daily": (dg.DailyPartitionsDefinition, "%Y-%m-%d"),
                   "weekly": (dg.WeeklyPartitionsDefinition, "%Y-%m-%d"),
                   "monthly": (dg.MonthlyPartitionsDefinition, "%Y-%m-%d")}


@functools.lru_cache(maxsize=None)
def partitions_def_of(partitioning: PartitionPlan | None) -> dg.PartitionsDefinition | None:
    if partitioning is None:
        return None
    if partitioning.type not in TIME_PARTITIONS:
        return dg.StaticPartitionsDefinition([str(v) for v in partitioning.values])
    kind, spelling = TIME_PARTITIONS[partitioning.type]
    start = dt.datetime.fromisoformat(str(partitioning.start))
    end = dt.datetime.fromisoformat(partitioning.end) if partitioning.end else None
    return kind(start_date=start.strftime(spelling), end_date=end.strftime(spelling) if end else None,
                timezone="UTC")


def clause_text(plan: ContractPlan, check: CheckPlan) -> str:
    """Where a person finds the clause: `contracts/orders.odcs.yaml:42 schema.orders.properties…`."""
    return clause_location(plan.file, check.line, check.where or check.clause)


def check_description(plan: ContractPlan, check: CheckPlan) -> str:
    """The check's description; one that answers several clauses says where each of them is."""
    if len(check.answers) < 2:
        return check.description
    return f"{check.description}; answers {len(check.answers)} clauses: " + "; ".join(check.locations(plan.file))


def code_references(plan: ContractPlan, line: int | None | list[int | None], label: str
                    ) -> dg.CodeReferencesMetadataValue:
    """A link to the contract file and line, one per line of `line` when it is a list (the clauses a
    check answers); `link_code_references_to_git` makes each a link into the repository for deployments."""
    # plan.folder was made absolute when the contract was read: the working directory may differ now
    path = os.path.join(plan.folder, os.path.basename(plan.file))
    lines = line if isinstance(line, list) else [line]
    return dg.CodeReferencesMetadataValue(code_references=[
        dg.LocalFileCodeReference(file_path=path, line_number=n, label=label) for n in lines])


def _catalog(server: dict[str, Any]) -> str | None:
    """The database part of a table's name: PostgreSQL's database, a DuckDB file's catalog (its stem)."""
    database = server.get("database") or server.get("catalog")
    if not database or str(database).startswith(":memory:"):
        return None
    text = str(database)
    row = server_type(server.get("type"))
    if row is not None and row.database_file:
        text = re.sub(r"\.(duckdb|db|ddb)$", "", os.path.basename(text.split("?")[0].rstrip("/")))
    return text or None


def qualified_table(server: dict[str, Any] | None, physical_name: str) -> str:
    """The table the checks read, as far as the contract names it: its schema the server's
    (`schema_of_server`: a Hive server's `database`, which is then no catalog too)."""
    parts = physical_name.split(".")
    if not server or is_file_server(server) or len(parts) >= 3:
        return physical_name
    row = server_type(server.get("type"))
    catalog = None if row is not None and row.schema_key == "database" else _catalog(server)
    # a catalog's bare name is in the server's schema, else its type's default one (`main.orders` would
    # read as schema `main`); the URL's own `schema=` is the operator's, unknown here
    schema = schema_of_server(server) or (row.default_schema if catalog and row is not None else None)
    prefix = [catalog, schema][: 3 - len(parts)]  # schema.table lacks the catalog only
    return ".".join([*(str(p) for p in prefix if p), *parts])


def server_uri(server: dict[str, Any] | None, physical_name: str) -> str | None:
    """Where the table lives, without credentials: `postgresql://host:5432/db/schema.table`,
    `duckdb:warehouse.duckdb/schema.table`, a file server's path."""
    if not server:
        return None
    kind = str(server.get("type", "")).lower()
    row = server_type(kind)
    if is_file_server(server):
        return str(server.get("path")).replace("{model}", physical_name)
    host = server.get("host")
    location = f"//{host}{':' + str(server['port']) if server.get('port') else ''}/" if host else ""
    database = str(server.get("database") or "")
    # a two-part name is its own schema's table, whatever schema the server names
    table = ".".join(str(p) for p in (None if "." in physical_name else server.get("schema"), physical_name) if p)
    if row is not None and row.schema_key == "database" and "." in physical_name:
        # a Hive server's `database` is the schema of its bare names only: `other.orders` is in `other`
        database, table = physical_name.split(".", 1) if physical_name.count(".") == 1 else ("", physical_name)
    scheme = row.names[0] if row is not None else kind  # the type's first name: `postgresql` for `postgres`
    return f"{scheme}:{location}{database + '/' if database else ''}{table}" if (database or location) else None


def blocks_text(check: CheckPlan, blocking: bool, data: Any) -> str:
    """Whether a failure stops anything, in words beside `severity` (an ERROR that does not block would
    otherwise read as one that does)."""
    if blocking:
        return "yes: a failure stops this asset's downstream materialisations in the same run"
    if str(check.severity) != "ERROR":
        return "no: a WARN clause marks the check failed and stops nothing"
    if data.target_asset_key is not None:
        return "no: a relationship reads another table; blocking it would stop every table downstream of that one"
    if data.materialised_in_dagster:
        return "no: " + not_its_table(data)
    return "no: Dagster does not materialise this table, so there is no downstream run to stop"


NOT_ITS_TABLE = ("asset {asset} does not say it builds {table}, the table this check reads (its "
                 "`dagster/table_name` metadata), and the operator binds servers to folders ({bindings}) but "
                 "this contract is not in its server's bound folder, so a contract that names its key cannot "
                 "stop its run; set that metadata on the asset, list it in "
                 "build_contract_defs(blocking_assets=...), or bind this contract's folder to its server")


def not_its_table(data: Any) -> str:
    """Why an ERROR clause on the user's asset does not block it (data.may_block is False)."""
    return NOT_ITS_TABLE.format(asset=data.asset_key.to_user_string(), table=data.table_name or data.object.physical_name,
                                bindings=", ".join(data.bindings) or "DQ_CONTRACTS_<SERVER>_CONTRACTS")


def not_blocking(check: CheckPlan, data: Any) -> str:
    """The description's word on an ERROR clause that would block the user's asset but may not."""
    if not (check.blocking and data.materialised_in_dagster and data.target_asset_key is None) or data.may_block:
        return ""
    return ". Not blocking: " + not_its_table(data)


def waits_for(data: Any) -> str:
    """What a relationship's page should say when the check shows an execution with no result: it
    reads another table, and Dagster skips it when that table fails a blocking check in the same run."""
    if data.target_asset_key is None:
        return ""
    target = data.target_asset_key.to_user_string()
    return (f". It reads {target}: in a run where {target} fails a blocking (ERROR) check, Dagster skips this "
            "check, and its execution shows failed with no result; run it alone once the table is fixed")

