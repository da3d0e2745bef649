"""The names a contract chooses stay inside what the operator drew (principle 1; odcs/chosen_names.py).

A contract's server names its tables' schema, catalog, database and namespace, and its files'
remote location. Each row is one attack (or a control the operator lets through): a schema or
catalog the operator declared is the only one; with none declared, never a system schema or catalog
of the server's type; either way, unless `_SCHEMAS` lists it. A remote location is under a prefix
by whole segments, and one holding `..`, `.` or a percent-encoded dot is under none. An Iceberg
catalog is built from the operator's properties alone, never a configuration of the contract's name.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from dq_contracts.engine.connections import EndpointError, connection_for
from dq_contracts.engine.lake import Lake, LakeRefusal
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import duckdb_with

PROPERTIES = [{"name": "id", "logicalType": "integer", "logicalTypeOptions": {"maximum": 0}}]


def contract(server: dict, physical: str = "t") -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "team_b", "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [{"name": "t", "physicalName": physical, "properties": PROPERTIES}]}


@pytest.fixture
def site(tmp_path):
    """project/contracts (loaded) and project/data/wh.duckdb (analytics.t, hr.salaries)."""
    for folder in ("contracts", "data"):
        (tmp_path / "project" / folder).mkdir(parents=True)
    duckdb_with(tmp_path / "project" / "data" / "wh.duckdb", "CREATE SCHEMA analytics", "CREATE SCHEMA hr",
                "CREATE TABLE analytics.t (id INTEGER)", "INSERT INTO analytics.t VALUES (1)",
                "CREATE TABLE hr.salaries (id INTEGER)", "INSERT INTO hr.salaries VALUES (90000)")
    return tmp_path


def write(site: Path, doc: dict) -> Path:
    path = site / "project" / "contracts" / "c.odcs.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


DUCK = {"server": "local", "type": "duckdb", "database": "../data/wh.duckdb", "schema": "analytics"}
PG = {"server": "prod", "type": "postgres", "host": "127.0.0.1", "port": 5432, "database": "wh", "schema": "public"}
PG_HOST = {"DQ_CONTRACTS_PROD_HOST": "127.0.0.1", "DQ_CONTRACTS_PROD_PORT": "5432", "DQ_CONTRACTS_PROD_DATABASE": "wh"}
PG_SEARCH_PATH = {"DQ_CONTRACTS_PROD_URL": "postgresql://u:pw@127.0.0.1:5432/wh?options=-csearch_path%3Danalytics"}
MY = {"server": "my", "type": "mysql", "host": "127.0.0.1", "port": 3306}
MY_HOST = {"DQ_CONTRACTS_MY_HOST": "127.0.0.1", "DQ_CONTRACTS_MY_PORT": "3306", "DQ_CONTRACTS_MY_READ_ONLY": "true"}
SNOW = {"server": "snow", "type": "snowflake", "account": "acct", "database": "SHOP", "schema": "PUBLIC"}
SNOW_URL = {"DQ_CONTRACTS_SNOW_URL": "snowflake://u:pw@acct/?warehouse=w", "DQ_CONTRACTS_SNOW_READ_ONLY": "true"}
DBX = {"server": "dbx", "type": "databricks", "host": "h.example", "schema": "sales"}
DBX_URL = {"DQ_CONTRACTS_DBX_URL": "databricks://token:tk@h.example?http_path=/sql/1&catalog=main"}
DBX_NO_CATALOG = {"DQ_CONTRACTS_DBX_URL": "databricks://token:tk@h.example?http_path=/sql/1"}
HIVE = {"server": "spark", "type": "hive", "host": "127.0.0.1", "port": 10000}
HIVE_HOST = {"DQ_CONTRACTS_SPARK_HOST": "127.0.0.1", "DQ_CONTRACTS_SPARK_PORT": "10000"}
ICE = {"server": "ice", "type": "iceberg", "catalog": "lake", "catalogUrl": "https://ignored.invalid/",
       "namespace": "lake"}
ICE_CATALOG = {"DQ_CONTRACTS_ICE_CATALOG_URL": "sqlite:///catalog.db"}
FILES = {"server": "files", "type": "local", "format": "csv"}
DELTA = {"server": "files", "type": "s3", "format": "delta"}

# (id, the contract's server, the operator's variables, the object's physicalName, the path of the
# problem in the document, what it says; None: loads, no problem)
LOAD_ROWS = [
    # DuckDB: no schema declared, so the contract chooses, but never a system schema or catalog
    ("duckdb: schema pg_catalog", {**DUCK, "schema": "pg_catalog"}, {}, "pg_settings", "servers[0].schema",
     "system schema"),
    ("duckdb: schema information_schema", {**DUCK, "schema": "information_schema"}, {}, "tables",
     "servers[0].schema", "system schema"),
    ("duckdb: schema quoted, another case", {**DUCK, "schema": ' "PG_Catalog" '}, {}, "pg_settings",
     "servers[0].schema", "system schema"),
    ("duckdb: the system catalog", DUCK, {}, "system.main.duckdb_settings", "servers[0].schema",
     "names the catalog 'system'"),
    ("duckdb: another schema than the operator's", {**DUCK, "schema": "hr"}, {"DQ_CONTRACTS_LOCAL_SCHEMA": "analytics"},
     "salaries", "servers[0].schema", "the operator declared 'analytics'"),
    ("duckdb: a dotted name in a quoted system schema", DUCK, {}, '"PG_CATALOG".pg_settings', "servers[0].schema",
     "names the schema 'pg_catalog'"),
    # PostgreSQL
    ("postgres: schema pg_catalog", {**PG, "schema": "pg_catalog"}, PG_HOST, "pg_authid", "servers[0].schema",
     "system schema"),
    ("postgres: schema PG_CATALOG", {**PG, "schema": "PG_CATALOG "}, PG_HOST, "pg_proc", "servers[0].schema",
     "system schema"),
    ("postgres: schema information_schema", {**PG, "schema": "information_schema"}, PG_HOST, "routines",
     "servers[0].schema", "system schema"),
    ("postgres: schema pg_toast", {**PG, "schema": "pg_toast"}, PG_HOST, "pg_toast_1260", "servers[0].schema",
     "system schema"),
    ("postgres: schema pg_temp_3", {**PG, "schema": "pg_temp_3"}, PG_HOST, "t", "servers[0].schema",
     "system schema"),
    ("postgres: another schema than the URL's search path", {**PG, "schema": "hr"}, PG_SEARCH_PATH, "salaries",
     "servers[0].schema", "the operator declared 'analytics'"),
    ("postgres: another schema than _SCHEMA", {**PG, "schema": "hr"}, {**PG_HOST, "DQ_CONTRACTS_PROD_SCHEMA": "public"},
     "salaries", "servers[0].schema", "the operator declared 'public'"),
    # MySQL: the database is the schema, the contract's where the operator names none
    ("mysql: database mysql", {**MY, "database": "mysql"}, MY_HOST, "user", "servers[0].database", "system schema"),
    ("mysql: database performance_schema", {**MY, "database": "Performance_Schema"}, MY_HOST, "threads",
     "servers[0].database", "system schema"),
    ("mysql: database sys", {**MY, "database": "sys"}, MY_HOST, "t", "servers[0].database", "system schema"),
    # Snowflake, Databricks, Spark
    ("snowflake: the SNOWFLAKE database", {**SNOW, "database": "SNOWFLAKE"}, SNOW_URL, "t", "servers[0].database",
     "system schema"),
    ("snowflake: INFORMATION_SCHEMA", {**SNOW, "schema": "INFORMATION_SCHEMA"}, SNOW_URL, "t", "servers[0].schema",
     "system schema"),
    ("databricks: the system catalog", {**DBX, "catalog": "system"}, DBX_NO_CATALOG, "t", "servers[0].catalog",
     "system schema"),
    ("databricks: another catalog than the URL's, at load", {**DBX, "catalog": "hr"}, DBX_URL, "t",
     "servers[0].catalog", "the operator declared 'main'"),
    ("databricks: another catalog than _CATALOG", {**DBX, "catalog": "hr"},
     {**DBX_NO_CATALOG, "DQ_CONTRACTS_DBX_CATALOG": "main"}, "t", "servers[0].catalog",
     "the operator declared 'main'"),
    ("spark: database global_temp", {**HIVE, "database": "global_temp"}, HIVE_HOST, "t", "servers[0].database",
     "system schema"),
    # lake servers: an Iceberg namespace and catalog
    ("iceberg: another namespace than _SCHEMA", {**ICE, "namespace": "hr"}, {**ICE_CATALOG,
     "DQ_CONTRACTS_ICE_SCHEMA": "lake"}, "t", "servers[0].namespace", "the operator declared 'lake'"),
    ("iceberg: another catalog than _CATALOG", {**ICE, "catalog": "prod"}, {**ICE_CATALOG,
     "DQ_CONTRACTS_ICE_CATALOG": "lake"}, "t", "servers[0].catalog", "the operator declared 'lake'"),
    # remote prefixes: whole segments, no dot segments
    ("remote: a sibling bucket of a prefix without '/'", {**FILES, "path": "s3://bucket-x/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "s3://bucket"}, "t", "servers[0].path", "remote location the operator did not"),
    ("remote: another host, the prefix as its user", {**FILES, "path": "https://host.example@evil.example/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "https://host.example"}, "t", "servers[0].path", "remote location the operator did"),
    ("remote: another host, the prefix as its subdomain", {**FILES, "path": "https://host.example.evil.example/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "https://host.example"}, "t", "servers[0].path", "remote location the operator did"),
    ("remote: a '..' segment", {**FILES, "path": "s3://bucket/a/../b/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "s3://bucket/a/"}, "t", "servers[0].path", "'..' segment"),
    ("remote: a '.' segment", {**FILES, "path": "https://host.example/a/./t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "https://host.example/a/"}, "t", "servers[0].path", "'..' segment"),
    ("remote: a percent-encoded '..'", {**FILES, "path": "s3://bucket/a/%2E%2e/b/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "s3://bucket/a/"}, "t", "servers[0].path", "percent-encoded"),
    ("remote: a backslash", {**FILES, "path": "https://host.example/a/..\\b/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "https://host.example/a/"}, "t", "servers[0].path", "backslash"),
    ("remote: a physicalName that climbs", {**FILES, "path": "s3://bucket/a/{model}.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "s3://bucket/a/"}, "../b/t", "servers[0].path", "'..' segment"),
    ("remote: MotherDuck, a longer name", {**DUCK, "database": "md:oursx"}, {"DQ_CONTRACTS_LOCAL_REMOTE": "md:ours"},
     "t", "servers[0].database", "remote location the operator did not"),
    ("remote: a Delta table in a sibling bucket", {**DELTA, "location": "s3://bucket-x/t"},
     {"DQ_CONTRACTS_FILES_REMOTE": "s3://bucket"}, "t", "servers[0].location", "remote location the operator did not"),
    # controls: what the operator lets through loads
    ("control: duckdb, the contract's own schema", DUCK, {}, "t", None, None),
    ("control: duckdb, a system schema the operator lists", {**DUCK, "schema": "pg_catalog"},
     {"DQ_CONTRACTS_LOCAL_SCHEMAS": "pg_catalog"}, "pg_settings", None, None),
    ("control: duckdb, another schema the operator lists", {**DUCK, "schema": "hr"},
     {"DQ_CONTRACTS_LOCAL_SCHEMA": "analytics", "DQ_CONTRACTS_LOCAL_SCHEMAS": "hr"}, "salaries", None, None),
    ("control: duckdb, the operator's schema in another case", {**DUCK, "schema": "Analytics"},
     {"DQ_CONTRACTS_LOCAL_SCHEMA": "analytics"}, "t", None, None),
    ("control: postgres, the search path's schema", {**PG, "schema": "analytics"}, PG_SEARCH_PATH, "t", None, None),
    ("control: postgres, the search path's schema quoted", {**PG, "schema": '"analytics"'}, PG_SEARCH_PATH,
     "analytics.t", None, None),
    ("control: mysql, the contract's database", {**MY, "database": "shop"}, MY_HOST, "t", None, None),
    ("control: databricks, the URL's catalog", {**DBX, "catalog": "main"}, DBX_URL, "t", None, None),
    ("control: iceberg, no catalog declared", {**ICE, "catalog": "prod"}, ICE_CATALOG, "t", None, None),
    ("control: remote under a prefix without '/'", {**FILES, "path": "s3://bucket/a/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "s3://bucket"}, "t", None, None),
    ("control: remote, the scheme in capitals", {**FILES, "path": "S3://bucket/a/t.csv"},
     {"DQ_CONTRACTS_FILES_REMOTE": "s3://bucket/"}, "t", None, None),
]


@pytest.mark.parametrize("server, operator, physical, path, says", [row[1:] for row in LOAD_ROWS],
                         ids=[row[0] for row in LOAD_ROWS])
def test_a_name_outside_what_the_operator_drew_is_a_problem_at_load(site, server, operator, physical, path, says):
    file = write(site, contract(server, physical))
    loaded = load_contracts([site / "project" / "contracts"], environ=operator)
    errors = [(p.path, p.message) for p in loaded.errors]
    if path is None:
        assert errors == [] and [os.path.abspath(p.file) for p in loaded.usable_plans] == [str(file)]
        return
    assert [e[0] for e in errors] == [path], errors
    assert says in errors[0][1], errors
    assert loaded.usable_plans == []


# (id, the contract's server, the operator's variables, what the error says; None: connects, with
# the schema the connection reads): checked again when a connection is made
CONNECT_ROWS = [
    ("duckdb: schema pg_catalog", {**DUCK, "schema": "pg_catalog"}, {}, "system schema"),
    ("postgres: schema pg_catalog", {**PG, "schema": "pg_catalog"}, PG_HOST, "system schema"),
    ("postgres: the contract's schema over the URL's search path", {**PG, "schema": "hr"}, PG_SEARCH_PATH,
     "the operator declared 'analytics'"),
    ("postgres: another schema than _SCHEMA", {**PG, "schema": "hr"}, {**PG_HOST, "DQ_CONTRACTS_PROD_SCHEMA": "public"},
     "the operator declared 'public'"),
    ("iceberg: another namespace than _SCHEMA", {**ICE, "namespace": "hr"},
     {**ICE_CATALOG, "DQ_CONTRACTS_ICE_SCHEMA": "lake"}, "the operator declared 'lake'"),
    ("control: postgres reads the search path's schema", {k: v for k, v in PG.items() if k != "schema"},
     PG_SEARCH_PATH, None),
    ("control: duckdb reads the operator's _SCHEMA", {k: v for k, v in DUCK.items() if k != "schema"},
     {"DQ_CONTRACTS_LOCAL_SCHEMA": "analytics"}, None),
]


@pytest.mark.parametrize("server, operator, says", [row[1:] for row in CONNECT_ROWS],
                         ids=[row[0] for row in CONNECT_ROWS])
def test_a_name_outside_what_the_operator_drew_is_refused_at_connection(site, server, operator, says):
    folder = str(site / "project" / "contracts")
    if says is not None:
        with pytest.raises(EndpointError, match=says):
            connection_for(server, operator, folder)
        return
    assert connection_for(server, operator, folder).schema == "analytics"


# (id, a file a lake table lists, the operator's remote prefixes; None: read)
LAKE_REMOTE_ROWS = [
    ("a sibling bucket", "s3://bucket-x/t/part-0.parquet", ("s3://bucket",), "remote location"),
    ("'..' out of the prefix", "s3://bucket/t/../../other/part-0.parquet", ("s3://bucket/t/",), "remote location"),
    ("a percent-encoded '..'", "s3://bucket/t/%2e%2e/x/part-0.parquet", ("s3://bucket/t/",), "remote location"),
    ("control: under the prefix", "s3://bucket/t/part-0.parquet", ("s3://bucket",), None),
]


@pytest.mark.parametrize("uri, prefixes, says", [row[1:] for row in LAKE_REMOTE_ROWS],
                         ids=[row[0] for row in LAKE_REMOTE_ROWS])
def test_a_lake_table_lists_only_files_under_the_operators_prefixes(uri, prefixes, says):
    lake = Lake("delta", "s3://bucket/t", (), prefixes)
    if says is None:
        assert lake._inside(uri, "t") == uri
        return
    with pytest.raises(LakeRefusal, match=says):
        lake._inside(uri, "t")


# -- as a user sees it, on a PostgreSQL the test starts: nothing connects, no value is shown ----------

PG_ATTACKS = [  # (id, the contract's schema, its object, a column and a clause that would sample it)
    ("function sources in pg_catalog", "pg_catalog", "pg_proc", "prosrc", {"pattern": "^x$"}),
    ("password hashes in pg_catalog", "pg_catalog", "pg_authid", "rolpassword", {"pattern": "^$"}),
    ("routines in information_schema", "information_schema", "routines", "routine_definition", {"pattern": "^x$"}),
]


@pytest.mark.postgres
@pytest.mark.parametrize("schema, table, column, options", [r[1:] for r in PG_ATTACKS], ids=[r[0] for r in PG_ATTACKS])
def test_a_postgresql_system_schema_is_not_read(site, pg_database, schema, table, column, options):
    from dq_contracts_tests.support import pg_env, pg_server

    doc = contract({**pg_server(pg_database), "schema": schema}, table)
    doc["schema"][0]["properties"] = [{"name": column, "logicalType": "string", "logicalTypeOptions": options}]
    write(site, doc)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("DQ_CONTRACTS_", "DQ_ALERTS_"))},
           **pg_env(pg_database)}
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts"], cwd=site / "project",
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in output, output
    assert "servers[0].schema" in output and "system schema" in output, output
    assert "0 check(s)" in output and "SCRAM-SHA-256" not in output and "plpgsql" not in output.lower(), output


@pytest.mark.postgres
def test_a_postgresql_schema_the_operator_lists_is_read(site, pg_database):
    """The control: `_SCHEMAS` lets the operator offer pg_catalog; the check then runs."""
    from dq_contracts_tests.support import pg_env, pg_server

    doc = contract({**pg_server(pg_database), "schema": "pg_catalog"}, "pg_namespace")
    doc["schema"][0]["properties"] = [{"name": "nspname", "logicalType": "string"}]
    write(site, doc)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("DQ_CONTRACTS_", "DQ_ALERTS_"))},
           **pg_env(pg_database), "DQ_CONTRACTS_PG_SCHEMAS": "pg_catalog"}
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts"], cwd=site / "project",
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- Iceberg: the catalog is the operator's properties alone, whatever name the contract gives it ------

class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        _Recorder.seen.append(dict(self.headers.items()) | {"path": self.path})
        self.send_response(500)
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


ICEBERG_CONFIG_ROWS = [  # (id, the environment pyiceberg reads, a ~/.pyiceberg.yaml; the secret it holds)
    ("another catalog's token in the environment", {"PYICEBERG_CATALOG__PROD__TOKEN": "prod-token-1234"}, None,
     "prod-token-1234"),
    ("another catalog's header in the environment", {"PYICEBERG_CATALOG__PROD__HEADER__X_KEY": "prod-header-5678"},
     None, "prod-header-5678"),
    ("another catalog's token in .pyiceberg.yaml", {}, {"catalog": {"prod": {"token": "yaml-token-9012"}}},
     "yaml-token-9012"),
]


@pytest.mark.parametrize("environ, config, secret", [r[1:] for r in ICEBERG_CONFIG_ROWS],
                         ids=[r[0] for r in ICEBERG_CONFIG_ROWS])
def test_an_iceberg_catalog_never_takes_the_configuration_of_the_contracts_name(tmp_path, environ, config, secret):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Recorder.seen = []
    home = tmp_path / "home"
    home.mkdir()
    if config is not None:
        (home / ".pyiceberg.yaml").write_text(yaml.safe_dump(config))
    script = ("import json, sys\n"
              "from dq_contracts.engine.connections import connection_for\n"
              "lake = connection_for(json.loads(sys.argv[1]), None, sys.argv[2]).files\n"
              "try:\n    lake._catalog()\nexcept Exception as exc:\n    print(type(exc).__name__)\n")
    contract_server = {**ICE, "catalog": "prod", "catalogUrl": "https://ignored.invalid/"}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("DQ_CONTRACTS_", "PYICEBERG_"))},
           "HOME": str(home), "PYICEBERG_HOME": str(home), **environ,
           "DQ_CONTRACTS_ICE_CATALOG_URL": f"http://127.0.0.1:{server.server_port}",
           "DQ_CONTRACTS_ICE_CATALOG_TYPE": "rest"}
    try:
        proc = subprocess.run([sys.executable, "-c", script, json.dumps(contract_server), str(tmp_path)], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr
    assert _Recorder.seen, "the catalog was never asked: the test shows nothing"
    assert secret not in json.dumps(_Recorder.seen), _Recorder.seen


def test_an_iceberg_catalog_type_pyiceberg_does_not_build_is_refused(tmp_path):
    lake = connection_for(ICE, {**ICE_CATALOG, "DQ_CONTRACTS_ICE_CATALOG_TYPE": "nonsense"}, str(tmp_path)).files
    with pytest.raises(LakeRefusal, match="not one pyiceberg builds"):
        lake._catalog()

