"""What checking one partition costs, three ways, on DuckDB and on PostgreSQL.

* partition: `check --partition <a day in the middle>` on a table of 100 daily partitions of
  200,000 rows each (20M rows); on PostgreSQL the table is natively partitioned by range of `day`
  (one partition per day), so the day's filter prunes to one partition;
* standalone: `check` on a table of the same 200,000 rows alone (the same contract, unpartitioned);
* whole: `check` on the 20M-row table, unpartitioned;
* floor: `validate` of the same contract, the process's start-up and loading with no query.

Two figures for each:

* process: a fresh `python -m dq_contracts.cli check` process (start-up, imports, loading,
  connecting, the checks), timed from outside;
* checks: in a fresh process that has imported and loaded everything first, the time of
  `run_contract` alone (connecting, the catalog, every statement): what a partition costs once a
  Dagster code server or run worker is up.

The three alternate `--repeats` times and the medians are printed with the ratios. The goal of
issue 15: partition <= 1.5 x standalone and <= 5 % of whole.

    python benchmarks/bench_partitions.py [--engines duckdb,postgres] [--days 100] [--rows 200000] [--repeats 3]

PostgreSQL runs in a throwaway cluster (initdb, pg_ctl) started here, as the tests do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' PostgreSQL cluster helper

START = dt.date(2026, 1, 1)
STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled"]


def contract(table: str, partitioned: bool, server: dict | None = None) -> dict:
    obj = {
        "name": table, "physicalName": table,
        "properties": [
            {"name": "event_id", "logicalType": "integer", "physicalType": "BIGINT", "primaryKey": True},
            {"name": "day", "logicalType": "date", "physicalType": "DATE", "required": True,
             "partitioned": partitioned},
            {"name": "customer_id", "logicalType": "integer", "physicalType": "BIGINT", "required": True,
             "logicalTypeOptions": {"minimum": 1}},
            {"name": "status", "logicalType": "string", "physicalType": "VARCHAR",
             "enum": [{"value": s} for s in STATUSES]},
            {"name": "amount", "logicalType": "number", "physicalType": "DECIMAL(12,2)",
             "logicalTypeOptions": {"minimum": 0, "maximum": 100000},
             "quality": [{"metric": "nullValues", "mustBeLessThan": 1, "unit": "percent"}]},
            {"name": "currency", "logicalType": "string", "physicalType": "VARCHAR",
             "logicalTypeOptions": {"minLength": 3, "maxLength": 3, "pattern": "^[A-Z]{3}$"}},
        ],
        "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}],
    }
    if partitioned:
        obj["customProperties"] = [{"property": "dagsterPartitions",
                                    "value": {"type": "daily", "start": START.isoformat()}}]
    return {"apiVersion": "v3.2.0", "kind": "DataContract", "id": f"urn:bench:{table}", "version": "1.0.0",
            "status": "active",
            "servers": [server or {"server": "bench", "type": "duckdb", "database": "bench.duckdb"}],
            "schema": [obj]}


def middle_day(days: int) -> dt.date:
    """The day checked alone: one in the middle of the table."""
    return START + dt.timedelta(days=days // 2)


def build(folder: Path, days: int, rows: int) -> None:
    """The partitioned table, and one day of it as a table of its own."""
    day = middle_day(days)
    with duckdb.connect(str(folder / "bench.duckdb")) as db:
        db.execute(f"""
            CREATE TABLE events AS
            SELECT i AS event_id, DATE '{START.isoformat()}' + CAST(i // {rows} AS INTEGER) AS day,
                   1 + i % 9973 AS customer_id,
                   ['placed', 'paid', 'shipped', 'delivered', 'cancelled'][1 + i % 5] AS status,
                   CAST((i % 100000) / 7.0 AS DECIMAL(12, 2)) AS amount, 'EUR' AS currency
            FROM range({days * rows}) AS r(i) ORDER BY day""")  # noqa: S608 - numbers of this script only
        db.execute("CREATE TABLE standalone AS SELECT * FROM events WHERE day = ?", [day])


def build_postgres(days: int, rows: int) -> tuple[object, dict, dict[str, str]]:
    """The same rows in a throwaway PostgreSQL: `events` partitioned by range of `day`, one partition
    a day, and `standalone`, one day alone. Returns (cluster, server entry, environment)."""
    import psycopg2

    from dq_contracts_tests.pgcluster import PASSWORD, SUPERUSER, PgCluster

    cluster = PgCluster.start()
    dsn = f"host=127.0.0.1 port={cluster.port} user={SUPERUSER} password={PASSWORD}"
    admin = psycopg2.connect(dsn + " dbname=postgres")
    admin.autocommit = True
    admin.cursor().execute("CREATE DATABASE bench")
    admin.close()
    day = middle_day(days)
    db = psycopg2.connect(dsn + " dbname=bench")
    db.autocommit = True
    with db.cursor() as c:
        columns = ("event_id BIGINT, day DATE, customer_id BIGINT, status VARCHAR, amount DECIMAL(12,2), "
                   "currency VARCHAR")
        c.execute(f"CREATE TABLE events ({columns}) PARTITION BY RANGE (day)")
        for n in range(days):
            first = START + dt.timedelta(days=n)
            c.execute(f"CREATE TABLE events_{n:03d} PARTITION OF events FOR VALUES FROM (%s) TO (%s)",
                      (first, first + dt.timedelta(days=1)))
        c.execute("""
            INSERT INTO events
            SELECT i, DATE %s + CAST(i / %s AS INTEGER), 1 + i %% 9973,
                   (ARRAY['placed', 'paid', 'shipped', 'delivered', 'cancelled'])[1 + i %% 5],
                   CAST((i %% 100000) / 7.0 AS DECIMAL(12, 2)), 'EUR'
            FROM generate_series(0, %s - 1) AS r(i)""", (START, rows, days * rows))
        c.execute("CREATE TABLE standalone AS SELECT * FROM events WHERE day = %s", (day,))
        c.execute("VACUUM ANALYZE events")
        c.execute("VACUUM ANALYZE standalone")
    db.close()
    server = {"server": "bench", "type": "postgres", "host": "127.0.0.1", "port": cluster.port,
              "database": "bench", "schema": "public"}
    return cluster, server, {"DQ_CONTRACTS_BENCH_URL": cluster.url("bench")}


def timed(folder: Path, path: str, *extra: str, command: str = "check", env: dict | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", command, path, *extra], cwd=folder,
                          capture_output=True, text=True, check=False, env={**os.environ, **(env or {})})
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1) or "Traceback" in proc.stderr:  # 1: an ERROR clause failed
        raise SystemExit(f"check {path} {' '.join(extra)} failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def checks_alone(folder: Path, path: str, key: str | None, env: dict | None = None) -> float:
    """`run_contract`'s own time in a fresh process that has imported and loaded everything first."""
    proc = subprocess.run([sys.executable, __file__, "--worker", path, *([key] if key else [])], cwd=folder,
                          capture_output=True, text=True, check=False, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise SystemExit(f"worker {path} {key} failed:\n{proc.stdout}\n{proc.stderr}")
    return float(proc.stdout.split()[-1])


def worker(path: str, key: str | None) -> None:
    from dq_contracts import load_contracts
    from dq_contracts.engine.contracts import Warehouses, choose_server, run_contract

    plan = load_contracts([path]).usable_plans[0]
    with Warehouses() as warmup:  # imports the server's SQLAlchemy dialect, without connecting
        warmup.engine(choose_server(plan, None), plan.folder)
    with Warehouses() as warehouses:
        started = time.perf_counter()
        results = run_contract(plan, warehouses, partition=key)
        elapsed = time.perf_counter() - started
    errors = [r for r in results if r.error]
    if errors:
        raise SystemExit(f"{len(errors)} checks errored: {errors[0].error}")
    print(f"{elapsed:.4f}")


def measure(folder: Path, events: str, standalone: str, key: str, repeats: int, env: dict | None) -> None:
    cases = {"partition": (events, key), "standalone": (standalone, None), "whole": (events, None)}
    process: dict[str, list[float]] = {name: [] for name in (*cases, "floor")}
    alone: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):  # alternating, since a shared machine drifts
        for name, (path, partition) in cases.items():
            process[name].append(timed(folder, path, *(["--partition", partition] if partition else []), env=env))
            alone[name].append(checks_alone(folder, path, partition, env))
        process["floor"].append(timed(folder, events, command="validate", env=env))
    for label, runs in (("process", process), ("checks", alone)):
        medians = {k: statistics.median(v) for k, v in runs.items()}
        for name, value in medians.items():
            print(f"  {label:<8} {name:<11} {value:7.3f} s  (runs: {', '.join(f'{v:.3f}' for v in runs[name])})")
        print(f"  {label:<8} partition / standalone = {medians['partition'] / medians['standalone']:.2f}  "
              f"(goal <= 1.5);  partition / whole = {medians['partition'] / medians['whole']:.3f}  (goal <= 0.05)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engines", default="duckdb,postgres")
    parser.add_argument("--days", type=int, default=100)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)  # CONTRACT [KEY]: one timed run_contract
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker[0], args.worker[1] if len(args.worker) > 1 else None)
    for engine in args.engines.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            started = time.perf_counter()
            cluster, server, env = None, None, None
            key = middle_day(args.days).isoformat()
            if engine == "duckdb":
                build(folder, args.days, args.rows)
            else:
                cluster, server, env = build_postgres(args.days, args.rows)
            print(f"{engine}: built {args.days} x {args.rows:,} rows in {time.perf_counter() - started:.1f} s; "
                  f"partition {key}")
            for table, partitioned in (("events", True), ("standalone", False)):
                (folder / f"{table}.odcs.yaml").write_text(
                    yaml.safe_dump(contract(table, partitioned, server), sort_keys=False))
            try:
                measure(folder, "events.odcs.yaml", "standalone.odcs.yaml", key, args.repeats, env)
            finally:
                if cluster is not None:
                    cluster.destroy()


if __name__ == "__main__":
    main()
