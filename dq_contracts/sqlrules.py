"""Judge a contract's raw SQL rule before anything runs it.

A `type: sql` rule is the only SQL text that does not come from SQLAlchemy expressions. It is
parsed with sqlglot in the server's dialect and accepted only as exactly one read-only query
(a SELECT or a set operation of SELECTs) with no data-changing node anywhere in its tree, not
even inside a CTE. Queries also run inside a read-only transaction: this is the first of two locks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

_PLACEHOLDER = re.compile(r"\$?\{([A-Za-z_][A-Za-z0-9_]*)\}")
TABLE_PLACEHOLDERS = {"object", "table", "model"}
COLUMN_PLACEHOLDERS = {"property", "column", "field"}

_WRITES = tuple(
    getattr(exp, name)
    for name in ("Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command", "Into",
                 "Copy", "TruncateTable", "Transaction", "Commit", "Rollback", "Set", "Grant", "Revoke",
                 "Use", "Pragma", "Analyze", "Refresh", "LoadData", "Attach", "Detach", "Install", "Lock")
    if hasattr(exp, name)
)
# Functions that change state even inside a SELECT.
_SIDE_EFFECT_FUNCTIONS = {
    "nextval", "setval", "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "set_config",
    "lo_import", "lo_export", "lo_unlink", "lo_creat", "lo_create", "lo_put", "lo_from_bytea", "lo_truncate",
    "pg_logical_emit_message", "pg_switch_wal", "pg_create_restore_point", "dblink_exec", "dblink", "pg_advisory_lock",
    "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_sleep", "query_table", "read_csv",
    "read_csv_auto", "read_parquet", "read_json", "read_json_auto", "read_text", "read_blob",
}


@dataclass(frozen=True)
class SqlVerdict:
    sql: str  # the query with placeholders substituted
    refusal: str | None = None
    unresolved: tuple[str, ...] = field(default_factory=tuple)


def substitute(query: str, table: str | None, column: str | None) -> tuple[str, tuple[str, ...]]:
    unresolved: list[str] = []

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name in TABLE_PLACEHOLDERS and table is not None:
            return table
        if name in COLUMN_PLACEHOLDERS and column is not None:
            return column
        unresolved.append(match.group(0))
        return match.group(0)

    return _PLACEHOLDER.sub(replace, query), tuple(dict.fromkeys(unresolved))


def judge_sql_rule(query: str, *, dialect: str | None, table: str | None, column: str | None) -> SqlVerdict:
    sql, unresolved = substitute(query, table, column)
    if unresolved:
        return SqlVerdict(sql, None, unresolved)
    return SqlVerdict(sql, read_only_refusal(sql, dialect))


def read_only_refusal(sql: str, dialect: str | None) -> str | None:
    """None when `sql` is one read-only query; otherwise why it is refused."""
    if not sql.strip():
        return "the query is empty"
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect or None) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"the query does not parse as {dialect or 'SQL'}: {first[:200]}"
    except Exception as exc:  # sqlglot raises a few non-SqlglotError types on odd input
        return f"the query does not parse: {type(exc).__name__}"
    if len(statements) != 1:
        return f"the query holds {len(statements)} statements; one SELECT is allowed"
    root = statements[0]
    if not isinstance(root, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery)):
        kind = root.key.upper()
        if isinstance(root, exp.Column):  # sqlglot reads bare words as a column
            return "the query is not SQL (plain text?); one SELECT is allowed"
        return f"the query is {'an' if kind[0] in 'AEIOU' else 'a'} {kind}, not a SELECT"
    for node in root.walk():
        if isinstance(node, _WRITES):
            return f"the query contains {node.key.upper()}; only reads are allowed"
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in _SIDE_EFFECT_FUNCTIONS:
                return f"the query calls {name}(), which has side effects"
    return None
