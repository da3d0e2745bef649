"""The object being checked, as every check kind's functions see it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from dq_contracts.engine.sql import restricted, table_for
from dq_contracts.odcs.plans import ObjectPlan


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

    def other_table(self, physical_name: str, columns: list[str]) -> sa.TableClause:
        return table_for(physical_name, self.schema, columns, self.preparer, self.files)

    def own_table(self, columns: list[str]) -> Any:
        """The object's table with `columns`: with a partition, the subquery of its rows only."""
        if self.partition is None:
            return self.other_table(self.obj.physical_name, columns)
        table = self.other_table(self.obj.physical_name, [*columns, *self.partition.columns])
        return restricted(table, columns, self.partition, self.obj.physical_name.split(".")[-1])
