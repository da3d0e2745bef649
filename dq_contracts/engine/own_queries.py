"""The check kinds that do work of their own on the connection, rather than a column of the
table's one aggregate scan: a relationship's anti-join, a contract's SQL rule (judged again as a
tree and run as it), the schema check's catalog read; and `execute`, which runs each of them
remembering its SQL for people to read (`LAST_SQL`, `readable`).

Apart from check_kinds.py, whose `KINDS` names these functions in its rows, so that the table of
kinds stays one screen of rows and the measures of the aggregate beside it; this module imports
nothing of check_kinds.py.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from dq_contracts.odcs.plans import CheckPlan, ObjectPlan
from dq_contracts.odcs.sqlrender import render as render_rule
from dq_contracts.odcs.sqlrules import judge_sql_rule
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.dialect_duckdb import READERS
from dq_contracts.engine.dialects import MissingTable, rule_refusal
from dq_contracts.engine.schema_check import differences
from dq_contracts.engine.sql import orphan_samples, orphans, partition_condition, qualified_parts, render
from dq_contracts.engine.verdicts import Unmeasurable

LAST_SQL = "dq_contracts_last_sql"  # connection.info key: the SQL a kind ran, shown with its result


def readable(statement: Any, engine: sa.Engine) -> str:
    """A statement's SQL for people to read: values rendered; a SQL rule's as its checked tree
    rendered (its `{partition}` values as literals)."""
    shown = getattr(statement, "dq_shown", None)
    return shown if shown is not None else render(statement, engine)


def execute(connection: sa.Connection, statement: Any) -> sa.CursorResult:
    """Run a statement, remembering its SQL for people to read (values rendered)."""
    connection.info[LAST_SQL] = readable(statement, connection.engine)
    return connection.execute(statement)


def relationship_tables(check: CheckPlan, checked: CheckedObject) -> tuple[sa.TableClause, sa.TableClause]:
    target = checked.other_table(check.params["target_table"], check.params["target_columns"])
    source = checked.own_table(check.params["columns"])  # a partition's rows, pointing into the whole target
    return source, target


def relationship(check: CheckPlan, checked: CheckedObject, connection: sa.Connection) -> Any:
    source, target = relationship_tables(check, checked)
    return execute(connection, orphans(source, check.params["columns"], target,
                                       check.params["target_columns"], checked.key)).scalar()


def relationship_samples(check: CheckPlan, checked: CheckedObject, limit: int) -> sa.Select:
    source, target = relationship_tables(check, checked)
    return orphan_samples(source, check.params["columns"], target, check.params["target_columns"], limit,
                          checked.key)


def rule_tables(check: CheckPlan, obj: ObjectPlan) -> dict[str, dict[str, bool]]:
    """What a SQL rule may read: the contract's objects on its server as compiled (`params["tables"]`),
    the rule's own object as the plan has it now (its classification may come from other contracts)."""
    tables = {name: dict(columns) for name, columns in (check.params.get("tables") or {}).items()}
    tables[obj.physical_name] = {c.physical_name: c.classified for c in obj.columns}
    return tables


def rule_statement(check: CheckPlan, checked: CheckedObject) -> sa.TextClause:
    """A contract's SELECT, judged again as a tree in this server's dialect and run as that tree
    rendered: names quoted as nodes, `{partition}` a predicate of bound, typed values."""
    refusal = rule_refusal(checked.dialect, checked.vouched)
    if refusal:
        raise Unmeasurable(f"not run: {refusal}")
    verdict = judge_sql_rule(str(check.params["query"]), dialect=checked.dialect, own=checked.obj.physical_name,
                             column=check.params.get("column"), tables=rule_tables(check, checked.obj))
    if verdict.refusal or verdict.unresolved:
        raise Unmeasurable(f"not run: {verdict.refusal or ', '.join(verdict.unresolved)}")
    partition = None
    if checked.partition is not None and verdict.partitioned:
        partition = partition_condition(checked.partition, checked.preparer.dialect)
    reader_of = None  # a lake's tables have names (engine/lake.py registers them)
    if checked.files is not None and not hasattr(checked.files, "attach"):
        # a file server's: each table is its reader's scan of its own files
        files = checked.files
        reader_of = lambda name: (READERS[files.format], files.path_of(name))  # noqa: E731
    rendered = render_rule(verdict, lambda name: qualified_parts(name, checked.schema), partition, reader_of)
    statement = sa.text(rendered.sql).bindparams(*(sa.bindparam(name, value, type_=rendered.types.get(name))
                                                   for name, value in rendered.values.items()))
    statement.dq_shown = rendered.shown  # what people read: the same tree, values as literals
    return statement


def sql_rule(check: CheckPlan, checked: CheckedObject, connection: sa.Connection) -> Any:
    """A contract's raw SELECT; it must answer exactly one value."""
    rows = execute(connection, rule_statement(check, checked)).fetchmany(2)
    if len(rows) != 1 or len(rows[0]) != 1:
        shape = "no row" if not rows else ("several rows" if len(rows) > 1 else f"{len(rows[0])} columns")
        raise Unmeasurable(f"a SQL rule must return exactly one row of one column; this one returned {shape}")
    return rows[0][0]


def catalog(check: CheckPlan, checked: CheckedObject, connection: sa.Connection) -> dict[str, Any]:
    try:
        return differences(check, checked, connection)
    except MissingTable as exc:
        raise Unmeasurable(str(exc)) from exc
