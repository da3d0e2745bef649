"""The freshness sensor: Dagster's freshness counts materialisations only, so for tables built outside
Dagster it reports one whenever the contract's freshness column advances."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import dagster as dg
import sqlalchemy as sa

from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts.engine.contracts import Warehouses, choose_server
from dq_contracts.engine.results import error_of, touches_classified
from dq_contracts.engine.schema_check import read_catalog
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.sessions import read_only
from dq_contracts.engine.sql import table_for
from dq_contracts.odcs.names import FRESHNESS_SENSOR
from dq_contracts.odcs.plans import ContractPlan, ObjectPlan
from dq_contracts.odcs.visible import described, visible


def freshness_sensor(watched: list[tuple[ContractPlan, ObjectPlan, str, dg.AssetKey]],
                     resource_key: str, suffix: str = "") -> dg.SensorDefinition:
    """Dagster's freshness counts materialisations only; for tables built outside Dagster, report a
    runless materialisation whenever the contract's freshness column advances."""

    @dg.sensor(name=FRESHNESS_SENSOR + suffix, minimum_interval_seconds=300, required_resource_keys={resource_key},
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Reports a materialisation of each external contract table when its SLA "
                           "freshness column advances, so the UI's freshness means what the contract means")
    def report_advances(context):
        warehouse: WarehouseResource = getattr(context.resources, resource_key)
        cursor = json.loads(context.cursor) if context.cursor else {}
        events = []
        with Warehouses(warehouse.environ()) as warehouses:
            for plan, obj, column, key in watched:
                if obj.column(column) is not None and obj.column(column).classified:
                    continue  # its newest value is classified: not even a hash of it is kept (the check still runs)
                try:
                    engine, connection = warehouses.engine(choose_server(plan, warehouse.server), plan.folder,
                                                         plan.root)
                    table = table_for(obj.physical_name, connection.schema, [column],
                                      engine.dialect.identifier_preparer, connection.files)
                    with read_only(engine, warehouse.timeout_seconds) as conn:
                        newest = conn.execute(sa.select(sa.func.max(table.c[column]))).scalar()
                        columns = _observed_columns(obj, table, engine, connection, conn)
                except Exception as exc:  # one unreachable table must not stop the others
                    context.log.warning(visible(f"{key.to_user_string()}: "
                                                f"{error_of(exc, f'{obj.name}.{column}', touches_classified(plan, obj))}"))
                    continue
                if newest is None:
                    continue
                seen = str(newest)
                if cursor.get(key.to_user_string()) != seen:
                    cursor[key.to_user_string()] = seen
                    metadata: dict[str, Any] = {"dq_contracts/newest": visible(seen),
                                                "dq_contracts/contract_id": visible(plan.id)}
                    if columns:  # so that Dagster's column-schema-change checks work on external tables
                        metadata["dagster/column_schema"] = dg.TableSchema(
                            columns=[dg.TableColumn(visible(name), visible(kind)) for name, kind in columns])
                    events.append(dg.AssetMaterialization(
                        asset_key=key, description=described(f"{obj.physical_name}.{column} advanced to {seen}"),
                        metadata=metadata))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(cursor, sort_keys=True))

    return report_advances




def _observed_columns(obj: ObjectPlan, table: Any, engine: sa.Engine, connection: Any,
                      conn: sa.Connection) -> list[tuple[str, str]]:
    """The table's columns and types as the catalog has them; none when it cannot say."""
    try:
        checked = CheckedObject(obj, table, engine.dialect.name, connection.schema, engine.dialect.identifier_preparer,
                                dt.datetime.now(dt.timezone.utc), connection.files)
        found = read_catalog(checked, conn)
        return [(str(c["name"]), str(c["type_text"]))
                for c in found.values()]
    except Exception:  # a courtesy: the materialisation is reported all the same
        return []

