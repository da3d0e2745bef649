"""What checking one partition costs: `dq-contracts check` as a whole process, three ways, on DuckDB.

* partition: `check --partition <a day in the middle>` on a table of 100 daily partitions of
  200,000 rows each (20M rows);
* standalone: `check` on a table of the same 200,000 rows alone (the same contract, unpartitioned);
* whole: `check` on the 20M-row table, unpartitioned;
* floor: `validate` of the same contract, the process's start-up and loading with no query, so
  the cost of the queries alone is each time less the floor.

Each is a fresh `python -m dq_contracts.cli check` process (start-up, loading, connecting, the
checks), timed from outside; the three alternate `--repeats` times and the medians are printed
with the ratios. The goal of issue 15: partition ≤ 1.5 × standalone and ≤ 5 % of whole.

    python benchmarks/bench_partitions.py [--days 100] [--rows 200000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import yaml

START = dt.date(2026, 1, 1)
STATUSES = ["placed", "paid", "shipped", "delivered", "cancelled"]


def contract(table: str, partitioned: bool) -> dict:
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
            "status": "active", "servers": [{"server": "bench", "type": "duckdb", "database": "bench.duckdb"}],
            "schema": [obj]}


def build(folder: Path, days: int, rows: int) -> str:
    """The partitioned table, and one day of it as a table of its own; returns that day's key."""
    day = START + dt.timedelta(days=days // 2)
    with duckdb.connect(str(folder / "bench.duckdb")) as db:
        db.execute(f"""
            CREATE TABLE events AS
            SELECT i AS event_id, DATE '{START.isoformat()}' + CAST(i // {rows} AS INTEGER) AS day,
                   1 + i % 9973 AS customer_id,
                   ['placed', 'paid', 'shipped', 'delivered', 'cancelled'][1 + i % 5] AS status,
                   CAST((i % 100000) / 7.0 AS DECIMAL(12, 2)) AS amount, 'EUR' AS currency
            FROM range({days * rows}) AS r(i) ORDER BY day""")  # noqa: S608 - numbers of this script only
        db.execute("CREATE TABLE standalone AS SELECT * FROM events WHERE day = ?", [day])
    return day.isoformat()


def timed(folder: Path, path: str, *extra: str, command: str = "check") -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", command, path, *extra], cwd=folder,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"check {path} {' '.join(extra)} failed:\n{proc.stdout}\n{proc.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=100)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        key = build(folder, args.days, args.rows)
        print(f"built {args.days} x {args.rows:,} rows in {time.perf_counter() - started:.1f} s; partition {key}")
        (folder / "events.odcs.yaml").write_text(yaml.safe_dump(contract("events", True), sort_keys=False))
        (folder / "standalone.odcs.yaml").write_text(yaml.safe_dump(contract("standalone", False), sort_keys=False))
        runs: dict[str, list[float]] = {"partition": [], "standalone": [], "whole": [], "floor": []}
        for _ in range(args.repeats):  # alternating, since a shared machine drifts
            runs["partition"].append(timed(folder, "events.odcs.yaml", "--partition", key))
            runs["standalone"].append(timed(folder, "standalone.odcs.yaml"))
            runs["whole"].append(timed(folder, "events.odcs.yaml"))
            runs["floor"].append(timed(folder, "events.odcs.yaml", command="validate"))
        medians = {k: statistics.median(v) for k, v in runs.items()}
        for name, value in medians.items():
            print(f"{name:<11} {value:6.2f} s  (runs: {', '.join(f'{v:.2f}' for v in runs[name])})")
        print(f"partition / standalone = {medians['partition'] / medians['standalone']:.2f}  (goal <= 1.5)")
        print(f"partition / whole      = {medians['partition'] / medians['whole']:.3f}  (goal <= 0.05)")
        queries = {k: medians[k] - medians["floor"] for k in ("partition", "standalone", "whole")}
        print(f"less the floor: partition / standalone = {queries['partition'] / queries['standalone']:.2f}, "
              f"partition / whole = {queries['partition'] / queries['whole']:.3f}")


if __name__ == "__main__":
    main()
