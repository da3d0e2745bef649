"""The judge's per-dialect function lists are the engines' own catalogs (odcs/sql_catalogs/): each file
is what scripts/sql_catalogs.py writes from the installed DuckDB and the test PostgreSQL, byte for
byte, so a new engine release that adds, removes or changes a function fails here until the files
are written again (`python scripts/sql_catalogs.py --postgres URL`) and the change is read."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = ROOT / "dq_contracts" / "odcs" / "sql_catalogs"


def generator():
    spec = importlib.util.spec_from_file_location("sql_catalogs", ROOT / "scripts" / "sql_catalogs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_duckdb_list_is_duckdbs_own_catalog():
    assert generator().duckdb_text() == (CATALOGS / "duckdb.tsv").read_text()


@pytest.mark.postgres
def test_the_postgresql_list_is_postgresqls_own_catalog(postgres):
    assert generator().postgres_text(postgres.url()) == (CATALOGS / "postgres.tsv").read_text()


# what each engine's catalog must say of a few names whatever its release: the filter's classes
EXPECTED = [
    ("duckdb", "list_contains", "allowed"), ("duckdb", "list_filter", "allowed"), ("duckdb", "list_sum", "allowed"),
    ("duckdb", "read_csv", "refused"), ("duckdb", "glob", "refused"), ("duckdb", "query", "refused"),
    ("duckdb", "current_setting", "refused"), ("duckdb", "getvariable", "refused"), ("duckdb", "random", "refused"),
    ("duckdb", "setseed", "refused"), ("duckdb", "nextval", "refused"), ("duckdb", "duckdb_settings", "refused"),
    ("duckdb", "sleep_ms", "refused"), ("duckdb", "pg_get_viewdef", "refused"),
    ("postgres", "array_position", "allowed"), ("postgres", "array_remove", "allowed"),
    ("postgres", "num_nonnulls", "allowed"), ("postgres", "pg_read_file", "refused"),
    ("postgres", "pg_ls_dir", "refused"), ("postgres", "pg_sleep", "refused"), ("postgres", "current_setting", "refused"),
    ("postgres", "set_config", "refused"), ("postgres", "nextval", "refused"), ("postgres", "query_to_xml", "refused"),
    ("postgres", "ts_stat", "refused"), ("postgres", "lo_get", "refused"), ("postgres", "txid_current", "refused"),
    ("postgres", "to_regclass", "refused"), ("postgres", "has_table_privilege", "refused"),
    ("postgres", "format_type", "refused"), ("postgres", "pg_stat_get_live_tuples", "refused"),
    ("postgres", "regclass", "refused"), ("postgres", "random", "refused"), ("postgres", "xpath", "refused"),
    ("postgres", "int4in", "refused"),
    # sizes set by an argument, SQL or a name of the database as text
    ("duckdb", "repeat", "refused"), ("duckdb", "lpad", "refused"), ("duckdb", "list_resize", "refused"),
    ("duckdb", "array_resize", "refused"), ("duckdb", "range", "refused"), ("duckdb", "printf", "refused"),
    ("duckdb", "json_serialize_plan", "refused"), ("duckdb", "json_serialize_sql", "refused"),
    ("duckdb", "json_deserialize_sql", "refused"), ("postgres", "repeat", "refused"),
    ("postgres", "rpad", "refused"), ("postgres", "array_fill", "refused"), ("postgres", "format", "refused"),
    ("postgres", "to_tsvector", "refused"), ("postgres", "ts_headline", "refused"),
    ("postgres", "ts_parse", "refused"), ("postgres", "length", "allowed"), ("postgres", "ts_rank", "allowed"),
    ("duckdb", "make_type", "refused"), ("postgres", "oidvectortypes", "refused"),
]


@pytest.mark.parametrize("dialect, name, verdict", EXPECTED, ids=[f"{d}-{n}" for d, n, _ in EXPECTED])
def test_the_filter_sorts_each_class_as_the_threat_model_says(dialect, name, verdict):
    rows = {line.split("\t")[0]: line.split("\t")[1] for line in (CATALOGS / f"{dialect}.tsv").read_text().splitlines()
            if not line.startswith("#")}
    assert rows[name] == verdict
