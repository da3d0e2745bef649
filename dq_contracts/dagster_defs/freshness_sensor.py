"""The freshness sensor: Dagster's freshness counts materialisations only, so for tables built outside
Dagster it reports one whenever the contract's freshness column advances."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

import dagster as dg
import sqlalchemy as sa

from dq_contracts.dagster_defs.resource import WarehouseResource
from dq_contracts.engine.contracts import Warehouses, choose_server
from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine.results import StatementTimeout, error_of, masked, touches_classified
from dq_contracts.engine.schema_check import read_catalog
from dq_contracts.engine.other_names import classified_where_read
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.sessions import read_only
from dq_contracts.engine.sql import table_for
from dq_contracts.odcs.declaration import declared_secrets
from dq_contracts.odcs.names import FRESHNESS_SENSOR
from dq_contracts.odcs.plans import ContractPlan, ObjectPlan
from dq_contracts.odcs.visible import described, visible


def freshness_sensor(watched: list[tuple[ContractPlan, ObjectPlan, str, dg.AssetKey]],
                     resource_key: str, suffix: str = "") -> dg.SensorDefinition:
    """Dagster's freshness counts materialisations only; for tables built outside Dagster, report a
    runless materialisation whenever the contract's freshness column advances."""

    # a classified column's newest value, as a digest in this process's memory only: never in the
    # cursor, the metadata or a log (the UI shows them); after a restart its first value is only seen
    newest_seen: dict[str, str] = {}

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
                shown = key.to_user_string()
                classified = obj.column(column) is not None and obj.column(column).classified
                try:
                    engine, connection = warehouses.engine(choose_server(plan, warehouse.server), plan.folder,
                                                         plan.root)
                    # before the newest value is read: a classified table it reads under another name
                    obj = classified_where_read(plan, obj, engine, connection.schema, connection.files,
                                                warehouse.timeout_seconds)
                    classified = obj.column(column) is not None and obj.column(column).classified
                    table = table_for(obj.physical_name, connection.schema, [column],
                                      engine.dialect.identifier_preparer, connection.files)
                    newest, dated = _newest(engine, table.c[column], warehouse.timeout_seconds)
                    with read_only(engine, warehouse.timeout_seconds) as conn:
                        columns = _observed_columns(obj, table, engine, connection, conn)
                except Exception as exc:  # one unreachable table must not stop the others
                    context.log.warning(visible(f"{shown}: "
                                                f"{error_of(exc, f'{obj.name}.{column}', touches_classified(plan, obj))}"))
                    continue
                if newest is None:
                    continue
                where = f"{obj.physical_name}.{column}"
                if not dated:
                    cursor.pop(shown, None)  # an earlier release kept the value itself
                    context.log.warning(visible(f"{shown}: freshness needs a date or timestamp column, and {where} "
                                                "could not be read as one; no advance is reported"))
                    continue
                if classified:
                    cursor.pop(shown, None)
                    if not _advanced_unseen(newest_seen, shown, newest):
                        continue
                    said, metadata = f"{where} advanced (its value is classified: not shown)", {}
                else:
                    seen = str(masked(str(newest), _secrets(connection, warehouses)))
                    if cursor.get(shown) == seen:
                        continue
                    cursor[shown] = seen
                    said, metadata = f"{where} advanced to {seen}", {"dq_contracts/newest": visible(seen)}
                metadata["dq_contracts/contract_id"] = visible(plan.id)
                if columns:  # so that Dagster's column-schema-change checks work on external tables
                    metadata["dagster/column_schema"] = dg.TableSchema(
                        columns=[dg.TableColumn(visible(name), visible(kind)) for name, kind in columns])
                events.append(dg.AssetMaterialization(asset_key=key, description=described(said), metadata=metadata))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(cursor, sort_keys=True))

    return report_advances


def _newest(engine: sa.Engine, column: Any, timeout_seconds: float) -> tuple[Any, bool]:
    """(the column's newest value, whether it is a date or timestamp as the freshness check reads one:
    the database takes its epoch, the check's own expression), in one scan; when the epoch fails,
    the newest value alone, whose own error (no table, no server) is the tick's."""
    epoch = dialect_of(engine.dialect.name).epoch(sa.func.max(column))
    try:
        with read_only(engine, timeout_seconds) as conn:
            return conn.execute(sa.select(sa.func.max(column), epoch)).one()[0], True
    except StatementTimeout:
        raise
    except Exception:  # the column is no date: the database cannot take its epoch
        with read_only(engine, timeout_seconds) as conn:
            return conn.execute(sa.select(sa.func.max(column))).scalar(), False


def _secrets(connection: Any, warehouses: Warehouses) -> tuple[str, ...]:
    """What a check masks in what it shows: the connection's password and every one the operator declared."""
    return tuple(dict.fromkeys((*connection.secrets, *declared_secrets(warehouses.environ))))


def _advanced_unseen(seen: dict[str, str], key: str, newest: Any) -> bool:
    """Whether a classified column's newest value differs from the one last seen in this process
    (compared by digest); its first value is only remembered: an advance is never claimed unseen."""
    digest = hashlib.sha256(str(newest).encode()).hexdigest()
    before, seen[key] = seen.get(key), digest
    return before is not None and before != digest


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

