"""Load, validate and plan 1,000 generated contracts of 20 properties each.

Prints the time per contract, and two ratios measured in the same run: against merely parsing the
same files with PyYAML's default pure-Python SafeLoader (what a naive loader pays before doing
anything), and against parsing them with libyaml alone (the floor for reading YAML).

    python benchmarks/bench_core.py [--contracts 1000] [--properties 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.loader import _NoTimestampLoader

KINDS = [
    {"logicalType": "string", "required": True, "logicalTypeOptions": {"maxLength": 40, "pattern": "^[a-z]+$"}},
    {"logicalType": "integer", "logicalTypeOptions": {"minimum": 0, "maximum": 1000}},
    {"logicalType": "number", "quality": [{"metric": "nullValues", "mustBeLessThan": 5, "unit": "percent"}]},
    {"logicalType": "string", "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["a", "b"]},
                                           "mustBe": 0}]},
    {"logicalType": "timestamp", "required": True},
]


def contract(i: int, properties: int) -> dict:
    props = [{"name": f"col_{j}", **KINDS[j % len(KINDS)]} for j in range(properties)]
    props[0]["primaryKey"] = True
    return {
        "apiVersion": "v3.1.0", "kind": "DataContract", "id": f"bench-{i}", "version": "1.0.0",
        "status": "active", "servers": [{"server": "wh", "type": "duckdb", "database": "wh.duckdb"}],
        "schema": [{"name": f"table_{i}", "physicalName": f"table_{i}", "properties": props,
                    "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}]}],
        "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": f"table_{i}.col_4"}],
    }


def write_folder(folder: Path, count: int, properties: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = folder / f"c{i:04d}.odcs.yaml"
        path.write_text(yaml.safe_dump(contract(i, properties), sort_keys=False))
        paths.append(path)
    return paths


def timed(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contracts", type=int, default=1000)
    parser.add_argument("--properties", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_folder(folder, args.contracts, args.properties)
        result = load_contracts([folder])
        assert not result.errors, result.errors[:3]
        checks = sum(len(o.checks) for p in result.plans for o in p.objects)
        ours = timed(lambda: load_contracts([folder]))
        pure = timed(lambda: [yaml.load(p.read_text(), Loader=yaml.SafeLoader) for p in paths])
        floor = timed(lambda: [yaml.load(p.read_text(), Loader=_NoTimestampLoader) for p in paths])
    n = args.contracts
    print(f"{n} contracts x {args.properties} properties -> {checks} checks")
    print(f"load + validate + plan: {ours:.2f} s total, {ours / n * 1000:.2f} ms per contract")
    print(f"parse only, PyYAML pure-Python SafeLoader: {pure:.2f} s  (ours / that = {ours / pure:.2f})")
    print(f"parse only, libyaml CSafeLoader (floor):   {floor:.2f} s  (ours / floor = {ours / floor:.2f})")


if __name__ == "__main__":
    main()
