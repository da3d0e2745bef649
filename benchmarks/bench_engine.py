"""The 20-check `orders` contract on DuckDB, PostgreSQL, Delta Lake and Spark, clean and failing, four ways.

* ours:  `dq_contracts.engine.runner.run_object` on an engine from `dq_contracts.engine.connections.engine_for`,
         the server read from the contract by `connection_for`, as the product runs it;
* floor: the SQL an expert would write by hand (bench_floor.py): one aggregate of every count-style
         measure with no COUNT(DISTINCT …), one GROUP BY per key column, the compound-key query and one
         catalog query, on one connection kept open (autocommit);
* floor_distinct: the floor before, the key columns' COUNT(DISTINCT …) inside the one aggregate;
* naive: one query per check, built from the same plan with the kinds table's measures;
* datacontract-cli (optional): `datacontract test` on an equivalent contract, when the environment
         variable DQ_BENCH_DATACONTRACT_VENV names a virtual environment that has it installed.

Each table is generated in SQL from one table of column expressions (`COLUMNS`): a clean one where
every clause passes, and a failing one where 13 of the 20 clauses fail, with common violations (~1 %
of rows) and rare ones (a handful of rows spread through the table, one of them the last row).
PostgreSQL (a throwaway cluster on 127.0.0.1) gets the very same rows, copied from the DuckDB table.
Delta gets them too, written by `deltalake` from the DuckDB table into a folder, and read as the
product reads a `format: delta` file server (engine/lake.py: the table's Arrow dataset registered
in an in-memory DuckDB session); its floor registers the same Arrow dataset in DuckDB by hand, once
per connection as ours opens it once per engine, and reads the columns from the Delta log.
Spark gets them as Parquet written by DuckDB, copied into a table of a local Spark Thrift server
(dq_contracts_tests/sparkserver.py) with the contract's types; ours reaches it as a `hive` server
(PyHive, engine/spark.py), the floor sends the same one-scan SQL in Spark's spellings (`RLIKE`, Java's
regex classes) on a PyHive connection, in UTC as ours' session is.

Every method runs in a process of its own, started once per table and kept waiting between runs
(datacontract-cli: a new process per run, as it is used), so its peak RSS is its own: Linux's VmHWM,
else ru_maxrss (see `peak_rss_kb`); the tables are made by a process of their own, so the parent
that starts the workers stays small. All workers import the same modules, so the peaks compare the
work, not the imports. Runs alternate between methods in a rotating order after one untimed warm-up
round, and the medians are reported, since a shared machine drifts. Between runs a method keeps its
connection (ours and naive their engine's pool), as the runs of one process would.

Statements per run are counted on two more runs of each method: one on the kept connection, one on a
new engine (or connection), which is what one run of the product makes. On PostgreSQL they are what
the server received (pg_stat_statements, reset before the run and read from another database than
the run's, so BEGIN, SET, ROLLBACK and pre-pings count); on DuckDB they are SQLAlchemy's
`before_cursor_execute` events plus pre-pings (statements sent on the DBAPI connection itself, such
as a connect event's SETs or the dialect's first-connect queries, are not seen there). On Delta
they are SQL statements alone: both ours and the floor read the columns from the Delta log, no SQL.
On Spark they are the client's, as on DuckDB (PyHive's connection opens no statement of its own).

Ours, naive and floor must agree on every measure (and both engines' floors on the same rows); the
failing checks and every statement ours sends are printed. Peak RSS is the client process's; a
PostgreSQL server's own memory is not in it.

    .venv/bin/python benchmarks/bench_engine.py                       # 1M and 5M rows, both engines
    .venv/bin/python benchmarks/bench_engine.py --sizes 200000 --engines duckdb --repeats 3
    .venv/bin/python benchmarks/bench_engine.py --sizes 5000000 --engines postgres --explain
    .venv/bin/python benchmarks/bench_engine.py --sizes 1000000 --engines delta --repeats 5
    .venv/bin/python benchmarks/bench_engine.py --sizes 1000000 --engines spark --repeats 3
    .venv/bin/python benchmarks/bench_engine.py --sizes 1000000 5000000 --tables failing --whole 4 --whole-only

With --whole ROUNDS, `dq-contracts check` runs as a whole process against each floor as a process of
its own (bench_floor.py), DuckDB and PostgreSQL only: one untimed round, then ROUNDS rounds of one
run each in a rotating order, the ratio ours / floor taken within each round.

Run it from the repository root with the package installed (`pip install -e .`); PostgreSQL needs its
server binaries (initdb, pg_ctl) on this machine; Spark needs pyspark and a Java runtime (the `test` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import duckdb
import psycopg2
import sqlalchemy as sa
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository: its test cluster helper
from dq_contracts.engine.connections import connection_for, engine_for  # noqa: E402
from dq_contracts.odcs.load import load_contracts
from dq_contracts.engine.check_kinds import KINDS, uses_aggregate
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.odcs.plans import percent_of
from dq_contracts.engine.runner import run_object
from dq_contracts.engine.sql import compound_duplicates, table_for

from dq_contracts_tests.orders_contract import ORDERS, STATUSES  # noqa: E402 - the round-trip test's contract too

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_floor import FLOORS, collect, floor_statements  # noqa: E402

CONTRACT = {**ORDERS, "id": "urn:bench:orders",
            "servers": [{"server": "bench", "type": "duckdb", "database": "bench.duckdb"}]}
PROPERTIES = CONTRACT["schema"][0]["properties"]


SERVERS: dict[str, Callable[[dict], dict]] = {  # the contract's server entry per engine, from the table
    "duckdb": lambda t: {"server": "bench", "type": "duckdb", "database": t["file"]},
    "postgres": lambda t: {"server": "bench", "type": "postgres", "host": "127.0.0.1", "port": t["port"],
                           "database": PG_DATABASE, "schema": t["schema"]},
    "delta": lambda t: {"server": "bench", "type": "local", "format": "delta",
                        "path": str(Path(t["delta"]).parent / "{model}")},
    # ODCS' hive server: host, port, database (Spark's schema); the table is in its `default`
    "spark": lambda t: {"server": "bench", "type": "hive", "host": "127.0.0.1", "port": t["port"],
                        "database": t["schema"]},
}


def contract_for(engine: str, table: dict) -> dict:
    """The contract unchanged but for its server entry: the DuckDB file, the PostgreSQL schema, the Delta folder."""
    return {**CONTRACT, "servers": [SERVERS[engine](table)]}


# --- the data -------------------------------------------------------------------------------------
# DuckDB SQL over `i` (1..n, the row) and `s` (the row whose customer and moment it takes: i - 1 for
# the rows that repeat their predecessor's (customer_id, created_at), else i). Every value is a
# function of the row number, so a table is the same whenever and wherever it is generated.
# {x} stands for `i IN (...)`: a handful of rows spread through the table, one of them the last.

RARE = {"null_id": 2, "dup_id": 5, "null_customer": 3, "negative_total": 5, "short_currency": 4, "repeat": 5}


def rare_rows(rows: int) -> dict[str, str]:
    """`i IN (...)` per rare violation; each its own rows (offset by its place in RARE)."""
    out = {}
    for offset, (name, count) in enumerate(RARE.items()):
        spread = [rows * j // count + offset + 2 for j in range(count - 1)] + [rows - offset]
        out[name] = f"i IN ({', '.join(str(max(min(r, rows), 2)) for r in spread)})"
    return out


_CUSTOMER = "1 + (s * 7919) % {customers}"
_MOMENT = "TIMESTAMP '{now}' - to_microseconds(({rows} - s) * {step} + {stale})"
# (column, clean expression, failing expression); the failing table breaks 13 of the 20 clauses
COLUMNS = [
    ("order_id", "i", "CASE WHEN {null_id} THEN NULL WHEN {dup_id} THEN i - 1 ELSE i END"),  # not null, key
    ("order_number", "'ORD-' || lpad(i::VARCHAR, 10, '0')",
     "'ORD-' || lpad((CASE WHEN i % 100 = 42 THEN i - 1 ELSE i END)::VARCHAR, 10, '0')"),  # unique: 1 %
    ("customer_id", _CUSTOMER,
     f"CASE WHEN {{null_customer}} THEN NULL WHEN i % 97 = 3 THEN 0 ELSE {_CUSTOMER} END"),  # not null, min
    ("status", "{statuses}[1 + i % 5]", "CASE WHEN i % 101 = 7 THEN 'unknown' ELSE {statuses}[1 + i % 5] END"),
    ("order_total", "CASE WHEN i % 200 = 0 THEN NULL ELSE (s * 104729) % 100000 / 100 END",  # 0.5 % NULL passes
     "CASE WHEN i % 200 = 0 THEN NULL WHEN {negative_total} THEN -1 ELSE (s * 104729) % 100000 / 100 END"),
    ("currency", "['EUR', 'USD', 'GBP', 'CHF'][1 + i % 4]",
     "CASE WHEN {short_currency} THEN 'EU' WHEN i % 89 = 11 THEN 'eur' ELSE ['EUR', 'USD', 'GBP', 'CHF'][1 + i % 4] END"),
    ("email", f"'customer' || ({_CUSTOMER}) || '@example.com'",
     f"'customer' || ({_CUSTOMER}) || CASE WHEN i % 103 = 5 THEN '.example.com' ELSE '@example.com' END"),
    ("discount_code", "CASE WHEN i % 10 < 8 THEN NULL WHEN i % 10 = 8 THEN '' ELSE 'SAVE10' END", None),  # 90 %
    ("created_at", _MOMENT, None),  # failing: the whole table two days old (freshness), `stale` below
]
STATES = {  # what differs between the two tables besides the columns' failing expressions
    "clean": {"repeat": "i", "stale": "0"},
    "failing": {"repeat": "CASE WHEN {repeat} THEN i - 1 ELSE i END", "stale": str(2 * 86_400_000_000)},
}


def generate_sql(rows: int, state: str, now: dt.datetime) -> str:
    failing = state == "failing"
    values = {**rare_rows(rows), "rows": rows, "customers": max(rows // 10, 1), "now": f"{now:%Y-%m-%d %H:%M:%S}",
              "step": 30 * 86_400_000_000 // rows, "statuses": "[" + ", ".join(f"'{s}'" for s in STATUSES) + "]",
              "stale": STATES[state]["stale"]}
    types = {p["name"]: p["physicalType"] for p in PROPERTIES}
    selected = ",\n  ".join(
        f"CAST({(broken if failing and broken else clean).format(**values)} AS {types[name]}) AS {name}"
        for name, clean, broken in COLUMNS)
    source = STATES[state]["repeat"].format(**values)
    return f"SELECT\n  {selected}\nFROM (SELECT range AS i, {source} AS s FROM range(1, {rows + 1}))"


def prepare(path: Path, rows: int, state: str, now: dt.datetime, csv: bool, delta: Path | None,
            parquet: bool = False) -> None:
    """The table (and its rows as CSV, for PostgreSQL; as a Delta table, for Delta; as Parquet, for
    Spark) made by a process
    of its own: every worker starts from this process's memory (see `peak_rss_kb`), which must stay
    that of its imports."""
    subprocess.run([sys.executable, __file__, "--prepare", json.dumps(
        {"path": str(path), "rows": rows, "state": state, "now": now.isoformat(), "csv": csv,
         "delta": str(delta) if delta else None, "parquet": parquet})], check=True)


def prepare_child(spec: dict) -> None:
    path = Path(spec["path"])
    generate_duckdb(path, spec["rows"], spec["state"], dt.datetime.fromisoformat(spec["now"]).replace(tzinfo=None))
    if spec["csv"]:
        with contextlib.closing(duckdb.connect(str(path), read_only=True)) as con:
            # NULL unquoted and '' as "", as PostgreSQL's COPY reads CSV too
            con.execute(f"COPY orders TO '{path.with_suffix('.csv')}' (HEADER false)")
    if spec.get("parquet"):
        with contextlib.closing(duckdb.connect(str(path), read_only=True)) as con:
            con.execute(f"COPY orders TO '{path.with_suffix('.parquet')}' (FORMAT parquet)")
    if spec["delta"]:
        import deltalake

        with contextlib.closing(duckdb.connect(str(path), read_only=True)) as con:
            # streamed in record batches, as a writer of a large table would
            deltalake.write_deltalake(spec["delta"], con.execute("SELECT * FROM orders").to_arrow_reader())


def generate_duckdb(path: Path, rows: int, state: str, now: dt.datetime) -> None:
    """All in DuckDB SQL: building rows in Python would take longer than the checks at 5M rows."""
    columns = ", ".join(f"{p['name']} {p['physicalType']}" for p in PROPERTIES)
    with contextlib.closing(duckdb.connect(str(path))) as con:
        con.execute(f"CREATE TABLE orders ({columns})")
        con.execute(f"INSERT INTO orders {generate_sql(rows, state, now)}")
        con.execute("CHECKPOINT")


# --- the floors: bench_floor.py (the strongest, and the one with COUNT(DISTINCT …) before it) -------

def floor_as_checks(f: dict, compound: int, now: dt.datetime) -> dict[str, float]:
    """The floor's measures under the engine's check names, to prove both measured the same thing."""
    newest = f["newest"]
    if isinstance(newest, str):  # PyHive hands a timestamp over as its text (the session's UTC)
        newest = dt.datetime.fromisoformat(newest)
    newest = newest.replace(tzinfo=dt.timezone.utc) if newest else None
    return {
        "row_count": f["rows"], "order_id__not_null": f["order_id_nulls"],
        "order_id__primary_key": f["order_id_nulls"] + f["order_id_dups"],
        "order_number__unique": f["order_number_dups"],
        "customer_id__not_null": f["customer_id_nulls"], "customer_id__minimum": f["customer_id_below"],
        "status__accepted_values": f["status_bad"], "status__invalid_values": f["status_bad"],
        "order_total__minimum": f["order_total_below"], "order_total__maximum": f["order_total_above"],
        "order_total__null_values": f["order_total_nulls"], "currency__min_length": f["currency_short"],
        "currency__max_length": f["currency_long"], "currency__pattern": f["currency_pattern"],
        "email__format": f["email_format"], "discount_code__missing_values": f["discount_missing"],
        "created_at__not_null": f["created_at_nulls"],
        "customer_id__created_at__duplicate_values": compound,
        "created_at__freshness": (now - newest).total_seconds() if newest else None,
    }


# --- the methods, each run in a worker process of its own -----------------------------------------

def load_plan(path: Path):
    result = load_contracts([path])
    assert result.problems == [], result.problems
    plan = result.plans[0]
    return plan, plan.objects[0]


def plan_table(obj, schema: str | None, files: Any = None) -> sa.TableClause:
    columns = sorted({c for check in obj.checks if check.kind != "schema"
                      for c in [check.params.get("column"), *(check.params.get("columns") or [])] if c})
    return table_for(obj.physical_name, schema, columns, files=files)


def measure_for(obj, check, table: sa.TableClause, dialect: str, now: dt.datetime):
    """(key, expression) of the aggregate column the engine would use for this check, or None."""
    if not uses_aggregate(check):
        return None
    return KINDS[check.kind].measure(check, CheckedObject(obj, table, dialect, None, None, now))


class Capture:
    """The statements one run sends, each with its start time: SQLAlchemy's cursor events, and the
    pool's pre-pings (sent on the DBAPI cursor directly, so no event sees them)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, float]] = []
        self.on = False

    def record(self, statement: str, parameters: Any = None) -> None:
        if self.on:
            self.sent.append((statement, parameters, time.perf_counter()))

    def attach(self, engine: sa.Engine) -> None:
        sa.event.listen(engine, "before_cursor_execute",
                        lambda conn, cursor, statement, parameters, *rest: self.record(statement, parameters))
        ping = engine.dialect.do_ping

        def counted_ping(dbapi_connection):
            self.record("(pool pre-ping)")
            return ping(dbapi_connection)

        engine.dialect.do_ping = counted_ping  # type: ignore[method-assign]

    def grouped(self, end: float) -> list[tuple[str, int, float]]:
        """(statement, times sent, wall seconds): a statement's time runs to the next one's start
        (or the run's end), so fetching a lazily executed result counts for the statement."""
        groups: dict[str, list] = {}
        for i, (statement, _, started) in enumerate(self.sent):
            finished = self.sent[i + 1][2] if i + 1 < len(self.sent) else end
            entry = groups.setdefault(" ".join(statement.split()), [0, 0.0])
            entry[0] += 1
            entry[1] += finished - started
        return sorted(((s, n, t) for s, (n, t) in groups.items()), key=lambda g: -g[2])


class Ours:
    """The product's path: server from the contract, endpoint from the environment, its engine."""

    def __init__(self, spec: dict, capture: Capture) -> None:
        self.plan, self.obj = load_plan(Path(spec["contract"]))
        self.now = dt.datetime.fromisoformat(spec["now"])
        # the operator's environment as the product reads it (DQ_CONTRACTS_BENCH_MEMORY_LIMIT and the like),
        # with the endpoint of the throwaway cluster
        environ = {**os.environ, **spec["environ"]}
        self.connection = connection_for(self.plan.servers[0], environ, str(Path(spec["contract"]).parent))
        self.capture, self.engine = capture, None
        self.connect()
        self.results: list = []

    def connect(self) -> None:
        """A new engine, as each run of the product makes (the runs in between reuse its pool)."""
        if self.engine is not None:
            self.engine.dispose()
        self.engine = engine_for(self.connection)
        self.capture.attach(self.engine)

    def run(self) -> None:
        self.results = run_object(self.plan, self.obj, self.engine, now=self.now, schema=self.connection.schema,
                                  secrets=self.connection.secrets, files=self.connection.files)

    def measures(self) -> dict:
        return {r.name: {"kind": r.kind, "passed": r.passed, "observed": json_value(r.observed),
                         "count": json_value(r.details.get("count")), "error": r.error,
                         "samples": len(r.samples)} for r in self.results}


class Naive(Ours):
    """One query per check on one connection: its own measure alone, or the engine's own query."""

    def run(self) -> None:
        schema, dialect, files = self.connection.schema, self.engine.dialect.name, self.connection.files
        table = plan_table(self.obj, schema, files)
        out: dict[str, tuple[bool, Any]] = {}
        with self.engine.connect() as connection:
            for check in self.obj.checks:
                if check.kind == "schema":  # the same metadata work as the engine: a lake's from its log
                    if hasattr(files, "columns"):
                        files.columns(self.obj.physical_name, connection.connection.driver_connection)
                    else:
                        sa.inspect(connection).get_columns(self.obj.physical_name, schema=schema)
                    continue
                found = measure_for(self.obj, check, table, dialect, self.now)
                if found is None:
                    assert check.kind in ("primary_key", "duplicate_values"), check.kind
                    statement = compound_duplicates(table, check.params["columns"],
                                                    count_nulls=check.kind == "primary_key")
                    value = connection.execute(statement).scalar()
                elif check.unit == "percent":
                    count, rows = connection.execute(sa.select(found[1], sa.func.count()).select_from(table)).one()
                    value = percent_of(count, rows)
                else:
                    value = connection.execute(sa.select(found[1]).select_from(table)).scalar()
                value = float(value) if check.kind == "freshness" or isinstance(value, float) else (
                    None if value is None else int(value))
                out[check.name] = (check.passes(value), value)
        self.results = out

    def measures(self) -> dict:
        return {name: {"passed": passed, "observed": value} for name, (passed, value) in self.results.items()}


class Floor:
    """The hand-written SQL on one DBAPI connection, kept between runs like ours' pool, in autocommit."""

    name = "floor"

    def __init__(self, spec: dict, capture: Capture) -> None:
        self.spec, self.capture, self.db, self.delta = spec, capture, None, None
        self.dialect, self.now = spec["engine"], dt.datetime.fromisoformat(spec["now"])
        schema = spec.get("schema") or "main"
        table = {"delta": "orders", "spark": f"`{schema}`.orders"}.get(  # delta: the registered dataset
            self.dialect, f'"{schema}".orders')
        self.sql = floor_statements(self.name, self.dialect, table, schema)
        self.connect()
        self.results: dict = {}

    def connect(self) -> None:
        if self.db is not None:
            self.db.close()
        if self.dialect == "duckdb":
            self.db = duckdb.connect(self.spec["path"], read_only=True)
        elif self.dialect == "delta":  # the table opened and its Arrow dataset registered once per connection
            from deltalake import DeltaTable

            self.db = duckdb.connect()
            self.delta = DeltaTable(self.spec["delta"])
            self.db.register("orders", self.delta.to_pyarrow_dataset())
        elif self.dialect == "spark":  # timestamps in UTC, as ours' session (engine/spark.py)
            from pyhive import hive

            self.db = hive.connect(host="127.0.0.1", port=self.spec["port"], database=self.spec["schema"])
            self.query("SET TIME ZONE 'UTC'")
        else:
            self.db = psycopg2.connect(self.spec["dsn"])
            self.db.autocommit = True

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        self.capture.record(sql)
        # a registered dataset is the connection's own: a DuckDB cursor (a connection of its own) does not see it
        cursor = self.db if self.delta is not None else self.db.cursor()
        cursor.execute(sql)
        rows = cursor.fetchall()
        names = [d[0] for d in cursor.description]
        if cursor is not self.db:
            cursor.close()
        return names, rows

    def run(self) -> None:
        if self.delta is not None:  # the columns as the Delta log says (no SQL, as ours' schema check)
            self.delta.schema()
        sql = [(what, statement) for what, statement in self.sql if not (what == "catalog" and self.delta is not None)]
        aggregate, compound = collect(sql, self.query)
        self.results = floor_as_checks(aggregate, compound, self.now)

    def measures(self) -> dict:
        return {name: json_value(v) for name, v in self.results.items()}


class FloorDistinct(Floor):
    """The floor before: the key columns' duplicates as COUNT(DISTINCT …) in the one aggregate."""

    name = "floor_distinct"


METHODS: dict[str, Callable[[dict, Capture], Any]] = {"ours": Ours, "floor": Floor, "floor_distinct": FloorDistinct,
                                                      "naive": Naive}


def json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return float(value) if hasattr(value, "__float__") else str(value)


def peak_rss_kb() -> int:
    """This process's own peak resident size. ru_maxrss is not that on Linux: a child starts from the
    peak its parent had when it forked (exec keeps it), so Linux's VmHWM (the peak of this program's
    memory alone) comes first, ru_maxrss where there is none."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def current_rss_kb() -> int:
    """Resident set size now (Linux's /proc), else the peak so far: the worker's baseline before its
    first run, since the peak of start-up (imports, contract loading) could hide a small run's."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def worker(method: str, spec: dict) -> None:
    """One method's process: set up, then answer the parent's commands (one JSON line each) until
    `report`. The protocol has stdout to itself; anything a library prints goes to stderr."""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def reply(**fields: Any) -> None:
        protocol.write(json.dumps(fields, default=str) + "\n")

    if spec["engine"] == "delta":  # every worker imports the reader, so the peaks compare the work
        import deltalake  # noqa: F401
        import pyarrow.dataset  # noqa: F401
    if spec["engine"] == "spark":
        import pyhive.hive  # noqa: F401
    capture = Capture()
    subject = METHODS[method](spec, capture)
    connection = getattr(subject, "connection", None)
    reply(ready=True, rss_kb=current_rss_kb(), duckdb=list(getattr(connection, "duckdb", ())))
    for line in sys.stdin:
        command = line.split()
        if command == ["run"]:
            started = time.perf_counter()
            subject.run()
            reply(seconds=time.perf_counter() - started)
        elif command[0] == "count":  # one run whose statements are recorded; `count new`: on a new connection
            capture.sent.clear()
            capture.on = True
            started = time.perf_counter()
            if command[1:] == ["new"]:
                subject.connect()
            subject.run()
            end = time.perf_counter()
            capture.on = False
            reply(statements=capture.grouped(end), sent=len(capture.sent), seconds=end - started)
        elif command == ["explain"]:
            reply(plans=explain(spec, capture))
        elif command == ["report"]:
            reply(measures=subject.measures(), rss_kb=peak_rss_kb())
            return
        else:
            raise ValueError(f"unknown command {line!r}")


def explain(spec: dict, capture: Capture) -> list[tuple[str, str]]:
    """PostgreSQL's EXPLAIN (not ANALYZE) of every statement of the counted run that reads the table."""
    out = []
    with contextlib.closing(psycopg2.connect(spec["dsn"])) as db, db.cursor() as cursor:
        seen = set()
        for statement, parameters, _ in capture.sent:
            flat = " ".join(statement.split())
            lowered = flat.lower()
            if flat in seen or not lowered.startswith(("select", "with")) or "orders" not in lowered or any(
                    catalog in lowered for catalog in ("information_schema", "pg_catalog")):
                continue
            seen.add(flat)
            cursor.execute("EXPLAIN " + statement, parameters or None)
            out.append((flat, "\n".join(r[0] for r in cursor.fetchall())))
    return out


# --- the parent: tables, workers, counts, verdicts, the report ------------------------------------

class Worker:
    """A method's process, driven one command at a time."""

    def __init__(self, method: str, spec: dict) -> None:
        self.method = method
        self.process = subprocess.Popen([sys.executable, __file__, "--worker", method, "--spec", json.dumps(spec)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        ready = self.ask(None)
        self.baseline_kb, self.duckdb_settings = ready["rss_kb"], ready["duckdb"]

    def ask(self, command: str | None) -> dict:
        if command is not None:
            self.process.stdin.write(command + "\n")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.method} worker died (its error is above)")
        return json.loads(line)

    def run(self) -> float:
        return self.ask("run")["seconds"]

    def finish(self) -> dict:
        report = self.ask("report")
        self.process.wait(timeout=60)
        return report


class DatacontractCli:
    """`datacontract test` as a whole process per run, its peak RSS from wait4; the same contract
    (ODCS as well), the same server, the same table."""

    def __init__(self, venv: Path, contract: Path, env: dict) -> None:
        self.output = contract.with_suffix(".result.json")
        self.command = [str(venv / "bin" / "datacontract"), "test", str(contract),
                        "--output", str(self.output), "--output-format", "json"]
        self.env = {**os.environ, **env}
        self.rss_kb = 0

    def run(self) -> float:
        started = time.perf_counter()
        process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        self.rss_kb = max(self.rss_kb, usage.ru_maxrss)
        return seconds

    def outcome(self) -> str:
        """Its checks by result, and the keys of those that did not pass."""
        try:
            checks = json.loads(self.output.read_text())["checks"]
        except (OSError, ValueError, KeyError) as exc:
            return f"no result file ({exc})"
        results: dict[str, list[str]] = {}
        for check in checks:
            results.setdefault(check.get("result") or "?", []).append(check.get("key") or check.get("name"))
        return ", ".join(f"{len(keys)} {result}" for result, keys in results.items()) + "".join(
            f"\n  {result}: " + ", ".join(keys) for result, keys in results.items() if result != "passed")


def interleaved_medians(runs: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Median seconds per method. Methods alternate within each round, in a rotating order, so drift
    and other load on the machine hit all of them alike; one untimed warm-up round first (DuckDB's
    buffer cache, SQLAlchemy's compiled cache, the connection pool)."""
    names = list(runs)
    for name in names:
        runs[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeats):
        for name in names[i % len(names):] + names[:i % len(names)]:
            times[name].append(runs[name]())
    return {name: statistics.median(values) for name, values in times.items()}


PG_DATABASE = "bench"


class Postgres:
    """The throwaway cluster: a database for the runs, and statement counts read from another one
    (`postgres`), so the reset and the count are not among what they count."""

    def __init__(self) -> None:
        from dq_contracts_tests.pgcluster import PASSWORD, SUPERUSER, PgCluster  # only when PostgreSQL runs

        self.cluster = PgCluster.start()
        self.password = PASSWORD
        self.dsn = f"host=127.0.0.1 port={self.cluster.port} user={SUPERUSER} password={PASSWORD}"
        self.admin = psycopg2.connect(self.dsn + " dbname=postgres")
        self.admin.autocommit = True
        self.query(f"CREATE DATABASE {PG_DATABASE}")
        self.counts = self.cluster.has_statement_stats
        if self.counts:
            self.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        settings = ("server_version", "shared_buffers", "work_mem", "max_parallel_workers_per_gather")
        print("PostgreSQL: " + ", ".join(f"{name} {self.query(f'SHOW {name}')[0][0]}" for name in settings))

    def query(self, sql: str) -> list[tuple]:
        with self.admin.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def load(self, duckdb_file: Path, schema: str) -> None:
        """The DuckDB table's rows (as CSV, written by `prepare`) into a table of the contract's types,
        then VACUUM ANALYZE."""
        csv = duckdb_file.with_suffix(".csv")
        columns = ", ".join(f"{p['name']} {p['physicalType']}" for p in PROPERTIES)
        with contextlib.closing(psycopg2.connect(self.dsn + f" dbname={PG_DATABASE}")) as db:
            db.autocommit = True
            with db.cursor() as cursor, csv.open() as data:
                cursor.execute(f'CREATE SCHEMA "{schema}"')
                cursor.execute(f'CREATE TABLE "{schema}".orders ({columns})')
                cursor.copy_expert(f'COPY "{schema}".orders FROM STDIN (FORMAT csv)', data)
                cursor.execute(f'VACUUM ANALYZE "{schema}".orders')
        csv.unlink()

    def drop(self, schema: str) -> None:
        with contextlib.closing(psycopg2.connect(self.dsn + f" dbname={PG_DATABASE}")) as db:
            db.autocommit = True
            with db.cursor() as cursor:
                cursor.execute(f'DROP SCHEMA "{schema}" CASCADE')

    def counted(self, run: Callable[[], Any]) -> tuple[Any, list[tuple[int, float, str]]]:
        """What the server received from `run`: (calls, server ms, statement) in the run's database."""
        if not self.counts:
            return run(), []
        self.query("SELECT pg_stat_statements_reset()")
        out = run()
        rows = self.query("SELECT calls, total_exec_time, query FROM pg_stat_statements "
                          f"WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{PG_DATABASE}') "
                          "ORDER BY total_exec_time DESC")
        return out, [(int(c), float(ms), " ".join(q.split())) for c, ms, q in rows]

    def destroy(self) -> None:
        self.admin.close()
        self.cluster.destroy()


class Spark:
    """The local Spark Thrift server of the tests, and one PyHive connection of the benchmark's own for
    loading and dropping tables, kept open to the end (closing a session takes this server ~20 s)."""

    def __init__(self) -> None:
        from pyhive import hive

        from dq_contracts_tests.sparkserver import SparkServer  # only when Spark runs

        started = time.perf_counter()
        self.server = SparkServer.start()
        self.db = hive.connect(host="127.0.0.1", port=self.server.port)
        self.query("SET TIME ZONE 'UTC'")  # the Parquet's timestamps are the rows' UTC moments
        print(f"Spark {self.query('SELECT version()')[0][0]}: a Thrift server, local[1], started in "
              f"{time.perf_counter() - started:.1f} s", flush=True)

    def query(self, sql: str) -> list[tuple]:
        cursor = self.db.cursor()
        try:
            cursor.execute(sql)
            return cursor.fetchall() if cursor.description else []
        finally:
            cursor.close()

    def load(self, duckdb_file: Path, schema: str) -> None:
        """The DuckDB table's rows (as Parquet, written by `prepare`) into a Spark table of the contract's
        types, as Spark spells them (one table at a time: each is dropped after its runs)."""
        parquet = duckdb_file.with_suffix(".parquet")
        columns = ", ".join(f"CAST({p['name']} AS {p['physicalType'].replace('VARCHAR', 'STRING')}) AS {p['name']}"
                            for p in PROPERTIES)
        self.query(f"CREATE TABLE `{schema}`.orders USING parquet AS SELECT {columns} FROM parquet.`{parquet}`")
        parquet.unlink()

    def drop(self, schema: str) -> None:
        self.query(f"DROP TABLE `{schema}`.orders")

    def stop(self) -> None:
        self.server.stop()


def verify(ours: dict, naive: dict, floor: dict) -> list[str]:
    """What ours, naive and floor disagree on: every check the naive run measured, every measure the floor has."""
    def same(a: Any, b: Any, tolerance: float = 1e-9) -> bool:
        return a is not None and b is not None and abs(float(a) - float(b)) <= tolerance

    problems = []
    for name, theirs in naive.items():
        mine = ours[name]
        if mine["passed"] != theirs["passed"] or not same(mine["observed"], theirs["observed"]):
            problems.append(f"naive {name}: {theirs} vs ours {mine['passed']} {mine['observed']}")
    for name, value in floor.items():
        mine = ours[name]
        observed = mine["count"] if mine["count"] is not None else mine["observed"]
        if not same(observed, value, 1e-3 if name.endswith("freshness") else 1e-9):
            problems.append(f"floor {name}: {value} vs ours {observed}")
    return problems


_QUALIFIER = re.compile(r'(?:"[^"]*"\.)?"orders"\.(?=")')


def short(statement: str, width: int = 130) -> str:
    """A statement for a line of the report: columns without their table and schema qualifiers."""
    statement = _QUALIFIER.sub("", statement)
    return statement if len(statement) <= width else statement[:width - 1] + "…"


def measure_table(engine: str, table: dict, args: argparse.Namespace, pg: Postgres | None,
                  folder: Path) -> dict:
    """Every method on one table: timings, statements, RSS, verdicts; prints the details."""
    contract = folder / f"orders_{engine}_{table['name']}.odcs.yaml"
    contract.write_text(yaml.safe_dump(contract_for(engine, table), sort_keys=False))
    spec = {"contract": str(contract), "now": table["now"], "engine": engine, "schema": table.get("schema"),
            "path": str(folder / table["file"]), "delta": table.get("delta"), "environ": {}}
    if pg is not None:
        url = pg.cluster.url(PG_DATABASE)
        spec.update(dsn=pg.dsn + f" dbname={PG_DATABASE}", environ={"DQ_CONTRACTS_BENCH_URL": url})
    if engine == "delta":  # the operator lets the server read the benchmark's folder
        spec["environ"] = {"DQ_CONTRACTS_BENCH_ROOTS": str(folder)}
    if engine == "spark":  # the operator's endpoint; not declared read-only (the contract has no SQL rule)
        spec.update(port=table["port"], environ={
            "DQ_CONTRACTS_BENCH_URL": f"hive://127.0.0.1:{table['port']}/{table['schema']}"})
    workers = {m: Worker(m, spec) for m in ("ours", *FLOORS, "naive")}
    runs: dict[str, Callable[[], float]] = {m: w.run for m, w in workers.items()}
    cli = datacontract_method(engine, table, folder, pg)
    if cli is not None:
        runs["datacontract"] = cli.run
    medians = interleaved_medians(runs, args.repeats)

    statements: dict[str, dict] = {}  # by method, then "warm" (the pool's connection) and "new" (connecting)
    for method, w in workers.items():
        for connection in ("warm", "new"):
            command = "count" if connection == "warm" else "count new"
            client, server = pg.counted(lambda: w.ask(command)) if pg is not None else (w.ask(command), [])
            statements.setdefault(method, {})[connection] = {
                "client": client["statements"], "sent": client["sent"], "server": server,
                "count": sum(c for c, _, _ in server) if server else client["sent"], "seconds": client["seconds"]}
    if cli is not None and pg is not None and pg.counts:
        statements["datacontract"] = {"warm": {"count": sum(c for c, _, _ in pg.counted(cli.run)[1])}}
    plans = {m: workers[m].ask("explain")["plans"] for m in ("ours", "floor")} if args.explain and pg else {}
    reports = {m: w.finish() for m, w in workers.items()}

    ours = reports["ours"]["measures"]
    problems = [*verify(ours, reports["naive"]["measures"], reports["floor"]["measures"]),
                *(f"floor_distinct: {p}" for p in verify(ours, {}, reports["floor_distinct"]["measures"]))]
    print(f"\n## {engine}, {table['rows']:,} rows, {table['name']} table")
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    if workers["ours"].duckdb_settings:
        print("ours' DuckDB session: " + ", ".join(f"{k} {v}" for k, v in workers["ours"].duckdb_settings))
    print("medians s: " + ", ".join(f"{m} {s:.3f}" for m, s in medians.items()))
    failed = [(n, r) for n, r in ours.items() if not r["passed"]]
    print(f"checks failed by ours: {len(failed)} of {len(ours)}")
    for name, r in failed:
        print(f"  {name:<42} observed {r['observed']}" + (f" ({r['count']} rows)" if r["count"] is not None else "")
              + (f", {r['samples']} samples" if r["samples"] else "") + (f", error: {r['error']}" if r["error"] else ""))
    print("ours, naive and both floors agree on every measure" if not problems else
          "DISAGREEMENT:\n  " + "\n  ".join(problems))
    for method in ("ours", *FLOORS):
        new, st = statements[method]["new"], statements[method]["warm"]
        print(f"{method}, a run on a new engine (or connection): {new['count']} statements, {new['seconds']:.3f} s")
        kept = {query: calls for calls, _, query in st["server"]}
        for calls, _, query in new["server"]:  # what connecting adds (or, where negative, saves)
            if calls != kept.get(query, 0):
                print(f"  {calls - kept.get(query, 0):+4d}  {short(query)}")
        if st["server"]:
            print(f"{method}: {st['count']} statements received by the server (calls, server ms, statement):")
            for calls, ms, query in st["server"]:
                print(f"  {calls:4d} {ms:9.1f}  {short(query)}")
        print(f"{method}: {st['sent']} statements sent by the client (times, wall s, statement):")
        for statement, n, seconds in st["client"]:
            print(f"  {n:4d} {seconds:9.3f}  {short(statement)}")
    for method, texts in plans.items():
        for statement, plan in texts:
            print(f"\nEXPLAIN ({method}) {short(statement, 200)}\n{plan}")
    if cli is not None:
        counted = (f", {statements['datacontract']['warm']['count']} statements received by the server"
                   if "datacontract" in statements else "")
        print(f"datacontract-cli: median {medians['datacontract']:.3f} s, peak RSS {cli.rss_kb / 1024:.0f} MB"
              f"{counted}; its checks: {cli.outcome()}")
    return {"engine": engine, "rows": table["rows"], "table": table["name"], "medians": medians,
            "statements": {m: {c: s[c]["count"] for c in s} for m, s in statements.items()}, "problems": problems,
            "rss": {m: r["rss_kb"] for m, r in reports.items()}, "baseline": {m: w.baseline_kb for m, w in workers.items()},
            "datacontract_rss": cli.rss_kb if cli else None, "floor": reports["floor"]["measures"]}


def whole_process(engine: str, table: dict, args: argparse.Namespace, pg: Postgres | None, folder: Path) -> dict:
    """`dq-contracts check` as a user runs it against each floor as a process of its own (bench_floor.py),
    start-up included, in rounds of one run each, the order rotating; the ratio ours / floor is taken
    within each round, so the machine's drift between rounds cancels out. One untimed round first."""
    contract = folder / f"orders_{engine}_{table['name']}.odcs.yaml"
    contract.write_text(yaml.safe_dump(contract_for(engine, table), sort_keys=False))
    spec = {"engine": engine, "path": str(folder / table["file"]), "schema": table.get("schema")}
    # as a user's shell runs it: Python caches its compiled modules (the untimed round writes them);
    # a PYTHONDONTWRITEBYTECODE inherited from this shell would make every run compile ours again
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if pg is not None:
        spec["dsn"] = pg.dsn + f" dbname={PG_DATABASE}"
        environ["DQ_CONTRACTS_BENCH_URL"] = pg.cluster.url(PG_DATABASE)
    commands = {"ours": [str(Path(sys.executable).parent / "dq-contracts"), "check", str(contract)],
                **{f: [sys.executable, str(Path(__file__).parent / "bench_floor.py"), json.dumps({**spec, "floor": f})]
                   for f in FLOORS}}

    def timed(command: list[str]) -> float:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=environ, cwd=folder)
        _, status, _ = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: ours' checks failed, as they should
            raise RuntimeError(f"{command[:3]} exited with {os.waitstatus_to_exitcode(status)}")
        return seconds

    names = list(commands)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(args.whole + 1):
        for name in names[i % len(names):] + names[:i % len(names)]:
            seconds = timed(commands[name])
            if i:
                times[name].append(seconds)
    out = {"engine": engine, "rows": table["rows"], "table": table["name"], "runs": args.whole,
           "medians": {n: statistics.median(t) for n, t in times.items()},
           "ratios": {f: sorted(a / b for a, b in zip(times["ours"], times[f])) for f in FLOORS}}
    print(f"whole process, {args.whole} rounds: " + ", ".join(f"{n} {out['medians'][n]:.3f} s" for n in names) + "; "
          + ", ".join(f"ours/{f} {statistics.median(r):.2f} ({r[0]:.2f}-{r[-1]:.2f})" for f, r in out["ratios"].items()),
          flush=True)
    return out


def print_whole(rows: list[dict]) -> None:
    print("\n| engine | rows | table | ours s | floor s | old floor s | ours / floor (min-max) | ours / old floor (min-max) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        m, ratio = r["medians"], r["ratios"]
        spread = {f: f"**{statistics.median(v):.2f}** ({v[0]:.2f}-{v[-1]:.2f})" for f, v in ratio.items()}
        print(f"| {r['engine']} | {r['rows']:,} | {r['table']} | {m['ours']:.2f} | {m['floor']:.2f} "
              f"| {m['floor_distinct']:.2f} | {spread['floor']} | {spread['floor_distinct']} |")


def datacontract_venv() -> Path | None:
    venv = os.environ.get("DQ_BENCH_DATACONTRACT_VENV")
    return Path(venv) if venv and (Path(venv) / "bin" / "datacontract").exists() else None


def datacontract_method(engine: str, table: dict, folder: Path, pg: Postgres | None) -> DatacontractCli | None:
    """datacontract-cli on the same table, if DQ_BENCH_DATACONTRACT_VENV names a venv that has it."""
    venv = datacontract_venv()
    if venv is None or engine in ("delta", "spark"):  # its Spark path (and DuckDB's Delta extension) is not set up here
        return None
    contract = contract_for(engine, table)
    env = {}
    if engine == "duckdb":  # its relative paths are not the contract's folder: name the file whole
        contract["servers"][0]["database"] = str(folder / table["file"])
    else:
        env = {"DATACONTRACT_POSTGRES_USERNAME": "postgres", "DATACONTRACT_POSTGRES_PASSWORD": pg.password}
    path = folder / f"datacontract_{engine}_{table['name']}.odcs.yaml"
    path.write_text(yaml.safe_dump(contract, sort_keys=False))
    return DatacontractCli(venv, path, env)


def print_summary(rows: list[dict]) -> None:
    with_cli = any("datacontract" in r["medians"] for r in rows)
    print("\n| engine | rows | table | ours s | floor s | old floor s | naive s | ours/floor | ours/old floor | naive/ours "
          "| statements ours (new engine) | statements floor (new connection) | peak RSS MB ours | floor | ours/floor |"
          + (" datacontract-cli s (peak RSS) |" if with_cli else ""))
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if with_cli else ""))
    for r in rows:
        m, rss = r["medians"], r["rss"]

        def counts(method: str) -> str:
            return f"{r['statements'][method]['warm']} ({r['statements'][method]['new']})"
        cli = f" {m['datacontract']:.2f} ({r['datacontract_rss'] / 1024:.0f} MB) |" if "datacontract" in m else (" — |" if with_cli else "")
        print(f"| {r['engine']} | {r['rows']:,} | {r['table']} | {m['ours']:.3f} | {m['floor']:.3f} "
              f"| {m['floor_distinct']:.3f} | {m['naive']:.3f} | {m['ours'] / m['floor']:.2f} "
              f"| {m['ours'] / m['floor_distinct']:.2f} | {m['naive'] / m['ours']:.2f} | {counts('ours')} "
              f"| {counts('floor')} | {rss['ours'] / 1024:.0f} | {rss['floor'] / 1024:.0f} "
              f"| {rss['ours'] / rss['floor']:.2f} |{cli}")
    print("\nPeak RSS is the whole worker process; each worker imports the same modules, and its RSS before "
          "the first run was (MB resident then, ours/floor/naive): " + "; ".join(
              f"{r['engine']} {r['rows']:,} {r['table']}: " + "/".join(f"{r['baseline'][m] / 1024:.0f}"
                                                                     for m in ("ours", "floor", "naive"))
              for r in rows))
    by_table: dict[tuple, list[dict]] = {}
    for r in rows:
        by_table.setdefault((r["rows"], r["table"]), []).append(r)
    for (count, state), same in by_table.items():  # the same rows on both engines: the same counts
        differ = [name for name in same[0]["floor"] if not name.endswith("freshness")
                  and len({json.dumps(r["floor"][name]) for r in same}) > 1]
        if len(same) > 1 and differ:
            print(f"\nTHE ENGINES' FLOORS DIFFER on {count:,} rows, {state}: {differ}")
            rows[0]["problems"].append("engines differ")
    if any(r["problems"] for r in rows):
        print("\nSOME METHODS DISAGREED: see the DISAGREEMENT lines above")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--engines", nargs="+", choices=list(SERVERS), default=["duckdb", "postgres"])
    parser.add_argument("--tables", nargs="+", choices=list(STATES), default=list(STATES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--whole", type=int, default=0, metavar="ROUNDS",
                        help="also time `dq-contracts check` against each floor as whole processes, in ROUNDS rounds")
    parser.add_argument("--whole-only", action="store_true", help="only the whole-process rounds (with --whole)")
    parser.add_argument("--explain", action="store_true", help="print PostgreSQL's EXPLAIN of ours' and the "
                        "floor's statements that read the table")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, json.loads(args.spec))
        return
    if args.prepare:
        prepare_child(json.loads(args.prepare))
        return

    # stopped with SIGTERM, still stop the cluster and remove the tables (the `finally` below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"DuckDB {duckdb.__version__}, SQLAlchemy {sa.__version__}, psycopg2 {psycopg2.__version__.split()[0]}, "
          f"{os.cpu_count()} cores")
    print("load average at the start (1, 5, 15 min): " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    if datacontract_venv() is None:
        print("datacontract-cli: skipped (set DQ_BENCH_DATACONTRACT_VENV to a virtual environment that has it)")
    pg = Postgres() if "postgres" in args.engines else None
    spark = Spark() if "spark" in args.engines else None
    if pg is not None and not pg.counts:
        print("this PostgreSQL has no pg_stat_statements: statement counts are the client's")
    out, whole = [], []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
            folder = Path(tmp)
            for rows in args.sizes:
                for state in args.tables:
                    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
                    delta = folder / f"delta_{rows}_{state}" / "orders" if "delta" in args.engines else None
                    table = {"name": state, "rows": rows, "file": f"orders_{rows}_{state}.duckdb",
                             "now": now.isoformat(), "schema": None, "delta": str(delta) if delta else None}
                    started = time.perf_counter()
                    prepare(folder / table["file"], rows, state, now, csv="postgres" in args.engines, delta=delta,
                            parquet="spark" in args.engines)
                    print(f"\n{rows:,} rows, {state}: generated in {time.perf_counter() - started:.1f} s", flush=True)
                    for engine in args.engines:
                        if engine == "postgres":
                            table = {**table, "schema": f"orders_{rows}_{state}", "port": pg.cluster.port}
                            started = time.perf_counter()
                            pg.load(folder / table["file"], table["schema"])
                            print(f"loaded into PostgreSQL in {time.perf_counter() - started:.1f} s", flush=True)
                        if engine == "spark":
                            table = {**table, "schema": "default", "port": spark.server.port}
                            started = time.perf_counter()
                            spark.load(folder / table["file"], table["schema"])
                            print(f"loaded into Spark in {time.perf_counter() - started:.1f} s", flush=True)
                        if not args.whole_only:
                            out.append(measure_table(engine, table, args, pg if engine == "postgres" else None, folder))
                        if args.whole and engine in ("duckdb", "postgres"):
                            whole.append(whole_process(engine, table, args, pg if engine == "postgres" else None,
                                                       folder))
                        sys.stdout.flush()
                        if engine == "postgres":
                            pg.drop(table["schema"])
                        if engine == "spark":
                            spark.drop(table["schema"])
                    (folder / table["file"]).unlink()
                    if delta is not None:
                        shutil.rmtree(delta.parent)
    finally:
        if pg is not None:
            pg.destroy()
        if spark is not None:
            spark.stop()
    if out:
        print_summary(out)
    if whole:
        print_whole(whole)


if __name__ == "__main__":
    main()
