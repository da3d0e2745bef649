"""The SQL a rule runs: rendered from its checked tree (sqlrules.judge_sql_rule), never from its text.

Comments are gone, placeholders become the contract's quoted names, and partition values bound
parameters of the column's type."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable
from dq_contracts.odcs.sqlrules import _OBJECT, _PARTITION, _PROPERTY, RESERVED, SqlVerdict


BIND = RESERVED  # partition values bind as :dq_placeholder_<name>



_TEXT_BIND = re.compile(r"(?<![:\w\\]):(?=\w)")  # where SQLAlchemy's text() would see a bound parameter



@dataclass(frozen=True)
class Rendered:
    sql: str  # to run through SQLAlchemy's text(): colons not ours escaped, values as :dq_placeholder_<name>
    shown: str  # for people: the same query, partition values as literals
    values: dict[str, Any] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)



def render(verdict: SqlVerdict, parts_of: Callable[[str], list[str]], partition: tuple[str, str, dict, dict] | None
           = None, reader_of: Callable[[str], tuple[str, Any]] | None = None) -> Rendered:
    """The checked tree as SQL of its dialect: each table of the contract as its quoted (and
    qualified: `parts_of`) name, `{property}` as the quoted column, `{partition}` as the partition's
    predicate (`partition`: its SQL with :name parameters, the same with literal values, the values,
    their types) or TRUE. On a file server (`reader_of`: a table's reader function and its files) each
    table is that reader's scan of its files, the files bound, named as the table (`AS "orders"`).
    Built as nodes; no text of the contract is pasted."""
    from sqlglot import exp

    def quoted(name: str) -> Any:
        return exp.Identifier(this=name, quoted=True)

    files: dict[str, Any] = {}  # bound names of the files' paths -> the paths

    def literal(path: Any) -> Any:
        paths = [path] if isinstance(path, str) else list(path)
        return exp.Literal.string(paths[0]) if isinstance(path, str) else exp.Array(
            expressions=[exp.Literal.string(p) for p in paths])

    def table_node(physical: str, node: Any, placeholders: bool) -> Any:
        if reader_of is not None:  # the files' scan, which only the engine's reader opens
            reader, path = reader_of(physical)
            name = f"{BIND}file_{len(files) + 1}"
            files[name] = path
            argument = exp.Var(this=":" + name) if placeholders else literal(path)
            alias = node.args["alias"].copy() if node.args.get("alias") is not None else exp.TableAlias(
                this=quoted(physical.split(".")[-1]))
            return exp.Table(this=exp.Anonymous(this=reader, expressions=[argument]), alias=alias)
        parts = [quoted(p) for p in parts_of(physical)]
        table = exp.Table(this=parts[-1], db=parts[-2] if len(parts) > 1 else None,
                          catalog=parts[-3] if len(parts) > 2 else None)
        if node.args.get("alias") is not None:
            table.set("alias", node.args["alias"].copy())
        return table

    own_parts, names = verdict.own.split("."), verdict.names

    def predicate(sql: str, placeholders: bool) -> Any:
        import sqlglot

        condition = sqlglot.parse_one(sql, read=verdict.dialect or None)  # SQLAlchemy's own SQL, not the contract's
        if placeholders:
            condition = condition.transform(lambda n: exp.Var(this=":" + BIND + n.name)
                                            if isinstance(n, exp.Placeholder) else n)
        return exp.Paren(this=condition)

    def transform(node: Any, placeholders: bool) -> Any:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            parts = [p.name for p in (node.args.get("catalog"), node.args.get("db"), node.this) if p is not None]
            name = ".".join(parts)
            if name.lower() == _OBJECT:
                return table_node(verdict.own, node, placeholders)
            if len(parts) == 1 and name.lower() in ctes:
                return node
            return table_node(names.get(name.lower(), name), node, placeholders)
        if isinstance(node, exp.Column):
            if node.name.lower() == _PARTITION:
                if partition is None:
                    return exp.true()
                return predicate(partition[0] if placeholders else partition[1], placeholders)
            column = quoted(verdict.column) if node.name.lower() == _PROPERTY else node.this
            table = node.args.get("table")
            if table is not None and table.name.lower() == _OBJECT:
                table = quoted(own_parts[-1])
            return exp.Column(this=column, table=table)
        return node

    ctes = {cte.alias_or_name.lower() for cte in verdict.tree.find_all(exp.CTE)}
    dialect = verdict.dialect or None
    run = verdict.tree.copy().transform(lambda n: transform(n, True)).sql(dialect=dialect, comments=False)
    bound = dict(files)
    shown = verdict.tree.copy().transform(lambda n: transform(n, False)).sql(dialect=dialect, comments=False)
    ours = {":" + BIND + name for name in (partition[2] if partition else {})} | {":" + name for name in bound}
    run = _TEXT_BIND.sub(lambda m: ":" if run[m.start():].startswith(tuple(ours)) else "\\:", run)
    values = {BIND + k: v for k, v in (partition[2] if partition else {}).items()} | bound
    types = {BIND + k: v for k, v in (partition[3] if partition else {}).items()}
    return Rendered(run, shown, values, types)

