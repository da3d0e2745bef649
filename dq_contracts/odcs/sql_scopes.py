"""How a SQL rule's names resolve scope by scope, where sqlglot's `qualify` cannot tell (sqlrules
calls it on the tree before qualifying it): an output alias read by name outside its own SELECT."""

from __future__ import annotations

from typing import Any


def alias_refusal(tree: Any, real: dict[str, dict[str, bool]]) -> str | None:
    """An output alias read by name, unqualified, is that alias only where nothing else may be read
    by that name: in the query beside the subquery or CTE that defines it, as the only source of its
    scope holding that name (`SELECT MAX(x) FROM (SELECT amount AS x …) q`). In its own SELECT but a
    plain ORDER BY key (WHERE, GROUP BY, a join, a window) PostgreSQL reads the table's column of that
    name, undeclared or not, and DuckDB the alias; in a subquery below (correlated) a table there may
    hold a column of that name the contract does not declare: both refused (the reason returned)."""
    from sqlglot import exp
    from sqlglot.optimizer.scope import Scope, traverse_scope

    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    if not any(not c.table and c.name.lower() in aliases for c in tree.find_all(exp.Column)):
        return None
    try:
        scopes = {id(s.expression): s for s in traverse_scope(tree) if isinstance(s.expression, exp.Select)}
    except Exception:  # sqlglot's scopes fail on some odd trees: no scope, no alias read
        scopes = {}
    named = {s.alias_or_name.lower() for s in tree.find_all(exp.Table, exp.Subquery, exp.CTE)}

    def reader(col: Any, scope: Any) -> bool:  # the one derived source of its scope with this output
        if scope is None or col.name.lower() in named or col.name.lower() in {
                s.alias.lower() for s in scope.expression.selects if isinstance(s, exp.Alias)}:
            return False
        holders = [source for source in scope.selected_sources.values() if col.name.lower() in (
            {n.lower() for n in source[1].expression.named_selects} if isinstance(source[1], Scope)
            else set(real.get(source[1].name.lower(), {})))]
        return len(holders) == 1 and isinstance(holders[0][1], Scope)

    for col in tree.find_all(exp.Column):
        if col.table or col.name.lower() not in aliases:
            continue
        select = col.find_ancestor(exp.Select)
        order = col.parent.parent if isinstance(col.parent, exp.Ordered) else col.parent
        if isinstance(order, exp.Order) and order.parent is select:  # a plain key of its own ORDER BY
            continue
        if not reader(col, scopes.get(id(select))):
            return (f"the query uses {col.name!r}, an output alias, outside ORDER BY; name the expression or give "
                    "the alias a name no column has")
    return None
