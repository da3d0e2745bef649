"""The object being checked, as every check kind's functions see it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.engine.sql import as_bytes, restricted, table_for
from dq_contracts.odcs.plans import ObjectPlan
from dq_contracts.odcs.type_names import is_text

@dataclass(frozen=True)
class CheckedObject:
    """The object being checked, as every kind's functions see it: its plan, its table as this run
    reads it (the whole table, or one partition's rows), the dialect and the run's moment."""

    obj: ObjectPlan
    table: sa.TableClause  # the object's table, with every column the selected checks name
    dialect: str
    schema: str | None
    preparer: Any  # the dialect's identifier preparer
    now: dt.datetime
    files: Any = None  # connections.Files for a file server: every table is a reader of files
    partition: Any = None  # partitions.Partition: the object's table is read as that partition only
    vouched: bool = False  # the operator declared the server's credentials read-only (`_READ_ONLY`)
    # the object's columns as the catalog reads them (schema_check.read_catalog), where a check's
    # values or bounds need their types to compare exactly (engine/exact.py); read once, the schema
    # check's too; None when not read
    catalog: Any = None

    def other_table(self, physical_name: str, columns: list[str]) -> sa.TableClause:
        return table_for(physical_name, self.schema, columns, self.preparer, self.files)

    def own_table(self, columns: list[str]) -> Any:
        """The object's table with `columns`: with a partition, the subquery of its rows only."""
        if self.partition is None:
            return self.other_table(self.obj.physical_name, columns)
        table = table_for(self.obj.physical_name, self.schema, [*columns, *self.partition.columns], self.preparer,
                          self.files, self.partition)
        return restricted(table, columns, self.partition, self.obj.physical_name.split(".")[-1], self.dialect)

    def compared(self, name: str, column: ColumnElement, values: Iterable[Any] = ()) -> ColumnElement:
        """A column of the object as every check compares it: a text column's values byte by byte
        (sql.as_bytes), whatever collation or type the warehouse gave it; any other as it is."""
        return as_bytes(column, self.dialect) if is_text(self.obj.column(name), values) else column

    def key(self, name: str, column: ColumnElement) -> ColumnElement:
        """A key column as grouped, counted distinct and joined (sql.Compared)."""
        return self.compared(name, column)
