"""Run one contract's checks against a generated DuckDB `orders` table, three ways.

* engine: `dq_contracts.runner.run_object` (one aggregate scan + one query per compound key + schema);
* naive:  one query per check, built from the same plan with the kinds table's measures (`dq_contracts.kinds`);
* floor:  hand-written SQL an expert would run: one aggregate, the compound-key query, one
          information_schema query for the schema check.

Each size runs in a fresh subprocess so its peak RSS (ru_maxrss) belongs to that size alone; RSS is
read right after two engine runs, before the naive and floor runs touch anything. The three methods
are then timed in alternation (see `interleaved_medians`), since a shared 2-core machine drifts.

    python benchmarks/bench_engine.py [--sizes 1000000 5000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import duckdb
import sqlalchemy as sa
import yaml

from dq_contracts.core import load_contracts
from dq_contracts.plans import percent_of
from dq_contracts.runner import run_object
from dq_contracts.kinds import KINDS, Scope, uses_aggregate
from dq_contracts.sql import compound_duplicates, table_for


def measure_for(obj, check, table: sa.TableClause, dialect: str, now: dt.datetime):
    """(key, expression) of the aggregate column the engine would use for this check, or None."""
    if not uses_aggregate(check):
        return None
    return KINDS[check.kind].measure(check, Scope(obj, table, dialect, None, None, now))

STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled"]
EMAIL_PATTERN = r"^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$"  # what `format: email` compiles to
CURRENCY_PATTERN = "^[A-Z]{3}$"

# v3.2.0, not v3.1.0: `enum` is a v3.2 feature and the loader refuses it in a v3.1 document.
CONTRACT = {
    "apiVersion": "v3.2.0", "kind": "DataContract", "id": "urn:bench:orders", "version": "1.0.0",
    "status": "active", "servers": [{"server": "bench", "type": "duckdb", "database": "bench.duckdb"}],
    "schema": [{
        "name": "orders", "physicalName": "orders", "physicalType": "table",
        "properties": [
            {"name": "order_id", "logicalType": "integer", "physicalType": "BIGINT",
             "primaryKey": True, "required": True},
            {"name": "order_number", "logicalType": "string", "physicalType": "VARCHAR", "unique": True},
            {"name": "customer_id", "logicalType": "integer", "physicalType": "BIGINT", "required": True,
             "logicalTypeOptions": {"minimum": 1}},
            {"name": "status", "logicalType": "string", "physicalType": "VARCHAR",
             "enum": [{"value": s} for s in STATUSES],
             "quality": [{"metric": "invalidValues", "arguments": {"validValues": STATUSES}, "mustBe": 0,
                          "severity": "warning"}]},
            {"name": "order_total", "logicalType": "number", "physicalType": "DECIMAL(12,2)",
             "logicalTypeOptions": {"minimum": 0, "maximum": 100000},
             "quality": [{"metric": "nullValues", "mustBeLessThan": 1, "unit": "percent"}]},
            {"name": "currency", "logicalType": "string", "physicalType": "VARCHAR",
             "logicalTypeOptions": {"minLength": 3, "maxLength": 3, "pattern": CURRENCY_PATTERN}},
            {"name": "email", "logicalType": "string", "physicalType": "VARCHAR",
             "logicalTypeOptions": {"format": "email"}},
            {"name": "discount_code", "logicalType": "string", "physicalType": "VARCHAR",
             "quality": [{"metric": "missingValues", "arguments": {"missingValues": [None, "", "N/A"]},
                          "mustBeLessThan": 95, "unit": "percent"}]},
            {"name": "created_at", "logicalType": "timestamp", "physicalType": "TIMESTAMP", "required": True},
        ],
        "quality": [
            {"metric": "rowCount", "mustBeBetween": [1, 100_000_000]},
            {"metric": "duplicateValues", "arguments": {"properties": ["customer_id", "created_at"]}, "mustBe": 0},
        ],
    }],
    "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "orders.created_at"}],
}

# The floor: every count-style measure of the contract in one scan, written by hand. `status NOT IN`
# once, though the contract states it twice (enum and invalidValues).
FLOOR_AGGREGATE = f"""
SELECT
  count(*)                                                         AS rows,
  count(*) - count(order_id)                                       AS order_id_nulls,
  count(order_id) - count(DISTINCT order_id)                       AS order_id_dups,
  count(order_number) - count(DISTINCT order_number)               AS order_number_dups,
  count(*) - count(customer_id)                                    AS customer_id_nulls,
  count(*) FILTER (WHERE customer_id < 1)                          AS customer_id_below,
  count(*) FILTER (WHERE status NOT IN ({", ".join(f"'{s}'" for s in STATUSES)})) AS status_bad,
  count(*) - count(order_total)                                    AS order_total_nulls,
  count(*) FILTER (WHERE order_total < 0)                          AS order_total_below,
  count(*) FILTER (WHERE order_total > 100000)                     AS order_total_above,
  count(*) FILTER (WHERE length(currency) < 3)                     AS currency_short,
  count(*) FILTER (WHERE length(currency) > 3)                     AS currency_long,
  count(*) FILTER (WHERE NOT regexp_matches(currency, '{CURRENCY_PATTERN}')) AS currency_pattern,
  count(*) FILTER (WHERE NOT regexp_matches(email, '{EMAIL_PATTERN}'))       AS email_format,
  count(*) FILTER (WHERE discount_code IS NULL OR discount_code IN ('', 'N/A')) AS discount_missing,
  count(*) - count(created_at)                                     AS created_at_nulls,
  max(created_at)                                                  AS newest
FROM orders
"""


def floor_as_checks(f) -> dict[str, int]:
    """The floor's measures under the engine's check names, to prove both measured the same thing."""
    return {
        "row_count": f.rows, "order_id__not_null": f.order_id_nulls,
        "order_id__primary_key": f.order_id_nulls + f.order_id_dups, "order_number__unique": f.order_number_dups,
        "customer_id__not_null": f.customer_id_nulls, "customer_id__minimum": f.customer_id_below,
        "status__accepted_values": f.status_bad, "status__invalid_values": f.status_bad,
        "order_total__minimum": f.order_total_below, "order_total__maximum": f.order_total_above,
        "order_total__null_values": f.order_total_nulls, "currency__min_length": f.currency_short,
        "currency__max_length": f.currency_long, "currency__pattern": f.currency_pattern,
        "email__format": f.email_format, "discount_code__missing_values": f.discount_missing,
        "created_at__not_null": f.created_at_nulls,
    }


FLOOR_COMPOUND = """
SELECT coalesce(sum(n - 1), 0) FROM (
  SELECT customer_id, created_at, count(*) AS n FROM orders
  WHERE customer_id IS NOT NULL AND created_at IS NOT NULL
  GROUP BY customer_id, created_at HAVING count(*) > 1)
"""
FLOOR_SCHEMA = "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'orders'"


def generate(path: Path, rows: int, now: dt.datetime) -> None:
    """All in DuckDB SQL: Python-side row building would dominate the run at 5M rows."""
    statuses = "[" + ", ".join(f"'{s}'" for s in STATUSES) + "]"
    con = duckdb.connect(str(path))
    try:
        con.execute(f"""
            CREATE TABLE orders AS
            SELECT
              i AS order_id,
              'ORD-' || lpad(i::VARCHAR, 10, '0') AS order_number,
              c AS customer_id,
              {statuses}[1 + (random() * 5)::INT % 5] AS status,
              CASE WHEN random() < 0.005 THEN NULL
                   ELSE (random() * 1000)::DECIMAL(12,2) END AS order_total,
              ['EUR', 'USD', 'GBP', 'CHF'][1 + (random() * 4)::INT % 4] AS currency,
              'customer' || c || '@example.com' AS email,
              CASE WHEN random() < 0.8 THEN NULL WHEN random() < 0.5 THEN '' ELSE 'SAVE10' END AS discount_code,
              -- microsecond spread over 30 days: (customer_id, created_at) is unique in practice
              TIMESTAMP '{now:%Y-%m-%d %H:%M:%S}' - to_microseconds((random() * 30 * 86400e6)::BIGINT) AS created_at
            FROM (SELECT range AS i, 1 + (random() * {max(rows // 10, 1)})::BIGINT AS c FROM range(1, {rows} + 1))
        """)
        con.execute("CHECKPOINT")
    finally:
        con.close()


def write_contract(folder: Path) -> Path:
    path = folder / "orders.odcs.yaml"
    path.write_text(yaml.safe_dump(CONTRACT, sort_keys=False))
    return path


def load_plan(path: Path):
    result = load_contracts([path])
    assert result.problems == [], result.problems
    plan = result.plans[0]
    return plan, plan.objects[0]


def plan_table(obj) -> sa.TableClause:
    columns = sorted({c for check in obj.checks if check.kind != "schema"
                      for c in [check.params.get("column"), *(check.params.get("columns") or [])] if c})
    return table_for(obj.physical_name, None, columns)


def interleaved_medians(runs: dict, repeats: int) -> dict[str, float]:
    """Median seconds per method. Methods alternate within each round, in a rotating order, so drift
    and other load on the machine hit all of them alike; one untimed warm-up round first (DuckDB's
    buffer cache, SQLAlchemy's compiled cache, the connection pool)."""
    names = list(runs)
    for name in names:
        runs[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeats):
        for name in names[i % len(names):] + names[:i % len(names)]:
            started = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def naive_run(obj, table: sa.TableClause, engine: sa.Engine, now: dt.datetime,
              timings: dict[str, float] | None = None) -> dict[str, tuple[bool, object]]:
    """One query per check: its own measure alone, or the same own query the engine runs."""
    out: dict[str, tuple[bool, object]] = {}
    dialect = engine.dialect.name
    with engine.connect() as connection:
        for check in obj.checks:
            started = time.perf_counter()
            if check.kind == "schema":
                sa.inspect(connection).get_columns(obj.physical_name)  # same metadata work as the engine
                if timings is not None:
                    timings[check.name] = time.perf_counter() - started
                continue
            found = measure_for(obj, check, table, dialect, now)
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
            if check.kind == "freshness":
                value = float(value)  # the measure is already the age in seconds
            elif value is not None and not isinstance(value, float):
                value = int(value)
            out[check.name] = (check.passes(value), value)
            if timings is not None:
                timings[check.name] = time.perf_counter() - started
    return out


def floor_run(engine: sa.Engine) -> tuple:
    with engine.connect() as connection:
        aggregate = connection.exec_driver_sql(FLOOR_AGGREGATE).one()
        compound = connection.exec_driver_sql(FLOOR_COMPOUND).scalar()
        connection.exec_driver_sql(FLOOR_SCHEMA).fetchall()
    return aggregate, compound


def statement_times(engine: sa.Engine, run) -> list[tuple[str, float]]:
    """Wall time per statement of one run: from its start to the next statement's start (or the end),
    so time spent fetching a lazily executed result is charged to the statement that produced it."""
    starts: list[tuple[str, float]] = []

    def before(conn, cursor, statement, *args):
        starts.append((statement, time.perf_counter()))

    sa.event.listen(engine, "before_cursor_execute", before)
    try:
        run()
        end = time.perf_counter()
    finally:
        sa.event.remove(engine, "before_cursor_execute", before)
    grouped: dict[str, float] = {}
    for i, (statement, started) in enumerate(starts):
        finished = starts[i + 1][1] if i + 1 < len(starts) else end
        text = " ".join(statement.split())
        lowered = text.lower()
        metadata = ("information_schema", "duckdb_", "current_schema")
        if any(word in lowered for word in metadata) or not lowered.startswith(("select", "with")):
            label = "schema check (reflection/metadata)"
        elif "group by" in lowered:
            label = "compound key (GROUP BY)"
        else:
            label = "aggregate scan" if text.count("AS m") > 3 else text[:70]
        grouped[label] = grouped.get(label, 0.0) + finished - started
    return sorted(grouped.items(), key=lambda item: -item[1])


def child(args: argparse.Namespace) -> None:
    plan, obj = load_plan(Path(args.contract))
    now = dt.datetime.now(dt.timezone.utc)
    connect_args: dict = {"read_only": True}
    if args.threads:  # DuckDB uses every core by default; on a busy machine one thread is steadier
        connect_args["config"] = {"threads": args.threads}
    engine = sa.create_engine("duckdb:///" + args.db, connect_args=connect_args)
    with engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1").fetchall()
    rss_connected = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(2):  # the peak is reached on the first run; the second shows nothing accumulates
        results = run_object(plan, obj, engine, now=now)
    rss_engine = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # before naive/floor can raise it
    # Python's own allocations only (DuckDB's C++ hash tables are invisible to tracemalloc): shows
    # whether rows ever reach Python, apart from what DuckDB itself needs
    tracemalloc.start()
    run_object(plan, obj, engine, now=now)
    py_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    table = plan_table(obj)
    naive: dict = {}
    floor: list = []
    medians = interleaved_medians({
        "engine": lambda: run_object(plan, obj, engine, now=now),
        "naive": lambda: naive.update(naive_run(obj, table, engine, now)),
        "floor": lambda: floor.__setitem__(slice(None), floor_run(engine)),
    }, args.repeats)
    breakdown = statement_times(engine, lambda: run_object(plan, obj, engine, now=now))
    per_check: dict[str, float] = {}
    naive_run(obj, table, engine, now, per_check)
    engine.dispose()

    failed = [{"name": r.name, "observed": r.observed, "error": r.error} for r in results if not r.passed]
    by_name = {r.name: r for r in results}
    # the naive run must measure and judge exactly what the engine did
    disagree = [name for name, (passed, value) in naive.items()
                if by_name[name].passed != passed or (by_name[name].kind != "freshness" and (
                    value is None or by_name[name].observed is None
                    or abs(float(value) - float(by_name[name].observed)) > 1e-9))]
    aggregate, compound = floor
    expected = {**floor_as_checks(aggregate), "customer_id__created_at__duplicate_values": compound}
    floor_disagrees = [name for name, count in expected.items()
                       if int(by_name[name].details.get("count", by_name[name].observed)) != count]
    print(json.dumps({
        "rows": args.size, **medians, "rss_connected_kb": rss_connected, "rss_engine_kb": rss_engine,
        "py_peak": py_peak,
        "failed": failed, "naive_disagrees": disagree, "breakdown": breakdown,
        "naive_slowest": sorted(per_check.items(), key=lambda item: -item[1])[:5],
        "floor_disagrees": floor_disagrees,
    }, default=str))


def classify(obj) -> list[str]:
    table = plan_table(obj)
    lines = []
    for check in obj.checks:
        found = measure_for(obj, check, table, "duckdb", dt.datetime.now(dt.timezone.utc)) \
            if check.kind != "schema" else None
        where = "aggregate" if found else ("metadata" if check.kind == "schema" else "own query")
        lines.append(f"  {check.name:<40} {check.kind:<17} {where}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="DuckDB threads (default: DuckDB's own, all cores)")
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--contract", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    rows_out = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        contract = write_contract(folder)
        _, obj = load_plan(contract)
        print(f"{len(obj.checks)} checks on orders (name, kind, how the engine measures it):")
        print("\n".join(classify(obj)))
        for size in args.sizes:
            db = folder / f"orders_{size}.duckdb"
            started = time.perf_counter()
            generate(db, size, dt.datetime.now(dt.timezone.utc))
            print(f"\n{size:,} rows generated in {time.perf_counter() - started:.1f} s "
                  f"({db.stat().st_size / 2**20:.0f} MB file)", flush=True)
            done = subprocess.run(
                [sys.executable, __file__, "--child", "--size", str(size), "--repeats", str(args.repeats),
                 "--db", str(db), "--contract", str(contract), *(["--threads", str(args.threads)] if args.threads
                                                                  else [])],
                check=True, stdout=subprocess.PIPE, text=True)  # stderr passes through
            report = json.loads(done.stdout.strip().splitlines()[-1])
            # timings are only as good as the machine is quiet: show what else was running
            print("load average after the run (1, 5, 15 min): " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
            db.unlink()
            rows_out.append(report)
            print("engine time per statement (one instrumented run):")
            for label, seconds in report["breakdown"]:
                print(f"  {seconds:7.3f} s  {label}")
            print("naive: slowest checks, each on its own (one instrumented run):")
            for label, seconds in report["naive_slowest"]:
                print(f"  {seconds:7.3f} s  {label}")
            if report["failed"]:
                print("checks that FAILED:", report["failed"])
            if report["naive_disagrees"]:
                print("naive run disagrees with the engine on:", report["naive_disagrees"])
            if report["floor_disagrees"]:
                print("floor measures differ from the engine's on:", report["floor_disagrees"])

    print("\n| rows | engine median s | naive median s | floor median s | engine/floor | naive/engine "
          "| peak RSS MB | RSS over connect MB | Python heap peak MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows_out:
        print(f"| {r['rows']:,} | {r['engine']:.3f} | {r['naive']:.3f} | {r['floor']:.3f} "
              f"| {r['engine'] / r['floor']:.2f} | {r['naive'] / r['engine']:.2f} "
              f"| {r['rss_engine_kb'] / 1024:.0f} | {(r['rss_engine_kb'] - r['rss_connected_kb']) / 1024:.0f} "
              f"| {r['py_peak'] / 2**20:.1f} |")


if __name__ == "__main__":
    main()
