"""`dq-contracts init` as a user runs it: a draft from a DuckDB or PostgreSQL table validates, its
checks pass on the table, a planted violation fails them, and no value of the `email` column is written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

ROWS = [  # (id, email, status, amount, placed, updated_at hours ago, note)
    (1, "ann@example.com", "paid", 12.5, "2026-01-02", 3, None),
    (2, "bob@example.com", "shipped", 99.99, "2026-02-02", 1, "fragile"),
    (3, "cyd@example.com", "paid", 1234, "2026-03-02", 5, None),
]
CREATE = ("CREATE TABLE orders (order_id integer, email varchar(40), status varchar(10), amount numeric(10,2), "
          "placed date, updated_at timestamp, note varchar(20), ref uuid)")
# a planted violation and the check it fails
PLANTED = [
    ("UPDATE orders SET status = NULL WHERE order_id = 1", "status__not_null"),
    ("UPDATE orders SET amount = 5000 WHERE order_id = 2", "amount__maximum"),
    ("UPDATE orders SET placed = CAST('2019-12-31' AS date) WHERE order_id = 3", "placed__minimum"),
    ("UPDATE orders SET status = 'lost' WHERE order_id = 3", "status__invalid_values"),
    ("UPDATE orders SET order_id = 1 WHERE order_id = 3", "order_id__primary_key"),
]


def _cli(tmp_path, *args, env=None):
    return subprocess.run([sys.executable, "-m", "dq_contracts.cli", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def _fill(engine: sa.Engine) -> None:
    now = sa.text("SELECT CAST(CURRENT_TIMESTAMP AS timestamp)")
    with engine.begin() as c:
        c.exec_driver_sql(CREATE)
        stamp = c.execute(now).scalar()
        for oid, email, status, amount, placed, hours, note in ROWS:
            c.execute(sa.text("INSERT INTO orders VALUES (:i, :e, :s, :a, CAST(:p AS date), :u, :n, CAST(:r AS uuid))"),
                      dict(i=oid, e=email, s=status, a=amount, p=placed, u=stamp - __import__("datetime").timedelta(
                          hours=hours), n=note, r=f"00000000-0000-4000-8000-00000000000{oid}"))


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def drawn(request, tmp_path):
    """(url, environment for check, writable engine) of a table of ROWS."""
    if request.param == "duckdb":
        url, env = f"duckdb:///{tmp_path / 'w.duckdb'}", {}
    else:
        url = request.getfixturevalue("pg_database")
        env = {"DQ_CONTRACTS_WAREHOUSE_URL": str(url)}
    engine = sa.create_engine(url)
    _fill(engine)
    if request.param == "duckdb":
        engine.dispose()
    yield str(url), env, engine
    engine.dispose()


@pytest.mark.parametrize("planted,failing", PLANTED)
def test_init_draft_validates_passes_and_catches(tmp_path, drawn, planted, failing):
    url, env, engine = drawn
    made = _cli(tmp_path, "init", "--url", url, "--table", "orders", "--output", "c.odcs.yaml")
    assert made.returncode == 0, made.stderr
    text = (tmp_path / "c.odcs.yaml").read_text()
    assert "# suggested by dq-contracts init:" in text
    assert not any(email in text for _, email, *_ in ROWS)
    assert sa.make_url(url).password is None or sa.make_url(url).password not in text
    valid = _cli(tmp_path, "validate", "c.odcs.yaml")
    assert valid.returncode == 0 and "0 error(s)" in valid.stdout, valid.stdout
    checked = _cli(tmp_path, "check", "c.odcs.yaml", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert " fail" not in checked.stdout.split("check(s):")[0]
    with engine.begin() as c:
        c.exec_driver_sql(planted)
    engine.dispose()
    checked = _cli(tmp_path, "check", "c.odcs.yaml", env=env)
    assert checked.returncode == 1
    assert any(failing in line and "fail" in line for line in checked.stdout.splitlines()), checked.stdout


def test_init_from_the_operators_endpoint(tmp_path):
    """`--server NAME` reads the DQ_CONTRACTS_<NAME>_* endpoint, as check does, and names that server."""
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    _fill(engine)
    engine.dispose()
    env = {"DQ_CONTRACTS_SHOP_URL": "duckdb:///w.duckdb"}
    made = _cli(tmp_path, "init", "--server", "shop", "--table", "orders", "--output", "c.odcs.yaml", env=env)
    assert made.returncode == 0, made.stderr
    assert "  - server: shop\n" in (tmp_path / "c.odcs.yaml").read_text()
    assert _cli(tmp_path, "check", "c.odcs.yaml", env=env).returncode == 0
    neither = _cli(tmp_path, "init", "--table", "orders")
    assert neither.returncode == 1 and "--url URL or --server NAME" in neither.stderr


def test_init_over_an_existing_file_says_it_replaced_it(tmp_path):
    """`--output` naming a file that is there (a contract someone reviewed) replaces it: the one line
    init prints says so, and names `diff` as the way to see the change."""
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    _fill(engine)
    engine.dispose()
    args = ["init", "--url", "duckdb:///w.duckdb", "--table", "orders", "--output", "c.odcs.yaml"]
    first, again = _cli(tmp_path, *args), _cli(tmp_path, *args)
    assert first.returncode == 0 and "replaced" not in first.stdout, first.stdout + first.stderr
    assert again.returncode == 0 and "it replaced the file there" in again.stdout, again.stdout + again.stderr
    assert "dq-contracts diff OLD NEW" in again.stdout


REFUSED = [  # arguments, what stderr says (exit 1, no traceback)
    (["--url", "duckdb:///w.duckdb", "--table", "nowhere"], "table nowhere does not exist"),
    (["--url", "duckdb:///missing.duckdb", "--table", "orders"], "does not exist; not opening it"),
    (["--url", "not a url", "--table", "orders"], "Could not parse"),
    (["--url", "duckdb:///:memory:", "--table", "orders"], "init reads a DuckDB file, duckdb:///path/to/file.duckdb"),
    (["--url", "duckdb://", "--table", "orders"], "an in-memory database holds no table"),
    (["--server", "nobody", "--server-type", "postgres", "--table", "orders"], "no endpoint declared"),
]


@pytest.mark.parametrize("args,said", REFUSED)
def test_init_refusals(tmp_path, args, said):
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    _fill(engine)
    engine.dispose()
    proc = _cli(tmp_path, "init", *args)
    assert proc.returncode == 1 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
