"""`dq-contracts init --server NAME` where `check` runs beyond DuckDB and PostgreSQL (engine/test_init.py):
MariaDB, Snowflake (fakesnow, in this process: the emulator patches it) and Spark. On each, the draft of a
table validates, its checks pass on the table, and a planted violation fails them."""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pytest
import sqlalchemy as sa

from dq_contracts import cli

NOW = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
ROWS = [  # (order_id, email, status, amount, placed, updated_at, note)
    (1, "ann@example.com", "paid", 12.5, dt.date(2026, 1, 2), NOW - dt.timedelta(hours=3), None),
    (2, "bob@example.com", "shipped", 99.99, dt.date(2026, 2, 2), NOW - dt.timedelta(hours=1), "fragile"),
    (3, "cyd@example.com", "paid", 1234, dt.date(2026, 3, 2), NOW - dt.timedelta(hours=5), None),
]
COLUMNS = {"order_id": sa.Integer, "email": sa.String(40), "status": sa.String(10), "amount": sa.Numeric(10, 2),
           "placed": sa.Date, "updated_at": sa.DateTime, "note": sa.String(20)}
# (the row changed, what it is set to, the check that then fails)
PLANTED = [
    (1, {"status": None}, "status__not_null"),
    (2, {"amount": 5000}, "amount__maximum"),
    (3, {"placed": dt.date(2019, 12, 31)}, "placed__minimum"),
    (3, {"status": "lost"}, "status__invalid_values"),
    (3, {"order_id": 1}, "order_id__primary_key"),
]
ENGINES = [pytest.param("mariadb", marks=pytest.mark.mariadb), "snowflake",
           pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.slow])]


# Spark's rows are slow (some 13 s a test on 2 cores, its jobs and sessions): by default only the hive-database
# test runs there (it draws, checks and plants a violation too), every row under DQ_SPARK=full (as
# test_kind_cases.py's Spark subset)
SPARK_FULL = os.environ.get("DQ_SPARK") == "full"


def _spark_subset(kind: str, first: bool) -> None:
    if kind == "spark" and not first and not SPARK_FULL:
        pytest.skip("one Spark row by default; DQ_SPARK=full runs every row")


def _table() -> sa.Table:  # every name quoted as written (Snowflake: lower case, as the contract names it)
    return sa.Table(sa.sql.quoted_name("orders", True), sa.MetaData(), *(sa.Column(sa.sql.quoted_name(n, True), t) for n, t in COLUMNS.items()))


SPARK_COLUMNS = {"order_id": "INT", "email": "STRING", "status": "STRING", "amount": "DECIMAL(10,2)", "placed": "DATE",
                 "updated_at": "TIMESTAMP", "note": "STRING"}


def _fill(kind: str, engine: sa.Engine, name: str) -> None:
    if kind == "spark":
        from dq_contracts_tests.support import spark_table

        spark_table(engine, name, SPARK_COLUMNS, ROWS)
        return
    table = _table()
    table.metadata.create_all(engine)
    with engine.begin() as c:
        c.execute(sa.insert(table), [dict(zip(COLUMNS, row)) for row in ROWS])


def _plant(kind: str, engine: sa.Engine, name: str, order_id: int, values: dict) -> None:
    if kind == "spark":  # no UPDATE on a Spark table: the rows written again
        from dq_contracts_tests.support import spark_table

        rows = [tuple(values.get(n, v) for n, v in zip(COLUMNS, row)) if row[0] == order_id else row for row in ROWS]
        with engine.begin() as c:
            c.exec_driver_sql(f"DROP TABLE {name}")
        spark_table(engine, name, SPARK_COLUMNS, rows)
        return
    table = _table()
    with engine.begin() as c:
        c.execute(sa.update(table).where(table.c.order_id == order_id).values(**values))


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", ENGINES)
@pytest.mark.parametrize("order_id,values,failing", PLANTED[:1] + PLANTED[3:4], ids=["not_null", "invalid_values"])
def test_init_draft_validates_passes_and_catches(kind, order_id, values, failing, warehouse_of, tmp_path,
                                                 monkeypatch, capsys, request):
    _spark_subset(kind, False)  # on Spark by default: the hive-database test below draws and checks a table
    name = "orders"
    if kind == "spark":
        # in Spark's `default` database, which the URL names (another database: the test below)
        from dq_contracts_tests.support import spark_engine

        url, name = request.getfixturevalue("spark").url("default"), f"orders_{uuid.uuid4().hex[:12]}"
        server, env, engine = {"server": "sp", "type": "hive"}, {"DQ_CONTRACTS_SP_URL": url,
                                                                 "DQ_CONTRACTS_SP_READ_ONLY": "true"}, spark_engine(url)
    else:
        server, env, engine = warehouse_of(kind)
    if kind == "mariadb":  # the operator's endpoint names the database init reads
        env = {**env, "DQ_CONTRACTS_MY_DATABASE": server["database"]}
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "contracts").mkdir()
    _fill(kind, engine, name)
    code, out, err = _cli(capsys, "init", "--server", server["server"], "--server-type", server["type"],
                          "--table", name, "--output", "contracts/c.odcs.yaml")
    assert code == 0, err
    text = (tmp_path / "contracts" / "c.odcs.yaml").read_text()
    assert "# suggested by dq-contracts init:" in text and "@" not in text and "secret" not in text
    code, out, err = _cli(capsys, "validate", "contracts/c.odcs.yaml")
    assert code == 0 and "0 error(s)" in out, out + err
    code, out, err = _cli(capsys, "check", "contracts/c.odcs.yaml")
    assert code == 0 and " fail" not in out.split("check(s):")[0], out + err + text
    _plant(kind, engine, name, order_id, values)
    code, out, err = _cli(capsys, "check", "contracts/c.odcs.yaml")
    assert code == 1 and any(failing in line and "fail" in line for line in out.splitlines()), out + err
    if kind == "spark":
        with engine.begin() as c:
            c.exec_driver_sql(f"DROP TABLE {name}")
    engine.dispose()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("named_by", ["contract", "url"])
def test_a_hive_servers_database_is_where_its_tables_are_read(named_by, spark, tmp_path, monkeypatch, capsys):
    """A Spark table in a database other than `default` is drawn and checked there: a hive server's
    `database` (ODCS gives it no `schema`) is the schema of its bare names; where the contract names
    none, the operator's URL's database is."""
    _spark_subset("spark", named_by == "contract")
    from dq_contracts_tests.support import spark_engine

    database = f"s1_{uuid.uuid4().hex[:10]}"
    admin = spark_engine(spark.url("default"))
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE DATABASE {database}")
    engine = spark_engine(spark.url(database))
    try:
        _fill("spark", engine, "orders")
        url = spark.url(database) if named_by == "url" else spark.url("").rstrip("/")
        monkeypatch.setenv("DQ_CONTRACTS_SP_URL", url)
        monkeypatch.setenv("DQ_CONTRACTS_SP_READ_ONLY", "true")
        monkeypatch.chdir(tmp_path)
        schema = ["--schema", database] if named_by == "contract" else []
        code, out, err = _cli(capsys, "init", "--server", "sp", "--server-type", "hive", *schema, "--table", "orders",
                              "--output", "c.odcs.yaml")
        assert code == 0, err
        text = (tmp_path / "c.odcs.yaml").read_text()
        assert f"    database: {database}\n" in text, text
        code, out, err = _cli(capsys, "check", "c.odcs.yaml")
        assert code == 0 and " fail" not in out.split("check(s):")[0], out + err + text
        _plant("spark", engine, "orders", 1, {"status": None})
        code, out, err = _cli(capsys, "check", "c.odcs.yaml")
        assert code == 1 and any("status__not_null" in line and "fail" in line for line in out.splitlines()), out
    finally:
        with admin.begin() as c:
            c.exec_driver_sql(f"DROP DATABASE {database} CASCADE")
        engine.dispose()
        admin.dispose()
