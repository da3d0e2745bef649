"""What the tests share that is not a fixture: paths, builders of warehouses and contracts, the demo's
documented results (fixtures are in conftest.py; no test module imports another)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.paths import pointer
from dq_contracts_tests.pgcluster import PASSWORD


REPO = Path(__file__).resolve().parents[1]


SHARED = Path(os.environ.get("DQ_SHARED", REPO.parent / "shared"))


CORPUS = SHARED / "odcs" / "corpus"


SCHEMAS = SHARED / "odcs" / "schemas"


CONTRACTS = REPO / "contracts"


def duckdb_with(path: Path, *statements: str) -> Path:
    """A DuckDB file holding what the statements build; the writer is closed after (DuckDB: one
    writer per file, and the checks open it read-only)."""
    import sqlalchemy as sa

    writer = sa.create_engine(f"duckdb:///{path}")
    with writer.begin() as c:
        for statement in statements:
            c.exec_driver_sql(statement)
    writer.dispose()
    return path


def demo_shop(folder: Path, tables: list[str] | None = None, **kwargs) -> Path:
    """A copy of the bundled contracts in `folder/contracts` with the demo warehouse beside it, in
    `folder/demo_data` (the contracts' DuckDB path is relative to their own files); returns the
    contracts folder."""
    import shutil

    from dq_contracts.demo import write_tables

    contracts = folder / "contracts"
    shutil.copytree(CONTRACTS, contracts, dirs_exist_ok=True)
    if tables != []:
        write_tables(folder / "demo_data" / "warehouse.duckdb", tables, **kwargs)
    return contracts


def start_cluster():
    """A new PostgreSQL cluster on 127.0.0.1; CI must have the server, elsewhere the test may skip."""
    from dq_contracts_tests.pgcluster import PgCluster

    try:
        return PgCluster.start()
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


def start_mariadb():
    """A new MariaDB server on 127.0.0.1; CI must have the server, elsewhere the test may skip."""
    from dq_contracts_tests.mariadbcluster import MariaDB

    try:
        return MariaDB.start()
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


def start_spark():
    """A new Spark Thrift server on 127.0.0.1; CI must have pyspark and Java, elsewhere the test may skip."""
    from dq_contracts_tests.sparkserver import SparkServer

    try:
        return SparkServer.start()
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


def mysql_server(url: str) -> dict:
    parsed = sa.make_url(url)
    return {"server": "my", "type": "mysql", "host": parsed.host, "port": parsed.port, "database": parsed.database}


def mysql_env(url: str) -> dict:
    """The operator's endpoint for server `my`, and its word that the credentials can only read."""
    parsed = sa.make_url(url)
    return {"DQ_CONTRACTS_MY_HOST": parsed.host, "DQ_CONTRACTS_MY_PORT": str(parsed.port),
            "DQ_CONTRACTS_MY_USER": parsed.username, "DQ_CONTRACTS_MY_PASSWORD": parsed.password,
            "DQ_CONTRACTS_MY_READ_ONLY": "true"}


def fresh_warehouse(request, backend: str, tmp_path: Path) -> tuple[dict, dict, sa.Engine]:
    """(server entry, environment, writable engine) of a fresh warehouse of `backend` (duckdb, postgres,
    mariadb, snowflake, spark); on MariaDB the environment names a user that may only read it (mariadb_database),
    on Snowflake the operator vouches for the role (the `snowflake` fixture, fakesnow), on Spark for the
    credentials (spark_engine: SQL rules run); a Spark table is written by spark_table."""
    if backend == "duckdb":
        path = tmp_path / "wh.duckdb"
        return {"server": "local", "type": "duckdb", "database": str(path), "schema": "main"}, {}, \
            sa.create_engine(f"duckdb:///{path}")
    if backend == "mariadb":
        admin, reader = request.getfixturevalue("mariadb_database")
        return mysql_server(reader), mysql_env(reader), sa.create_engine(admin)
    if backend == "snowflake":
        return request.getfixturevalue("snowflake")
    if backend == "spark":
        url = request.getfixturevalue("spark_database")
        parsed = sa.make_url(url)
        return ({"server": "sp", "type": "hive", "host": parsed.host, "port": parsed.port,
                 "database": parsed.database}, {"DQ_CONTRACTS_SP_URL": url, "DQ_CONTRACTS_SP_READ_ONLY": "true"},
                spark_engine(url))
    url = request.getfixturevalue("pg_database")
    return pg_server(url), pg_env(url), sa.create_engine(url)


class SparkType(sa.types.UserDefinedType):
    """A column type as Spark spells it: PyHive's DDL writes DATE as TIMESTAMP and DECIMAL(12,2) as DECIMAL."""

    cache_ok = True

    def __init__(self, spelling: str) -> None:
        self.spelling = spelling

    def get_col_spec(self, **kw) -> str:
        return self.spelling


# The tests' SQL type names as Spark spells them (a bare DECIMAL is DuckDB's (18,3), not Spark's (10,0))
SPARK_SPELLINGS = {"TEXT": "STRING", "DECIMAL": "DECIMAL(18,3)"}


def spark_engine(url: str, vouched: bool = True) -> sa.Engine:
    """An engine on a Spark database as connections.engine_for builds it (its row's `prepare`);
    `vouched`: the test stands for an operator who declared the credentials read-only (SQL rules run)."""
    from dq_contracts.engine.dialects import dialect_of
    from dq_contracts.engine.sessions import CREDENTIALS_READ_ONLY

    engine = sa.create_engine(url, execution_options={CREDENTIALS_READ_ONLY: True} if vouched else {})
    dialect_of(engine.dialect.name).prepare(engine, None)
    return engine


def spark_table(engine: sa.Engine, name: str, columns: dict[str, str], rows: list) -> None:
    """Table `name` of `columns` (name: SQL type) holding `rows`, in one INSERT (each is a Spark job)."""
    table = sa.Table(name, sa.MetaData(), *(sa.Column(c, SparkType(SPARK_SPELLINGS.get(t.upper(), t)))
                                            for c, t in columns.items()))
    table.metadata.create_all(engine, checkfirst=False)  # PyHive's has_table raises on a missing table
    if rows:
        with engine.begin() as c:
            c.execute(sa.insert(table).values([special_floats(dict(zip(columns, row, strict=True)))
                                               for row in rows]))


def special_floats(row: dict) -> dict:
    """A row whose NaN and ±Infinity are written as `CAST('NaN' AS DOUBLE)`: drivers send them as bare
    names (the Snowflake connector's `VALUES (nan)`, PyHive's `nan`), which the server reads as columns."""
    def written(value):
        if isinstance(value, float) and not math.isfinite(value):
            text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return sa.cast(sa.bindparam(None, text, type_=sa.String), sa.Double)
        return value
    return {key: written(value) for key, value in row.items()}


# In a run that builds every demo table ("Materialize all"), this relationship reads customers, which
# fails ERROR (blocking) clauses, so Dagster skips it; run alone, it passes.
SKIPPED_IN_A_FULL_RUN = {("orders", "customer_id__references_customers")}


DEMO_CHECKS = 52


def run_checks(defs, selection=None, instance=None, **kwargs):
    """Run contract checks as a person would from the UI (no job of ours needed): every check of
    `defs`, or those `selection` (an AssetSelection) names."""
    import dagster as dg

    job = dg.define_asset_job("checks_under_test", selection=selection or dg.AssetSelection.all_asset_checks())
    merged = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    return merged.resolve_job_def("checks_under_test").execute_in_process(
        instance=instance or dg.DagsterInstance.ephemeral(), raise_on_error=False, **kwargs)


# from the comments at the top of each bundled contract
DOCUMENTED = {
    (m.group(1), m.group(2), m.group(3))
    for path in sorted(CONTRACTS.glob("*.odcs.yaml"))
    for m in re.finditer(r"^#\s+- (\w+)\.(\w+)\s+\((ERROR|WARN)\)", path.read_text(), re.M)
}


def contract(server: dict, properties: list, quality: list | None = None, physical: str = "t") -> dict:
    obj = {"name": "t", "physicalName": physical, "properties": properties}
    if quality:
        obj["quality"] = quality
    return {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "f", "version": "1.0.0", "status": "active",
            "servers": [server], "schema": [obj]}


# One clause with a warn and a fail level (nullValues under 10 % warns, under 30 % fails), on a DuckDB
# file `wh.duckdb` beside the contract: test_levels_cli.py (as a user sees it) and
# dagster_defs/test_levels.py (as Dagster stores it)
LEVELS_CONTRACT = """\
apiVersion: v3.1.0
kind: DataContract
id: levels
version: 1.0.0
status: active
servers:
  - server: local
    type: duckdb
    database: wh.duckdb
schema:
  - name: t
    physicalName: t
    properties:
      - name: a
        logicalType: string
        quality:
          - metric: nullValues
            unit: percent
            mustBeLessThan: 30          # the fail level
            customProperties:
              - property: warnThreshold # the warn level
                value: {mustBeLessThan: WARN}
"""
LEVELS_WARN_LINE = "                value: {mustBeLessThan: WARN}"


def levels_contract(warn: object = 10) -> str:
    return LEVELS_CONTRACT.replace("WARN", str(warn))


def plan_of(tmp_path, doc: dict, expect_problems: bool = False):
    path = tmp_path / "f.odcs.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = load_contracts([path])
    if not expect_problems:
        assert result.errors == [], [p.render() for p in result.problems]
    return result.plans[0], result


def pg_server(url: str) -> dict:
    parsed = sa.make_url(url)
    return {"server": "pg", "type": "postgres", "host": parsed.host, "port": parsed.port,
            "database": parsed.database, "schema": "public"}


def pg_env(url: str, password: str = PASSWORD) -> dict:
    """The operator's endpoint and credentials for server `pg`."""
    parsed = sa.make_url(url)
    return {"DQ_CONTRACTS_PG_HOST": parsed.host, "DQ_CONTRACTS_PG_PORT": str(parsed.port),
            "DQ_CONTRACTS_PG_USER": "postgres", "DQ_CONTRACTS_PG_PASSWORD": password}


DEMO_ASSETS = [["orders"], ["order_items"], ["customers"], ["payments"]]


def clauses_as_written(document: dict) -> set[str]:
    """The clauses of the issue's definition, found independently of the compiler."""
    found: set[str] = set()

    def properties(props, base):
        for pi, prop in enumerate(props or []):
            element(prop, [*base, "properties", pi])

    def element(prop, here):  # a property, or an array's items
        if isinstance(prop, dict):
            for flag in ("required", "unique", "primaryKey"):
                if prop.get(flag) is True:
                    found.add(pointer([*here, flag]))
            for key in (prop.get("logicalTypeOptions") or {}):
                found.add(pointer([*here, "logicalTypeOptions", key]))
            if "enum" in prop:
                found.add(pointer([*here, "enum"]))
            for ri, _ in enumerate(prop.get("relationships") or []):
                found.add(pointer([*here, "relationships", ri]))
            for qi, _ in enumerate(prop.get("quality") or []):
                found.add(pointer([*here, "quality", qi]))
            properties(prop.get("properties"), here)
            element(prop.get("items"), [*here, "items"])

    for oi, obj in enumerate(document.get("schema") or []):
        found.add(pointer(["schema", oi]))
        properties(obj.get("properties"), ["schema", oi])
        for ri, _ in enumerate(obj.get("relationships") or []):
            found.add(pointer(["schema", oi, "relationships", ri]))
        for qi, _ in enumerate(obj.get("quality") or []):
            found.add(pointer(["schema", oi, "quality", qi]))
    for si, _ in enumerate(document.get("slaProperties") or []):
        found.add(pointer(["slaProperties", si]))
    return found


def assert_accounted(plan, document: dict) -> None:
    data = plan.to_json()
    enforced = {c for check in data["checks"] for c in check["clauses"]}
    enforced |= {f["clause"] for f in data["freshness"]} | {s["clause"] for s in data["schedules"]}
    skipped = Counter(n["clause"] for n in data["not_enforced"])
    for clause in clauses_as_written(document):
        if clause in enforced:
            assert clause not in skipped, f"{clause} is both enforced and not enforced"
        else:
            assert skipped[clause] == 1, f"{clause} is neither enforced nor listed once as not enforced"
    for item in data["not_enforced"]:
        assert item["code"] and item["reason"], item


def write_lake(fmt: str, folder: Path, name: str, data, partition_by: list[str] | None = None,
               mode: str = "create") -> tuple[dict, dict]:
    """A lake table `name` written by its own library from Arrow `data` (mode `create`, `append`,
    or `merge`: append with new columns): (the contract's server entry, the operator's environment).
    Delta: a folder `folder/name`; Iceberg: table `lake.name` of a SQL catalog in `folder/catalog.db`."""
    if fmt == "delta":
        import deltalake

        deltalake.write_deltalake(str(folder / name), data, partition_by=partition_by,
                                  mode="overwrite" if mode == "create" else "append",
                                  schema_mode="merge" if mode == "merge" else None)
        return {"server": "lake", "type": "local", "format": "delta", "path": str(folder / "{model}")}, {}
    from pyiceberg.catalog.sql import SqlCatalog

    (folder / "warehouse").mkdir(exist_ok=True)
    catalog = SqlCatalog("lake", uri=f"sqlite:///{folder / 'catalog.db'}", warehouse=f"file://{folder / 'warehouse'}")
    catalog.create_namespace_if_not_exists("lake")
    if mode == "create":
        table = catalog.create_table(("lake", name), schema=data.schema)
        if partition_by:
            with table.update_spec() as spec:
                for column in partition_by:
                    spec.add_identity(column)
    else:
        table = catalog.load_table(("lake", name))
        if mode == "merge":
            with table.update_schema() as update:
                update.union_by_name(data.schema)
    if data.num_rows:
        table.append(data)
    catalog.engine.dispose()
    return ({"server": "lake", "type": "iceberg", "catalog": "lake", "catalogUrl": "https://catalog.invalid/",
             "namespace": "lake"},
            {"DQ_CONTRACTS_LAKE_CATALOG_URL": f"sqlite:///{folder / 'catalog.db'}",
             "DQ_CONTRACTS_LAKE_WAREHOUSE": f"file://{folder / 'warehouse'}"})


def lake_engine(server: dict, environ: dict, folder: Path):
    """(engine, lake) of a lake server as the engine builds it, for run_object's `files`."""
    from dq_contracts.engine.connections import connection_for, engine_for

    connection = connection_for(server, environ, str(folder))
    return engine_for(connection), connection.files


# -- Snowflake, emulated: fakesnow runs Snowflake's SQL on DuckDB in this process ---------------------

# fakesnow has no statement timeout and refuses ALTER SESSION: the session statement of the
# Snowflake row (warehouse_sql.SNOWFLAKE_SESSION) is a no-op there, so a test can see it sent but
# never see Snowflake stop a query
SNOWFLAKE_NO_OPS = [r"^ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = \d+ TIMEZONE = 'UTC'$"]


def snowflake_dialect_importable() -> None:
    """snowflake-sqlalchemy 1.11, the release the connector fakesnow needs (below 5) allows, names
    SQLAlchemy 2.0's ORMSelectCompileState, which 2.1 calls _ORMSelectCompileState: the old name is
    given back here, for the tests only (a user's `[snowflake]` install gets snowflake-sqlalchemy 2,
    which is made for 2.1). Our checks use SQLAlchemy Core alone."""
    from sqlalchemy.orm import context

    if not hasattr(context, "ORMSelectCompileState"):
        context.ORMSelectCompileState = context._ORMSelectCompileState


def snowflake_emulator(path: Path):
    """The context in which `snowflake.connector.connect` is fakesnow's, its databases in `path`."""
    import fakesnow

    path.mkdir(parents=True, exist_ok=True)
    return fakesnow.patch(db_path=str(path), nop_regexes=SNOWFLAKE_NO_OPS)


SNOWFLAKE_URL = "snowflake://checker:secret@acme-test/wh?schema=PUBLIC&warehouse=CHECKS"


def snowflake_server() -> dict:
    return {"server": "snow", "type": "snowflake", "account": "acme-test", "database": "wh", "schema": "PUBLIC",
            "warehouse": "CHECKS"}


def snowflake_env() -> dict:
    """A Snowflake session cannot be made read-only by the client: the operator vouches for the role."""
    return {"DQ_CONTRACTS_SNOW_URL": SNOWFLAKE_URL, "DQ_CONTRACTS_SNOW_READ_ONLY": "true"}


def snowflake_engine() -> sa.Engine:
    """An engine on the emulator as connections.engine_for builds one for the operator's `_READ_ONLY`."""
    from dq_contracts.engine.sessions import CREDENTIALS_READ_ONLY

    return sa.create_engine(SNOWFLAKE_URL, execution_options={CREDENTIALS_READ_ONLY: True})


# The clause matrix (engine/test_engine.py, engine/test_lake.py): every kind's clause on one table `t`
MATRIX_PROPERTIES = [
    {"name": "id", "logicalType": "integer", "physicalType": "INTEGER", "primaryKey": True},
    {"name": "code", "logicalType": "string", "physicalType": "VARCHAR(8)", "required": True, "unique": True,
     "logicalTypeOptions": {"minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$"}},
    {"name": "email", "logicalType": "string", "classification": "pii", "logicalTypeOptions": {"format": "email"}},
    # type names given by aliases (numeric for DECIMAL, int4 for INTEGER): each engine resolves or spells them
    {"name": "amount", "logicalType": "number", "physicalType": "numeric(12,2)",
     "logicalTypeOptions": {"minimum": 0, "exclusiveMaximum": 100, "multipleOf": 0.5}},
    {"name": "day", "logicalType": "date", "logicalTypeOptions": {"minimum": "2020-01-01"}},
    {"name": "kind", "logicalType": "string", "enum": [{"value": "a"}, {"value": "b"}, {"value": None}],
     "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["a", "b", None]}, "mustBe": 0},
                 {"metric": "missingValues", "arguments": {"missingValues": [None, "", "n/a"]},
                  "mustBeLessThan": 20, "unit": "percent"},
                 {"metric": "nullValues", "mustBeLessOrEqualTo": 0}]},
    {"name": "parent", "logicalType": "integer", "physicalType": "int4", "relationships": [{"to": "t.id"}],
     "quality": [{"metric": "duplicateValues", "mustBe": 0}]},
    {"name": "ts", "logicalType": "timestamp"},
    # a double: its bad row is a NaN, which a minimum alone would let through (MariaDB, which stores
    # no NaN, writes a negative instead)
    {"name": "ratio", "logicalType": "number", "logicalTypeOptions": {"minimum": 0}},
]
MATRIX_QUALITY = [
    {"metric": "rowCount", "mustBeBetween": [3, 5]},
    {"metric": "duplicateValues", "arguments": {"properties": ["code", "kind"]}, "mustBe": 0},
    {"type": "sql", "name": "positive", "query": "SELECT COUNT(*) FROM {object} WHERE amount < 0", "mustBe": 0},
]


def clean_shell() -> dict[str, str]:
    """What a new user's shell holds: PATH (without the virtual environment the tests run in) and HOME."""
    ours = {str(Path(sys.prefix) / "bin"), str(REPO / ".venv" / "bin")}
    path = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p not in ours)
    return {"PATH": path, "HOME": os.environ.get("HOME", "/root")}


def readme_section(title: str) -> str:
    """The README's section (or subsection) of that title, up to the next heading of its level or
    above (a `#` line inside a fenced block is no heading)."""
    lines, level, out, fenced = (REPO / "README.md").read_text().splitlines(keepends=True), 0, [], False
    for line in lines:
        heading = re.match(r"(#+) (.*)", line) if not fenced else None
        fenced ^= line.startswith("```")
        if heading and level and len(heading.group(1)) <= level:
            break
        if level:
            out.append(line)
        elif heading and heading.group(2).strip() == title:
            level = len(heading.group(1))
    assert level, f"README has no section {title!r}"
    return "".join(out)


def readme_blocks_of(section: str) -> list[tuple[str, str]]:
    """The fenced blocks of a README section, in order: (language, text)."""
    return re.findall(r"^```(\w+)\n(.*?)^```", section, re.M | re.S)


def dg_project(tmp_path):
    """A project as `create-dagster project shop` lays it out, made offline: (root, environment)."""
    project = tmp_path / "shop"
    package = project / "src" / "shop"
    (package / "defs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "shop"\nversion = "0.1.0"\n\n[tool.dg]\ndirectory_type = "project"\n\n'
        '[tool.dg.project]\nroot_module = "shop"\n')
    (package / "__init__.py").write_text("")
    (package / "definitions.py").write_text(
        "from pathlib import Path\n\nimport dagster as dg\n\n\n@dg.definitions\ndef defs():\n"
        "    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)\n")
    env = {**os.environ, "PYTHONPATH": str(project / "src"),
           "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    return project, env


def dg_run(project, env, *args, cwd=None):
    return subprocess.run(["dg", *args], cwd=cwd or project, env=env, capture_output=True, text=True, timeout=180,
                          check=False)


class WebhookSink:
    """A webhook on 127.0.0.1 that takes every POST and keeps the path of each (the alert tests)."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.received: list[str] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sink.received.append(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
