"""The operator draws the boundary, a contract only chooses inside it (principles 1 and 6).

Each rule is a property that holds for any input, tested with a table of attacks: a new attack is
one row. Layout of every test: a project folder holding `contracts/` (the folder loaded) and
`data/` (the default root), and an `outside/` folder beside the project that no contract may reach.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.dialect_duckdb import REDEFINITIONS
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import duckdb_with

TABLE = ("CREATE SCHEMA analytics", "CREATE TABLE analytics.t (id INTEGER, code VARCHAR, amount INTEGER)",
         # every row breaks a clause: a NULL id, a repeated id, a code too long and off the pattern, a
         # negative amount, and a code outside the valid values
         "INSERT INTO analytics.t VALUES (1, 'ab', 5), (1, 'TOOLONGCODE', -3), (NULL, 'zz', 7)")

PROPERTIES = [
    {"name": "id", "logicalType": "integer", "required": True, "unique": True},
    {"name": "code", "logicalType": "string",
     "logicalTypeOptions": {"pattern": "^[a-z]+$", "maxLength": 4, "minLength": 3}},
    {"name": "amount", "logicalType": "integer", "logicalTypeOptions": {"minimum": 0},
     "quality": [{"metric": "invalidValues", "arguments": {"validValues": [5, 7]}, "mustBe": 0}]},
]


def contract(server: dict, physical: str = "t") -> dict:
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "team_b", "version": "1.0.0", "status": "active",
            "servers": [server],
            "schema": [{"name": "t", "physicalName": physical, "properties": PROPERTIES,
                        "quality": [{"metric": "rowCount", "mustBeGreaterThan": 5}]}]}


@pytest.fixture(scope="module")
def warehouse_file(tmp_path_factory):
    return duckdb_with(tmp_path_factory.mktemp("template") / "wh.duckdb", *TABLE)


@pytest.fixture
def site(tmp_path, warehouse_file):
    """project/contracts (loaded), project/data/wh.duckdb and data/t.csv (inside), outside/ (not)."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    for folder in (project / "contracts", project / "data", outside):
        folder.mkdir(parents=True)
    for copy in (project / "data" / "wh.duckdb", outside / "other.duckdb"):
        shutil.copyfile(warehouse_file, copy)
    for folder in (project / "data", outside):
        (folder / "t.csv").write_text("id,code,amount\n1,ab,5\n")
    os.symlink(outside / "other.duckdb", project / "data" / "link.duckdb")
    os.symlink(outside, project / "data" / "away")
    return tmp_path


def write(site: Path, doc: dict, folder: str = "project/contracts") -> Path:
    path = site / folder / "c.odcs.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


DUCK = {"server": "local", "type": "duckdb", "schema": "analytics"}
FILES = {"server": "lake", "type": "local", "format": "csv"}
PG = {"server": "prod", "type": "postgres", "host": "127.0.0.1", "port": 5432, "database": "wh", "schema": "public"}
PG_OPERATOR = {"DQ_CONTRACTS_PROD_HOST": "127.0.0.1", "DQ_CONTRACTS_PROD_PORT": "5432",
               "DQ_CONTRACTS_PROD_DATABASE": "wh"}

# (id, the server the contract writes ({site}: the test's folder), the operator's variables, the
# object's physicalName, the path of the problem in the document, what it says; None: no problem)
LOAD_ATTACKS = [
    ("duckdb absolute path outside", {**DUCK, "database": "{site}/outside/other.duckdb"}, {}, "t",
     "servers[0].database", "outside the folders"),
    ("duckdb .. out of the root", {**DUCK, "database": "../../outside/other.duckdb"}, {}, "t",
     "servers[0].database", "outside the folders"),
    ("duckdb symlink inside the root to outside", {**DUCK, "database": "../data/link.duckdb"}, {}, "t",
     "servers[0].database", "outside the folders"),
    ("duckdb symlinked folder to outside", {**DUCK, "database": "../data/away/other.duckdb"}, {}, "t",
     "servers[0].database", "outside the folders"),
    ("duckdb home folder", {**DUCK, "database": "~/wh.duckdb"}, {}, "t", "servers[0].database", "outside the folders"),
    ("duckdb MotherDuck", {**DUCK, "database": "md:analytics"}, {}, "t", "servers[0].database", "remote location"),
    ("duckdb MotherDuck, other prefix declared", {**DUCK, "database": "md:theirs"},
     {"DQ_CONTRACTS_LOCAL_REMOTE": "md:ours"}, "t", "servers[0].database", "remote location"),
    ("duckdb s3", {**DUCK, "database": "s3://bucket/wh.duckdb"}, {}, "t", "servers[0].database", "remote location"),
    ("duckdb https", {**DUCK, "database": "https://example.com/wh.duckdb"}, {}, "t", "servers[0].database",
     "remote location"),
    ("duckdb file: URI", {**DUCK, "database": "file:{site}/outside/other.duckdb"}, {}, "t", "servers[0].database",
     "remote location"),
    ("files absolute glob outside", {**FILES, "path": "{site}/outside/*.csv"}, {}, "t", "servers[0].path",
     "outside the folders"),
    ("files .. after a glob", {**FILES, "path": "../data/*/../../../outside/t.csv"}, {}, "t", "servers[0].path",
     "'..' after a glob"),
    ("files symlinked folder", {**FILES, "path": "../data/away/*.csv"}, {}, "t", "servers[0].path",
     "outside the folders"),
    ("files physicalName climbs out", {**FILES, "path": "../data/{model}.csv"}, {}, "../../outside/t",
     "servers[0].path", "outside the folders"),
    ("files remote bucket", {**FILES, "path": "s3://bucket/t/*.csv"}, {}, "t", "servers[0].path", "remote location"),
    ("files https", {**FILES, "path": "https://example.com/t.csv"}, {}, "t", "servers[0].path", "remote location"),
    ("declared roots narrower than the default", {**DUCK, "database": "../data/wh.duckdb"},
     {"DQ_CONTRACTS_LOCAL_ROOTS": "{site}/elsewhere"}, "t", "servers[0].database", "outside the folders"),
    ("server bound to another team's folder", {**DUCK, "database": "../data/wh.duckdb"},
     {"DQ_CONTRACTS_LOCAL_CONTRACTS": "{site}/project/team_a"}, "t", "servers[0]", "not bound"),
    ("another type than the operator's", {**DUCK, "database": "../data/wh.duckdb"},
     {"DQ_CONTRACTS_LOCAL_TYPE": "postgres"}, "t", "servers[0].type", "the contract says type 'duckdb'"),
    ("postgres: another host", {**PG, "host": "evil.example"}, PG_OPERATOR, "t", "servers[0].host",
     "the contract says host 'evil.example'"),
    ("postgres: another database", {**PG, "database": "payroll"}, PG_OPERATOR, "t", "servers[0].database",
     "the contract says database 'payroll'"),
    ("postgres: another port", {**PG, "port": 6543}, PG_OPERATOR, "t", "servers[0].port", "the contract says port"),
    ("postgres: another host than the URL's", {**PG, "host": "evil.example"},
     {"DQ_CONTRACTS_PROD_URL": "postgresql+psycopg2://u:p@127.0.0.1:5432/wh"}, "t", "servers[0].host",
     "the contract says host 'evil.example'"),
    ("postgres: a server bound elsewhere", PG, {**PG_OPERATOR, "DQ_CONTRACTS_PROD_CONTRACTS": "{site}/team_a"}, "t",
     "servers[0]", "not bound"),
    ("postgres: an object in pg_catalog", PG, PG_OPERATOR, "pg_catalog.pg_authid", "servers[0].schema",
     "names the schema 'pg_catalog'"),
    ("postgres: an object in another schema", PG, PG_OPERATOR, "payroll.salaries", "servers[0].schema",
     "names the schema 'payroll'"),
    ("postgres: an object in another database", PG, PG_OPERATOR, "other.public.t", "servers[0].schema",
     "names the catalog 'other'"),
    ("duckdb: an object in another schema", {**DUCK, "database": "../data/wh.duckdb"}, {}, "main.t",
     "servers[0].schema", "names the schema 'main'"),
    ("duckdb: an object in the system catalog", {**DUCK, "database": "../data/wh.duckdb"}, {},
     "system.main.duckdb_settings", "servers[0].schema", "names the catalog 'system'"),
    ("a server of its own beside a bound one", {**DUCK, "server": "mine", "database": "../data/wh.duckdb"},
     {"DQ_CONTRACTS_LOCAL_CONTRACTS": "{site}/project/team_a", "DQ_CONTRACTS_LOCAL_ROOTS": "{site}/project/data"},
     "t", "servers[0].database", "outside the folders"),
    ("files: a glob in the physicalName", {**FILES, "path": "../data/{model}.csv"}, {}, "**/**/**/*",
     "servers[0].path", "a glob in an object's physicalName"),
    ("files: many ** in the path", {**FILES, "path": "../data/**/**/**/t.csv"}, {}, "t", "servers[0].path",
     "more than one '**'"),
    # controls: what the operator lets through loads
    ("control: a schema the operator allows", {**DUCK, "database": "../data/wh.duckdb"},
     {"DQ_CONTRACTS_LOCAL_SCHEMAS": "main"}, "main.t", None, None),
    ("control: the server's own schema written out", {**DUCK, "database": "../data/wh.duckdb"}, {},
     "analytics.t", None, None),
    ("control: duckdb inside the default root", {**DUCK, "database": "../data/wh.duckdb"}, {}, "t", None, None),
    ("control: duckdb outside, root declared", {**DUCK, "database": "{site}/outside/other.duckdb"},
     {"DQ_CONTRACTS_LOCAL_ROOTS": "{site}/outside"}, "t", None, None),
    ("control: MotherDuck declared", {**DUCK, "database": "md:analytics"}, {"DQ_CONTRACTS_LOCAL_REMOTE": "md:"},
     "t", None, None),
    ("control: files inside", {**FILES, "path": "../data/{model}.csv"}, {}, "t", None, None),
    ("control: bound to this folder", {**DUCK, "database": "../data/wh.duckdb"},
     {"DQ_CONTRACTS_LOCAL_CONTRACTS": "{site}/project/contracts"}, "t", None, None),
    ("control: postgres at the operator's endpoint", PG, PG_OPERATOR, "t", None, None),
]


def _filled(value, site):
    if isinstance(value, dict):
        return {k: _filled(v, site) for k, v in value.items()}
    return value.replace("{site}", str(site)) if isinstance(value, str) else value


@pytest.mark.parametrize("server, operator, physical, path, says", [row[1:] for row in LOAD_ATTACKS],
                         ids=[row[0] for row in LOAD_ATTACKS])
def test_the_operator_declaration_refuses_a_server_before_anything_connects(site, server, operator, physical,
                                                                            path, says):
    file = write(site, contract(_filled(server, site), physical))
    loaded = load_contracts([site / "project" / "contracts"], environ=_filled(operator, site))
    errors = [(p.path, p.message) for p in loaded.errors]
    if path is None:
        assert errors == [] and [os.path.abspath(p.file) for p in loaded.usable_plans] == [str(file)]
        return
    assert [e[0] for e in errors] == [path], errors
    assert says in errors[0][1]
    assert loaded.usable_plans == [] and [os.path.abspath(r.file) for r in loaded.rejected] == [str(file)]
    assert loaded.errors[0].line is not None  # the line of the server entry in the file


def test_validate_and_check_report_the_refusal_and_check_does_not_run_it(site):
    write(site, contract({**DUCK, "database": "../data/link.duckdb"}))
    for command in ("validate", "check"):
        proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", command, "contracts"],
                              cwd=site / "project", capture_output=True, text=True, timeout=120, check=False,
                              env={k: v for k, v in os.environ.items() if not k.startswith("DQ_CONTRACTS_")})
        output = proc.stdout + proc.stderr
        assert proc.returncode == 1 and "Traceback" not in output
        assert "c.odcs.yaml:" in output and "servers[0].database" in output and "outside the folders" in output
        assert " pass " not in output and "0 check(s)" in output if command == "check" else True


def test_a_rejected_server_shows_a_failing_contract_valid_check_and_the_rest_of_the_folder_loads(site):
    import dagster as dg

    from dq_contracts import WarehouseResource, build_contract_defs
    from dq_contracts.dagster_defs.resource import ServerSettings
    from dq_contracts_tests.support import run_checks

    # team_a's own server is the shared one, bound to its folder (once the operator binds a server,
    # a server it did not declare opens nothing)
    write(site, {**contract({**DUCK, "server": "shared", "database": "../../data/wh.duckdb"}), "id": "team_a"},
          "project/contracts/team_a")
    other = contract({**DUCK, "server": "shared", "database": "../../data/wh.duckdb"})
    write(site, {**other, "id": "team_b", "schema": [{**other["schema"][0], "name": "u", "physicalName": "u"}]},
          "project/contracts/team_b")
    resource = WarehouseResource(servers={"shared": ServerSettings(
        contracts=[str(site / "project" / "contracts" / "team_a")])})
    defs = build_contract_defs(site / "project" / "contracts", resource=resource)
    result = run_checks(defs)
    outcomes = {(e.asset_key.path[-1], e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    assert outcomes.get(("u", "contract_valid")) is False, outcomes  # team_b named a server bound to team_a's folder
    assert any(key[0] == "t" for key in outcomes) and ("t", "contract_valid") not in outcomes
    assert isinstance(defs, dg.Definitions)


# --- at connection time, again: the file may have changed since it was loaded -----------------------

def _in_thread(function, seconds=60):
    """function() in a daemon thread: a read blocked on a FIFO fails the test instead of hanging it."""
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", function()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked (a FIFO opened?)"
    return box["value"]


# (id, what replaces project/data/wh.duckdb after loading, what every check's error says)
SWAPS = [
    ("a FIFO", lambda wh, site: os.mkfifo(wh), "not a regular file"),
    ("a folder", lambda wh, site: wh.mkdir(), "not a regular file"),
    ("a symlink to outside", lambda wh, site: os.symlink(site / "outside" / "other.duckdb", wh), "outside the"),
]


@pytest.mark.parametrize("swap, says", [row[1:] for row in SWAPS], ids=[row[0] for row in SWAPS])
def test_a_duckdb_file_swapped_after_loading_is_not_opened(site, swap, says):
    write(site, contract({**DUCK, "database": "../data/wh.duckdb"}))
    plan = load_contracts([site / "project" / "contracts"], environ={}).usable_plans[0]
    wh = site / "project" / "data" / "wh.duckdb"
    wh.unlink()
    swap(wh, site)
    with Warehouses({}) as warehouses:
        results = _in_thread(lambda: run_contract(plan, warehouses))
    assert results and all(not r.passed and says in r.error for r in results), [r.error for r in results]


def test_a_file_glob_reads_only_regular_files_inside_the_roots(site):
    data = site / "project" / "data"
    (data / "t.csv").unlink()
    (data / "parts").mkdir()
    (data / "parts" / "a.csv").write_text("id,code,amount\n1,ab,5\n2,cd,7\n")
    os.mkfifo(data / "parts" / "b.csv")  # DuckDB would block reading it
    os.symlink(site / "outside" / "t.csv", data / "parts" / "c.csv")  # inside by name, outside in fact
    (data / "parts" / "d.csv").mkdir()  # a folder where a file is expected
    write(site, contract({**FILES, "path": "../data/parts/*.csv"}))
    plan = load_contracts([site / "project" / "contracts"], environ={}).usable_plans[0]
    with Warehouses({}) as warehouses:
        results = {r.name: r for r in _in_thread(lambda: run_contract(plan, warehouses))}
    assert results["row_count"].observed == 2  # a.csv alone: not the FIFO, the symlink out, or the folder
    assert not results["row_count"].passed and results["row_count"].error is None


# --- DuckDB never installs or loads an extension because of a contract -------------------------------

def test_a_duckdb_session_installs_and_loads_no_extension(site):
    connection = connection_for({**DUCK, "database": "../data/wh.duckdb"}, {}, str(site / "project" / "contracts"))
    engine = engine_for(connection)
    with engine.connect() as c:
        settings = {name: c.exec_driver_sql(f"SELECT current_setting('{name}')").scalar()
                    for name in ("autoinstall_known_extensions", "autoload_known_extensions",
                                 "allow_community_extensions")}
        with pytest.raises(Exception) as caught:  # spatial is not built in: loading it is refused, not tried
            c.exec_driver_sql("SELECT ST_Point(1, 2)")
    engine.dispose()
    assert settings == dict.fromkeys(settings, False)
    assert "is not in the catalog" in str(caught.value)  # not a download tried and refused


# --- principle 6: a warehouse file cannot change what a check means -----------------------------------

# (a statement the warehouse file's owner ran, the object it defines as the error names it)
SHADOWS = [
    ("CREATE MACRO regexp_matches(a, b) AS true", "macro main.regexp_matches"),
    ("CREATE MACRO regexp_full_match(a, b) AS true", "macro main.regexp_full_match"),
    ("CREATE MACRO length(a) AS 3", "macro main.length"),
    ("CREATE MACRO strlen(a) AS 3", "macro main.strlen"),
    ("CREATE MACRO count(a) AS 0", "macro main.count"),
    ("CREATE MACRO count_star() AS 100", "macro main.count_star"),
    ("CREATE MACRO sum(a) AS 0", "macro main.sum"),
    ("CREATE MACRO min(a) AS 0", "macro main.min"),
    ("CREATE MACRO max(a) AS 0", "macro main.max"),
    ("CREATE MACRO coalesce(a, b) AS 0", "macro main.coalesce"),
    ("CREATE MACRO \"~~\"(a, b) AS true", "macro main.~~"),
    ("CREATE MACRO analytics.length(a) AS 3", "macro analytics.length"),
    ("CREATE MACRO read_csv(p) AS TABLE SELECT 1 AS id", "table_macro main.read_csv"),
]


@pytest.mark.parametrize("statement, named", SHADOWS, ids=[s[1] for s in SHADOWS])
def test_a_warehouse_file_that_redefines_a_function_fails_every_check(site, statement, named):
    wh = site / "project" / "data" / "wh.duckdb"
    wh.unlink()
    duckdb_with(wh, *TABLE, statement)
    write(site, contract({**DUCK, "database": "../data/wh.duckdb"}))
    plan = load_contracts([site / "project" / "contracts"], environ={}).usable_plans[0]
    with Warehouses({}) as warehouses:
        results = run_contract(plan, warehouses)
    assert len(results) == sum(len(o.checks) for o in plan.objects) > 5
    assert [r.name for r in results if r.passed] == []  # the table's schema too: nothing of the file is judged
    assert all(named in r.error and "cannot redefine" in r.error for r in results), results[0].error


def test_the_same_file_without_redefinitions_is_judged_on_its_rows(site):
    write(site, contract({**DUCK, "database": "../data/wh.duckdb"}))
    plan = load_contracts([site / "project" / "contracts"], environ={}).usable_plans[0]
    with Warehouses({}) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses)}
    # every clause its rows break fails, measured (no error); the table is as declared
    assert {n: (r.passed, r.error) for n, r in results.items()} == {
        "schema": (True, None), "id__not_null": (False, None), "id__unique": (False, None),
        "code__pattern": (False, None), "code__max_length": (False, None), "code__min_length": (False, None),
        "amount__minimum": (False, None), "amount__invalid_values": (False, None), "row_count": (False, None)}


# (what the database's owner created in a schema on the role's search_path, the clause it would
# make pass). PostgreSQL weighs a function of every schema on the path equally, and an exact type
# match wins, so `public.length(varchar)` beats `pg_catalog.length(text)` even behind pg_catalog.
PG_SHADOWS = [
    ("CREATE FUNCTION public.length(varchar) RETURNS integer LANGUAGE sql AS 'SELECT 3'", "code__max_length"),
    ("CREATE FUNCTION public.char_length(varchar) RETURNS integer LANGUAGE sql AS 'SELECT 3'", "code__min_length"),
    ("CREATE FUNCTION public.yes(varchar, text) RETURNS boolean LANGUAGE sql AS 'SELECT true';"
     " CREATE OPERATOR public.~ (LEFTARG = varchar, RIGHTARG = text, FUNCTION = public.yes)", "code__pattern"),
    ("CREATE FUNCTION public.count(integer) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'", "id__not_null"),
]


@pytest.mark.postgres
@pytest.mark.parametrize("statement, clause", PG_SHADOWS, ids=[s[1] for s in PG_SHADOWS])
def test_a_function_in_the_search_path_cannot_change_what_a_check_means(pg_database, statement, clause):
    """Every check session resolves names in pg_catalog alone, so the rows still fail their clauses."""
    import sqlalchemy as sa

    from dq_contracts_tests.support import pg_env, pg_server

    engine = sa.create_engine(pg_database)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE public.t (id INTEGER, code VARCHAR, amount INTEGER)")
        c.exec_driver_sql("INSERT INTO public.t VALUES (1, 'ab', 5), (1, 'TOOLONGCODE', -3), (NULL, 'zz', 7)")
        try:
            c.exec_driver_sql(statement)
        except sa.exc.ProgrammingError as exc:  # count is an aggregate there: not every name can be taken
            pytest.skip(f"PostgreSQL refuses the shadow itself: {exc.orig}")
    engine.dispose()
    folder = Path(sa.make_url(pg_database).database)  # a name of its own for the contracts folder
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        contracts = Path(tmp) / folder / "contracts"
        contracts.mkdir(parents=True)
        (contracts / "t.odcs.yaml").write_text(yaml.safe_dump(contract(pg_server(pg_database))))
        environ = pg_env(pg_database)
        plan = load_contracts([contracts], environ=environ).usable_plans[0]
        with Warehouses(environ) as warehouses:
            results = {r.name: r for r in run_contract(plan, warehouses)}
    assert (results[clause].passed, results[clause].error) == (False, None)


def test_a_contract_file_that_would_block_or_lies_outside_is_not_read(site):
    """A symlink named like a contract to a file outside the folder (/proc/kmsg blocks whoever reads
    it) is not read; a FIFO named on the command line is refused, never waited on."""
    contracts = site / "project" / "contracts"
    (site / "outside" / "x.odcs.yaml").write_text(yaml.safe_dump(contract({**DUCK, "database": "../data/wh.duckdb"})))
    os.symlink(site / "outside" / "x.odcs.yaml", contracts / "x.odcs.yaml")
    fifo = site / "project" / "y.odcs.yaml"
    os.mkfifo(fifo)
    loaded = _in_thread(lambda: load_contracts([contracts, fifo], environ={}), seconds=30)
    said = {Path(p.file).name: p.message for p in loaded.problems}
    assert "outside the folder loaded" in said["x.odcs.yaml"] and "y.odcs.yaml" in said
    assert loaded.usable_plans == []


@pytest.mark.parametrize("first", ["victim", "attacker"])
def test_a_shared_endpoint_reads_each_contracts_own_schema(site, first):
    """Two contracts on one DuckDB file, each in its schema: whichever opens the file first, each
    reads its own tables (the victim's bad rows fail its clauses; the attacker's clean copy passes)."""
    wh = site / "project" / "data" / "wh.duckdb"
    wh.unlink()
    duckdb_with(wh, *TABLE, "CREATE SCHEMA clean", "CREATE TABLE clean.t (id INTEGER, code VARCHAR, amount INTEGER)",
                "INSERT INTO clean.t SELECT i, 'abc', 5 FROM range(1, 10) r(i)")
    victim = {**contract({**DUCK, "database": "../data/wh.duckdb"}), "id": "victim"}
    attacker = {**contract({**DUCK, "schema": "clean", "database": "../data/wh.duckdb"}), "id": "attacker"}
    attacker["schema"] = [{**attacker["schema"][0], "name": "u", "physicalName": "t",
                           "customProperties": [{"property": "dagsterAssetKey", "value": "clean/t"}]}]
    for doc in (victim, attacker):
        (site / "project" / "contracts" / f"{doc['id']}.odcs.yaml").write_text(yaml.safe_dump(doc))
    loaded = load_contracts([site / "project" / "contracts"], environ={})
    plans = {p.id: p for p in loaded.usable_plans}
    order = ["victim", "attacker"] if first == "victim" else ["attacker", "victim"]
    with Warehouses({}) as warehouses:
        results = {cid: {r.name: r.passed for r in run_contract(plans[cid], warehouses)} for cid in order}
    assert results["victim"]["code__pattern"] is False and results["victim"]["amount__minimum"] is False
    assert results["attacker"]["code__pattern"] is True and results["attacker"]["amount__minimum"] is True


# --- the warehouse's owner: a column's collation or type cannot change what a check means ----------

# What the owner creates before the tables: a case-blind nondeterministic ICU collation, citext, an
# enum (its labels read from the values compared), and a domain that carries the collation.
PG_OWNER_SETUP = (
    "CREATE COLLATION public.ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
    "CREATE EXTENSION citext SCHEMA public",
    "CREATE TYPE public.lvl AS ENUM ('b', 'a')",
    "CREATE DOMAIN public.ci_text AS text COLLATE public.ci",
)
NOCASE, CI = "VARCHAR COLLATE NOCASE", "text COLLATE public.ci"
VALID = {"quality": [{"metric": "invalidValues", "arguments": {"validValues": ["abc"]}, "mustBe": 0}]}
PAIRS = ["abc", "ABC"]  # two values apart byte by byte, one value to a case-blind collation

# (id, the column type the owner gives `code` on DuckDB and on PostgreSQL (None: no such attack
# there), the values of code in t's rows (every id is 1), the code property's clauses, the object's
# own clauses, the check, the verdict a byte-by-byte comparison gives). Every row is measured: a
# database error is no verdict. `u` holds one row, 'abc', in a column of the same type.
OWNER_ATTACKS = [
    ("validValues, a case-blind collation", NOCASE, CI, PAIRS, VALID, {}, "code__invalid_values", False),
    ("validValues, a domain with the collation", None, "public.ci_text", PAIRS, VALID, {}, "code__invalid_values",
     False),
    ("enum, a case-blind collation", NOCASE, CI, PAIRS, {"enum": [{"value": "abc"}]}, {}, "code__accepted_values",
     False),
    ("validValues, an enum type", None, "public.lvl", ["b"],
     {"quality": [{"metric": "invalidValues", "arguments": {"validValues": ["a", "zz"]}, "mustBe": 0}]}, {},
     "code__invalid_values", False),
    ("relationship, a case-blind collation", NOCASE, CI, ["ABC"], {"relationships": [{"to": "u.code"}]}, {},
     "code__references_u", False),
    ("pattern, a nondeterministic collation", None, CI, ["ABC"], {"logicalTypeOptions": {"pattern": "^[a-z]+$"}},
     {}, "code__pattern", False),
    ("invalidValues pattern, a nondeterministic collation", None, CI, ["ABC"],
     {"quality": [{"metric": "invalidValues", "arguments": {"pattern": "^[a-z]+$"}, "mustBe": 0}]}, {},
     "code__invalid_values", False),
    ("missingValues, a case-blind collation", NOCASE, CI, ["n/a"],
     {"quality": [{"metric": "missingValues", "arguments": {"missingValues": ["N/A"]}, "mustBe": 0}]}, {},
     "code__missing_values", True),
    ("unique, a case-blind collation", NOCASE, CI, PAIRS, {"unique": True}, {}, "code__unique", True),
    ("unique, citext", None, "public.citext", PAIRS, {"unique": True}, {}, "code__unique", True),
    ("primaryKey, citext", None, "public.citext", PAIRS, {"primaryKey": True}, {}, "code__primary_key", True),
    ("compound duplicateValues, a case-blind collation", NOCASE, CI, PAIRS, {},
     {"quality": [{"metric": "duplicateValues", "arguments": {"properties": ["id", "code"]}, "mustBe": 0}]},
     "id__code__duplicate_values", True),
    ("compound duplicateValues, citext", None, "public.citext", PAIRS, {},
     {"quality": [{"metric": "duplicateValues", "arguments": {"properties": ["id", "code"]}, "mustBe": 0}]},
     "id__code__duplicate_values", True),
]


def owner_contract(server: dict, code: dict, quality: dict) -> dict:
    return {"apiVersion": "v3.2.0", "kind": "DataContract", "id": "owner", "version": "1.0.0", "status": "active",
            "servers": [server],
            "schema": [{"name": "t", "physicalName": "t", **quality,
                        "properties": [{"name": "id", "logicalType": "integer"},
                                       {"name": "code", "logicalType": "string", **code}]},
                       {"name": "u", "physicalName": "u", "properties": [{"name": "code", "logicalType": "string"}]}]}


def _owner_verdict(contracts: Path, doc: dict, environ: dict, check: str) -> tuple:
    contracts.mkdir(parents=True, exist_ok=True)
    (contracts / "owner.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    loaded = load_contracts([contracts], environ=environ)
    assert loaded.errors == [], [(p.path, p.message) for p in loaded.errors]
    results: dict = {}
    with Warehouses(environ) as warehouses:
        for plan in loaded.usable_plans:
            results.update({r.name: r for r in run_contract(plan, warehouses)})
    assert check in results, sorted(results)
    return results[check].passed, results[check].error


DUCK_OWNER = [row for row in OWNER_ATTACKS if row[1] is not None]


@pytest.mark.parametrize("column_type, values, code, quality, check, verdict", [r[1:2] + r[3:] for r in DUCK_OWNER],
                         ids=[r[0] for r in DUCK_OWNER])
def test_a_duckdb_column_collation_cannot_change_what_a_check_means(tmp_path, column_type, values, code, quality,
                                                                    check, verdict):
    """Every comparison of text is byte by byte, whatever collation the file's owner gave the column."""
    (tmp_path / "data").mkdir()
    duckdb_with(tmp_path / "data" / "wh.duckdb", "CREATE SCHEMA analytics",
                f"CREATE TABLE analytics.t (id INTEGER, code {column_type})",
                f"CREATE TABLE analytics.u (code {column_type})", "INSERT INTO analytics.u VALUES ('abc')",
                *(f"INSERT INTO analytics.t VALUES (1, '{v}')" for v in values))
    doc = owner_contract({**DUCK, "database": "../data/wh.duckdb"}, code, quality)
    assert _owner_verdict(tmp_path / "contracts", doc, {}, check) == (verdict, None)


PG_OWNER = [row for row in OWNER_ATTACKS if row[2] is not None]


@pytest.mark.postgres
@pytest.mark.parametrize("column_type, values, code, quality, check, verdict", [r[2:] for r in PG_OWNER],
                         ids=[r[0] for r in PG_OWNER])
def test_a_postgresql_column_collation_or_type_cannot_change_what_a_check_means(
        pg_database, tmp_path, column_type, values, code, quality, check, verdict):
    """Every comparison of text is of the values as text, byte by byte (COLLATE "C"), whatever
    collation, domain, citext or enum the schema's owner gave the column."""
    import sqlalchemy as sa

    from dq_contracts_tests.support import pg_env, pg_server

    engine = sa.create_engine(pg_database)
    with engine.begin() as c:
        for statement in (*PG_OWNER_SETUP, f"CREATE TABLE public.t (id INTEGER, code {column_type})",
                          f"CREATE TABLE public.u (code {column_type})", "INSERT INTO public.u VALUES ('a')"
                          if column_type == "public.lvl" else "INSERT INTO public.u VALUES ('abc')"):
            c.exec_driver_sql(statement)
        for value in values:
            c.execute(sa.text("INSERT INTO public.t VALUES (1, :v)"), {"v": value})
    engine.dispose()
    doc = owner_contract(pg_server(pg_database), code, quality)
    assert _owner_verdict(tmp_path / "contracts", doc, pg_env(pg_database), check) == (verdict, None)


def _with_macro_in_its_log(wh: Path) -> None:
    """A macro written to the file's write-ahead log only: the file itself keeps its bytes, and DuckDB
    replays the log whenever it opens the file, read-only too."""
    import duckdb

    writer = duckdb.connect(str(wh))
    writer.execute("SET checkpoint_threshold = '10GB'")
    writer.execute("PRAGMA disable_checkpoint_on_shutdown")
    writer.execute("CREATE MACRO length(a) AS 3")
    writer.close()


def _renamed_over(wh: Path) -> None:
    evil = wh.with_name("evil.duckdb")
    duckdb_with(evil, *TABLE, "CREATE MACRO length(a) AS 3")
    os.replace(evil, wh)


# (id, what the file's owner does to the file once its clean verdict is remembered)
AFTER_A_CLEAN_VERDICT = [("a file renamed over it", _renamed_over),
                         ("a macro in its write-ahead log", _with_macro_in_its_log)]


@pytest.mark.parametrize("change", [row[1] for row in AFTER_A_CLEAN_VERDICT],
                         ids=[row[0] for row in AFTER_A_CLEAN_VERDICT])
def test_a_remembered_verdict_never_covers_a_file_changed_since(site, monkeypatch, change):
    """A file's verdict is remembered (the catalog query costs more than a small check), by what the
    file is: the unchanged file is not queried again; a file swapped, or given a write-ahead log,
    is judged again and fails every check."""
    from dq_contracts.engine import dialect_duckdb

    monkeypatch.setattr(dialect_duckdb, "RACY_NS", 0)  # remember a verdict at once (else: 2 s after a write)
    monkeypatch.setattr(dialect_duckdb, "_VERDICTS", {})
    write(site, contract({**DUCK, "database": "../data/wh.duckdb"}))
    plan = load_contracts([site / "project" / "contracts"], environ={}).usable_plans[0]
    with Warehouses({}) as warehouses:
        assert {r.name: r.error for r in run_contract(plan, warehouses)}["schema"] is None
    assert list(dialect_duckdb._VERDICTS.values()) == [None]  # judged clean, remembered
    monkeypatch.setattr(dialect_duckdb, "REDEFINITIONS", "SELECT no_such_function()")  # a query would fail now
    with Warehouses({}) as warehouses:
        assert all(r.error is None for r in run_contract(plan, warehouses))  # not queried: the same file
    monkeypatch.setattr(dialect_duckdb, "REDEFINITIONS", REDEFINITIONS)
    change(site / "project" / "data" / "wh.duckdb")
    with Warehouses({}) as warehouses:
        results = run_contract(plan, warehouses)
    assert results and all(not r.passed and "macro main.length" in r.error for r in results), results[0].error


# (what the schema's owner wrote, as a role that is no superuser: a function and a cast from a type
# they own; the first answers for the `CAST(code AS text)` every comparison of text makes, the others
# could answer for a comparison a check makes of another type; how the refusal names it)
PG_CASTS = [
    ("CREATE TYPE public.lvl AS ENUM ('b', 'a'); CREATE FUNCTION public.lie(public.lvl) RETURNS text"
     " LANGUAGE sql IMMUTABLE AS $$SELECT 'a'::text$$; CREATE CAST (public.lvl AS text) WITH FUNCTION"
     " public.lie(public.lvl) AS IMPLICIT", "CAST (lvl AS text) WITH FUNCTION lie(lvl)"),
    ("CREATE TYPE public.lvl AS ENUM ('b', 'a'); CREATE FUNCTION public.lie(public.lvl) RETURNS varchar"
     " LANGUAGE sql IMMUTABLE AS $$SELECT 'a'::varchar$$; CREATE CAST (public.lvl AS varchar) WITH FUNCTION"
     " public.lie(public.lvl)", "CAST (lvl AS character varying) WITH FUNCTION lie(lvl)"),
    ("CREATE TYPE public.pair AS (a text); CREATE FUNCTION public.n(public.pair) RETURNS integer"
     " LANGUAGE sql IMMUTABLE AS $$SELECT 5$$; CREATE CAST (public.pair AS integer) WITH FUNCTION"
     " public.n(public.pair) AS ASSIGNMENT", "CAST (pair AS integer) WITH FUNCTION n(pair)"),
]


@pytest.mark.postgres
@pytest.mark.parametrize("statement, named", PG_CASTS, ids=[row[1] for row in PG_CASTS])
def test_a_cast_the_schema_owner_wrote_fails_every_check(pg_database, tmp_path, statement, named):
    """A cast is found by its types whatever the search path: a database holding one its owner wrote
    a function for is not judged (the owner's function would answer for `CAST(code AS text)`)."""
    import sqlalchemy as sa

    from dq_contracts_tests.support import pg_env, pg_server

    engine = sa.create_engine(pg_database)
    with engine.begin() as c:
        owner = "dq_owner_" + sa.make_url(pg_database).database  # roles are the cluster's: one per test
        c.exec_driver_sql(f"CREATE ROLE {owner}")
        c.exec_driver_sql(f"GRANT CREATE ON SCHEMA public TO {owner}")
        c.exec_driver_sql(f"SET ROLE {owner}")  # no superuser needed to write a cast from one's own type
        c.exec_driver_sql(statement)
        c.exec_driver_sql("CREATE TABLE public.t (id INTEGER, code public.lvl)" if "lvl" in statement else
                          "CREATE TABLE public.t (id INTEGER, code text)")
        c.exec_driver_sql("INSERT INTO public.t VALUES (1, 'b')")
        c.exec_driver_sql("CREATE TABLE public.u (code text)")
    engine.dispose()
    valid = {"quality": [{"metric": "invalidValues", "arguments": {"validValues": ["a"]}, "mustBe": 0}]}
    doc = owner_contract(pg_server(pg_database), valid, {})
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    (contracts / "owner.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    environ = pg_env(pg_database)
    plan = load_contracts([contracts], environ=environ).usable_plans[0]
    with Warehouses(environ) as warehouses:
        results = run_contract(plan, warehouses)
    assert results and [r.name for r in results if r.passed] == []
    assert all(named in r.error and "cast its owner wrote" in r.error for r in results), results[0].error


# (a partition of a case-blind column holding 'eu', 'EU' and 'us': its key, or the values of a range
# of static partitions; its rows)
CASE_BLIND_PARTITIONS = [("eu", 1), (("eu", "us"), 2)]


@pytest.mark.parametrize("key, rows", CASE_BLIND_PARTITIONS, ids=["eu", "a range eu...us"])
def test_a_partition_of_a_case_blind_column_reads_its_own_rows(tmp_path, key, rows):
    """Partition 'eu' is the rows whose value is 'eu' byte by byte, not the 'EU' rows a NOCASE column
    holds too (their failing rows would count against it, or a clean partition's hide them)."""
    from dq_contracts.engine.runner import run_object
    from dq_contracts.odcs.partitions import Partition, partition_for

    (tmp_path / "data").mkdir()
    duckdb_with(tmp_path / "data" / "wh.duckdb", "CREATE SCHEMA analytics",
                f"CREATE TABLE analytics.t (id INTEGER, code {NOCASE})", f"CREATE TABLE analytics.u (code {NOCASE})",
                "INSERT INTO analytics.t VALUES (1, 'eu'), (2, 'EU'), (3, 'us')")
    doc = owner_contract({**DUCK, "database": "../data/wh.duckdb"}, {}, {
        "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}],
        "customProperties": [{"property": "dagsterPartitions",
                              "value": {"type": "static", "values": ["eu", "us"], "column": "code"}}]})
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    (contracts / "owner.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    loaded = load_contracts([contracts], environ={})
    assert loaded.errors == [], [(p.path, p.message) for p in loaded.errors]
    plan = loaded.usable_plans[0]
    obj = next(o for o in plan.objects if o.name == "t")
    connection = connection_for(plan.servers[0], {}, str(contracts))
    engine = engine_for(connection)
    partition = (partition_for(obj.partitioning, key) if isinstance(key, str) else
                 Partition("...".join(key), "code", "string", values=key))
    try:
        results = {r.name: r for r in run_object(plan, obj, engine, schema=connection.schema, selected=["row_count"],
                                                 partition=partition)}
    finally:
        engine.dispose()
    assert (results["row_count"].observed, results["row_count"].error) == (rows, None)
