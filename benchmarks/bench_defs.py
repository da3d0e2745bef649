"""`build_contract_defs` + `Definitions.validate_loadable` on generated contracts, against Dagster's own
cost of building and validating the same definitions written by hand.

* ours:     `build_contract_defs(folder)` then `validate_loadable`, end to end (YAML load, validation,
            compile, translation, Dagster objects, Dagster validation); `load_contracts` is timed
            inside that run too (wrapped, not re-run) to show the pure-core share.
* baseline: the same Dagster objects (same counts, comparable metadata) built directly from plain
            data precomputed outside the timed region, then `Definitions(...)` and `validate_loadable`.

Each repeat runs in a fresh process (Dagster and our schema loader cache on first use); ours and
baseline alternate. Imports are not timed. Goal: our added part <= 25% of the baseline.

    python benchmarks/bench_defs.py [--contracts 1000] [--properties 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 0.25


def _bench_core():
    # benchmarks/ is not a package: load the sibling generator by path
    spec = importlib.util.spec_from_file_location("bench_core", Path(__file__).with_name("bench_core.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- plain data for the baseline (computed once, outside any timed region) -----------------------

def plain_data(folder: Path) -> list[dict]:
    """What build_contract_defs emits, as JSON-able plain data (names, metadata values, counts)."""
    from dq_contracts.compiler import dagster_name
    from dq_contracts.core import load_contracts
    from dq_contracts.translator import tag_value

    result = load_contracts([folder])
    assert not result.errors, result.errors[:3]
    out = []
    for plan in sorted(result.plans, key=lambda p: p.id):
        slug = dagster_name(plan.id)
        objects = []
        for obj in plan.objects:
            fresh = next((f for f in plan.freshness if f.object == obj.name), None)
            objects.append({
                "key": list(obj.asset_key),
                "check_def": f"{slug}__{dagster_name(obj.name)}",
                "description": f"Table {obj.physical_name}\n\nGoverned by data contract `{plan.id}` "
                               f"version {plan.version} ({plan.file}).",
                "columns": [[c.physical_name or c.name, c.physical_type or c.logical_type or "unknown",
                             c.description, not (c.required or c.primary_key), c.unique or c.primary_key,
                             ["primary key"] if c.primary_key else []] for c in obj.columns],
                "metadata": {"dagster/table_name": obj.physical_name, "dq_contracts/contract_id": plan.id,
                             "dq_contracts/contract_version": plan.version, "dq_contracts/contract_file": plan.file,
                             "dq_contracts/checks": len(obj.checks)},
                "not_enforced": [{"clause": n.clause, "code": n.code, "reason": n.reason}
                                 for n in plan.not_enforced if n.object in (None, obj.name)],
                "tags": {"dq_contracts/contract": tag_value(plan.id), "dq_contracts/version": tag_value(plan.version),
                         **({"dq_contracts/status": tag_value(plan.status)} if plan.status else {})},
                "owners": list(plan.owners),
                "kinds": sorted({*(str(s["type"]).lower() for s in plan.servers[:1] if s.get("type")), "odcs"}),
                "fail_window": fresh.fail_window_seconds if fresh else None,
                "checks": [{"name": c.name, "description": c.description, "blocking": c.blocking,
                            "metadata": {k: v for k, v in {
                                "dq_contracts/contract_id": plan.id, "dq_contracts/contract_version": plan.version,
                                "dq_contracts/object": obj.name, "dq_contracts/property": c.property,
                                "dq_contracts/clause": c.clause, "dq_contracts/kind": c.kind,
                                "dq_contracts/dimension": c.dimension, "dq_contracts/severity": c.severity,
                                "dq_contracts/threshold": c.threshold_text()}.items() if v is not None}}
                           for c in obj.checks],
            })
        check_of = {(o.name, c.name): (list(o.asset_key), c.name) for o in plan.objects for c in o.checks}
        out.append({
            "job": f"{slug}__checks", "job_description": f"All clauses of contract {plan.id} {plan.version}",
            "job_tags": {"dq_contracts/contract": tag_value(plan.id)},
            "objects": objects,
            "schedules": [{"name": s.name, "cron": s.cron, "checks": [check_of[p] for p in s.checks if p in check_of],
                           "description": f"Contract {plan.id} {plan.version}: {s.clause} '{s.cron}'"}
                          for s in plan.schedules],
        })
    return out


# --- workers (one fresh process per measurement) ------------------------------------------------

def counts(defs) -> dict:
    checks = list(defs.asset_checks or [])
    return {"asset_specs": len(defs.assets or []), "check_defs": len(checks),
            "check_specs": sum(len(list(c.check_specs)) for c in checks), "jobs": len(defs.jobs or []),
            "schedules": len(defs.schedules or []), "sensors": len(defs.sensors or []),
            "resources": len(defs.resources or {})}


def worker_ours(folder: Path) -> dict:
    import dagster as dg

    import dq_contracts.definitions as d

    core_seconds = []
    load = d.load_contracts

    def timed_load(paths, **kwargs):  # the pure core, timed inside the real run
        started = time.perf_counter()
        try:
            return load(paths, **kwargs)
        finally:
            core_seconds.append(time.perf_counter() - started)

    d.load_contracts = timed_load
    cpu = time.process_time()
    started = time.perf_counter()
    defs = d.build_contract_defs(folder, contract_jobs=False)
    built = time.perf_counter()
    dg.Definitions.validate_loadable(defs)
    done = time.perf_counter()
    return {"core": core_seconds[0], "build": built - started, "validate": done - built, "total": done - started,
            "cpu": time.process_time() - cpu, "counts": counts(defs)}


def worker_baseline(data_file: Path) -> dict:
    import datetime as dt

    import dagster as dg

    class Warehouse(dg.ConfigurableResource):
        server: str | None = None
        timeout_seconds: float = 300.0

    data = json.loads(data_file.read_text())
    not_enforced_schema_cols = ("clause", "code", "reason")

    def check_def(obj, specs):
        @dg.multi_asset_check(name=obj["check_def"], specs=specs, can_subset=True, required_resource_keys={"wh"},
                              description=f"Clauses of {obj['check_def']}")
        def _checks(context):
            yield from ()
        return _checks

    cpu = time.process_time()
    started = time.perf_counter()
    specs, checks, jobs, schedules, watched = [], [], [], [], []
    for contract in data:
        check_keys, by_name = [], {}
        for obj in contract["objects"]:
            key = dg.AssetKey(obj["key"])
            metadata = {
                "dagster/column_schema": dg.TableSchema(columns=[
                    dg.TableColumn(name=n, type=t, description=desc,
                                   constraints=dg.TableColumnConstraints(nullable=nl, unique=u, other=o))
                    for n, t, desc, nl, u, o in obj["columns"]]),
                **obj["metadata"],
                "dq_contracts/not_enforced": dg.MetadataValue.table(
                    records=[dg.TableRecord(r) for r in obj["not_enforced"]],
                    schema=dg.TableSchema(columns=[dg.TableColumn(c, "string") for c in not_enforced_schema_cols])),
            }
            fw = obj["fail_window"]
            specs.append(dg.AssetSpec(
                key=key, description=obj["description"], metadata=metadata, owners=obj["owners"], tags=obj["tags"],
                kinds=set(obj["kinds"]),
                freshness_policy=dg.FreshnessPolicy.time_window(fail_window=dt.timedelta(seconds=fw)) if fw else None))
            if fw:
                watched.append(key)
            check_specs = [dg.AssetCheckSpec(name=c["name"], asset=key, description=c["description"],
                                             blocking=c["blocking"], metadata=c["metadata"]) for c in obj["checks"]]
            checks.append(check_def(obj, check_specs))
            check_keys += [s.key for s in check_specs]
            by_name.update({(tuple(obj["key"]), s.name): s.key for s in check_specs})
        jobs.append(dg.define_asset_job(contract["job"], selection=dg.AssetSelection.checks(*check_keys),
                                        description=contract["job_description"], tags=contract["job_tags"]))
        for s in contract["schedules"]:
            job = dg.define_asset_job(f"{s['name']}__job", selection=dg.AssetSelection.checks(
                *[by_name[(tuple(k), n)] for k, n in s["checks"]]))
            jobs.append(job)
            schedules.append(dg.ScheduleDefinition(name=s["name"], cron_schedule=s["cron"], job=job,
                                                   execution_timezone="UTC", description=s["description"]))

    @dg.sensor(name="freshness", minimum_interval_seconds=300, required_resource_keys={"wh"},
               default_status=dg.DefaultSensorStatus.RUNNING)
    def freshness(context):
        return dg.SensorResult(asset_events=[], cursor=str(len(watched)))

    defs = dg.Definitions(assets=specs, asset_checks=checks, jobs=jobs, schedules=schedules,
                          sensors=[freshness] if watched else [], resources={"wh": Warehouse()})
    built = time.perf_counter()
    dg.Definitions.validate_loadable(defs)
    done = time.perf_counter()
    return {"build": built - started, "validate": done - built, "total": done - started,
            "cpu": time.process_time() - cpu, "counts": counts(defs)}


def run_worker(kind: str, target: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", kind, str(target)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- driver -------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contracts", type=int, default=1000)
    parser.add_argument("--properties", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, path = args.worker
        result = worker_ours(Path(path)) if kind == "ours" else worker_baseline(Path(path))
        print(json.dumps(result))
        return

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "contracts"
        folder.mkdir()
        _bench_core().write_folder(folder, args.contracts, args.properties)
        data_file = Path(tmp) / "baseline.json"
        data_file.write_text(json.dumps(plain_data(folder)))
        ours, base = [], []
        for _ in range(args.repeats):  # alternate, so drift hits both alike
            ours.append(run_worker("ours", folder))
            base.append(run_worker("baseline", data_file))

    assert ours[0]["counts"] == base[0]["counts"], (ours[0]["counts"], base[0]["counts"])
    med = lambda runs, k: statistics.median(r[k] for r in runs)
    o, b = med(ours, "total"), med(base, "total")
    added = (o - b) / b
    c = ours[0]["counts"]
    n = args.contracts
    print(f"{n} contracts x {args.properties} properties -> {c['asset_specs']} asset specs, {c['check_defs']} "
          f"multi_asset_checks ({c['check_specs']} check specs), {c['jobs']} jobs, {c['schedules']} schedules, "
          f"{c['sensors']} sensor(s), {c['resources']} resource(s)")
    print(f"medians of {args.repeats} runs, each in a fresh process (imports not timed)\n")
    print("| | build (s) | validate_loadable (s) | total (s) | ms / contract |")
    print("|---|---:|---:|---:|---:|")
    print(f"| baseline: hand-written Dagster objects | {med(base, 'build'):.2f} | {med(base, 'validate'):.2f} "
          f"| {b:.2f} | {b / n * 1000:.2f} |")
    print(f"| ours: build_contract_defs + validate | {med(ours, 'build'):.2f} | {med(ours, 'validate'):.2f} "
          f"| {o:.2f} | {o / n * 1000:.2f} |")
    print(f"| of which pure core (load_contracts) | {med(ours, 'core'):.2f} | | | "
          f"{med(ours, 'core') / n * 1000:.2f} |")
    print(f"\nours / baseline = {o / b:.2f}; our added part = (ours - baseline) / baseline = {added:+.0%} "
          f"(goal <= {GOAL:.0%}: {'met' if added <= GOAL else 'NOT met'})")
    ob, bb = med(ours, "build"), med(base, "build")
    print(f"build stage alone (before validate_loadable): ours / baseline = {ob / bb:.2f}, "
          f"added {(ob - bb) / bb:+.0%}")
    oc, bc = med(ours, "cpu"), med(base, "cpu")
    print(f"CPU time (less sensitive to a busy machine): ours {oc:.2f} s, baseline {bc:.2f} s, "
          f"added {(oc - bc) / bc:+.0%}")
    print("per-run wall totals (s): ours " + ", ".join(f"{r['total']:.2f}" for r in ours)
          + "; baseline " + ", ".join(f"{r['total']:.2f}" for r in base))


if __name__ == "__main__":
    main()
