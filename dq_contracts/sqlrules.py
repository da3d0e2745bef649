"""Judge a contract's raw SQL rule before anything runs it.

A `type: sql` rule is the only SQL text that does not come from SQLAlchemy expressions. It is
parsed with sqlglot in the server's dialect and accepted only as exactly one read-only query
(a SELECT or a set operation of SELECTs) with no data-changing node anywhere in its tree, not
even inside a CTE. Queries also run inside a read-only transaction: this is the first of two locks.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

_PLACEHOLDER = re.compile(r"\$?\{([A-Za-z_][A-Za-z0-9_]*)\}")
TABLE_PLACEHOLDERS = {"object", "table", "model"}
COLUMN_PLACEHOLDERS = {"property", "column", "field"}

_WRITE_NODES = ("Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "Command", "Into", "Copy",
                "TruncateTable", "Transaction", "Commit", "Rollback", "Set", "Grant", "Revoke", "Use", "Pragma",
                "Analyze", "Refresh", "LoadData", "Attach", "Detach", "Install", "Lock")


@functools.cache
def _writes() -> tuple[type, ...]:
    """sqlglot's data-changing node types. sqlglot is imported on the first SQL rule judged, not with
    the package: it costs a tenth of a second or more of every process's start-up, and most
    contracts hold no SQL rule."""
    from sqlglot import exp

    return tuple(getattr(exp, name) for name in _WRITE_NODES if hasattr(exp, name))
# The allow-list: the function families a data-quality rule needs, all read-only and local to the
# rows they are given. Anything else is refused: functions that run SQL given as text
# (query_to_xml, query), touch files or the network (read_csv, pg_read_file, dblink), the session
# (set_config), locks, statistics, sequences, large objects, and every name not listed here.
FUNCTION_FAMILIES: dict[str, set[str]] = {
    "aggregate": {"count", "count_if", "countif", "sum", "avg", "mean", "min", "max", "median", "mode", "stddev",
                  "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "variance_pop", "variance_samp",
                  "bool_and", "bool_or", "logical_and", "logical_or", "every", "any_value", "approx_distinct",
                  "approx_count_distinct", "group_concat", "string_agg", "listagg", "array_agg", "percentile_cont",
                  "percentile_disc", "quantile", "quantile_cont", "quantile_disc", "corr", "covar_pop",
                  "covar_samp", "first", "last", "arg_max", "arg_min", "argmax", "argmin", "max_by", "min_by",
                  "approx_quantile", "sum_if", "avg_if", "filter"},
    "string": {"lower", "upper", "length", "char_length", "character_length", "octet_length", "bit_length",
               "trim", "ltrim", "rtrim", "btrim", "substring", "substr", "left", "right", "replace", "concat",
               "concat_ws", "dpipe", "position", "strpos", "str_position", "instr", "split_part", "reverse",
               "repeat", "lpad", "rpad", "pad", "initcap", "starts_with", "startswith", "ends_with", "endswith",
               "contains", "regexp_like", "regexp_ilike", "regexp_matches", "regexp_replace", "regexp_extract",
               "regexp_full_match", "regexp_count", "regexp_substr", "like", "ilike", "md5", "sha256", "ascii",
               "chr", "translate", "to_char", "format", "printf", "unicode", "strlen", "len", "levenshtein",
               "split", "string_split", "string_to_array"},
    "math": {"abs", "round", "floor", "ceil", "ceiling", "mod", "power", "pow", "sqrt", "cbrt", "ln", "log",
             "log10", "log2", "exp", "greatest", "least", "sign", "trunc", "truncate", "div", "intdiv", "safe_divide",
             "pi", "degrees", "radians", "isnan", "isinf", "is_nan", "is_inf"},
    "date and time": {"date_trunc", "timestamp_trunc", "datetime_trunc", "time_trunc", "date_part", "datepart",
                      "extract", "now", "current_date", "current_timestamp", "current_time", "current_datetime",
                      "localtimestamp", "localtime", "age", "datediff", "date_diff", "timestamp_diff",
                      "timestampdiff", "datetime_diff", "date_add", "date_sub", "dateadd", "timestamp_add",
                      "timestamp_sub", "ts_or_ds_add", "ts_or_ds_diff", "to_date", "to_timestamp", "str_to_time",
                      "str_to_date", "time_to_str", "time_str_to_time", "time_str_to_date", "ts_or_ds_to_date",
                      "strftime", "strptime", "make_date", "make_timestamp", "epoch", "epoch_ms", "unix_to_time",
                      "time_to_unix", "date", "day", "dayofweek", "dayofmonth", "dayofyear", "week", "weekofyear",
                      "month", "quarter", "year", "hour", "minute", "second", "last_day", "date_from_parts",
                      "justify_interval", "make_interval", "to_days", "to_hours", "to_minutes", "to_seconds"},
    "cast and condition": {"cast", "try_cast", "trycast", "coalesce", "nullif", "case", "if", "iff", "ifnull",
                           "nvl", "nvl2", "try", "typeof", "is_null", "between", "in", "isnull"},
    "window": {"row_number", "rank", "dense_rank", "lag", "lead", "first_value", "last_value", "nth_value",
               "ntile", "percent_rank", "cume_dist"},
    "generator": {"range", "generate_series", "exploding_generate_series", "unnest", "explode"},
    "logic and JSON": {"and", "or", "xor", "not", "exists", "collate", "json_extract", "json_extract_scalar",
                       "jsonb_extract", "jsonb_extract_scalar", "jsonb_contains", "json_array_contains",
                       "array_contains", "array_position", "array_length", "array_size", "list_contains",
                       "cardinality"},
}
ALLOWED_FUNCTIONS = set().union(*FUNCTION_FAMILIES.values())
# a table reference that names a file: DuckDB reads it (a replacement scan) when no such table exists
_FILE_LIKE = re.compile(r"[/\\:]|\.(csv|tsv|txt|parquet|json|jsonl|ndjson|gz|zst|xlsx?|arrow|avro)$", re.I)


@dataclass(frozen=True)
class SqlVerdict:
    sql: str  # the query with placeholders substituted
    refusal: str | None = None
    unresolved: tuple[str, ...] = field(default_factory=tuple)


# `{partition}`: the rows of the partition being checked; true when the whole table is (and when judged)
PARTITION_PLACEHOLDER = "partition"
WHOLE_TABLE = "(1 = 1)"


def substitute(query: str, table: str | None, column: str | None,
               partition: str = WHOLE_TABLE) -> tuple[str, tuple[str, ...]]:
    unresolved: list[str] = []

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name == PARTITION_PLACEHOLDER and match.group(0).startswith("{"):
            return partition
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
    import sqlglot
    from sqlglot import exp

    writes = _writes()
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
        if isinstance(node, writes):
            return f"the query contains {node.key.upper()}; only reads are allowed"
        if isinstance(node, exp.Lock):
            return "the query locks rows (FOR UPDATE/SHARE); only plain reads are allowed"
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name not in ALLOWED_FUNCTIONS:
                return (f"the query calls {name}(), which is not on the allow-list of read-only functions "
                        f"({', '.join(FUNCTION_FAMILIES)})")
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and _FILE_LIKE.search(node.name):
            return f"the query reads {node.name!r}, which names a file, not a table of the server"
    return None


def may_show_values(sql: str, dialect: str | None, columns: set[str]) -> bool:
    """Whether a rule's result could be a value of one of `columns` (not only a count of rows): it
    names one of them and its result is anything but COUNT(...). Unparseable: assume it could."""
    import sqlglot
    from sqlglot import exp

    try:
        root = sqlglot.parse_one(sql, read=dialect or None)
    except Exception:
        return True
    named = {c.name.lower() for c in root.find_all(exp.Column)}
    if not named & {c.lower() for c in columns}:
        return False
    outputs = root.expressions if isinstance(root, exp.Select) else []
    return not (len(outputs) == 1 and isinstance(outputs[0].unalias(), exp.Count))
