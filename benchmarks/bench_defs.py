"""`build_contract_defs` + `Definitions.validate_loadable` on generated contracts, against Dagster's own
cost for the same assets and checks, written by hand, without jobs.

* ours:     `build_contract_defs(folder)` with its defaults (no jobs, no schedules), then
            `validate_loadable`, end to end (YAML load, validation, compile, translation, Dagster objects,
            Dagster validation); `load_contracts` is timed inside that run too (wrapped, not re-run).
* baseline: the very same Dagster objects built directly from plain JSON data precomputed outside the
            timed region: the same AssetSpecs (metadata incl. code references, table name, uri;
            code_version, owners, tags, kinds, group, freshness policy), the same AssetCheckSpecs
            (metadata, additional_deps, blocking, automation condition), the same `@multi_asset_check`
            ops grouped the same way, the same two sensors and one resource; then `Definitions(...)` and
            `validate_loadable`. Before timing, the baseline's objects are built in the driver and
            compared with ours, field by field (also on the demo folder `contracts/`, which has
            relationships, crons, domains and links), so the two cannot drift apart.

Each measurement runs in a fresh process (Dagster and our schema loader cache on first use); ours and
baseline alternate. Imports are not timed. Peak RSS is the worker's own (VmHWM, imports included).
Goal: our added part <= 25% of the baseline.

    python benchmarks/bench_defs.py [--contracts 100,300,1000] [--properties 20] [--repeats 3] [--profile]
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import importlib.util
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import dagster as dg  # the workers import it anyway (imports are not timed)

GOAL = 0.25
DEMO = Path(__file__).resolve().parent.parent / "contracts"


def _bench_core():
    # benchmarks/ is not a package: load the sibling generator by path
    spec = importlib.util.spec_from_file_location("bench_core", Path(__file__).with_name("bench_core.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _status_mib(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _peak_rss_mib() -> float:
    """This process's peak RSS. On Linux VmHWM: ru_maxrss survives exec, so a worker would report the
    driver's peak at fork time whenever that is higher than its own."""
    peak = _status_mib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mib() -> float:
    """RSS now (VmRSS), else the peak so far."""
    now = _status_mib("VmRSS")
    return now if now is not None else _peak_rss_mib()


# --- plain data for the baseline (computed once, outside any timed region) -----------------------

def _encode(value):
    """A metadata value as JSON; _decode makes the same Dagster object again."""
    import dagster as dg

    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dg.TableSchema):
        assert not value.constraints.other, value.constraints
        return {"$": "schema", "columns": [
            [c.name, c.type, c.description, c.constraints.nullable, c.constraints.unique, list(c.constraints.other),
             dict(c.tags)] for c in value.columns]}
    if isinstance(value, dg.TableMetadataValue):
        return {"$": "table", "records": [dict(r.data) for r in value.records], "schema": _encode(value.schema)}
    if isinstance(value, dg.CodeReferencesMetadataValue):
        assert all(isinstance(r, dg.LocalFileCodeReference) for r in value.code_references)
        return {"$": "code", "refs": [[r.file_path, r.line_number, r.label] for r in value.code_references]}
    if isinstance(value, dg.UrlMetadataValue):
        return {"$": "url", "url": value.url}
    if isinstance(value, dg.TextMetadataValue):
        return {"$": "text", "text": value.text}
    raise TypeError(f"no plain form for metadata value {value!r}")


def _crons_of(loaded) -> dict[tuple[str, str, str], list[str]]:
    """(contract id, object, check) -> the contract crons that list the check, as specs.py gathers them."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for plan in loaded.usable_plans:
        for schedule in plan.schedules:
            for obj, check in schedule.checks:
                out.setdefault((plan.id, obj, check), []).append(schedule.cron)
    return out


def plain_data(folder: Path):
    """What `build_contract_defs(folder)` emits (its defaults), as JSON-able plain data; and our defs."""
    import dagster as dg

    from dq_contracts.odcs.load import load_contracts
    from dq_contracts.dagster_defs.definitions import build_contract_defs
    from dq_contracts.dagster_defs.translator import checks_condition

    loaded = load_contracts([folder])
    assert not loaded.errors and not loaded.rejected, loaded.errors[:3]
    crons = _crons_of(loaded)
    defs = build_contract_defs(folder)
    assert not defs.jobs and not defs.schedules, "the defaults define no job and no schedule"
    assets = []
    for spec in defs.assets:
        assert isinstance(spec, dg.AssetSpec) and not spec.deps and spec.automation_condition is None, spec
        assert not spec.partitions_def and not spec.skippable, spec
        policy = spec.freshness_policy
        assert policy is None or (type(policy).__name__ == "TimeWindowFreshnessPolicy" and policy.warn_window is None)
        assets.append({
            "key": list(spec.key.path), "description": spec.description,
            "metadata": {k: _encode(v) for k, v in spec.metadata.items()},
            "owners": list(spec.owners), "kinds": sorted(spec.kinds),
            "tags": {k: v for k, v in spec.tags.items() if not k.startswith("dagster/kind/")},
            "group": spec.group_name, "code_version": spec.code_version,
            "fail_window": policy.fail_window.to_timedelta().total_seconds() if policy else None,
        })
    ops = []
    for op in defs.asset_checks:
        checks = []
        for s in op.check_specs:
            assert s.partitions_def is None and all(d.partition_mapping is None and not d.metadata
                                                    for d in s.additional_deps), s
            when = crons.get((s.metadata["dq_contracts/contract_id"], s.metadata["dq_contracts/object"], s.name), [])
            assert s.automation_condition is checks_condition(tuple(when)), s  # the translator's condition
            checks.append({"name": s.name, "asset": list(s.asset_key.path), "description": s.description,
                           "blocking": s.blocking, "deps": [list(d.asset_key.path) for d in s.additional_deps],
                           "crons": when, "metadata": {k: _encode(v) for k, v in s.metadata.items()}})
        ops.append({"name": op.node_def.name, "description": op.node_def.description, "can_subset": op.can_subset,
                    "resources": sorted(op.required_resource_keys - {"io_manager"}), "checks": checks})
    sensors = []
    for sensor in defs.sensors:
        entry = {"name": sensor.name, "description": sensor.description, "status": sensor.default_status.value,
                 "interval": sensor.minimum_interval_seconds, "resources": sorted(sensor.required_resource_keys)}
        if isinstance(sensor, dg.AutomationConditionSensorDefinition):
            entry["automation"] = [[list(k.asset_key.path), k.name]
                                   for k in sensor.asset_selection.selected_asset_check_keys]
        sensors.append(entry)
    [(resource_key, warehouse)] = defs.resources.items()
    return {"assets": assets, "ops": ops, "sensors": sensors, "resource_key": resource_key,
            "resource": {"server": warehouse.server, "timeout_seconds": warehouse.timeout_seconds}}, defs


# --- the baseline: Dagster objects from plain data ----------------------------------------------

class ServerSettings(dg.Config):  # the shape of dq_contracts.dagster_defs.resource.WarehouseResource
    url: str | None = None
    host: str | None = None


class Warehouse(dg.ConfigurableResource):
    servers: dict[str, ServerSettings] = {}
    server: str | None = None
    timeout_seconds: float = 300.0


def baseline_defs(data: dict):
    """The Definitions `build_contract_defs` returns, written by hand from plain data."""
    AC = dg.AutomationCondition

    @functools.lru_cache(maxsize=None)
    def condition(crons: tuple[str, ...]) -> dg.AutomationCondition:  # as translator.checks_condition
        out = (AC.missing() & ~AC.any_deps_missing() & ~AC.any_deps_in_progress() & ~AC.in_progress()
               ).newly_true().with_label("its table was updated since it last ran")
        for cron in crons:
            out = out | AC.cron_tick_passed(cron, "UTC").with_label(f"contract cron {cron} (UTC)")
        return out

    def schema(v):
        return dg.TableSchema(columns=[
            dg.TableColumn(name=n, type=t, description=d, tags=tags,
                           constraints=dg.TableColumnConstraints(nullable=nl, unique=u, other=o))
            for n, t, d, nl, u, o, tags in v["columns"]])

    def decode(v):
        if not isinstance(v, dict):
            return v
        kind = v["$"]
        if kind == "schema":
            return schema(v)
        if kind == "table":
            return dg.MetadataValue.table(records=[dg.TableRecord(r) for r in v["records"]], schema=schema(v["schema"]))
        if kind == "code":
            return dg.CodeReferencesMetadataValue(code_references=[
                dg.LocalFileCodeReference(file_path=f, line_number=n, label=label) for f, n, label in v["refs"]])
        if kind == "url":
            return dg.MetadataValue.url(v["url"])
        return dg.MetadataValue.text(v["text"])

    def check_op(op, specs):
        @dg.multi_asset_check(name=op["name"], specs=specs, can_subset=op["can_subset"],
                              required_resource_keys=set(op["resources"]), description=op["description"])
        def _checks(context):
            yield from ()
        return _checks

    def sensor(s):
        if "automation" in s:
            return dg.AutomationConditionSensorDefinition(
                s["name"], target=dg.AssetSelection.checks(*[dg.AssetCheckKey(dg.AssetKey(k), n)
                                                             for k, n in s["automation"]]),
                default_status=dg.DefaultSensorStatus(s["status"]), description=s["description"])

        @dg.sensor(name=s["name"], minimum_interval_seconds=s["interval"], required_resource_keys=set(s["resources"]),
                   default_status=dg.DefaultSensorStatus(s["status"]), description=s["description"])
        def _sensor(context):
            return dg.SensorResult(asset_events=[], cursor="{}")
        return _sensor

    with warnings.catch_warnings():  # code references are beta in Dagster 1.13, as ours does
        warnings.simplefilter("ignore", dg.BetaWarning)
        specs = [dg.AssetSpec(
            key=dg.AssetKey(a["key"]), description=a["description"],
            metadata={k: decode(v) for k, v in a["metadata"].items()}, owners=a["owners"], tags=a["tags"],
            kinds=set(a["kinds"]), group_name=a["group"], code_version=a["code_version"],
            freshness_policy=dg.FreshnessPolicy.time_window(fail_window=dt.timedelta(seconds=a["fail_window"]))
            if a["fail_window"] else None) for a in data["assets"]]
        checks = [check_op(op, [dg.AssetCheckSpec(
            name=c["name"], asset=dg.AssetKey(c["asset"]), description=c["description"], blocking=c["blocking"],
            additional_deps=[dg.AssetKey(k) for k in c["deps"]] or None,
            automation_condition=condition(tuple(c["crons"])),
            metadata={k: decode(v) for k, v in c["metadata"].items()}) for c in op["checks"]]) for op in data["ops"]]
    return dg.Definitions(assets=specs, asset_checks=checks, sensors=[sensor(s) for s in data["sensors"]],
                          resources={data["resource_key"]: Warehouse(**data["resource"])})


def compare(ours, base) -> None:
    """The baseline's objects are ours, field by field (op bodies aside)."""
    assert list(ours.assets) == list(base.assets), "asset specs differ"
    assert len(ours.asset_checks) == len(base.asset_checks), "op counts differ"
    for a, b in zip(ours.asset_checks, base.asset_checks):
        assert (a.node_def.name, a.node_def.description, a.can_subset, a.required_resource_keys) == (
            b.node_def.name, b.node_def.description, b.can_subset, b.required_resource_keys), a.node_def.name
        assert list(a.check_specs) == list(b.check_specs), f"check specs of {a.node_def.name} differ"
    assert len(ours.sensors) == len(base.sensors), "sensor counts differ"
    for a, b in zip(ours.sensors, base.sensors):
        fields = lambda s: (type(s), s.name, s.description, s.default_status, s.minimum_interval_seconds,
                            s.required_resource_keys, getattr(s, "asset_selection", None))
        assert fields(a) == fields(b), (fields(a), fields(b))
    assert not ours.jobs and not base.jobs and not ours.schedules and not base.schedules
    assert list(ours.resources) == list(base.resources)


# --- workers (one fresh process per measurement) ------------------------------------------------

def counts(defs) -> dict:
    checks = list(defs.asset_checks or [])
    specs = [s for c in checks for s in c.check_specs]
    return {"asset_specs": len(defs.assets or []), "check_defs": len(checks), "check_specs": len(specs),
            "with_additional_deps": sum(bool(s.additional_deps) for s in specs),
            "blocking": sum(s.blocking for s in specs),
            "with_condition": sum(s.automation_condition is not None for s in specs),
            "jobs": len(defs.jobs or []), "schedules": len(defs.schedules or []),
            "sensors": len(defs.sensors or []), "resources": len(defs.resources or {})}


def worker_ours(folder: Path) -> dict:
    import dagster as dg

    import dq_contracts.dagster_defs.definitions as d

    core_seconds = []
    load = d.load_contracts

    def timed_load(paths, **kwargs):  # the pure core, timed inside the real run
        started = time.perf_counter()
        try:
            return load(paths, **kwargs)
        finally:
            core_seconds.append(time.perf_counter() - started)

    d.load_contracts = timed_load
    rss_start = _rss_mib()  # imports (and, for the baseline, its plain data) loaded
    cpu = time.process_time()
    started = time.perf_counter()
    defs = d.build_contract_defs(folder)  # the defaults: no jobs, no schedules
    built = time.perf_counter()
    dg.Definitions.validate_loadable(defs)
    done = time.perf_counter()
    return {"core": core_seconds[0], "build": built - started, "validate": done - built, "total": done - started,
            "cpu": time.process_time() - cpu, "rss": _peak_rss_mib(), "rss_start": rss_start,
            "counts": counts(defs)}


def worker_baseline(data_file: Path) -> dict:
    import dagster as dg

    data = json.loads(data_file.read_text())
    rss_start = _rss_mib()  # imports (and, for the baseline, its plain data) loaded
    cpu = time.process_time()
    started = time.perf_counter()
    defs = baseline_defs(data)
    built = time.perf_counter()
    dg.Definitions.validate_loadable(defs)
    done = time.perf_counter()
    return {"build": built - started, "validate": done - built, "total": done - started,
            "cpu": time.process_time() - cpu, "rss": _peak_rss_mib(), "rss_start": rss_start,
            "counts": counts(defs)}


def worker_profile(folder: Path) -> dict:
    """One ours run under cProfile: the top functions by own time, ours against Dagster's."""
    import cProfile
    import pstats

    import dagster as dg

    from dq_contracts.dagster_defs.definitions import build_contract_defs

    profiler = cProfile.Profile()
    profiler.enable()
    dg.Definitions.validate_loadable(build_contract_defs(folder))
    profiler.disable()
    stats = pstats.Stats(profiler).stats
    own = lambda func: ("dq_contracts" if "/dq_contracts/" in func[0] else
                        "dagster" if "/dagster/" in func[0] or "/dagster_" in func[0] else None)
    memo: dict = {}

    def side(func, seen=()) -> str:
        """Builtins, the standard library, YAML, pydantic…: the side of the caller that spent most in them."""
        if own(func) or func in seen:
            return own(func) or "other"
        if func not in memo:
            callers = stats[func][4]
            memo[func] = side(max(callers, key=lambda c: callers[c][3]), (*seen, func)) if callers else "other"
        return memo[func]

    totals: dict[str, float] = {}
    for func, (_, _, tt, _, _) in stats.items():
        totals[side(func)] = totals.get(side(func), 0.0) + tt
    top = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:15]
    return {"totals": totals, "top": [
        [side(func) + ("" if own(func) else " (caller)"), round(tt, 3), round(ct, 3), n,
         f"{func[0].split('site-packages/')[-1].replace(str(Path.cwd()) + '/', '')}:{func[1]}({func[2]})"]
        for func, (_, n, tt, ct, _) in top]}


def run_worker(kind: str, target: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", kind, str(target)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- driver -------------------------------------------------------------------------------------

def measure(n: int, properties: int, repeats: int, tmp: Path, profile: bool) -> dict:
    folder = tmp / f"contracts_{n}"
    folder.mkdir()
    _bench_core().write_folder(folder, n, properties)
    data, ours_defs = plain_data(folder)
    compare(ours_defs, baseline_defs(json.loads(json.dumps(data))))
    del ours_defs
    data_file = tmp / f"baseline_{n}.json"
    data_file.write_text(json.dumps(data))
    ours, base = [], []
    for _ in range(repeats):  # alternate, so drift hits both alike
        ours.append(run_worker("ours", folder))
        base.append(run_worker("baseline", data_file))
    assert all(r["counts"] == base[0]["counts"] for r in ours + base), (ours[0]["counts"], base[0]["counts"])
    return {"n": n, "ours": ours, "base": base, "profile": run_worker("profile", folder) if profile else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contracts", default="1000", help="sizes, comma-separated: 100,300,1000")
    parser.add_argument("--properties", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile one ours run at the largest size")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, path = args.worker
        workers = {"ours": worker_ours, "baseline": worker_baseline, "profile": worker_profile}
        print(json.dumps(workers[kind](Path(path))))
        return

    sizes = sorted({int(s) for s in args.contracts.split(",") if s.strip()})
    demo, demo_defs = plain_data(DEMO)  # relationships, crons, domains, links: the baseline matches there too
    compare(demo_defs, baseline_defs(json.loads(json.dumps(demo))))
    with tempfile.TemporaryDirectory() as tmp:
        results = [measure(n, args.properties, args.repeats, Path(tmp), args.profile and n == sizes[-1])
                   for n in sizes]

    med = lambda runs, k: statistics.median(r[k] for r in runs)
    c = results[-1]["ours"][0]["counts"]
    print(f"{args.properties} properties per contract; at {sizes[-1]} contracts, on both sides: {c['asset_specs']} "
          f"asset specs, {c['check_defs']} multi_asset_checks ({c['check_specs']} check specs, "
          f"{c['with_additional_deps']} with additional_deps, {c['blocking']} blocking, {c['with_condition']} "
          f"with an automation condition), {c['jobs']} jobs, {c['schedules']} schedules, {c['sensors']} sensors, "
          f"{c['resources']} resource; objects compared field by field (and on {DEMO.name}/)")
    print(f"medians of {args.repeats} runs, each in a fresh process, ours and baseline alternating "
          "(imports not timed; peak RSS includes imports)\n")
    print("| contracts | baseline total (s) | ours total (s) | ours / baseline | baseline peak RSS (MiB) "
          "| ours peak RSS (MiB) | ours ms / contract |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    per = []
    for r in results:
        o, b, n = med(r["ours"], "total"), med(r["base"], "total"), r["n"]
        per.append(o / n * 1000)
        print(f"| {n} | {b:.2f} | {o:.2f} | {o / b:.2f} | {med(r['base'], 'rss'):.0f} | {med(r['ours'], 'rss'):.0f} "
              f"| {o / n * 1000:.2f} |")
    print("\nours ms / contract: " + ", ".join(f"{p:.2f} at {r['n']}" for p, r in zip(per, results))
          + f"; largest / smallest = {per[-1] / per[0]:.2f}")
    print("\n| contracts | stage | baseline (s) | ours (s) | added |")
    print("|---:|---|---:|---:|---:|")
    for r in results:
        for stage in ("build", "validate", "cpu"):
            o, b = med(r["ours"], stage), med(r["base"], stage)
            print(f"| {r['n']} | {stage} | {b:.2f} | {o:.2f} | {(o - b) / b:+.0%} |")
        print(f"| {r['n']} | of which load_contracts (ours) | | {med(r['ours'], 'core'):.2f} | |")
        print(f"| {r['n']} | RSS before the timed part: imports, baseline's plain data (MiB) "
              f"| {med(r['base'], 'rss_start'):.0f} | {med(r['ours'], 'rss_start'):.0f} | |")
        grow = lambda runs: statistics.median(x["rss"] - x["rss_start"] for x in runs)
        print(f"| {r['n']} | RSS growth in the timed part: peak - before (MiB) | {grow(r['base']):.0f} "
              f"| {grow(r['ours']):.0f} | {(grow(r['ours']) - grow(r['base'])) / grow(r['base']):+.0%} |")
    for r in results:
        o, b = med(r["ours"], "total"), med(r["base"], "total")
        print(f"{r['n']}: added (ours - baseline) / baseline = {(o - b) / b:+.0%} (goal <= {GOAL:.0%}: "
              f"{'met' if (o - b) / b <= GOAL else 'NOT met'}); per-run totals (s) ours "
              + ", ".join(f"{x['total']:.2f}" for x in r["ours"]) + "; baseline "
              + ", ".join(f"{x['total']:.2f}" for x in r["base"]))
    profile = results[-1]["profile"]
    if profile:
        print(f"\ncProfile of one ours run at {sizes[-1]} contracts, own time (s), builtins and third-party "
              "code counted on the side of their caller: "
              + ", ".join(f"{k} {v:.2f}" for k, v in sorted(profile["totals"].items())))
        print("| side | tottime | cumtime | calls | function |\n|---|---:|---:|---:|---|")
        for side, tt, ct, calls, where in profile["top"]:
            print(f"| {side} | {tt:.3f} | {ct:.3f} | {calls} | {where} |")


if __name__ == "__main__":
    main()
