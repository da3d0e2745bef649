"""Write the read-only function lists of the SQL rule judge from each engine's own function catalog.

    python scripts/sql_catalogs.py [--postgres URL]   # rewrites dq_contracts/odcs/sql_catalogs/*.tsv

The pure core (dq_contracts/odcs) cannot ask an engine at run time, so the lists are committed data
files, one per dialect, each line a function name, `allowed` or `refused`, and the filter's reason.
`dq_contracts_tests/odcs/test_sql_catalogs.py` regenerates them from the installed DuckDB and the test
PostgreSQL and fails when they differ. The filter's rules are the two tables below: a name is refused
by the first rule that matches any of its entries; a name with no entry left is refused too. Under the
threat model a contract may read only its own tables: what reads files, settings, the catalog, other
sessions or the server's state is refused, and so is what is volatile (a write, a lock, a sleep, a
sequence, or a value that changes from call to call: a check's verdict must not).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "dq_contracts" / "odcs" / "sql_catalogs"

# a result as large as an argument asks (`repeat('x', 3000000000)`): memory outside the engine's
# limits, whatever the data. A number generator still reads as a table source, where it streams.
SIZED = "its result's size is set by an argument, not by the data (memory outside the engine's limits)"
# (name pattern, reason): refused whatever the catalog says of the function
DUCKDB_NAMES = [
    (r"^(read_|glob$|sniff_|parquet_|.*_scan$|query$|query_table$)", "reads files or runs SQL given as text"),
    (r"^(current_setting|getenv|duckdb_|pragma_|which_secret|checkpoint|force_checkpoint|enable_|disable_)",
     "reads or changes the session's settings or catalog"),
    (r"^(current_(database|schema|schemas|catalog|query|user|role|connection_id|transaction_id)|session_user|user"
     r"|in_search_path|txid_current|version|get_block_size|stats|getvariable)$", "reads the session's or the server's state"),
    (r"^(pg_|has_.*privilege$|col_description$|obj_description$|format_type$|format_pg_type$|map_to_pg_oid$"
     r"|inet_(client|server)_)", "reads the catalog (PostgreSQL's compatibility functions)"),
    (r"^(sleep_ms|error|write_log)$", "sleeps, raises or logs"),
    (r"^json_(serialize_plan|serialize_sql|deserialize_sql|execute_serialized_sql)$",
     "binds or runs SQL given as text (reads other schemas' structure, opens files)"),
    (r"^(make_type|get_type)$", "looks a type up in the catalog by a name given as text"),
    (r"^(repeat|lpad|rpad|list_resize|array_resize|range|generate_series|format|printf|bar|to_base"
     r"|equi_width_bins)$", SIZED),
]
POSTGRES_NAMES = [
    (r"^pg_", "reads the server's catalog, files, settings, statistics or other sessions (pg_*)"),
    (r"^(query_to_|ts_stat$|ts_rewrite$|cursor_to_|database_to_|schema_to_|table_to_)", "runs SQL given as text"),
    (r"^(current_(setting|database|schema|schemas|catalog|query|user|role)|session_user|user|version"
     r"|inet_(client|server)_(addr|port)|txid_|row_security_active$|shobj_description$|obj_description$"
     r"|col_description$|has_.*privilege$|to_reg|getpgusername$|getdatabaseencoding$)",
     "reads the session's or the server's state, or the catalog"),
    (r"^xml", "parses, builds or queries XML documents"),
    (r"(_send|_recv)$", "a type's binary input or output function"),
    (r"^(lo_|lo$|loread$|lowrite$|dblink)", "large objects or other servers"),
    (r"^(set_config|nextval|setval|currval|lastval)$", "settings or sequences"),
    (r"^(repeat|lpad|rpad|array_fill|format|generate_series)$", SIZED),
    (r"^(ts_parse|ts_token_type|ts_match_tt|ts_match_tq)$",
     "looks a text-search parser or configuration up by name (the catalog, or the session's setting)"),
]
# argument or result types of functions that are not for a query to call, and why
POSTGRES_TYPES = {
    "internal": "an internal support function", "cstring": "a type's input or output function",
    "trigger": "a trigger function", "event_trigger": "a trigger function",
    "language_handler": "an internal support function", "fdw_handler": "an internal support function",
    "index_am_handler": "an internal support function", "tsm_handler": "an internal support function",
    "table_am_handler": "an internal support function", "xml": "parses, builds or queries XML documents",
}
# types whose input function looks a name up in the catalog: a string given where one is expected is
# cast to it (`to_tsvector('hr.nosuch', 'x')`), so a function with any overload taking one is refused
# (the text-search family with a configuration, table_to_xml…); its error tells schemas apart
NAME_TYPES = {"regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype", "regconfig",
              "regdictionary", "regnamespace", "regrole", "regcollation"}
# types that name an object of the database: a function taking only these looks the catalog up
OBJECT_TYPES = {"oid", "regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype", "regconfig",
                "regdictionary", "regnamespace", "regrole", "regcollation", "xid", "xid8", "cid", "tid", "pg_lsn",
                "oidvector"}  # oidvectortypes('16 23'): the names of types by their identifiers


def _by_name(name: str, rules: list[tuple[str, str]]) -> str | None:
    return next((why for pattern, why in rules if re.search(pattern, name)), None)


def duckdb_rows(connection=None) -> list[tuple[str, str, str]]:
    """(name, allowed|refused, reason) of every function `duckdb_functions()` lists, in a session as
    a check opens it (no extension autoloaded): scalars and aggregates that are not volatile, macros
    whose definition calls only allowed functions and reads no table."""
    import duckdb
    import sqlglot
    from sqlglot import exp

    con = connection or duckdb.connect(config={"autoinstall_known_extensions": False,
                                               "autoload_known_extensions": False})
    entries: dict[str, list[tuple[str, bool, str, str]]] = {}
    for name, kind, effects, stability, macro in con.execute(
            "SELECT function_name, function_type, has_side_effects, stability, macro_definition "
            "FROM duckdb_functions()").fetchall():
        entries.setdefault(name.lower(), []).append((kind, bool(effects), stability or "", macro or ""))
    verdicts: dict[str, tuple[str, str]] = {}
    macros: dict[str, list[str]] = {}
    for name, rows in entries.items():
        kinds = {k for k, *_ in rows}
        why = _by_name(name, DUCKDB_NAMES)
        if why is None and kinds <= {"table", "table_macro", "pragma"}:
            why = "a table function or pragma: reads tables, files or the catalog"
        # a name that is also a table function (range, generate_series) is judged as a value here; as a
        # table the judge takes only its number generators
        rows = [r for r in rows if r[0] not in ("table", "table_macro", "pragma")] or rows
        kinds = {k for k, *_ in rows}
        if why is None and any(e or s == "VOLATILE" for _, e, s, _ in rows):
            why = "volatile: has side effects or changes from call to call"
        if why is not None:
            verdicts[name] = ("refused", why)
            continue
        if "macro" in kinds:
            try:
                calls = []
                for _, _, _, definition in rows:
                    tree = sqlglot.parse_one(definition, read="duckdb")
                    if next(tree.find_all(exp.Select, exp.Table), None) is not None:
                        raise ValueError("reads a table")
                    calls += [_call_name(f) for f in tree.find_all(exp.Func)]
                macros[name] = [c for c in calls if c]
            except Exception:
                verdicts[name] = ("refused", "a macro that reads tables or the catalog")
            continue
        verdicts[name] = ("allowed", ", ".join(sorted(kinds)))
    changed = True
    while changed:  # a macro is allowed once every function it calls is
        changed = False
        for name, calls in list(macros.items()):
            bad = [c for c in calls if verdicts.get(c, ("refused",))[0] == "refused" and c not in macros
                   and c not in DUCKDB_SYNTAX]
            if bad:
                verdicts[name] = ("refused", f"a macro that calls {bad[0]}()")
            elif all(c in verdicts or c in DUCKDB_SYNTAX for c in calls):
                verdicts[name] = ("allowed", "macro")
            else:
                continue
            del macros[name]
            changed = True
    for name in macros:
        verdicts[name] = ("refused", "a macro whose calls cannot be resolved")
    return sorted((n, *v) for n, v in verdicts.items())


# forms the judge knows that are not functions of the catalog (grammar, or generators it allows as such)
DUCKDB_SYNTAX = {"cast", "try_cast", "coalesce", "case", "unnest"}


def _call_name(call) -> str:
    from sqlglot import exp

    if isinstance(call, exp.Anonymous):
        return call.name.lower()
    text = call.sql(dialect="duckdb")
    match = re.match(r'\s*"?([A-Za-z_][A-Za-z0-9_]*)"?\s*\(', text)
    return match.group(1).lower() if match else ""


def postgres_rows(url: str) -> list[tuple[str, str, str]]:
    """(name, allowed|refused, reason) of every function of `pg_catalog` in `pg_proc`: functions,
    aggregates and window functions that are immutable or stable, minus the rules above."""
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    query = sa.text(
        "SELECT p.proname, p.prokind, p.provolatile, "
        "       ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) AS t), "
        "       format_type(p.prorettype, NULL) "
        "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'pg_catalog'")
    with engine.connect() as c:
        rows = c.execute(query).fetchall()
    engine.dispose()
    entries: dict[str, list[tuple[str, str, list[str], str]]] = {}
    for name, kind, volatile, args, result in rows:
        entries.setdefault(name.lower(), []).append((kind, volatile, list(args), result))
    out = []
    for name, overloads in entries.items():
        why = _by_name(name, POSTGRES_NAMES)
        if why is None and any(k == "p" for k, *_ in overloads):
            why = "a procedure"
        if why is None and any(v == "v" for _, v, _, _ in overloads):
            why = "volatile: has side effects or changes from call to call"
        types = {t for _, _, args, result in overloads for t in [*args, result]}
        if why is None:
            why = next((POSTGRES_TYPES[t] for t in sorted(types) if t in POSTGRES_TYPES), None)
        if why is None and any(a in NAME_TYPES for _, _, args, _ in overloads for a in args):
            why = "takes a name of the database as text (a string is looked up in the catalog)"
        if why is None and all(any(a in OBJECT_TYPES for a in args) for _, _, args, _ in overloads):
            why = "looks an object of the database up by its identifier (reads the catalog)"
        if why is None and any(result.startswith("reg") for *_, result in overloads):
            why = "looks an object of the database up by its name (reads the catalog)"
        kinds = sorted({ {"f": "function", "a": "aggregate", "w": "window"}[k] for k, *_ in overloads})
        out.append((name, "refused", why) if why else (name, "allowed", ", ".join(kinds)))
    return sorted(out)


def render(engine: str, version: str, rows: list[tuple[str, str, str]]) -> str:
    head = (f"# {engine} {version}: every function of its catalog, allowed or refused in a SQL rule, and why.\n"
            "# Generated by scripts/sql_catalogs.py from the engine itself; do not edit by hand.\n")
    return head + "".join(f"{name}\t{verdict}\t{why}\n" for name, verdict, why in rows)


def duckdb_text() -> str:
    import duckdb

    return render("DuckDB", duckdb.__version__, duckdb_rows())


def postgres_text(url: str) -> str:
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as c:
        version = c.exec_driver_sql("SHOW server_version").scalar().split()[0]
    engine.dispose()
    return render("PostgreSQL", version.split(".")[0], postgres_rows(url))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a PostgreSQL URL (SQLAlchemy's) to read pg_proc from")
    args = parser.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    (OUT / "duckdb.tsv").write_text(duckdb_text())
    if args.postgres:
        (OUT / "postgres.tsv").write_text(postgres_text(args.postgres))
    return 0


if __name__ == "__main__":
    sys.exit(main())
