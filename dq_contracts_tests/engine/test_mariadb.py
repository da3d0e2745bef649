"""MySQL's row on a real MariaDB (one server per test session, conftest.mariadb): what keeps a check
session read-only (the operator's SELECT-only user; the session's READ ONLY, which the session could
undo), what bounds its time (max_statement_time), and SQL rules judged in sqlglot's mysql dialect.
The clause matrix and the kind cases run here too (test_engine.py, test_kind_cases.py)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from dq_contracts.engine.connections import EndpointError, connection_for, engine_for
from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.engine.results import StatementTimeout
from dq_contracts.engine.sessions import CREDENTIALS_READ_ONLY, ReadOnlyRefused, Session
from dq_contracts_tests.mariadbcluster import READER_PASSWORD, ROOT_PASSWORD
from dq_contracts_tests.support import contract, mysql_env, mysql_server, plan_of

pytestmark = pytest.mark.mariadb


@pytest.fixture
def database(mariadb_database):
    """(root's URL, reader's URL) of a database holding t(a, code): 20 rows."""
    admin, reader = mariadb_database
    engine = sa.create_engine(admin)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a INTEGER, code VARCHAR(8))")
        c.execute(sa.text("INSERT INTO t VALUES (:a, :code)"), [{"a": i, "code": f"C{i}"} for i in range(20)])
    engine.dispose()
    return admin, reader


def rows(admin: str) -> int:
    engine = sa.create_engine(admin)
    with engine.connect() as c:
        found = c.exec_driver_sql("SELECT COUNT(*) FROM t").scalar()
    engine.dispose()
    return found


def checks_engine(url: str) -> sa.Engine:
    """The engine the checks run on, built from the operator's declaration of `url`'s user."""
    return engine_for(connection_for(mysql_server(url), mysql_env(url)))


def test_without_the_operators_word_the_server_is_refused(database):
    _, reader = database
    environ = {k: v for k, v in mysql_env(reader).items() if not k.endswith("_READ_ONLY")}
    with pytest.raises(EndpointError, match="could undo READ ONLY.*DQ_CONTRACTS_MY_READ_ONLY=true"):
        connection_for(mysql_server(reader), environ)
    # and where a session begins, for an engine not built by connections
    engine = sa.create_engine(reader)
    with pytest.raises(ReadOnlyRefused, match="a user granted SELECT alone"):
        Session(engine, 5).run(lambda c: c.exec_driver_sql("SELECT 1").scalar())
    engine.dispose()


def test_a_check_session_refuses_a_write_even_for_a_user_who_may_write(database):
    admin, _ = database
    engine = checks_engine(admin)  # root, declared read-only: the session's READ ONLY is what refuses
    with Session(engine, 5) as session:
        with pytest.raises(sa.exc.OperationalError, match="READ ONLY transaction"):
            session.run(lambda c: c.exec_driver_sql("INSERT INTO t VALUES (99, 'x')"))
        with pytest.raises(sa.exc.OperationalError, match="READ ONLY transaction"):
            session.run(lambda c: c.exec_driver_sql("CREATE TABLE u (a INTEGER)"))
    engine.dispose()
    assert rows(admin) == 20


def test_the_session_could_undo_read_only_so_the_select_only_user_is_what_holds(database):
    admin, reader = database

    def undo_then_write(connection: sa.Connection) -> None:
        connection.exec_driver_sql("COMMIT")
        connection.exec_driver_sql("SET SESSION TRANSACTION READ WRITE")
        connection.exec_driver_sql("INSERT INTO t VALUES (99, 'x')")
        connection.exec_driver_sql("COMMIT")

    # the reason the row needs _READ_ONLY: a user who may write gets past the session's READ ONLY
    writer = checks_engine(admin)
    Session(writer, 5).run(undo_then_write)
    writer.dispose()
    assert rows(admin) == 21
    # the operator's user granted SELECT alone: the same statements are refused by the server
    engine = checks_engine(reader)
    with pytest.raises(sa.exc.OperationalError, match="INSERT command denied"):
        Session(engine, 5).run(undo_then_write)
    engine.dispose()
    assert rows(admin) == 21


def test_a_slow_statement_is_cancelled_by_the_server_at_the_timeout(database):
    _, reader = database
    engine = checks_engine(reader)
    # SLEEP(30) that ran to its end would return 0, not raise: the server stopped it (ER_STATEMENT_TIMEOUT)
    with pytest.raises(StatementTimeout, match="1 s statement timeout"):
        Session(engine, 1).run(lambda c: c.exec_driver_sql("SELECT SLEEP(30)").scalar())
    # no timer of ours is left behind: the next session runs
    assert Session(engine, 1).run(lambda c: c.exec_driver_sql("SELECT 1").scalar()) == 1
    engine.dispose()


# A read-only rule that runs for minutes: the 20-row table joined to itself 7 times (1.28e9 rows;
# MariaDB stops a recursive CTE at 1,000 iterations, max_recursive_iterations, with no error)
SLOW = "SELECT COUNT(*) FROM {object} AS a, {object} AS b, {object} AS c, {object} AS d, {object} AS e, " \
       "{object} AS f, {object} AS g"


def test_a_contracts_slow_rule_fails_at_the_timeout_and_the_others_still_report(database, tmp_path):
    _, reader = database
    doc = contract(mysql_server(reader), [{"name": "a", "logicalType": "integer", "required": True}],
                   [{"type": "sql", "name": "slow", "query": SLOW, "mustBe": 0}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(mysql_env(reader)) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses, timeout_seconds=1)}
    assert not results["slow"].passed and "timeout" in results["slow"].error.lower(), results["slow"].error
    assert results["a__not_null"].passed


@pytest.mark.parametrize("query, passed", [
    ("SELECT COUNT(*) FROM {object} WHERE CHAR_LENGTH(`code`) > 2", False),  # C10..C19
    ("SELECT COUNT(*) FROM {object} WHERE `code` LIKE 'C_' AND a >= 10", True),
])
def test_a_sql_rule_is_judged_and_run_in_mysqls_dialect(database, tmp_path, query, passed):
    _, reader = database
    doc = contract(mysql_server(reader), [{"name": "a", "logicalType": "integer"},
                                          {"name": "code", "logicalType": "string"}],
                   [{"type": "sql", "name": "rule", "query": query, "mustBe": 0}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(mysql_env(reader)) as warehouses:
        [result] = [r for r in run_contract(plan, warehouses) if r.name == "rule"]
    assert result.error is None and result.passed is passed, (result.error, result.observed)
    assert "`t`" in result.sql  # rendered again by sqlglot in MySQL's quoting


def test_a_rules_regexp_is_rendered_as_mysql_8s_regexp_like_which_mariadb_lacks(database, tmp_path):
    """sqlglot has one MySQL dialect, and it writes `REGEXP` as REGEXP_LIKE(): the rule fails with
    the server's error on MariaDB (never a pass); MySQL 8 runs it."""
    _, reader = database
    doc = contract(mysql_server(reader), [{"name": "code", "logicalType": "string"}],
                   [{"type": "sql", "name": "rule", "query": "SELECT COUNT(*) FROM {object} WHERE `code` REGEXP 'x'",
                     "mustBe": 0}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(mysql_env(reader)) as warehouses:
        [result] = [r for r in run_contract(plan, warehouses) if r.name == "rule"]
    assert "REGEXP_LIKE(" in result.sql and not result.passed and "SQLSTATE 42000" in result.error


@pytest.mark.parametrize("query", [
    "SELECT COUNT(*) FROM {object} INTO OUTFILE '/tmp/x'",
    "SELECT LOAD_FILE('/etc/passwd')",
    "SELECT COUNT(*) FROM mysql.user",
    "SELECT SLEEP(5)",
])
def test_a_rule_that_reaches_past_its_table_is_refused_before_it_runs(database, tmp_path, query):
    _, reader = database
    doc = contract(mysql_server(reader), [{"name": "a", "logicalType": "integer"}],
                   [{"type": "sql", "name": "rule", "query": query, "mustBe": 0}])
    plan, _ = plan_of(tmp_path, doc, expect_problems=True)
    with Warehouses(mysql_env(reader)) as warehouses:
        results = run_contract(plan, warehouses)
    [result] = [r for r in results if r.name == "rule"]
    assert not result.passed and "refused" in result.error, result.error


def test_a_wrong_password_fails_every_check_and_shows_no_password(database, tmp_path):
    _, reader = database
    environ = {**mysql_env(reader), "DQ_CONTRACTS_MY_PASSWORD": "Wrong-pw-never-shown"}
    doc = contract(mysql_server(reader), [{"name": "a", "logicalType": "integer", "required": True}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        results = run_contract(plan, warehouses)
    assert results and all(not r.passed and "Access denied" in r.error for r in results)
    shown = repr([r.to_json() for r in results])
    assert "Wrong-pw-never-shown" not in shown and READER_PASSWORD not in shown and ROOT_PASSWORD not in shown


def test_the_schema_check_reads_mysqls_type_spellings(mariadb_database, tmp_path):
    admin, reader = mariadb_database
    engine = sa.create_engine(admin)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (a INTEGER, b BOOLEAN, c DATETIME(6), d FLOAT, e DECIMAL(12,2), f TEXT)")
    engine.dispose()
    declared = [("a", "INTEGER", "integer"), ("b", "BOOLEAN", "boolean"), ("c", "TIMESTAMP", "timestamp"),
                ("d", "REAL", "number"), ("e", "NUMERIC(12,2)", "number"), ("f", "VARCHAR", "string")]
    doc = contract(mysql_server(reader), [{"name": n, "physicalType": p, "logicalType": lt} for n, p, lt in declared])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(mysql_env(reader)) as warehouses:
        [schema] = [r for r in run_contract(plan, warehouses) if r.name == "schema"]
    assert schema.passed and schema.error is None, schema.details
    # BOOLEAN is MySQL's TINYINT(1): a boolean declared on an integer column is still told apart
    doc["schema"][0]["properties"] = [{"name": "a", "logicalType": "boolean"}, {"name": "d", "physicalType": "DOUBLE"}]
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(mysql_env(reader)) as warehouses:
        [schema] = [r for r in run_contract(plan, warehouses) if r.name == "schema"]
    assert not schema.passed
    assert schema.details["logical_type_mismatches"] == ["a: declared logicalType boolean, found int(11)"]
    assert schema.details["type_mismatches"] == ["d: declared DOUBLE, found float"]


def test_a_mariadb_url_reaches_the_same_row(database, tmp_path):
    """SQLAlchemy names the dialect of a `mariadb+pymysql://` URL `mariadb`: MySQL's row, timeout and all."""
    _, reader = database
    url = sa.make_url(reader).set(drivername="mariadb+pymysql")
    environ = {"DQ_CONTRACTS_MY_URL": url.render_as_string(hide_password=False), "DQ_CONTRACTS_MY_READ_ONLY": "true"}
    doc = contract(mysql_server(reader), [{"name": "code", "logicalType": "string", "unique": True,
                                           "logicalTypeOptions": {"pattern": "^C[0-9]+$"}}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(environ) as warehouses:
        results = {r.name: r for r in run_contract(plan, warehouses)}
    assert all(r.passed and r.error is None for r in results.values()), results
    assert "REGEXP" in results["code__pattern"].sql and "`t`" in results["code__pattern"].sql
    engine = sa.create_engine(url)
    with pytest.raises(StatementTimeout):
        Session(engine.execution_options(**{CREDENTIALS_READ_ONLY: True}), 1).run(
            lambda c: c.exec_driver_sql("SELECT SLEEP(30)").scalar())
    engine.dispose()


def test_an_executable_comment_in_a_rule_never_reaches_the_server(database, tmp_path):
    """MySQL runs the text of a `/*! … */` comment as SQL; what runs is the judged tree rendered again,
    comments gone (here the comment would make the count 1)."""
    _, reader = database
    doc = contract(mysql_server(reader), [{"name": "a", "logicalType": "integer"}],
                   [{"type": "sql", "name": "rule", "query": "SELECT COUNT(*) /*! + 1 */ FROM {object} WHERE a < 0",
                     "mustBe": 0}])
    plan, _ = plan_of(tmp_path, doc)
    with Warehouses(mysql_env(reader)) as warehouses:
        [result] = [r for r in run_contract(plan, warehouses) if r.name == "rule"]
    assert result.passed and result.observed == 0 and "/*" not in result.sql, (result.error, result.sql)
