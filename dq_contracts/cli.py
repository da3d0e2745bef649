"""`dq-contracts validate | plan | check | report | diff | init`: contracts from the shell, with no traceback for bad input."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import sys
from typing import Sequence

from dq_contracts.odcs.names import schedule_name
from dq_contracts.odcs.load import LoadResult, load_contracts, not_enforced_problems
from dq_contracts.odcs.problems import ProblemSeverity, errors_of
from dq_contracts.odcs.plans import ContractPlan, Severity
from dq_contracts.odcs.servers import servers_handling
from dq_contracts.odcs.visible import one_line, say, say_lines
from dq_contracts.cli_init import cmd_init
from dq_contracts.cli_streams import Guarded


def _print_problems(result: LoadResult, stream, advice: bool = False) -> None:
    """Each problem (with `advice`: and each warning of a server no check will reach, LoadResult.advice)."""
    shown = sorted([*result.problems, *result.advice], key=lambda p: (p.file, p.line or 0)) if advice else result.problems
    for problem in shown:  # one line each: a contract's text cannot add a line of its own
        say(one_line(problem.render()), file=stream)


def _nothing_read(result: LoadResult, command: str, paths: Sequence[str]) -> str:
    """What it said, when the paths held no contract file ("" otherwise): a CI gate over an empty or
    misnamed folder must not pass by checking nothing."""
    if result.files_read:
        return ""
    from dq_contracts.odcs.loader import CONTRACT_SUFFIXES

    _print_problems(result, sys.stderr)  # a file skipped, and why (`kind: Datacontract`)

    message = (f"dq-contracts {command}: no contract file ({', '.join('*' + s for s in CONTRACT_SUFFIXES)}) in "
               f"{', '.join(map(str, paths))}")
    say(message, file=sys.stderr)
    return message


def cmd_validate(args: argparse.Namespace) -> int:
    result = load_contracts(args.paths, server=args.server)  # loaded as `check` loads it
    if _nothing_read(result, "validate", args.paths):
        return 1
    # every clause that will not run is said, where it is written: a silent drop is the worst outcome
    shown = sorted([*result.problems, *result.advice, *not_enforced_problems(result)],
                   key=lambda p: (p.file, p.line or 0))
    if args.strict:  # a CI gate that requires every clause to be enforced: each warning is an error, and said so
        shown = [dataclasses.replace(p, severity=ProblemSeverity.ERROR) for p in shown]
    if args.format == "github":  # each problem an annotation where it is written (engine/ci_output.py)
        from dq_contracts.engine.ci_output import problem_annotation

        for problem in shown:
            print(problem_annotation(problem, as_error=args.strict))
    else:
        for problem in shown:
            say(problem.render())
    errors = len(errors_of(shown))
    warnings = len(shown) - errors
    failed_files = {p.file for p in result.errors}
    contracts = sum(1 for plan in result.plans if plan.file not in failed_files)
    summary = (f"read {result.files_read} contract file(s): {contracts} valid, "
               f"{errors} error(s), {warnings} warning(s)")
    say(summary)
    return 1 if errors else 0


def _plan_lines(plan: ContractPlan, prefix: str, server: str | None = None) -> list[str]:
    from dq_contracts.engine.sentences import AGE, duration, in_durations  # pure: no SQL
    from dq_contracts.odcs.check_kinds import CHECK_KINDS

    lines = [f"{plan.file}: {plan.id} {plan.version} ({plan.api_version})"]
    for said in servers_handling(plan.servers, server):  # the one the checks use first
        lines.append(f"  {'checked against server' if said['used'] else 'server'} {said['server']}: "
                     f"{said['handling']} ({said['how']})")
    if not plan.servers:
        lines.append("  no server declared: every check fails until the contract declares one")
    for obj in plan.objects:
        lines.append(f"  asset {'/'.join(obj.asset_key)}  (object {obj.name})")
        width = max((len(c.name) for c in obj.checks), default=10)
        if obj.partitioning is not None:
            lines.append(f"    partitioned {obj.partitioning.keys_text()} on {obj.partitioning.column}  "
                         f"{obj.partitioning.clause}")
        for check in obj.checks:
            threshold = check.threshold_text()
            if CHECK_KINDS[check.kind].observed_unit == AGE:  # seconds, as people read them too
                threshold = f"{threshold} ({in_durations(threshold)})"
            if check.warn_conditions:  # both levels: the fail level, then the warn level
                threshold = f"fail unless {threshold}, warn unless {check.warn_threshold_text()}"
            will_fail = f"  WILL FAIL: {check.params['refusal']}" if check.params.get("refusal") else ""
            reach = obj.partition_reach(check)
            reached = f"  [{'per partition' if reach[0] == 'partition' else 'table-wide'}: {reach[1]}]" if reach else ""
            lines.append(f"    {check.name:<{width}}  {check.severity:<5}  {check.kind:<16} {threshold}"
                         f"  {', '.join(check.clauses)}{will_fail}{reached}")
    for fresh in plan.freshness:
        lines.append(f"  freshness {fresh.object}.{fresh.element}: fail after {duration(fresh.fail_window_seconds)} "
                     f"({fresh.fail_window_seconds:g} s)  "
                     f"{fresh.clause}")
    for schedule in plan.schedules:
        # by default a cron is the checks' automation condition; with contract_jobs, this schedule
        names = ", ".join(n for _, n in schedule.checks)
        lines.append(f"  cron '{schedule.cron}' (UTC) runs {names}  {schedule.clause}  "
                     f"[schedule {schedule_name(plan, schedule, prefix)} with contract_jobs=True]")
    if plan.rewrites:  # a v3.0 document read in v3.1 words: what was read otherwise than written
        lines.append("  read as v3.1:")
        for rewrite in plan.rewrites:
            lines.append(f"    {rewrite.pointer}  {rewrite.message}")
    if plan.not_enforced:
        lines.append("  not enforced:")
        for item in plan.not_enforced:
            lines.append(f"    {item.clause}  [{item.code}] {item.reason}")
    return lines


def cmd_plan(args: argparse.Namespace) -> int:
    result = load_contracts(args.paths, server=args.server)
    if _nothing_read(result, "plan", args.paths):
        return 1
    if args.format == "json":
        payload = {
            "contracts": [p.to_json() for p in result.plans],
            "problems": [p.to_json() for p in result.problems],
        }
        say_lines(json.dumps(payload, indent=2, default=str).splitlines())
    else:
        for plan in result.plans:  # with the names Dagster's ops and schedules take
            say_lines(_plan_lines(plan, result.prefixes[plan.file], args.server))
            say()
        _print_problems(result, sys.stdout)
    return 1 if result.errors else 0


def _statements(results: list) -> list[dict]:
    by_object: dict[tuple, list[str]] = {}
    for r in results:
        sql = by_object.setdefault((r.contract_id, tuple(r.asset_key), r.object), [])
        if r.aggregate_sql and r.aggregate_sql not in sql:
            sql.append(r.aggregate_sql)
    return [{"contract": contract, "asset_key": list(key), "object": obj, "sql": sql}
            for (contract, key, obj), sql in by_object.items()]


def cmd_check(args: argparse.Namespace) -> int:
    # the engine only when checks run
    from dq_contracts.engine.ci_output import exit_code
    from dq_contracts.engine.contracts import Warehouses, partition_of_key, run_contract
    from dq_contracts.engine.sentences import said
    from dq_contracts.odcs.partitions import PartitionKeyError

    if args.output and args.format != "junit":
        say("dq-contracts check: --output is for --format junit", file=sys.stderr)
        return 1
    if args.output:  # emptied before anything runs: said at once if it cannot be written, never outlived
        try:
            open(args.output, "wb").close()
        except OSError as exc:
            say(f"dq-contracts check: --output {args.output}: {exc.strerror}", file=sys.stderr)
            return 1
    loaded = load_contracts(args.paths, server=args.server)
    nothing = _nothing_read(loaded, "check", args.paths)
    if nothing:
        return _stopped(args, loaded, nothing.removeprefix("dq-contracts check: "))
    results = []
    # with --partition, the partitioned objects are checked for that key; a key that names no
    # partition of one of them is an error before anything runs
    chosen = {plan.file: [o.name for o in plan.objects if args.partition is None or o.partitioning is not None]
              for plan in loaded.usable_plans}
    if args.partition is not None:
        try:
            for plan in loaded.usable_plans:
                for obj in plan.objects:
                    if obj.partitioning is not None:
                        partition_of_key(plan, obj, args.partition)
        except PartitionKeyError as exc:
            say(f"dq-contracts check: --partition {args.partition}: {exc}", file=sys.stderr)
            return _stopped(args, loaded, f"--partition {args.partition}: {exc}")
        if not any(chosen.values()):
            _print_problems(loaded, sys.stderr)
            message = (f"--partition {args.partition}: no object of these contracts is partitioned "
                       "(declare a customProperties entry `dagsterPartitions` on it)")
            say(f"dq-contracts check: {message}", file=sys.stderr)
            return _stopped(args, loaded, message)
        for plan in loaded.usable_plans:
            for obj in plan.objects:
                if obj.partitioning is None:
                    say(f"{plan.file}: object {obj.name} is not partitioned: skipped", file=sys.stderr)
    with Warehouses() as warehouses:
        # a contract with errors is not run (its problems are printed below); the others are
        for plan in loaded.usable_plans:
            if chosen[plan.file]:
                results.extend(run_contract(plan, warehouses, server_name=args.server, objects=chosen[plan.file],
                                            timeout_seconds=args.timeout, partition=args.partition))
    if args.format in ("junit", "github"):  # what CI systems read (engine/ci_output.py)
        _ci_output(args, results, loaded)
    elif args.format == "json":
        payload = {
            "results": [{"contract": r.contract_id, "version": r.contract_version, **r.to_json()}
                        for r in results],
            # what measured the results, once per object: its scan (or scans) and the kinds' own queries
            "statements": _statements(results),
            "problems": [p.to_json() for p in loaded.problems],
        }
        say_lines(json.dumps(payload, indent=2, default=str).splitlines())
    else:
        # the result in words and units ("1 row of 120 below 0 (0.8 %)"), then samples where allowed
        rows = [("asset", "check", "severity", "status", "result", "samples")]
        shared = _shared_errors(results)
        for r in results:
            message = "could not be evaluated: the error said below" if r.error in shared else said(r)
            if args.partition is not None:
                message = f"[{'partition ' + r.partition if r.partition else 'whole table'}] {message}"
            # a value of the data or a contract's text on its line: none can forge a result or the summary
            rows.append(tuple(one_line(v) for v in ("/".join(r.asset_key), r.name, r.severity, r.status, message,
                                                    f"e.g. {', '.join(map(str, r.samples))}" if r.samples else "")))
        widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
        for row in rows if results else ():  # nothing ran: the problems say why, with no empty table
            say("  ".join(str(v).ljust(w) for v, w in zip(row, widths)) + "  " + "  ".join(
                str(v) for v in row[4:] if v))
        for error, failed in shared.items():  # once per server or table, not once per check
            files = ", ".join(dict.fromkeys(r.file for r in failed))
            say(one_line(f"{files}: {len(failed)} check(s) could not be evaluated: {error}"))
        if not results:
            _print_problems(loaded, sys.stdout, advice=True)
        say(_counted(results) + ("" if results or not loaded.problems else
                                 " (no contract could run: the problems above say why)"))
        if results:
            _print_problems(loaded, sys.stdout, advice=True)
    return exit_code(results, loaded.problems)


def _shared_errors(results: list) -> dict[str, list]:
    """An error that kept several checks from a verdict (a server no check reached, a file that is
    not there), with those checks: said once, not once per check."""
    by_error: dict[str, list] = {}
    for r in results:
        if r.error and not r.error.startswith("not run: "):  # a refusal is its own clause's
            by_error.setdefault(r.error, []).append(r)
    return {error: failed for error, failed in by_error.items() if len(failed) > 1}


def _stopped(args: argparse.Namespace, loaded: LoadResult, message: str) -> int:
    """A check that ran nothing exits 1; its JUnit report says so as a failing case, so that an
    earlier report left at --output never stands for this run."""
    if args.format == "junit":
        from dq_contracts.odcs.problems import Problem

        _ci_output(args, [], LoadResult(problems=[*loaded.problems, Problem(", ".join(map(str, args.paths)), message)]))
    return 1


def _counted(results: list) -> str:
    from dq_contracts.engine.results import Status

    counts = {s: sum(r.status == s for r in results) for s in Status}
    return f"{len(results)} check(s): " + ", ".join(f"{n} {s}" for s, n in counts.items())


def _ci_output(args: argparse.Namespace, results: list, loaded: LoadResult) -> None:
    from dq_contracts.engine.ci_output import github_lines, junit_xml

    if args.format == "github":
        for line in github_lines(results, loaded.problems):
            print(line)  # escaped for the runner already; `say` would add nothing
        say(_counted(results))  # a plain line in the log, after the annotations
        return
    report = junit_xml(results, loaded.plans, loaded.problems)
    if args.output:  # the file for the CI's test reporter; the log keeps one line
        with open(args.output, "wb") as out:
            out.write(report)
        say(f"dq-contracts check: wrote {args.output} ({_counted(results)})")
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(report)


def cmd_report(args: argparse.Namespace) -> int:

    if not os.environ.get("DAGSTER_HOME"):
        # `dagster dev` without DAGSTER_HOME (the demo) keeps its history in such a folder of its working
        # directory, removed when it stops: name the ones here, so a newcomer need not hunt with `ls -a`
        here = sorted((n for n in os.listdir(".") if n.startswith(".tmp_dagster_home_") and os.path.isdir(n)),
                      key=os.path.getmtime, reverse=True)
        found = (f"; `dagster dev` started here without it keeps its history, until it stops, in "
                 f"{' or '.join(here)}: DAGSTER_HOME=$PWD/{here[0]}" if here else
                 "; `dagster dev` started without it keeps its history in a .tmp_dagster_home_* folder of the "
                 "folder it runs in, until it stops")
        say("dq-contracts report: set DAGSTER_HOME to the Dagster instance folder to read (the one the "
            f"webserver and daemon use){found}", file=sys.stderr)
        return 1
    if not os.path.isdir(os.environ["DAGSTER_HOME"]):
        say(f"dq-contracts report: DAGSTER_HOME={os.environ['DAGSTER_HOME']} is not a folder; point it at "
              "the Dagster instance folder to read", file=sys.stderr)
        return 1
    from dq_contracts.dagster_defs.report import InstanceUnreadable, report_from_instance, report_lines  # Dagster

    loaded = load_contracts(args.paths)
    try:
        report = report_from_instance(loaded.usable_plans)
    except InstanceUnreadable as exc:
        say(f"dq-contracts report: {exc}", file=sys.stderr)
        return 1
    if args.format == "json":
        say_lines(json.dumps(report, indent=2).splitlines())
    else:
        say_lines(report_lines(report))
        _print_problems(loaded, sys.stdout)
    # a CI gate over the instance's history: an ERROR clause whose latest status is fail or error fails it
    broken = any(c["severity"] == Severity.ERROR and c["status"] in ("fail", "error")
                 for contract in report["contracts"] for asset in contract["assets"] for c in asset["clauses"])
    return 1 if loaded.errors or broken else 0


def cmd_diff(args: argparse.Namespace) -> int:
    from dq_contracts.odcs.diff_report import diff_paths, exit_code, report_text, to_json

    result = diff_paths(args.old, args.new, getattr(sys.stdin, "buffer", sys.stdin))
    if args.format == "json":
        say_lines(json.dumps(to_json(result), indent=2, default=str).splitlines())
    else:
        for line in report_text(result):
            say(line, file=sys.stderr if result.errors else None)
    return exit_code(result, args.allow_breaking)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dq-contracts", description="ODCS v3 data contracts for Dagster")
    commands = parser.add_subparsers(dest="command", required=True)

    validate = commands.add_parser("validate", help="report every problem in the contracts")
    validate.add_argument("paths", nargs="+", help="contract files or folders (searched recursively)")
    validate.add_argument("--server", help="judge the contracts as `check --server NAME` runs them")
    validate.add_argument("--strict", action="store_true",
                          help="warnings are errors: every clause must be enforced (for CI)")
    validate.add_argument("--format", choices=["text", "github"], default="text",
                          help="github: GitHub Actions annotations at each problem's line")
    validate.set_defaults(run=cmd_validate)

    plan = commands.add_parser("plan", help="show the checks, freshness, schedules and not-enforced clauses")
    plan.add_argument("paths", nargs="+")
    plan.add_argument("--server", help="the server `check --server NAME` would use")
    plan.add_argument("--format", choices=["text", "json"], default="text")
    plan.set_defaults(run=cmd_plan)

    check = commands.add_parser("check", help="run every check against the contracts' servers")
    check.add_argument("paths", nargs="+")
    check.add_argument("--server", help="the `server` name in each contract's servers (default: its first "
                       "SQL server)")
    check.add_argument("--format", choices=["text", "json", "junit", "github"], default="text",
                       help="junit: JUnit XML, one suite per contract; github: GitHub Actions annotations")
    check.add_argument("--output", metavar="FILE", help="with --format junit: write the XML to FILE "
                       "(default: standard output)")
    check.add_argument("--timeout", type=float, default=300, help="statement timeout in seconds (default 300)")
    check.add_argument("--partition", metavar="KEY", help="check one partition of each partitioned object, the key "
                       "as Dagster spells it (2026-06-01 daily, 2026-06-01-13:00 hourly, the value for static); "
                       "table-wide clauses (schema, freshness, SQL rules without {partition}) read the whole table")
    check.set_defaults(run=cmd_check)

    report = commands.add_parser("report", help="each clause's latest status from the Dagster instance "
                                 "at DAGSTER_HOME")
    report.add_argument("paths", nargs="+")
    report.add_argument("--format", choices=["text", "json"], default="text")
    report.set_defaults(run=cmd_report)

    diff = commands.add_parser("diff", help="what changed between two versions of a contract: breaking or not, "
                               "and what it does to each check's history")
    diff.add_argument("old", help="the old version: a file, a folder, or - for standard input")
    diff.add_argument("new", help="the new version: a file, a folder, or -")
    diff.add_argument("--format", choices=["text", "json"], default="text")
    diff.add_argument("--allow-breaking", action="store_true", help="exit 0 on breaking changes and version bumps")
    diff.set_defaults(run=cmd_diff)

    init = commands.add_parser("init", help="a draft contract from existing tables or files, its clauses suggested "
                               "from one read-only scan of each")
    init.add_argument("--url", help="the SQLAlchemy URL of the warehouse (duckdb:///file.duckdb, "
                      "postgresql://...)")
    init.add_argument("--server", help="instead of --url: the server whose DQ_CONTRACTS_<SERVER>_* endpoint "
                      "the operator declared, as check uses it")
    init.add_argument("--path", help="instead of --url: csv, parquet or json files (a glob; {object} stands for "
                      "the table's name), written as a file server's path relative to the output's folder")
    init.add_argument("--format", dest="file_format", choices=("csv", "parquet", "json"),
                      help="the files' format (default: their extension's)")
    init.add_argument("--table", action="append", help="a table to draw (repeat for more; with --against, "
                      "default: every object of the contract)")
    init.add_argument("--schema", help="the schema the tables are in (default: the server type's)")
    init.add_argument("--server-type", help="the ODCS server type to write (default: the URL's)")
    init.add_argument("--output", help="the contract file to write (default: standard output)")
    init.add_argument("--against", help="an existing contract: print the diff from it to the contract as its "
                      "tables are now (exit 0: no change, 1: drifted or not drawn); the file is not written")
    init.add_argument("--contracts", metavar="FOLDER", help="with --against: the folder check reads the contract "
                      "in (default: its own folder); loaded as `check FOLDER` loads it, its bindings, roots and "
                      "classifications apply")
    init.add_argument("--timeout", type=float, default=300, help="statement timeout in seconds (default 300)")
    init.set_defaults(run=cmd_init)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a contract must not crash printing
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (None if s is None else Guarded(s) for s in streams)  # None: no stream at all
    try:
        code = _main(argv)
        if sys.stdout is not None:
            sys.stdout.flush()
        lost = sys.stdout.lost.error if sys.stdout is not None else None
        if lost is not None:  # as Python says it at exit, in one line, and 120 as Python's own
            from dq_contracts.engine.ci_output import Exit

            say(f"dq-contracts: the output could not be written ({lost.strerror or type(lost).__name__}): "
                "it is lost", file=sys.stderr)
            return Exit.OUTPUT
        return code  # a closed pipe keeps the command's own code: a pipeline with pipefail sees it
    finally:
        if sys.stderr is not None:
            sys.stderr.flush()
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the command's own parser, with its usage (`check --bogus`: check's options)
            commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse's usage error is 2, which `check` gives to warnings alone
        from dq_contracts.engine.ci_output import Exit

        return Exit.USAGE if exc.code == 2 else (exc.code or 0)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        say("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback for the user; the message says what failed
        # ... except while checking, where an unexpected error may quote a value of the data
        from dq_contracts.engine.results import withheld

        said = (withheld(exc, f"dq-contracts {args.command}", "it may quote a value of the data")
                if args.run in (cmd_check, cmd_init) else f"{type(exc).__name__}: {exc}")
        from dq_contracts.engine.ci_output import Exit

        say(f"dq-contracts: internal error: {said}", file=sys.stderr)
        return Exit.INTERNAL  # not 1 or 2, which `check` gives to failing and warning clauses


def script() -> None:
    """The `dq-contracts` command: main(), its output flushed, then out of the process at once.

    A run's objects are nearly all long-lived (modules, plans, compiled statements), so the
    collector's passes while importing find nothing to free (about 40 ms a run); and Python's own
    teardown of every imported module took about 60 ms after the report was printed. Whatever must
    reach a file or a server has by then (engines are disposed and reports closed inside main)."""
    gc.set_threshold(50_000, 50, 1000)
    code = main()  # which flushed its output, and said what could not be written
    for stream in (s for s in (sys.stdout, sys.stderr) if s is not None):  # None: started with it closed
        try:
            stream.flush()
        except OSError:  # what main found already: the stream keeps the part it could not take
            pass
    os._exit(int(code or 0))


if __name__ == "__main__":
    script()
