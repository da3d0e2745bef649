"""Loading stays linear in any repetition one document can hold.

For each shape (N rules all named `x`, N identical rules, N properties of one name, N objects of one
name, N crons of one rule name), loads one contract of N and one of 4N repetitions and prints the
ratio of their load times: about 4 is linear, about 16 quadratic.

    python benchmarks/bench_names.py [--n 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from dq_contracts.odcs.load import load_contracts

HEAD = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "bench", "version": "1.0.0", "status": "active",
        "servers": [{"server": "local", "type": "duckdb", "database": "w.duckdb"}]}


def table(quality=(), properties=None):
    return {"name": "t", "properties": properties or [{"name": "a", "logicalType": "string"}],
            "quality": list(quality)}


SHAPES = {
    "rules all named x": lambda n: [table([{"name": "x", "metric": "rowCount", "mustBeGreaterThan": i}
                                           for i in range(n)])],
    "identical rules": lambda n: [table([{"metric": "rowCount", "mustBeGreaterThan": 0}] * n)],
    "properties of one name": lambda n: [table(properties=[{"name": "a", "logicalType": "string",
                                                            "required": True}] * n)],
    "objects of one name": lambda n: [table()] * n,
    "crons of one rule name": lambda n: [table([{"name": "x", "metric": "rowCount", "mustBeGreaterThan": 0,
                                                 "scheduler": "cron", "schedule": "0 6 * * *"}] * n)],
}


def load_seconds(folder: Path, schema: list) -> float:
    path = folder / "c.odcs.yaml"
    path.write_text(yaml.safe_dump({**HEAD, "schema": schema}))
    started = time.perf_counter()
    load_contracts([path])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    n = parser.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        for shape, make in SHAPES.items():
            small, large = load_seconds(Path(tmp), make(n)), load_seconds(Path(tmp), make(4 * n))
            print(f"{shape:<24} {n:>6}: {small:7.3f} s  {4 * n:>6}: {large:7.3f} s  ratio {large / small:5.1f}")


if __name__ == "__main__":
    main()
