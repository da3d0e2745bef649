"""Engines from ODCS servers: credentials only from the environment, never shown."""

from __future__ import annotations

import os
import subprocess
import sys

import duckdb
import pytest
import sqlalchemy as sa

from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.results import scrub
from dq_contracts_tests.support import duckdb_with


def test_postgres_credentials_come_from_the_environment():
    server = {"server": "prod-eu", "type": "postgres", "host": "127.0.0.1", "port": 5432, "database": "wh",
              "schema": "analytics"}
    connection = connection_for(server, {"DQ_CONTRACTS_PROD_EU_HOST": "127.0.0.1", "DQ_CONTRACTS_PROD_EU_PORT": "5432",
                                         "DQ_CONTRACTS_PROD_EU_USER": "reader",
                                         "DQ_CONTRACTS_PROD_EU_PASSWORD": "s3cr#t"})
    assert connection.url.username == "reader" and connection.url.password == "s3cr#t"
    assert connection.url.host == "127.0.0.1" and connection.url.database == "wh"
    assert connection.schema == "analytics"
    assert "s3cr#t" not in str(connection.url)
    assert connection.secrets == ("s3cr#t",)


def test_a_full_url_wins():
    connection = connection_for({"server": "x", "type": "postgres"},
                                {"DQ_CONTRACTS_X_URL": "postgresql+psycopg2://u:pw@db:5433/other"})
    assert connection.url.host == "db" and connection.url.port == 5433 and connection.secrets == ("pw",)


def test_an_unknown_type_says_what_to_set():
    with pytest.raises(ValueError, match="DQ_CONTRACTS_LAKE_URL"):
        connection_for({"server": "lake", "type": "vertica"}, {})


def test_duckdb_engine_is_read_only(tmp_path):
    path = tmp_path / "wh.duckdb"
    writer = sa.create_engine(f"duckdb:///{path}")
    with writer.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a INTEGER)")
    writer.dispose()  # DuckDB refuses a read-only connection beside an open writable one in one process
    engine = engine_for(connection_for({"server": "local", "type": "duckdb", "database": str(path)}, {}))
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT COUNT(*) FROM t").scalar() == 0
        with pytest.raises(Exception, match="read-only"):
            c.exec_driver_sql("INSERT INTO t VALUES (1)")


DUCKDB_BOUNDS = [
    # (the operator's variables, memory_limit DuckDB reports, threads it reports or None for its default,
    # max_temp_directory_size it reports: 4GB by default, not DuckDB's 90 % of the free disk)
    ({}, "953.6 MiB", None, "3.7 GiB"),
    ({"DQ_CONTRACTS_LOCAL_MEMORY_LIMIT": "256MB", "DQ_CONTRACTS_LOCAL_THREADS": "1"}, "244.1 MiB", 1, "3.7 GiB"),
    ({"DQ_CONTRACTS_LOCAL_MAX_TEMP_DIRECTORY_SIZE": "100MB"}, "953.6 MiB", None, "95.3 MiB"),
]


@pytest.mark.parametrize("environ,memory,threads,spill_bound", DUCKDB_BOUNDS)
@pytest.mark.parametrize("server", [
    {"server": "local", "type": "duckdb", "database": "wh.duckdb"},
    {"server": "local", "type": "local", "format": "csv", "path": "data/*.csv"},
])
def test_duckdb_check_sessions_are_bounded(tmp_path, server, environ, memory, threads, spill_bound):
    """A check session has a memory limit and a spill folder of its own (DuckDB's default would be
    80 % of the host's memory per session), whatever the contract's SQL says afterwards."""
    if server["type"] == "duckdb":
        duckdb.connect(str(tmp_path / "wh.duckdb")).close()
    spill = tmp_path / "spill"
    engine = engine_for(connection_for(server, {**environ, "DQ_CONTRACTS_LOCAL_TEMP_DIRECTORY": str(spill)},
                                       str(tmp_path)))
    with engine.connect() as c:
        got = c.exec_driver_sql("SELECT current_setting('memory_limit'), current_setting('temp_directory'), "
                                "current_setting('threads'), current_setting('max_temp_directory_size')").one()
        for setting in ("memory_limit", "max_temp_directory_size"):
            with pytest.raises(Exception, match="locked"):
                c.exec_driver_sql(f"SET {setting} = '100GB'")
            c.rollback()
    engine.dispose()
    # the engine's own folder below the operator's (made by DuckDB when it spills; test_concurrent_runs_spill_apart)
    assert got[0] == memory and os.path.dirname(got[1]) == str(spill) and os.path.basename(got[1]).startswith("run-")
    if threads is not None:
        assert got[2] == threads
    assert got[3] == spill_bound


SPILL_RULE = """\
apiVersion: v3.1.0
kind: DataContract
id: urn:test:spill
version: 1.0.0
status: active
servers: [{server: local, type: duckdb, database: ../w.duckdb}]
schema:
  - name: t
    properties: [{name: i, logicalType: integer}, {name: s, logicalType: string}]
    quality:
      - type: sql
        query: "SELECT COUNT(*) FROM (SELECT a.s AS x, b.s AS y FROM {object} AS a CROSS JOIN {object} AS b
          WHERE b.i < 20 ORDER BY x, y) AS sorted"
        mustBeGreaterThan: 0
"""

# (the operator's spill bound, what the rule's line of `check` says): 8,000,000 sorted pairs of
# 32-character keys under a memory limit of 40MB spill hundreds of MB
SPILL_BOUNDS = [
    ("8MB", "error   could not be evaluated: the statement would spill more to disk than a check session may"),
    ("16MB", "error   could not be evaluated: the statement would spill more to disk than a check session may"),
]


@pytest.mark.parametrize("bound, said", SPILL_BOUNDS, ids=[b for b, _ in SPILL_BOUNDS])
def test_a_rule_that_would_spill_past_the_bound_fails_and_says_why(tmp_path, bound, said):
    duckdb_with(tmp_path / "w.duckdb", "CREATE TABLE t AS SELECT i, md5(i::varchar) AS s FROM range(400000) r(i)")
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "c.odcs.yaml").write_text(SPILL_RULE)
    spill = tmp_path / "spill"
    environ = {**os.environ, "DQ_CONTRACTS_LOCAL_MEMORY_LIMIT": "40MB", "DQ_CONTRACTS_LOCAL_THREADS": "1",
               "DQ_CONTRACTS_LOCAL_TEMP_DIRECTORY": str(spill), "DQ_CONTRACTS_LOCAL_MAX_TEMP_DIRECTORY_SIZE": bound}
    run = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", "contracts"], cwd=tmp_path,
                         env=environ, capture_output=True, text=True, timeout=300)
    line = next(line for line in run.stdout.splitlines() if "sql" in line and "t " in line)
    assert said in line, run.stdout + run.stderr
    assert run.returncode == 1, run.stdout + run.stderr
    assert os.listdir(spill) == []  # the run's spill folder is gone with it


SPILLING = """\
apiVersion: v3.0.2
kind: DataContract
id: urn:test:{name}
version: 1.0.0
status: active
servers: [{{server: local, type: duckdb, database: ../../{name}.duckdb}}]
schema:
  - name: t
    properties:
      - {{name: s, logicalType: string, unique: true}}
      - {{name: i, logicalType: integer, unique: true}}
"""


def test_concurrent_runs_spill_apart(tmp_path):
    """Two runs spilling at once, on the operator's one spill folder: DuckDB names its spill files
    alike in every process (duckdb_temp_storage_DEFAULT-0.tmp), so in one folder each read the other's
    ("Could not read enough bytes", "Corrupt temporary file", a segmentation fault). Each run has a
    folder of its own below it, removed at its end."""
    for name in ("a", "b"):
        duckdb_with(tmp_path / f"{name}.duckdb", "CREATE TABLE t AS SELECT md5(i::varchar) || md5((i + 1)::varchar)"
                    " AS s, i FROM range(600000) r(i)")  # 64-character keys: a distinct count of them spills
        (tmp_path / "contracts" / name).mkdir(parents=True)
        (tmp_path / "contracts" / name / "c.odcs.yaml").write_text(SPILLING.format(name=name))
    spill = tmp_path / "spill"
    environ = {**os.environ, "DQ_CONTRACTS_LOCAL_ROOTS": str(tmp_path), "DQ_CONTRACTS_LOCAL_MEMORY_LIMIT": "40MB",
               "DQ_CONTRACTS_LOCAL_THREADS": "1", "DQ_CONTRACTS_LOCAL_TEMP_DIRECTORY": str(spill)}
    for _ in range(2):  # two rounds: on one shared folder, nearly every run of two at once broke
        runs = [subprocess.Popen([sys.executable, "-m", "dq_contracts.cli", "check", f"contracts/{name}"],
                                 cwd=tmp_path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for name in ("a", "b")]
        said = [run.communicate(timeout=120)[0] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], said
        assert all("3 check(s): 3 pass" in out for out in said), said
    assert os.listdir(spill) == []


def test_scrub_hides_url_passwords_and_known_secrets():
    text = scrub("could not connect to postgresql://u:hunter2@db/x as u; password hunter2 refused", ["hunter2"])
    assert "hunter2" not in text


DUCKDB_DATABASES = [
    # (database as the contract writes it, the file or name DuckDB is given, with the contract in /srv/contracts)
    ("wh.duckdb", "/srv/contracts/wh.duckdb"),
    ("../data/wh.duckdb", "/srv/data/wh.duckdb"),
    ("/abs/wh.duckdb", "/abs/wh.duckdb"),
    (":memory:", ":memory:"),
    (":memory:shared", ":memory:shared"),
    ("md:analytics", "md:analytics"),
    ("s3://bucket/wh.duckdb", "s3://bucket/wh.duckdb"),
    ("https://example.com/wh.duckdb", "https://example.com/wh.duckdb"),
]


@pytest.mark.parametrize("database, opened", DUCKDB_DATABASES, ids=[d for d, _ in DUCKDB_DATABASES])
def test_a_relative_duckdb_file_is_read_from_the_contract_folder_and_nothing_else_is_changed(database, opened):
    # the operator lets this server open anything, so that only the reading of the path is seen here
    # (what the roots and remote prefixes refuse: test_boundary.py)
    operator = {"DQ_CONTRACTS_LOCAL_ROOTS": "/", "DQ_CONTRACTS_LOCAL_REMOTE": "md:,s3://,https://"}
    connection = connection_for({"server": "local", "type": "duckdb", "database": database}, operator,
                                "/srv/contracts")
    assert connection.url.database == opened


# Values a DuckDB check's statements carry: (value, its SQL type, what DuckDB reads back). Each is sent
# as a literal, never bound (DuckDB's client imports pandas at the first bound value)
LITERALS = [
    ("it's", sa.String, "it's"),
    ("back\\slash", sa.String, "back\\slash"),
    (-7, sa.Integer, -7),
    (2.5, sa.Float, 2.5),
    (float("nan"), sa.Float, "nan"),
    (float("inf"), sa.Float, "inf"),
    (float("-inf"), sa.Float, "-inf"),
    (None, sa.String, None),
    (True, sa.Boolean, True),
]


def test_a_duckdb_statement_is_compiled_once_and_sent_with_its_values_as_literals(tmp_path, monkeypatch):
    import math

    path = tmp_path / "wh.duckdb"
    duckdb.connect(str(path)).close()
    engine = engine_for(connection_for({"server": "local", "type": "duckdb", "database": str(path)}, {}))
    sent, compiled = [], []
    sa.event.listen(engine, "before_cursor_execute", lambda conn, cur, statement, parameters, *_: sent.append(parameters))
    init = sa.sql.compiler.SQLCompiler.__init__
    monkeypatch.setattr(sa.sql.compiler.SQLCompiler, "__init__",
                        lambda self, *a, **k: (compiled.append(1), init(self, *a, **k))[1])

    def statement(value, type_):  # the same shape for every value: one compiled statement per type
        return sa.select(sa.bindparam(None, value, type_=type_).label("v"),
                         sa.literal_column("x").in_([value, "other"] if type_ is sa.String else [value]).label("listed"))\
            .select_from(sa.text("(SELECT NULL AS x) AS t"))

    with engine.connect() as connection:
        for value, type_, expected in LITERALS:
            for _ in range(2):
                got = connection.execute(statement(value, type_)).one().v
                if isinstance(value, float) and not math.isfinite(value):
                    got = str(got).lower()
                assert got == expected, (value, got)
        compiled.clear()
        connection.execute(statement("again", sa.String)).one()
        assert compiled == []  # from SQLAlchemy's cache, its value rendered at execution: not compiled again
    assert not any(sent), [p for p in sent if p]
    engine.dispose()


DATABRICKS = "databricks://token:t@h.cloud?http_path=/sql/1&catalog=main&schema=from_url"
SCHEMAS = [  # the server entry, the operator's URL → the schema a bare table name is read in, the driver
    ({"type": "hive", "database": "sales"}, "hive://127.0.0.1:10000", "sales", "hive"),  # ODCS: no `schema`
    ({"type": "hive"}, "hive://127.0.0.1:10000/sales", "sales", "hive"),
    ({"type": "hive", "database": "sales"}, "hive://127.0.0.1:10000/sales", "sales", "hive"),
    ({"type": "hive"}, "hive://127.0.0.1:10000", "default", "hive"),
    # the contract's schema where the URL names none; the URL's is the only one where it does
    ({"type": "databricks", "schema": "s"}, DATABRICKS.replace("&schema=from_url", ""), "s", "databricks"),
    ({"type": "databricks", "schema": "FROM_URL"}, DATABRICKS, "FROM_URL", "databricks"),
    ({"type": "databricks"}, DATABRICKS, "from_url", "databricks"),
    # a URL naming no driver speaks its row's (psycopg2, pymysql), not SQLAlchemy's default
    ({"type": "postgres"}, "postgresql://u:pw@db/wh", "public", "postgresql+psycopg2"),
    ({"type": "postgres"}, "postgresql+psycopg2://u:pw@db/wh", "public", "postgresql+psycopg2"),
    ({"type": "mysql"}, "mysql://u:pw@db/wh", None, "mysql+pymysql"),
    ({"type": "mysql"}, "mariadb://u:pw@db/wh", None, "mariadb+pymysql"),
]


@pytest.mark.parametrize("server,url,schema,driver", SCHEMAS)
def test_the_schema_and_driver_a_server_reads_with(server, url, schema, driver):
    connection = connection_for({"server": "w", **server}, {"DQ_CONTRACTS_W_URL": url,
                                                            "DQ_CONTRACTS_W_READ_ONLY": "true"})
    assert (connection.schema, connection.url.drivername) == (schema, driver)


def test_a_databricks_server_naming_another_catalog_than_the_operators_is_refused():
    """Its tables would be read in the URL's catalog, not the one the contract names."""
    from dq_contracts.engine.connections import EndpointError

    environ = {"DQ_CONTRACTS_W_URL": DATABRICKS, "DQ_CONTRACTS_W_READ_ONLY": "true"}
    assert connection_for({"server": "w", "type": "databricks", "catalog": "MAIN"}, environ).schema == "from_url"
    with pytest.raises(EndpointError, match="the contract says catalog 'prod'"):
        connection_for({"server": "w", "type": "databricks", "catalog": "prod"}, environ)


# the server entry, the operator's URL → the catalog the session reads (its URL's `catalog=`): the contract's
# where the URL names none, else the URL's (a contract naming another is refused, above)
CATALOGS = [
    ({"type": "databricks", "catalog": "prod"}, "databricks://token:t@h.cloud?http_path=/sql/1", "prod"),
    ({"type": "databricks", "catalog": " prod "}, "databricks://token:t@h.cloud?http_path=/sql/1", "prod"),
    ({"type": "databricks"}, "databricks://token:t@h.cloud?http_path=/sql/1", None),
    ({"type": "databricks", "catalog": "Main"}, DATABRICKS, "main"),
    ({"type": "databricks"}, DATABRICKS, "main"),
    ({"type": "hive", "catalog": "prod"}, "hive://127.0.0.1:10000/sales", None),  # a hive URL names no catalog
]


@pytest.mark.parametrize("server,url,catalog", CATALOGS)
def test_the_catalog_a_server_reads_in(server, url, catalog):
    """A Databricks URL naming no catalog reads the session's default one: a contract's catalog must not be
    dropped there, or its checks would read another table of the same schema and name."""
    connection = connection_for({"server": "w", **server}, {"DQ_CONTRACTS_W_URL": url,
                                                            "DQ_CONTRACTS_W_READ_ONLY": "true"})
    assert connection.url.query.get("catalog") == catalog


@pytest.mark.parametrize("catalog", ["a`b", "prod; DROP", "a.b", "a b", "x\ny", "-x"])
def test_a_catalog_given_to_the_url_is_a_plain_name(catalog):
    """The driver writes its catalog into SQL of its own between backticks: only a plain name reaches it."""
    from dq_contracts.engine.connections import EndpointError

    with pytest.raises(EndpointError, match="is not a plain name"):
        connection_for({"server": "w", "type": "databricks", "catalog": catalog},
                       {"DQ_CONTRACTS_W_URL": "databricks://token:t@h.cloud?http_path=/s", "DQ_CONTRACTS_W_READ_ONLY": "true"})
