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

from dq_contracts.odcs.compiler import compile_contract, outline_contract
from dq_contracts.odcs.folder import FolderIndex
from dq_contracts.odcs.names import INVALID_ASSET_PREFIX, definition_names, fixed_name_taken, name_refusal, short_prefixes, contested_prefixes, distinct_transliterated_keys
from dq_contracts.odcs.servers import checkable, is_file_server, lake_format
from dq_contracts.odcs.classification import share_classification
from dq_contracts.odcs.declaration import (bound, declaration_of, endpoint_missing, env_prefix, files_missing,
                                           root_of_loaded, server_name, server_refusals)
from dq_contracts.odcs.loader import load_documents
from dq_contracts.odcs.paths import named_path, parts_of
from dq_contracts.odcs.plans import ContractPlan
from dq_contracts.odcs.problems import Problem, ProblemSeverity, Reach, contract_errors_of, errors_of
from dq_contracts.odcs.support import alert_policy, policy_warnings, support_refusals
from dq_contracts.odcs.validate import ValidatedContract, validate_document


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
    # file -> the operator's variable that binds the server it uses to its folder (`_CONTRACTS`): such
    # a contract keeps its asset keys, id and names against one not in its own server's bound folder
    keepers: dict[str, str] = field(default_factory=dict)
    # the variables that bind the server of any contract read to folders (folder_bindings): none, and
    # the operator drew no line between teams (a contract's ERROR clauses block the user's asset it names)
    bindings: tuple[str, ...] = ()
    # file -> the short name its Dagster definitions take (compiler.short_prefixes over every compiled
    # contract, so that rejecting one renames no other)
    prefixes: dict[str, str] = field(default_factory=dict)
    # the problems the operator's declaration makes (server_problems, support_problems): `diff`,
    # which connects to nothing, leaves them out; every other problem is the contract's own
    operator_problems: list[Problem] = field(default_factory=list)
    # warnings of what will keep checks from running though nothing is wrong with the contract as
    # read (no server a check can use, no endpoint declared, a path that matches no file yet):
    # `validate` and `check` say them at their lines; not problems, which the Dagster layer shows
    advice: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return errors_of(self.problems)

    @property
    def usable_plans(self) -> list[ContractPlan]:
        """The plans that run: no error outside a single clause (a refused SQL rule fails its own check)."""
        broken = {r.file for r in self.rejected}
        return [p for p in self.plans if p.file not in broken]


NO_SERVER_REMEDY = ("add a `servers` entry (type duckdb with database and schema, postgresql with schema, or local "
                    "with format csv, parquet or json and a path); every check fails until then")
NO_SERVER = f"the contract declares no server to check against: {NO_SERVER_REMEDY}"


def server_problems(plans: Iterable[ContractPlan], server: str | None,
                    line_of=lambda plan, parts=("servers",): None,
                    environ: Mapping[str, str] | None = None, advice: list[Problem] | None = None) -> list[Problem]:
    """What stops a contract's server before anything connects: a `server` name (component,
    resource, --server) the contract does not declare, naming the servers it does declare; and what
    the operator's declaration refuses in the server it will use (declaration.server_refusals: not
    bound to its folder, another type or endpoint, a file outside the roots, a remote location).
    To `advice`, the warnings of a server no check will reach (LoadResult.advice)."""
    found: list[Problem] = []
    advice = [] if advice is None else advice
    for plan in plans:
        names = [server_name(s) for s in plan.servers]
        if server is not None and server not in names:
            found.append(Problem(plan.file, f"no server named {server!r} to check against; this contract declares "
                                 f"{', '.join(repr(n) for n in names) or 'no servers'}", "servers",
                                 line_of(plan, ("servers",))))
            continue
        index = _server_index(plan, server)
        if index is None:  # said here, once, not by every check when it runs
            advice.append(Problem(plan.file, NO_SERVER if not plan.servers else
                                 f"none of the servers declared ({', '.join(map(repr, names))}) is one a check can "
                                 f"run against: {NO_SERVER_REMEDY}", "servers", line_of(plan, ("servers",)),
                                 ProblemSeverity.WARNING))
            continue
        missing = endpoint_missing(plan.servers[index], environ)
        if missing:  # a warning: the operator may set it where this load does not see (another shell, a resource)
            advice.append(Problem(plan.file, f"{missing}; every check against it fails until then",
                                 named_path({"servers": list(plan.servers)}, ["servers", index]),
                                 line_of(plan, ("servers", index)), ProblemSeverity.WARNING))
        physical = tuple(o.physical_name for o in plan.objects)
        refused = server_refusals(plan.servers[index], index, plan.file, plan.folder, plan.root, physical, environ)
        for parts, message in refused:
            found.append(Problem(plan.file, message, named_path({"servers": list(plan.servers)}, parts),
                                 line_of(plan, parts)))
        absent = (not refused and is_file_server(dict(plan.servers[index])) and not lake_format(dict(plan.servers[index]))
                  and files_missing(plan.servers[index], plan.folder, physical))
        if absent:  # a warning: the files may be written before the checks run
            parts = ["servers", index, "path"]
            advice.append(Problem(plan.file, absent, named_path({"servers": list(plan.servers)}, parts),
                                 line_of(plan, parts), ProblemSeverity.WARNING))
    return found


def _server_index(plan: ContractPlan, server: str | None) -> int | None:
    """The index of the server the contract's checks use: the one named `server`, else its first SQL one."""
    names = [server_name(s) for s in plan.servers]
    if server is not None:
        return names.index(server) if server in names else None
    return next((i for i, s in enumerate(plan.servers) if checkable(s)), None)


def _folder_bindings(plans: Iterable[ContractPlan], server: str | None, environ: Mapping[str, str] | None):
    """(plan, the variable, whether it holds the plan) for each plan whose server the operator binds
    to folders (`DQ_CONTRACTS_<SERVER>_CONTRACTS`)."""
    for plan in plans:
        index = _server_index(plan, server)
        if index is None:
            continue
        name = server_name(plan.servers[index])
        declaration = declaration_of(name, environ)
        if declaration.contracts:
            yield plan, f"{env_prefix(name)}_CONTRACTS", bound(declaration, plan.file)


def bound_contracts(plans: Iterable[ContractPlan], server: str | None,
                    environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """file -> the variable (`DQ_CONTRACTS_<SERVER>_CONTRACTS`) by which the operator binds the server
    the contract uses to a folder that holds it: what the operator drew, which no contract can claim
    by what it writes (a file outside the folder is not bound, whatever server it names)."""
    return {plan.file: variable for plan, variable, holds in _folder_bindings(plans, server, environ) if holds}


def folder_bindings(plans: Iterable[ContractPlan], server: str | None,
                    environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The variables by which the operator binds the server of any of these contracts to folders,
    whether or not they hold it: none, and the operator drew no line between teams."""
    return tuple(sorted({variable for _, variable, _ in _folder_bindings(plans, server, environ)}))


def support_problems(plans: Iterable[ContractPlan], line_of=lambda plan, parts: None,
                     environ: Mapping[str, str] | None = None) -> list[Problem]:
    """A support channel the operator's alert allow-list refuses (support.support_refusals): a
    warning at its line; the contract runs, and nothing is sent there. And the operator's own alert
    settings' warnings (support.policy_warnings), once, under the variable's name."""
    policy = alert_policy(environ)
    return [*(Problem("DQ_ALERTS_UI_URL", message, severity=ProblemSeverity.WARNING)
              for message in policy_warnings(policy)),
            *(Problem(plan.file, message, named_path({"support": list(plan.support)}, parts), line_of(plan, parts),
                      ProblemSeverity.WARNING)
              for plan in plans for parts, message in support_refusals(plan.support, policy))]


def load_contracts(paths: Iterable[str | os.PathLike[str]], *, server: str | None = None,
                   environ: Mapping[str, str] | None = None) -> LoadResult:
    """Every contract under `paths`; `server` is the server name checks will use (None: each
    contract's first SQL server), and a contract without it is rejected, as is one whose server
    the operator's declaration (`environ`, default the process's: declaration.py) refuses.
    Every command and the Dagster layer load through here, with these arguments only, so that no
    entry point runs what `validate` refuses (a cron Dagster refuses is the compiler's problem)."""
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


def _not_read(file: str, step: str, exc: Exception) -> Problem:
    """One contract that dq_contracts itself fails on: its error (the others still load). The
    message names the exception's kind only: its text may quote the document."""
    return Problem(file, f"this contract could not be {step}: dq_contracts failed on it ({type(exc).__name__}); "
                   "the other contracts are not affected. Please report it with the file")


def _load_contracts(paths: Iterable[str | os.PathLike[str]], server: str | None,
                    environ: Mapping[str, str] | None) -> LoadResult:
    paths = list(paths)
    documents, problems = load_documents(paths)
    roots = _roots_of(paths)
    # files that could not even be parsed count as read too; a file skipped with a warning does not
    result = LoadResult(problems=problems, files_read=len(documents) + len({p.file for p in errors_of(problems)}))
    documents, links = _links_read_once(documents)
    result.problems.extend(links)
    compiled: list[tuple[ContractPlan, object]] = []
    valid: list[tuple[ValidatedContract, object]] = []
    for document in documents:
        try:
            validated, found = validate_document(document)
        except Exception as exc:  # a bug met by one contract is that contract's error, not the folder's
            validated, found = None, [_not_read(document.file, "validated", exc)]
        result.problems.extend(found)
        if validated is not None:
            valid.append((validated, document))
    folder = FolderIndex(v for v, _ in valid)  # relationships may reference another contract's table
    for validated, document in valid:
        try:
            plan, found = compile_contract(validated, folder)
        except Exception as exc:
            result.problems.append(_not_read(document.file, "compiled", exc))
            continue
        plan = dataclasses.replace(plan, root=_root_of(plan.file, roots))
        result.problems.extend(found)
        compiled.append((plan, document))
    compiled = list(zip(share_classification(distinct_transliterated_keys([p for p, _ in compiled])),
                        (d for _, d in compiled)))
    result.problems.extend(_classified_partitions(compiled))

    result.keepers = bound_contracts((p for p, _ in compiled), server, environ)
    result.bindings = folder_bindings((p for p, _ in compiled), server, environ)
    result.prefixes = short_prefixes((plan for plan, _ in compiled), result.keepers)
    contested_names = contested_prefixes((p for p, _ in compiled), result.keepers)
    for plan, document in compiled:
        others = contested_names.get(plan.file)
        if others:
            keeper = next((f for f in others if f in result.keepers), None)
            result.problems.append(_problem(plan, document, ["name"], (
                f"the contract's name {plan.name!r} is also the name of {', '.join(others[:SHOWN_CLAIMANTS])}: "
                + (f"{keeper}, in a folder the operator binds ({result.keepers[keeper]}), takes it for its Dagster "
                   "names, and this one is" if keeper and plan.file not in result.keepers else
                   "neither takes it for its Dagster names, each is") + f" named after its id "
                f"({result.prefixes[plan.file]!r}); give each contract a name of its own"), "warning"))
    broken = {p.file for p in contract_errors_of(result.problems)}
    lost: dict[str, set[tuple[str, ...]]] = {}
    contested = _cross_file_problems(compiled, result.prefixes, broken, result.keepers, lost)
    result.problems.extend(contested)
    failed = {p.file for p in contract_errors_of(contested)}
    result.plans.extend(plan for plan, _ in compiled if plan.file not in failed)
    by_file = {d.file: d for d in documents}
    # over every compiled contract, rejected or not: each problem is said at once, not one per run
    every = [plan for plan, _ in compiled]
    result.operator_problems = [
        *server_problems(every, server, lambda p, parts: by_file[p.file].line_of(parts), environ, result.advice),
        *support_problems(every, lambda p, parts: by_file[p.file].line_of(parts), environ)]
    result.problems.extend(result.operator_problems)
    result.problems.sort(key=lambda p: (p.file, p.line or 0))

    compiled_by_file = {plan.file: plan for plan, _ in compiled}
    problems_of: dict[str, list[Problem]] = {}
    for problem in result.problems:
        problems_of.setdefault(problem.file, []).append(problem)
    for file in dict.fromkeys(p.file for p in contract_errors_of(result.problems)):
        plan = compiled_by_file.get(file)
        if plan is None and file in by_file:
            plan = outline_contract(by_file[file].data, file)
        if plan is not None and file in lost:  # its problems are not shown on the asset a bound contract kept
            plan = dataclasses.replace(plan, objects=tuple(o for o in plan.objects if o.asset_key not in lost[file]))
        result.rejected.append(RejectedContract(file, tuple(problems_of[file]), plan))
    return result


def _links_read_once(documents: list) -> tuple[list, list[Problem]]:
    """A symbolic link to a contract file read beside it is that file, not a second contract: read
    once, under the file's own path (a warning at the link), so that a link dropped in the folder
    claims nothing and knocks nothing out. Of links alone to one file, the first by path is read."""
    by_real: dict[str, list] = {}
    for document in documents:
        by_real.setdefault(os.path.realpath(document.file), []).append(document)
    kept, found = {}, []
    for real, same in by_real.items():
        keep = next((d for d in same if os.path.abspath(d.file) == real), min(same, key=lambda d: d.file))
        kept[id(keep)] = keep
        found.extend(Problem(d.file, f"a symbolic link to {keep.file}: the same contract, read once, as {keep.file}",
                             severity=ProblemSeverity.WARNING) for d in same if d is not keep)
    return [d for d in documents if id(d) in kept], found


def _classified_partitions(compiled: list[tuple[ContractPlan, object]]) -> list[Problem]:
    """A partition column that is classified (by this contract or any other of its table): each
    partition's results would tell which of its values exist (a static partition per guess), or how
    many rows each day holds of a date of birth."""
    found = []
    for plan, document in compiled:
        for obj in plan.objects:
            column = obj.partitioning and obj.column(obj.partitioning.column)
            if column is not None and column.classified:
                found.append(_problem(plan, document, parts_of(obj.partitioning.clause) or parts_of(obj.pointer),
                                      f"the partition column {column.physical_name!r} is classified "
                                      f"({column.classification_text}); each partition's results would tell its "
                                      "values: partition the table by a column that is not classified"))
    return found


def _roots_of(paths: list[str | os.PathLike[str]]) -> list[tuple[str, str]]:
    """(a path loaded, absolute; the default root of its contracts), longest path first."""
    return sorted(((os.path.abspath(p), root_of_loaded(p)) for p in paths), key=lambda pair: -len(pair[0]))


def _root_of(file: str, roots: list[tuple[str, str]]) -> str:
    path = os.path.abspath(file)
    for loaded, root in roots:
        if path == loaded or path.startswith(loaded.rstrip(os.sep) + os.sep):
            return root
    return root_of_loaded(path)


def _cross_file_problems(compiled: list[tuple[ContractPlan, object]], prefixes: dict[str, str],
                         broken: set[str], keepers: Mapping[str, str] | None = None,
                         lost: dict[str, set[tuple[str, ...]]] | None = None) -> list[Problem]:
    """What one contract would take from another, judged on the whole folder at once, so that no
    file wins by the order files are read in: an (id, version), an asset, a Dagster name claimed by
    two contracts (or twice by one) is a problem of every contract that claims it, each naming the
    others. Such a contract is rejected whole: none of its checks attach anywhere, and every asset
    it names (the contested one too) shows its failing `contract_valid` check. The Dagster names are
    every name `compiler.definition_names` gives (what definitions.py builds, whatever the options);
    a name Dagster would refuse, or one of dq_contracts' own, is a problem too.

    Where the operator drew the boundary (`keepers`: contracts in a folder the server they use is
    bound to), a claim of a bound contract and of unbound ones is the bound contract's: each unbound
    claimant is rejected, naming it, and the assets it lost are added to `lost` (its problems are not
    shown on them); the bound one loads, with a warning. Two bound claimants are judged as above.

    Every contract read claims its id and its assets, even one with errors of its own (`broken`):
    its `contract_valid` check goes on them. Names are claimed only by the contracts still able to
    run: a contract that builds nothing takes no name."""
    keepers = keepers or {}
    lost = {} if lost is None else lost
    found: list[Problem] = []
    # claim -> [(plan, document, document parts, what claims it)], in one pass over every claim
    claims: dict[tuple, list[tuple[ContractPlan, object, tuple, str]]] = {}
    for plan, document in compiled:
        claims.setdefault(("id", plan.id, plan.version), []).append((plan, document, ("id",), "its id"))
        for oi, obj in enumerate(plan.objects):
            parts = tuple(parts_of(obj.pointer)) if obj.pointer else ("schema", oi)
            claims.setdefault(("asset", obj.asset_key), []).append((plan, document, parts, f"object {obj.name!r}"))
            if obj.asset_key and obj.asset_key[0].lower() == INVALID_ASSET_PREFIX:
                found.append(_problem(plan, document, parts, f"asset {'/'.join(obj.asset_key)} is under "
                                      f"{INVALID_ASSET_PREFIX}/, where dq_contracts shows the files it cannot read; "
                                      "give the object another physicalName or dagsterAssetKey"))
    contested = _judge_claims(claims, keepers, lost, found)
    claims = {}
    for plan, document in compiled:
        if plan.file in broken or plan.file in contested:
            continue
        for named in definition_names(plan, prefixes[plan.file]):
            claims.setdefault(("name", named.namespace, named.name), []).append(
                (plan, document, named.parts, named.what))
            fixed = fixed_name_taken(named.namespace, named.name)
            refusal = name_refusal(named.name) or (
                f"Dagster name {named.name!r} ({named.what}) is dq_contracts' own {fixed!r}, or starts like it"
                " (give the contract another `name`)" if fixed else None)
            if refusal:
                found.append(_problem(plan, document, named.parts, refusal))
    _judge_claims(claims, keepers, lost, found)
    return found


def _judge_claims(claims: dict[tuple, list[tuple[ContractPlan, object, tuple, str]]], keepers: Mapping[str, str],
                  lost: dict[str, set[tuple[str, ...]]], found: list[Problem]) -> set[str]:
    """Every claim made more than once, as problems in `found`; the files refused for it."""
    refused: set[str] = set()
    for claim, claimants in claims.items():
        if len(claimants) < 2:
            continue
        kind = claim[0]
        keeping = [c for c in claimants if c[0].file in keepers]
        if keeping and len(keeping) < len(claimants):
            keeper = keeping[0][0]
            for plan, document, parts, label in claimants:
                if plan.file in keepers:
                    continue
                refused.add(plan.file)
                if kind == "asset":
                    lost.setdefault(plan.file, set()).add(claim[1])
                found.append(_problem(plan, document, parts, _CLAIMED[kind](claim, label) + (
                    f" {_claimant(keeper, keeping[0][3])}, in a folder the operator binds to the server it uses "
                    f"({keepers[keeper.file]}), and this contract's folder is not: a bound contract's claim comes first, "
                    "and this one is not loaded; " + _REMEDY[kind] + ", or ask the operator to bind this contract's folder")))
            if len(keeping) == 1:
                plan, document, parts, label = keeping[0]
                others = sorted({c[0].file for c in claimants} - {plan.file})
                found.append(_problem(plan, document, parts, _CLAIMED[kind](claim, label) + (
                    f" {', '.join(others[:SHOWN_CLAIMANTS])}, not in a folder the operator binds to the server "
                    f"it uses: this contract keeps it ({keepers[plan.file]}) and loads; that one is refused"),
                    "warning"))
                continue
            claimants = keeping
        named = sorted((p.file, label2, i) for i, (p, _, _, label2) in enumerate(claimants))
        for i, (plan, document, parts, label) in enumerate(claimants):
            refused.add(plan.file)
            # the first few others by file, so that N files claiming one asset cost N messages, not N²
            others = [f"{label2} of this contract" if file == plan.file else _claimant(claimants[j][0], label2)
                      for file, label2, j in named[:SHOWN_CLAIMANTS + 1] if j != i][:SHOWN_CLAIMANTS]
            more = f" and {len(claimants) - 1 - len(others)} more" if len(claimants) - 1 > len(others) else ""
            found.append(_problem(plan, document, parts, _CLAIMED[kind](claim, label) + f" {'; '.join(others)}{more}: "
                                  "none of them is loaded until only one claims it; " + _REMEDY[kind]))
    return refused


def _claimant(plan: ContractPlan, label: str) -> str:
    return f"{plan.file} ({label} of contract {plan.id!r} {plan.version})"


SHOWN_CLAIMANTS = 5
_CLAIMED = {"id": lambda c, label: f"contract id {c[1]!r} version {c[2]} is also defined in",
            "asset": lambda c, label: f"asset {'/'.join(c[1])} is also claimed by",
            "name": lambda c, label: f"Dagster name {c[2]!r} ({label}) is also taken by"}
_REMEDY = {"id": "give one of them another id or version",
           "asset": "give one of them another physicalName or a dagsterAssetKey custom property",
           "name": "give one of the contracts another `name`, or the object another name"}


def _problem(plan: ContractPlan, document, parts, message: str, severity: str = "error") -> Problem:
    parts = list(parts)
    return Problem(plan.file, message, named_path(document.data, parts), document.line_of(parts), severity)


def not_enforced_problems(result: LoadResult) -> list[Problem]:
    """Every clause of the usable contracts that will not run, as a warning at its file:line with the
    reason (`validate` shows them; `validate --strict` makes them errors, so a CI gate can require
    that every clause is enforced). The files are read again for their lines, only when there are such
    clauses."""
    out: list[Problem] = []
    for plan in result.usable_plans:
        if not plan.not_enforced:
            continue
        documents, _ = load_documents([plan.file])
        document = documents[0] if documents else None
        for clause in plan.not_enforced:
            parts = parts_of(clause.clause)
            out.append(Problem(
                file=plan.file, line=document.line_of(parts) if document else None,
                path=named_path(document.data, parts) if document else clause.clause,
                message=f"not enforced ({clause.code}): {clause.reason}",
                severity=ProblemSeverity.WARNING, reach=Reach.CLAUSE))
    return out

