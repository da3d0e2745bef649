"""The pure pipeline: files → documents → validated contracts → plans, with every problem collected.

A contract with an error is that contract's problem: `LoadResult.usable_plans` holds every contract
that can run, `LoadResult.rejected` every one that cannot, with what could be read of it (the assets
it names) so that its problems can be shown where its owners look.
"""

from __future__ import annotations

import dataclasses
import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from dq_contracts.compiler import (FolderIndex, checkable, compile_contract, definition_names, outline_contract,
                                   share_classification)
from dq_contracts.loader import load_documents
from dq_contracts.declaration import root_of_loaded, server_name, server_refusals
from dq_contracts.paths import named_path
from dq_contracts.plans import ContractPlan
from dq_contracts.problems import Problem, contract_errors_of, errors_of
from dq_contracts.validate import ValidatedContract, validate_document


@dataclass(frozen=True)
class RejectedContract:
    """A contract file that cannot run: its problems, and its plan (compiled, or only an outline of
    the objects it names; None when not even that could be read)."""

    file: str
    problems: tuple[Problem, ...]
    plan: ContractPlan | None


@dataclass
class LoadResult:
    plans: list[ContractPlan] = field(default_factory=list)  # every compiled plan, usable or not
    problems: list[Problem] = field(default_factory=list)
    files_read: int = 0
    rejected: list[RejectedContract] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return errors_of(self.problems)

    @property
    def usable_plans(self) -> list[ContractPlan]:
        """The plans that run: no error outside a single clause (a refused SQL rule fails its own check)."""
        broken = {r.file for r in self.rejected}
        return [p for p in self.plans if p.file not in broken]


def server_problems(plans: Iterable[ContractPlan], server: str | None,
                    line_of=lambda plan, parts=("servers",): None,
                    environ: Mapping[str, str] | None = None) -> list[Problem]:
    """What stops a contract's server before anything connects: a `server` name (component,
    resource, --server) the contract does not declare, naming the servers it does declare; and what
    the operator's declaration refuses in the server it will use (declaration.server_refusals: not
    bound to its folder, another type or endpoint, a file outside the roots, a remote location)."""
    found = []
    for plan in plans:
        names = [server_name(s) for s in plan.servers]
        if server is not None and server not in names:
            found.append(Problem(plan.file, f"no server named {server!r} to check against; this contract declares "
                                 f"{', '.join(repr(n) for n in names) or 'no servers'}", "servers",
                                 line_of(plan, ("servers",))))
            continue
        index = (names.index(server) if server is not None
                 else next((i for i, s in enumerate(plan.servers) if checkable(s)), None))
        if index is None:
            continue
        physical = tuple(o.physical_name for o in plan.objects)
        for parts, message in server_refusals(plan.servers[index], index, plan.file, plan.folder, plan.root,
                                              physical, environ):
            found.append(Problem(plan.file, message, named_path({"servers": list(plan.servers)}, parts),
                                 line_of(plan, parts)))
    return found


def load_contracts(paths: Iterable[str | os.PathLike[str]], *, server: str | None = None,
                   environ: Mapping[str, str] | None = None) -> LoadResult:
    """Every contract under `paths`; `server` is the server name checks will use (None: each
    contract's first SQL server), and a contract without it is rejected, as is one whose server
    the operator's declaration (`environ`, default the process's: declaration.py) refuses."""
    # Loading builds many small objects that all stay alive until the plans are made (documents
    # and their YAML node trees, for line numbers): the cyclic collector would scan them again and
    # again for nothing, about a third of the load time at 1,000 contracts. It runs once, after.
    with gc_paused():
        return _load_contracts(paths, server, environ)


FULL_COLLECTION_AFTER = 250_000  # new objects: about 200 contracts of 20 properties built into Definitions


@contextmanager
def gc_paused():
    """The cyclic garbage collector off inside (reference counting still frees what can be), back
    as it was after; nested uses leave it to the outermost.

    On the way out, when a large estate was built (more than FULL_COLLECTION_AFTER new objects), it
    collects once, in full: what was made inside is then in the oldest generation (where the next
    full collection waits until a quarter as much again is new) instead of all in the youngest,
    which the collector would walk whole three times over, once per generation. After a small build
    that collection would cost more than it saves: it walks the whole heap of the process (a test
    run that loads contracts thousands of times took twice as long with it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_count()[0] > FULL_COLLECTION_AFTER:  # objects made since the last collection
                gc.collect()
            gc.enable()


def _load_contracts(paths: Iterable[str | os.PathLike[str]], server: str | None,
                    environ: Mapping[str, str] | None) -> LoadResult:
    paths = list(paths)
    documents, problems = load_documents(paths)
    roots = _roots_of(paths)
    # files that could not even be parsed count as read too
    result = LoadResult(problems=problems, files_read=len(documents) + len({p.file for p in problems}))
    compiled: list[tuple[ContractPlan, object]] = []
    valid: list[tuple[ValidatedContract, object]] = []
    for document in documents:
        validated, found = validate_document(document)
        result.problems.extend(found)
        if validated is not None:
            valid.append((validated, document))
    folder = FolderIndex(v for v, _ in valid)  # relationships may reference another contract's table
    for validated, document in valid:
        plan, found = compile_contract(validated, folder)
        plan = dataclasses.replace(plan, root=_root_of(plan.file, roots))
        result.problems.extend(found)
        compiled.append((plan, document))
    compiled = list(zip(share_classification([p for p, _ in compiled]), (d for _, d in compiled)))

    # across files: the same (id, version) twice; the same asset claimed twice
    seen_ids: dict[tuple[str, str], ContractPlan] = {}
    seen_assets: dict[tuple[str, ...], tuple[ContractPlan, str]] = {}
    seen_names: dict[str, ContractPlan] = {}
    for plan, document in compiled:
        key = (plan.id, plan.version)
        if key in seen_ids:
            other = seen_ids[key]
            result.problems.append(Problem(plan.file, f"contract id {plan.id!r} version {plan.version} is also "
                                           f"defined in {other.file}", "id", document.line_of(["id"])))
            continue
        seen_ids[key] = plan
        names = definition_names(plan)
        named = next(((name, seen_names[name]) for name in sorted(names) if name in seen_names), None)
        if named is not None:
            other = named[1]
            result.problems.append(Problem(plan.file, f"its Dagster name {named[0]!r} is also taken by {other.file} "
                                           f"(contract {other.id!r} {other.version}); two contracts, or two versions "
                                           "of one, cannot share a code location under one id; give one another id",
                                           "id", document.line_of(["id"])))
            continue
        clash = False
        for obj in plan.objects:
            if obj.asset_key in seen_assets:
                other, other_object = seen_assets[obj.asset_key]
                parts = ["schema", int(obj.pointer.split("/")[2])]
                result.problems.append(Problem(
                    plan.file,
                    f"asset {'/'.join(obj.asset_key)} is also claimed by {other.file} (object {other_object!r}"
                    f" of contract {other.id!r} {other.version}); give one of them another physicalName "
                    "or a dagsterAssetKey custom property",
                    named_path(document.data, parts), document.line_of(parts)))
                clash = True
            else:
                seen_assets[obj.asset_key] = (plan, obj.name)
        if not clash:
            result.plans.append(plan)
            seen_names.update(dict.fromkeys(names, plan))
    by_file = {d.file: d for d in documents}
    result.problems.extend(server_problems(result.plans, server, lambda p, parts: by_file[p.file].line_of(parts),
                                           environ))
    result.problems.sort(key=lambda p: (p.file, p.line or 0))

    compiled_by_file = {plan.file: plan for plan, _ in compiled}
    problems_of: dict[str, list[Problem]] = {}
    for problem in result.problems:
        problems_of.setdefault(problem.file, []).append(problem)
    for file in dict.fromkeys(p.file for p in contract_errors_of(result.problems)):
        plan = compiled_by_file.get(file)
        if plan is None and file in by_file:
            plan = outline_contract(by_file[file].data, file)
        result.rejected.append(RejectedContract(file, tuple(problems_of[file]), plan))
    return result


def _roots_of(paths: list[str | os.PathLike[str]]) -> list[tuple[str, str]]:
    """(a path loaded, absolute; the default root of its contracts), longest path first."""
    return sorted(((os.path.abspath(p), root_of_loaded(p)) for p in paths), key=lambda pair: -len(pair[0]))


def _root_of(file: str, roots: list[tuple[str, str]]) -> str:
    path = os.path.abspath(file)
    for loaded, root in roots:
        if path == loaded or path.startswith(loaded.rstrip(os.sep) + os.sep):
            return root
    return root_of_loaded(path)
