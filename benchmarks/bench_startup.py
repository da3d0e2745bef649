"""How long `dq-contracts check` takes before its first query, against the hand-written floor's, on DuckDB.

Both run as processes of their own on the failing `orders` table of bench_engine.py (1M rows by default),
in paired rounds after one untimed round (which also writes Python's compiled-module cache, as a user's
shell has it), the order alternating:

* ours:  `dq-contracts check CONTRACT`, through `dq_contracts.cli.script` as the command runs it;
* floor: `bench_floor.py`'s strongest floor: a process that imports only duckdb, connects and sends its
         statements.

Each process is started by a small wrapper that records, on the machine's monotonic clock (which every
process shares) and in the process's CPU time, when its first statement starts (for ours, the dialect's
`select current_schema()`) and when its first statement that reads the table starts, then runs the
command unchanged. The wrapper imports the DuckDB driver (and, for ours, its SQLAlchemy dialect) first,
to hook its cursor: the same modules, in another order. Printed: medians and ranges of both, the ratio
ours / floor within each round, and the whole process's wall time.

    .venv/bin/python benchmarks/bench_startup.py                 # 1M rows, 7 rounds
    .venv/bin/python benchmarks/bench_startup.py --rows 200000 --rounds 11
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_engine  # noqa: E402 - the table and the contract, as the engine benchmark makes them

# Hooks the driver's cursor, runs the command, and writes what it saw to the file named in argv[1].
# `reads_table` marks the first statement that names the checked table.
HOOK = """
import json, sys, time
record, kind = sys.argv.pop(1), sys.argv.pop(1)
seen = {}

def saw(sql):
    now, cpu = time.monotonic(), time.process_time()
    seen.setdefault("first", (now, cpu))
    if "orders" in sql:
        if "table" not in seen:
            seen["table"] = (now, cpu)
            with open(record, "w") as out:
                json.dump(seen, out)

if kind == "ours":
    import duckdb_sqlalchemy
    execute = duckdb_sqlalchemy.CursorWrapper.execute
    def hooked(self, statement, *args, **kwargs):
        saw(statement)
        return execute(self, statement, *args, **kwargs)
    duckdb_sqlalchemy.CursorWrapper.execute = hooked
    from dq_contracts.cli import script
    sys.argv = ["dq-contracts", *sys.argv[1:]]
    script()
else:
    import runpy
    import duckdb
    connect = duckdb.connect
    class Cursor:
        def __init__(self, cursor):
            self.cursor = cursor
        def execute(self, sql, *args):
            saw(sql)
            return self.cursor.execute(sql, *args)
        def __getattr__(self, name):
            return getattr(self.cursor, name)
    class Connection:
        def __init__(self, db):
            self.db = db
        def cursor(self):
            return Cursor(self.db.cursor())
        def __getattr__(self, name):
            return getattr(self.db, name)
    duckdb.connect = lambda *args, **kwargs: Connection(connect(*args, **kwargs))
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def timed(kind: str, command: list[str], folder: Path, environ: dict[str, str]) -> dict[str, float]:
    record = folder / f"{kind}.json"
    record.unlink(missing_ok=True)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", HOOK, str(record), kind, *command], cwd=folder, env=environ,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ended = time.monotonic()
    if proc.returncode not in (0, 1):  # 1: ours' checks failed, as they should
        raise RuntimeError(f"{kind} exited with {proc.returncode}: {proc.stderr[-2000:]}")
    seen = json.loads(record.read_text())
    return {"first": seen["first"][0] - started, "table": seen["table"][0] - started,
            "table_cpu": seen["table"][1], "whole": ended - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print("load average at the start (1, 5, 15 min): " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        folder = Path(tmp)
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        table = {"name": "failing", "rows": args.rows, "file": "orders.duckdb", "now": now.isoformat(),
                 "schema": None, "delta": None}
        bench_engine.prepare(folder / table["file"], args.rows, "failing", now, csv=False, delta=None)
        contract = folder / "orders.odcs.yaml"
        contract.write_text(yaml.safe_dump(bench_engine.contract_for("duckdb", table), sort_keys=False))
        spec = {"engine": "duckdb", "path": str(folder / table["file"]), "schema": None, "floor": "floor"}
        commands = {"ours": ["check", str(contract)],
                    "floor": [str(Path(__file__).parent / "bench_floor.py"), json.dumps(spec)]}
        environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in commands}
        for i in range(args.rounds + 1):
            for kind in (list(commands) if i % 2 else list(commands)[::-1]):
                seen = timed(kind, commands[kind], folder, environ)
                if i:
                    runs[kind].append(seen)

    def told(values: list[float]) -> str:
        values = sorted(values)
        return f"{statistics.median(values):.3f} s ({values[0]:.3f}-{values[-1]:.3f})"

    print(f"{args.rows:,} rows, failing, {args.rounds} rounds")
    print("| | first statement | first statement on the table (wall) | (CPU) | whole process |")
    print("|---|---:|---:|---:|---:|")
    for kind, seen in runs.items():
        print(f"| {kind} | " + " | ".join(told([s[m] for s in seen]) for m in ("first", "table", "table_cpu", "whole"))
              + " |")
    ratios = sorted(o["table"] / f["table"] for o, f in zip(runs["ours"], runs["floor"]))
    print(f"ours / floor before the first statement on the table: {statistics.median(ratios):.2f} "
          f"({ratios[0]:.2f}-{ratios[-1]:.2f}); goal: ours at most 0.3 s")


if __name__ == "__main__":
    main()
