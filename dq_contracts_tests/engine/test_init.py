"""`dq-contracts init` as a user runs it: a draft from a DuckDB or PostgreSQL table validates, its
checks pass on the table, a planted violation fails them, and no value of the `email` column is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
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


FILES = {  # format: (the files init is given, DuckDB's COPY options)
    "csv": ("data/orders.csv", "(HEADER)"),
    "parquet": ("data/orders/*.parquet", "(FORMAT parquet)"),
}


class Files:
    """The table as files: each change is made to an in-memory table, written out again."""

    def __init__(self, folder, fmt):
        import duckdb

        self.glob, self.options = FILES[fmt]
        self.file = folder / self.glob.replace("*", "part-0")
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self.db = duckdb.connect()
        self.engine = sa.create_engine("duckdb:///:memory:", creator=lambda: self.db)
        _fill(self.engine)
        self.write()

    def write(self):
        self.db.execute(f"COPY orders TO '{self.file}' {self.options}")

    def execute(self, statement):
        self.db.execute(statement)
        self.write()


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres), "csv", "parquet"])
def drawn(request, tmp_path):
    """(init's arguments, environment for check, change(SQL): a statement run on the table) of a table
    of ROWS; the contract is written to contracts/c.odcs.yaml."""
    (tmp_path / "contracts").mkdir()
    if request.param in FILES:
        files = Files(tmp_path, request.param)
        yield ["--path", files.glob], {}, files.execute
        return
    if request.param == "duckdb":
        url, env = f"duckdb:///{tmp_path / 'w.duckdb'}", {}
    else:
        url = request.getfixturevalue("pg_database")
        env = {"DQ_CONTRACTS_WAREHOUSE_URL": str(url)}
    engine = sa.create_engine(url)
    _fill(engine)
    engine.dispose()

    def change(statement):
        with engine.begin() as c:
            c.exec_driver_sql(statement)
        engine.dispose()

    yield ["--url", str(url)], env, change
    engine.dispose()


@pytest.mark.parametrize("planted,failing", PLANTED)
def test_init_draft_validates_passes_and_catches(tmp_path, drawn, planted, failing):
    source, env, change = drawn
    made = _cli(tmp_path, "init", *source, "--table", "orders", "--output", "contracts/c.odcs.yaml")
    assert made.returncode == 0, made.stderr
    text = (tmp_path / "contracts" / "c.odcs.yaml").read_text()
    assert "# suggested by dq-contracts init:" in text
    assert not any(email in text for _, email, *_ in ROWS)
    assert "@" not in text  # no user or password of the URL either
    valid = _cli(tmp_path, "validate", "contracts/c.odcs.yaml")
    assert valid.returncode == 0 and "0 error(s)" in valid.stdout, valid.stdout
    checked = _cli(tmp_path, "check", "contracts/c.odcs.yaml", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert " fail" not in checked.stdout.split("check(s):")[0]
    change(planted)
    checked = _cli(tmp_path, "check", "contracts/c.odcs.yaml", env=env)
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
    assert "dq-contracts init --against FILE" in again.stdout


REFUSED = [  # arguments, what stderr says (exit 1, no traceback)
    (["--url", "duckdb:///w.duckdb", "--table", "nowhere"], "table nowhere does not exist"),
    (["--url", "duckdb:///missing.duckdb", "--table", "orders"], "does not exist; not opening it"),
    (["--url", "not a url", "--table", "orders"], "Could not parse"),
    (["--url", "duckdb:///:memory:", "--table", "orders"], "init reads a DuckDB file, duckdb:///path/to/file.duckdb"),
    (["--url", "duckdb://", "--table", "orders"], "an in-memory database holds no table"),
    (["--server", "nobody", "--server-type", "postgres", "--table", "orders"], "no endpoint declared"),
    (["--path", "data/nope/*.parquet", "--table", "orders"], "no regular file inside the operator's roots matches"),
    (["--path", "data/orders", "--table", "orders"], "say --format csv, parquet or json"),
    (["--path", "orders.csv", "--table", "a", "--table", "b"], "put {object} where each table's name goes"),
    (["--path", "/etc/passwd", "--format", "csv", "--table", "orders"], "outside the folders the operator lets"),
    (["--path", "w.duckdb", "--format", "csv", "--url", "duckdb:///w.duckdb", "--table", "orders"],
     "or --path FILES"),
    # the endpoint said, never its password: a URL naming no driver speaks check's (psycopg2), and a
    # driver not installed is said as such
    (["--url", "postgresql://u:hunter2@127.0.0.1:1/db", "--table", "orders"],
     "cannot connect to postgresql 127.0.0.1:1/db: connection to server at"),
    (["--url", "postgresql+psycopg://u:hunter2@127.0.0.1:1/db", "--table", "orders"],
     "cannot connect to postgresql 127.0.0.1:1/db: its driver postgresql+psycopg needs the Python module psycopg"),
]


@pytest.mark.parametrize("args,said", REFUSED)
def test_init_refusals(tmp_path, args, said):
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    _fill(engine)
    engine.dispose()
    proc = _cli(tmp_path, "init", *args)
    assert proc.returncode == 1 and said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and "hunter2" not in proc.stderr and len(
        proc.stderr.splitlines()) == 1, proc.stderr


DRIFTED = [  # a change made to the table, the lines the diff changes (lower case, stripped), the exit code
    ("SELECT 1", set(), 0),
    ("UPDATE orders SET status = NULL WHERE order_id = 1", {"-required: true"}, 1),
    ("UPDATE orders SET amount = 5000 WHERE order_id = 2", {"-maximum: 2000", "+maximum: 5000"}, 1),
    ("UPDATE orders SET placed = CAST('2019-12-31' AS date) WHERE order_id = 3",
     {"-minimum: '2026-01-01'", "+minimum: '2019-01-01'"}, 1),
    ("UPDATE orders SET status = 'lost' WHERE order_id = 2", {"+- lost"}, 1),
    ("UPDATE orders SET note = 'very fragile indeed' WHERE order_id = 1",
     {"-maxlength: 7", "+maxlength: 19", "+- very fragile indeed"}, 1),
    ("UPDATE orders SET order_id = 1 WHERE order_id = 3", {"-primarykey: true"}, 1),
    ("ALTER TABLE orders ALTER COLUMN order_id TYPE bigint", {"-physicaltype: integer", "+physicaltype: bigint"}, 1),
    ("ALTER TABLE orders ADD COLUMN extra integer",
     {"+- name: extra", "+physicalname: extra", "+physicaltype: integer", "+logicaltype: integer"}, 1),
    ("ALTER TABLE orders DROP COLUMN placed",
     {"-- name: placed", "-physicalname: placed", "-physicaltype: date", "-logicaltype: date", "-required: true",
      "-logicaltypeoptions:", "-minimum: '2026-01-01'"}, 1),
    ("DROP TABLE orders", set(), 1),
]


@pytest.mark.parametrize("drawn", ["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
@pytest.mark.parametrize("change,lines,code", DRIFTED, ids=[c.split(" SET ")[-1][:40] for c, *_ in DRIFTED])
def test_init_against_an_existing_contract(tmp_path, drawn, change, lines, code):
    """`init --against FILE`: the diff from the contract to the contract as the table is now, with what
    the author added kept; exit 0 unchanged, 1 drifted or not drawn; the file is never written."""
    source, env, make_change = drawn
    assert _cli(tmp_path, "init", *source, "--table", "orders", "--output", "contracts/c.odcs.yaml").returncode == 0
    contract = tmp_path / "contracts" / "c.odcs.yaml"
    doc = yaml.safe_load(contract.read_text())  # what an author adds to the draft is kept
    doc["description"] = {"purpose": "orders as placed"}
    doc["schema"][0]["properties"][2]["description"] = "where the order is"
    doc["schema"][0]["quality"] = [{"metric": "rowCount", "mustBeGreaterThan": 0}]
    contract.write_text(yaml.safe_dump(doc, sort_keys=False))
    written = contract.read_bytes()
    make_change(change)
    proc = _cli(tmp_path, "init", *source, "--against", "contracts/c.odcs.yaml")
    changed = {line[0] + line[1:].strip().lower() for line in proc.stdout.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))}
    assert (proc.returncode, changed) == (code, lines), proc.stdout + proc.stderr
    assert contract.read_bytes() == written and "Traceback" not in proc.stderr
    mine = set(written.decode().splitlines())  # a patch of the file: what it removes or keeps is the file's
    assert all(line[1:] in mine for line in proc.stdout.splitlines()[2:] if line[:1] in " -"), proc.stdout
    if code == 2:
        assert "does not exist" in proc.stderr
    if code == 0:
        assert "nothing init compares has changed" in proc.stderr
    if code == 1:  # the contract's own server, as check connects it, says the same
        alone = _cli(tmp_path, "init", "--against", "contracts/c.odcs.yaml", env=env)
        assert (alone.returncode, alone.stdout) == (1, proc.stdout), alone.stderr


GONE = [  # tables dropped, a change made to orders, the lines the diff changes (as DRIFTED), the objects gone
    (["items"], "UPDATE orders SET status = NULL WHERE order_id = 1", {"-required: true"}, ["line_items"]),
    (["items"], "SELECT 1", set(), ["line_items"]),
    (["orders", "items"], "SELECT 1", set(), ["orders", "line_items"]),
]


@pytest.mark.parametrize("files", [False, True], ids=["duckdb", "csv"])
@pytest.mark.parametrize("dropped,change,lines,objects", GONE, ids=["one gone, one drifted", "one gone", "both gone"])
def test_init_against_a_contract_with_a_table_gone_diffs_the_others(tmp_path, files, dropped, change, lines, objects):
    """A table (or an object's files) gone is said on a line of its own (the object, its table, the
    server) and the diff is of the tables still there; exit 1."""
    import duckdb

    db = duckdb.connect(str(tmp_path / "w.duckdb"))
    _fill(sa.create_engine("duckdb:///:memory:", creator=lambda: db))
    db.execute("CREATE TABLE items AS SELECT order_id, amount FROM orders")
    (tmp_path / "data").mkdir()

    def written(tables):  # as files: each table copied out again
        for table in tables if files else ():
            db.execute(f"COPY {table} TO '{tmp_path / 'data' / table}.csv' (HEADER)")

    written(["orders", "items"])
    source = ["--path", "data/{object}.csv"] if files else ["--url", "duckdb:///w.duckdb"]
    if not files:
        db.close()
    assert _cli(tmp_path, "init", *source, "--table", "orders", "--table", "items", "--output", "c.odcs.yaml"
                ).returncode == 0
    doc = yaml.safe_load((tmp_path / "c.odcs.yaml").read_text())
    doc["schema"][1]["name"] = "line_items"  # the object's name, its table still items
    (tmp_path / "c.odcs.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    server_name = doc["servers"][0]["server"]
    db = db if files else duckdb.connect(str(tmp_path / "w.duckdb"))
    if "orders" not in dropped:
        db.execute(change)
    written([t for t in ("orders", "items") if t not in dropped])
    for table in dropped:
        db.execute(f"DROP TABLE {table}")
        (tmp_path / "data" / f"{table}.csv").unlink(missing_ok=True)
    db.close()
    for args, server in ((source, ""), ([], f" (server {server_name})")):  # as given, and the contract's own server
        proc = _cli(tmp_path, "init", *args, "--against", "c.odcs.yaml")
        changed = {line[0] + line[1:].strip().lower() for line in proc.stdout.splitlines()
                   if line[:1] in "+-" and not line.startswith(("+++", "---"))}
        assert (proc.returncode, changed) == (1, lines), proc.stdout + proc.stderr
        said = proc.stderr.splitlines()
        assert [line.split(": object ", 1)[1].split(":")[0] for line in said] == objects, proc.stderr
        place = "files " if files else "duckdb "
        assert all(line.startswith("dq-contracts init: c.odcs.yaml: object ") and f" is gone from {place}" in line
                   and line.endswith(f"{server}; the diff leaves its object as written") for line in said), proc.stderr
        assert f"{'file' if files else 'table'} items is gone" in proc.stderr and "Traceback" not in proc.stderr, said


OWN_LINES = [  # on the draft as init wrote it: a change, the diff's lines exactly (the file's comments kept)
    ("UPDATE orders SET status = NULL WHERE order_id = 1",
     ["-        required: true  # suggested by dq-contracts init: no NULL in 3 row(s)"]),
    ("UPDATE orders SET status = 'lost' WHERE order_id = 2",
     ["-              validValues: [paid, shipped]", "+              validValues: [paid, shipped, lost]"]),
    ("UPDATE orders SET amount = 5000 WHERE order_id = 2",  # init's comment said what was measured then
     ["-          maximum: 2000  # suggested by dq-contracts init: observed 12.50 to 1234.00, rounded outward",
      "+          maximum: 5000"]),
]


@pytest.mark.parametrize("change,lines", OWN_LINES)
def test_init_against_diffs_the_files_own_lines(tmp_path, change, lines):
    """The diff is a patch of the file as written: its comments and layout kept where nothing changed."""
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    _fill(engine)
    engine.dispose()
    assert _cli(tmp_path, "init", "--url", "duckdb:///w.duckdb", "--table", "orders", "--output", "c.odcs.yaml"
                ).returncode == 0
    with engine.begin() as c:
        c.exec_driver_sql(change)
    engine.dispose()
    proc = _cli(tmp_path, "init", "--against", "c.odcs.yaml")
    assert proc.returncode == 1, proc.stderr
    assert [line for line in proc.stdout.splitlines()[2:] if line[:1] in "+-"] == lines, proc.stdout
    # applied to the file as patch would, it is the contract the table now passes
    (tmp_path / "c.odcs.yaml").write_text(_patched((tmp_path / "c.odcs.yaml").read_text(), proc.stdout))
    assert _cli(tmp_path, "init", "--against", "c.odcs.yaml").returncode == 0
    assert _cli(tmp_path, "check", "c.odcs.yaml").returncode == 0


def _patched(text: str, diff: str) -> str:
    """A unified diff applied to the text it was made from (each hunk's old lines must be there)."""
    old, out, at = text.splitlines(keepends=True), [], 0
    for hunk in diff.split("\n@@ ")[1:]:
        header, *body = hunk.splitlines(keepends=True)
        start = int(header.split()[0].split(",")[0].lstrip("-")) - 1
        out += old[at:start]
        at = start
        for line in body:
            if line[:1] in " -":
                assert old[at] == line[1:], (old[at], line)
                at += 1
            if line[:1] in " +":
                out.append(line[1:])
    return "".join(out + old[at:])


def test_init_against_a_json_contract_diffs_the_documents(tmp_path):
    """A JSON contract's changes cannot be made to its lines: the diff is of both documents as YAML."""
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    _fill(engine)
    engine.dispose()
    made = _cli(tmp_path, "init", "--url", "duckdb:///w.duckdb", "--table", "orders")
    (tmp_path / "c.odcs.json").write_text(json.dumps(yaml.safe_load(made.stdout)))
    assert _cli(tmp_path, "init", "--against", "c.odcs.json").returncode == 0
    with engine.begin() as c:
        c.exec_driver_sql("UPDATE orders SET status = NULL WHERE order_id = 1")
    engine.dispose()
    proc = _cli(tmp_path, "init", "--against", "c.odcs.json")
    assert proc.returncode == 1 and [line for line in proc.stdout.splitlines()[2:] if line[:1] in "+-"] == [
        "-    required: true"], proc.stdout


NAN, INF = float("nan"), float("inf")
MEASURED = [  # a column, its SQL type, its values (each row twice), what the draft must do with them
    ("status", "varchar(40)", ["open, chargeback_fraud", "paid", "x]", "?x", "[y", "}"], "valid values"),
    ("status", "varchar(40)", ["{a: b}", "#c", "&a *b", "'\"", "- x", "a\nb", "null", "1e3", ".nan"], "valid values"),
    ("salary", "integer", [52000, 251000, 61000], "withheld"),
    ("birth_date", "date", ["1961-03-14", "1980-06-30"], "withheld"),
    ("religion", "varchar(20)", ["Jain", "Zoroastrian"], "withheld"),
    ("diagnosis", "varchar(20)", ["J45.0", "E11.9"], "withheld"),
    ("x", "double precision", [NAN, 1.5, 2.5], "no bound"),
    ("x", "double precision", [1.5, INF, -INF], "no bound"),
    ("x", "double precision", [1.5, 2.5, INF], "minimum only"),
]


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse(request, tmp_path):
    """(URL, the environment check needs) of an empty warehouse."""
    if request.param == "duckdb":
        return f"duckdb:///{tmp_path / 'w.duckdb'}", {}
    url = request.getfixturevalue("pg_database")
    return str(url), {"DQ_CONTRACTS_WAREHOUSE_URL": str(url)}


@pytest.mark.parametrize("column,sql_type,values,what", MEASURED, ids=[f"{c}-{w}" for c, _, _, w in MEASURED])
def test_init_writes_what_was_measured_and_nothing_personal(tmp_path, warehouse, column, sql_type, values, what):
    """The table's own text is read back from the draft as it is in the table (one YAML emitter
    writes it); a personal column's values, range and dates are not in the file; a double's bounds
    are of its finite values, none a NaN or infinity fails: the draft validates and check passes."""
    url, env = warehouse
    engine = sa.create_engine(url)
    typed = [__import__("datetime").date.fromisoformat(v) if sql_type == "date" else v for v in values]
    with engine.begin() as c:
        c.exec_driver_sql(f"CREATE TABLE t (id integer, {column} {sql_type})")
        c.execute(sa.text("INSERT INTO t VALUES (:i, :v)"), [dict(i=i, v=v) for i, v in enumerate(typed * 2)])
    engine.dispose()
    made = _cli(tmp_path, "init", "--url", url, "--table", "t", "--output", "c.odcs.yaml")
    assert made.returncode == 0, made.stderr
    text = (tmp_path / "c.odcs.yaml").read_text()
    prop = yaml.safe_load(text)["schema"][0]["properties"][1]
    valid = _cli(tmp_path, "validate", "c.odcs.yaml")
    assert valid.returncode == 0 and "0 error(s)" in valid.stdout, valid.stdout + text
    checked = _cli(tmp_path, "check", "c.odcs.yaml", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr + text
    options = prop.get("logicalTypeOptions", {})
    if what == "valid values":
        assert prop["quality"][0]["arguments"]["validValues"] == sorted(set(values)), text
    elif what == "withheld":
        assert not any(str(v) in text or str(v)[:4] in text for v in values), text
        assert "logicalTypeOptions" not in prop and "quality" not in prop, text
        assert prop["classification"] == "pii", text  # check shows no sample of it either
    else:  # a double with NaN or an infinity: bounds a value seen fails are not suggested
        assert options == ({"minimum": 1} if what == "minimum only" else {}), text
        assert ".nan" not in text.lower() and ".inf" not in text.lower(), text


@pytest.mark.parametrize("word", ["restricted", "highly confidential", "PHI"])  # a word not known classifies too
def test_init_against_withholds_what_the_contract_classifies(tmp_path, drawn, word):
    """A column the compared contract classifies is read as a personal one: its new values and range
    are not read, so the diff shows none of them."""
    source, env, change = drawn
    assert _cli(tmp_path, "init", *source, "--table", "orders", "--output", "contracts/c.odcs.yaml").returncode == 0
    contract = tmp_path / "contracts" / "c.odcs.yaml"
    doc = yaml.safe_load(contract.read_text())
    for prop in doc["schema"][0]["properties"]:
        if prop["name"] in ("status", "amount"):
            prop["classification"] = word
    contract.write_text(yaml.safe_dump(doc, sort_keys=False))
    change("UPDATE orders SET status = 'lost', amount = 5000 WHERE order_id = 2")
    proc = _cli(tmp_path, "init", *source, "--against", "contracts/c.odcs.yaml")
    assert "lost" not in proc.stdout and "5000" not in proc.stdout, proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.postgres
def test_init_on_postgresql_urls_as_the_readme_writes_them(tmp_path, pg_database):
    """`postgresql://` (the README's URL, no driver named) draws and checks over psycopg2, as a URL
    check builds from `_HOST`…; a wrong password is one sentence naming the endpoint, exit 1."""
    url = sa.make_url(pg_database)
    engine = sa.create_engine(url)
    _fill(engine)
    engine.dispose()
    bare = url.set(drivername="postgresql").render_as_string(hide_password=False)
    made = _cli(tmp_path, "init", "--url", bare, "--table", "orders", "--output", "c.odcs.yaml")
    assert made.returncode == 0, made.stderr
    checked = _cli(tmp_path, "check", "c.odcs.yaml", env={"DQ_CONTRACTS_WAREHOUSE_URL": bare})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    wrong = url.set(password="not-the-password").render_as_string(hide_password=False)
    proc = _cli(tmp_path, "init", "--url", wrong, "--table", "orders")
    where = f"postgresql {url.host}:{url.port}/{url.database}"
    assert proc.returncode == 1 and proc.stderr.startswith(f"dq-contracts init: cannot connect to {where}: "), \
        proc.stderr
    assert "password authentication failed" in proc.stderr and "not-the-password" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "internal error" not in proc.stderr


def test_an_unexpected_error_of_init_is_withheld(tmp_path, monkeypatch, capsys):
    """As check's: an error init did not expect may quote the data, so only its kind is said."""
    from dq_contracts import cli
    from dq_contracts.engine import draft

    def failing(*args, **kwargs):
        raise RuntimeError("invalid input syntax for type integer: '999-88-7777'")

    monkeypatch.setattr(draft, "measure", failing)
    engine = sa.create_engine(f"duckdb:///{tmp_path / 'w.duckdb'}")
    _fill(engine)
    engine.dispose()
    code = cli.main(["init", "--url", f"duckdb:///{tmp_path / 'w.duckdb'}", "--table", "orders"])
    err = capsys.readouterr().err
    assert code == 3 and "999-88-7777" not in err and "RuntimeError in dq-contracts init" in err, err


def test_a_scan_the_database_refuses_is_said_without_its_message(tmp_path, warehouse):
    """A view whose scan fails on a value: the database's message would quote it, so init says the
    table, the endpoint and the error's kind, exit 1 (not an internal error)."""
    url, _ = warehouse
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (s varchar(20))")
        c.exec_driver_sql("INSERT INTO t VALUES ('999-88-7777')")
        c.exec_driver_sql("CREATE VIEW v AS SELECT CAST(s AS integer) AS n FROM t")
    engine.dispose()
    proc = _cli(tmp_path, "init", "--url", url, "--table", "v")
    assert proc.returncode == 1 and "999-88-7777" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stderr.startswith("dq-contracts init: table v on ") and "cannot be measured" in proc.stderr, \
        proc.stderr
