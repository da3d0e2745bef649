"""The inputs and the words of `dq-contracts diff` (the comparison is diff.py): each side a file,
a folder or `-` (standard input: `git show REV:path | dq-contracts diff - path`), loaded as
`validate` loads it; the report as text or JSON; the exit code."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

from dq_contracts.odcs.diff import ContractDiff, compare_plans, pair_contracts
from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.loader import MAX_FILE_BYTES, display_path
from dq_contracts.odcs.plans import ContractPlan
from dq_contracts.odcs.problems import Problem, contract_errors_of
from dq_contracts.odcs.visible import one_line

STDIN = "-"
STDIN_SHOWN = "<stdin>"


@dataclass
class DiffResult:
    diffs: list[ContractDiff] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)  # an input that could not be read as contracts

    @property
    def breaking(self) -> bool:
        return any(d.breaking for d in self.diffs)

    @property
    def version_problems(self) -> list[str]:
        return [d.version_problem for d in self.diffs if d.version_problem]


def read_side(path: str, stdin: IO[bytes] | None) -> tuple[list[ContractPlan], list[Problem]]:
    """The contracts of one side, and the errors that keep any of them from being read. A plan the
    operator's declaration would refuse (a server, a root) is still compared: the diff connects to
    nothing, so that is no concern of it."""
    if path != STDIN:
        return _plans_of(load_contracts([path], environ={}), path)
    if stdin is None:
        return [], [Problem(STDIN_SHOWN, "no standard input to read")]
    # bytes, read as a file is (the loader refuses what is not UTF-8 text, too large, ...)
    raw = stdin.read(MAX_FILE_BYTES + 1)
    with tempfile.TemporaryDirectory(prefix="dq-contracts-diff-") as folder:
        name = os.path.join(folder, "stdin.odcs.json" if raw.lstrip().startswith(b"{") else "stdin.odcs.yaml")
        with open(name, "wb") as out:
            out.write(raw)
        plans, errors = _plans_of(load_contracts([name], environ={}), name)
        shown = display_path(name)
        return ([dataclasses.replace(p, file=STDIN_SHOWN) for p in plans],
                [dataclasses.replace(e, file=STDIN_SHOWN) if e.file in (shown, name) else e for e in errors])


def _plans_of(result, path: str) -> tuple[list[ContractPlan], list[Problem]]:
    # every error `validate` gives the contract itself (a file that could not be read, validated or
    # compiled; a cron Dagster refuses; an asset claimed twice): nothing that cannot run is compared.
    # What the operator's declaration refuses is left out: the diff connects to nothing
    operator = set(map(id, result.operator_problems))
    errors = [p for p in contract_errors_of(result.problems) if id(p) not in operator]
    if not result.files_read:
        errors.append(Problem(path, "no contract file here"))
    return result.plans, errors


def diff_paths(old: str, new: str, stdin: IO[bytes] | None = None) -> DiffResult:
    if old == new == STDIN:
        return DiffResult(errors=[Problem(STDIN_SHOWN, "only one side can be read from standard input")])
    old_plans, old_errors = read_side(old, stdin)
    new_plans, new_errors = read_side(new, stdin)
    result = DiffResult(errors=[*old_errors, *new_errors])
    if result.errors:
        return result
    result.diffs = [compare_plans(a, b) for a, b in pair_contracts(old_plans, new_plans)]
    return result


def exit_code(result: DiffResult, allow_breaking: bool) -> int:
    """1 for an unreadable input; 1 for a breaking change or a version bump that does not say what
    changed, unless allowed; 0 otherwise."""
    if result.errors:
        return 1
    return 0 if allow_breaking or not (result.breaking or result.version_problems) else 1


def to_json(result: DiffResult) -> dict[str, Any]:
    return {
        "contracts": [{
            "id": (d.new or d.old).id,
            "old": _side(d.old), "new": _side(d.new),
            "changes": [{"code": c.code, "breaking": c.breaking, "words": c.words, "where": c.where,
                         "detail": c.detail, "location": c.location} for c in d.changes],
            "checks": [{"asset_key": list(f.asset_key), "name": f.name, "history": f.fate} for f in d.checks],
            "version_problem": d.version_problem,
        } for d in result.diffs],
        "breaking": result.breaking,
        "version_problems": result.version_problems,
        "errors": [e.to_json() for e in result.errors],
    }


def _side(plan: ContractPlan | None) -> dict[str, Any] | None:
    return None if plan is None else {"file": plan.file, "version": plan.version}


def report_text(result: DiffResult) -> list[str]:
    """The report, one line per entry: every text of a contract in it on its line (`one_line`)."""
    if result.errors:
        return [one_line(e.render()) for e in result.errors]
    lines: list[str] = []
    for d in result.diffs:
        lines.append(f"{_title(d.old)} → {_title(d.new)}")
        if not d.changes:
            lines.append("  no change")
        for change in d.changes:
            mark = "BREAKING" if change.breaking else "ok      "
            at = f"  ({one_line(change.location)})" if change.location else ""
            detail = f": {one_line(change.detail)}" if change.detail else ""
            lines.append(f"  {mark}  {one_line(change.where)}: {one_line(change.words)}{detail}{at}")
        fates = {fate: [f for f in d.checks if f.fate == fate] for fate in ("kept", "new", "gone")}
        lines.append(f"  Dagster history: {len(fates['kept'])} check(s) keep theirs, {len(fates['new'])} new, "
                     f"{len(fates['gone'])} gone")
        for fate, words in (("new", "new (no history yet)"),
                            ("gone", "gone (no longer evaluated; its history stays in the instance)")):
            for f in fates[fate]:
                lines.append(f"    {words}: {one_line(f.name)} on {one_line('/'.join(f.asset_key))}")
        if d.version_problem:
            lines.append(f"  version: {one_line(d.version_problem)}")
    breaking = sum(len(d.breaking) for d in result.diffs)
    lines.append(f"{breaking} breaking change(s), {sum(len(d.changes) for d in result.diffs) - breaking} not breaking"
                 f"{', version bump wrong' if result.version_problems else ''}")
    return lines


def _title(plan: ContractPlan | None) -> str:
    return "(none)" if plan is None else one_line(f"{plan.file} {plan.id} {plan.version}")

