"""Which functions a SQL rule may call, per dialect (sqlrules judges every call with `call_refusal`).

DuckDB and PostgreSQL: every function of the engine's own catalog (`duckdb_functions()`, `pg_proc`),
allowed or refused with the reason, in a data file per dialect under `sql_catalogs/` that
`scripts/sql_catalogs.py` writes from the engine itself (a test regenerates them and fails when
they differ). A call is judged by the name the engine is asked to call: the name in the SQL rendered
from the checked tree in that dialect, which is what runs (sqlglot may render `list_contains` as
`ARRAY_CONTAINS`). Other dialects have no catalog here: a call is judged by sqlglot's name for it
against the hand-kept families below.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The hand-kept allow-list: the function families a data-quality rule needs, all read-only and local
# to the rows they are given; on a dialect without a catalog it is the whole list. Anything else is
# refused: functions that run SQL given as text (query_to_xml, query), touch files or the network
# (read_csv, pg_read_file, dblink), the session (set_config), locks, statistics, sequences, large objects,
# and those whose result is as large as an argument asks (repeat, lpad, rpad, format and printf widths).
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
               "initcap", "starts_with", "startswith", "ends_with", "endswith",
               "contains", "regexp_like", "regexp_ilike", "regexp_matches", "regexp_replace", "regexp_extract",
               "regexp_full_match", "regexp_count", "regexp_substr", "like", "ilike", "md5", "sha256", "ascii",
               "chr", "translate", "to_char", "unicode", "strlen", "len", "levenshtein",
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
                      "justify_interval", "make_interval", "to_days", "to_hours", "to_minutes", "to_seconds",
                      "timestamp"},  # MySQL's TIMESTAMP(x): what sqlglot renders a cast to TIMESTAMP as there
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
GENERATORS = FUNCTION_FAMILIES["generator"]
# generators whose output's size is set by an argument: allowed only as a table source, where the rows
# stream; as a value (`length(range(3000000000))`) the list is built whole in memory
NUMBER_GENERATORS = {"range", "generate_series", "exploding_generate_series"}

# sqlglot's forms that render as an operator or a literal, not a call, on a dialect with a catalog:
# list and array literals and their containment operators (`[1, 2]`, `ARRAY[…]`, `&&`, `@>`, `<@`), and
# PostgreSQL's jsonb key tests (`j ? 'k'`, `?|`, `?&`: sqlglot's names, split at each capital)
OPERATOR_FORMS = {"array", "array_overlaps", "array_contains_all", "array_contained_by", "j_s_o_n_b_contains_top_key",
                  "j_s_o_n_b_contains_any_top_keys", "j_s_o_n_b_contains_all_top_keys"}
# grammar that sqlglot reads as a call of a function it does not know: `x <> ALL(ARRAY[…])`
GRAMMAR = {"all", "any", "some"}

CATALOGS = {"duckdb": "duckdb.tsv", "postgres": "postgres.tsv"}  # sqlglot dialect -> its catalog's file
_CALL = re.compile(r'\s*"?([A-Za-z_][A-Za-z0-9_]*)"?\s*\(')


@dataclass(frozen=True)
class Catalog:
    engine: str
    allowed: frozenset[str]
    refused: dict[str, str]  # name -> why


@functools.cache
def catalog_of(dialect: str | None) -> Catalog | None:
    """The dialect's function catalog, read from its data file on first use; None without one."""
    if dialect not in CATALOGS:
        return None
    allowed, refused, engine = set(), {}, dialect
    for line in (Path(__file__).parent / "sql_catalogs" / CATALOGS[dialect]).read_text().splitlines():
        if line.startswith("#"):
            engine = engine if engine != dialect else line[2:].split(":")[0]
            continue
        name, verdict, why = line.split("\t")
        if verdict == "allowed":
            allowed.add(name)
        else:
            refused[name] = why
    return Catalog(engine, frozenset(allowed), refused)


def sqlglot_name(call: Any) -> str:
    """sqlglot's name for a call: the name written for a function it does not know, else its own."""
    from sqlglot import exp

    return (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()


def called_name(call: Any, dialect: str | None) -> str | None:
    """The function the engine is asked to call: the name of the call as the checked tree renders it
    in the dialect, or None where it renders as an operator or a literal."""
    from sqlglot import exp

    if isinstance(call, exp.Anonymous):
        return call.name.lower()
    match = _CALL.match(call.sql(dialect=dialect))
    return match.group(1).lower() if match else None


def call_refusal(call: Any, dialect: str | None, source: bool = False) -> str | None:
    """Why a call may not run in a rule on `dialect`, or None; `source`: the call is a table source."""
    name, catalog = sqlglot_name(call), catalog_of(dialect)
    if name in NUMBER_GENERATORS and not source:
        return (f"the query calls {name}() as a value, whose size is set by an argument (memory outside the "
                "engine's limits); a number generator may stand only as a table source (FROM …)")
    if catalog is None:
        if name in ALLOWED_FUNCTIONS:
            return None
        return (f"the query calls {name}(), which is not on the allow-list of read-only functions "
                f"({', '.join(FUNCTION_FAMILIES)})")
    try:
        called = called_name(call, dialect)
    except Exception:  # sqlglot cannot render some odd calls (a DATE() of nothing): nothing to run
        return f"the query's {name}() cannot be rendered as {dialect} SQL"
    if called is None:  # an operator or literal sqlglot renders for a form it knows
        return None if name in ALLOWED_FUNCTIONS | OPERATOR_FORMS else (
            f"the query uses {name}, which is not a read-only form the judge knows")
    if called in catalog.allowed or called in GRAMMAR or called in GENERATORS - NUMBER_GENERATORS or (
            source and called in NUMBER_GENERATORS):
        return None
    if called in catalog.refused:
        return f"the query calls {called}(), which {catalog.engine} may not run in a rule: {catalog.refused[called]}"
    if called in ALLOWED_FUNCTIONS:  # grammar, not a function of the catalog (EXTRACT, COALESCE on PostgreSQL)
        return None
    return f"the query calls {called}(), which is not a function of {catalog.engine}'s catalog"


# Calls whose result may be longer than their input by a factor the query sets. `replace` with a
# literal replacement no longer than its (non-empty, literal) pattern never grows text and is not one
# of them; any other `replace`, and every `regexp_replace` (an empty match, `\0`) and `overlay`, is.
# One such call in a query is bounded by its data times its literal; two, nested or chained through
# a CTE, multiply (eight nested `replace`s: 1e8 characters), so a query holds at most one, and what
# it inserts is a string literal. `translate` maps a character to at most one: it never grows.
GROWING = {"replace": "replacement", "regexp_replace": "replacement", "overlay": "expression"}
# concatenations: bounded by the data where they stand in the outer query (`first || ' ' || last`)
CONCATENATING = {"concat", "concat_ws", "array_concat", "array_append", "array_prepend", "list_concat", "list_cat",
                 "array_cat", "list_append", "list_prepend", "array_push_back", "array_push_front"}
# a collation is a plain name of the engine's own: never qualified (`hr.x` looks in another schema)
_COLLATION = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")


def _grows(call: Any) -> bool:
    from sqlglot import exp

    if sqlglot_name(call) != "replace":
        return True
    pattern, replacement = call.args.get("expression"), call.args.get("replacement")
    return not (isinstance(pattern, exp.Literal) and pattern.is_string and pattern.this
                and isinstance(replacement, exp.Literal) and replacement.is_string
                and len(replacement.this) <= len(pattern.this))


def growth_refusal(root: Any) -> str | None:
    """Why the text-growing calls of a tree could build a value beyond the engine's memory, or None."""
    from sqlglot import exp

    growing = [c for c in root.find_all(exp.Func) if sqlglot_name(c) in GROWING and _grows(c)]
    for call in growing:
        inserted = call.args.get(GROWING[sqlglot_name(call)])
        if not (isinstance(inserted, exp.Literal) and inserted.is_string):
            return (f"the query's {sqlglot_name(call)}() inserts {inserted.sql()[:40] if inserted else 'nothing'}, "
                    "not a string literal: text that grows by a factor the query sets")
    for node in [*growing, *root.find_all(exp.Func, exp.DPipe)]:
        if (isinstance(node, exp.DPipe) or sqlglot_name(node) in CONCATENATING or node in growing) and (
                why := _where_growth_multiplies(node)):
            shown = "||" if isinstance(node, exp.DPipe) else f"{sqlglot_name(node)}()"
            return f"the query's {shown} stands {why}, where what it builds can grow again by a factor"
    if len(growing) > 1:
        return (f"the query holds {len(growing)} calls that grow text ({', '.join(sqlglot_name(c) for c in growing)}"
                "): nested or chained they multiply a value's size; one is allowed (a replace() of a literal "
                "no longer than its pattern does not count)")
    return None


def _where_growth_multiplies(node: Any) -> str | None:
    """Where a value built by growing or concatenating could be grown again, each time by a factor:
    in a lambda (`list_reduce(…, (a, x) -> a || a)` doubles per item) or in the output of a CTE or
    subquery (a chain of CTEs each `v || v` doubles per CTE). In the outer query the growth is
    additive, bounded by the query's length times the data."""
    from sqlglot import exp

    if node.find_ancestor(exp.Lambda) is not None:
        return "in a lambda"
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, exp.Select):
        child, parent = parent, parent.parent
    if parent is not None and child.arg_key == "expressions" and parent.find_ancestor(exp.CTE, exp.Subquery):
        return "in the output of a CTE or subquery"
    return None


def collation_refusal(collate: Any) -> str | None:
    """Why a COLLATE's collation is not a plain built-in name, or None."""
    from sqlglot import exp

    name = collate.expression
    plain = isinstance(name, (exp.Identifier, exp.Var)) or (isinstance(name, exp.Literal) and name.is_string)
    if plain and _COLLATION.match(str(name.this)):
        return None
    return (f"the query collates by {name.sql()[:60] if name is not None else 'nothing'}, which is not a plain "
            "collation name (a qualified name looks in another schema)")
