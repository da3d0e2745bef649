"""Classification belongs to the table, not to one document: shared over every contract loaded."""

from __future__ import annotations

import fnmatch
import glob as globbing
import os
import re
from dataclasses import replace
from typing import Callable

from dq_contracts.odcs.declaration import Files, inside, is_remote, local_path, resolved
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, ObjectPlan
from dq_contracts.odcs.servers import is_file_server, lake_format, lake_location


def _table_key(server: tuple[tuple, str | None, Callable[[str], str]], physical_name: str) -> str:
    """A physical table, as far as classification goes: its table name in lower case, whatever the
    server, schema or catalog. That classifies more than the one table on its endpoint (the same name
    on another server shares it), and in exchange no spelling of an endpoint can tell two contracts
    of one table apart: another case, a catalog or schema written out, a port written as text, a
    host's alias, the operator's URL standing for what the contract wrote."""
    return physical_name.split(".")[-1].lower()



_ANY_SERVER = ((), None, str.lower)



def _file_patterns(plan: ContractPlan, physical_name: str) -> tuple[str, ...]:
    """What an object of a file server reads, as resolved globs, on every file server of its
    contract: a file is the table there, and its physicalName (`./people`, `sub/../people`, any name
    on a server whose path names the file) need not say which. A Delta table is its folder: the
    glob of everything below it (its data files, which a parquet glob may read too)."""
    found = []
    for server in plan.servers:
        entry = dict(server)
        if is_file_server(entry):
            pattern = Files(str(server.get("format")), str(server["path"])).pattern_of(physical_name)
        elif lake_format(entry) == "delta":
            folder = Files("delta", lake_location(entry)).pattern_of(physical_name).rstrip("/")
            pattern = folder + "/**"
        else:
            continue
        found.append(pattern if is_remote(pattern) else resolved(local_path(pattern, plan.folder)))
    return tuple(found)


def _files_now(plan: ContractPlan, pattern: str) -> frozenset[str]:
    """The real paths a local glob matches now, as the reader expands it; only inside the folder
    that holds the contract's folder (the default root), so that no glob walks the whole disk."""
    top = os.path.dirname(os.path.realpath(plan.folder)) if plan.folder else None
    if is_remote(pattern) or not top or not inside(pattern, (top,)):
        return frozenset()
    return frozenset(os.path.realpath(m) for m in globbing.glob(pattern, recursive=True))


def _same_files(ours: tuple[tuple[str, frozenset[str]], ...], theirs: tuple[tuple[str, frozenset[str]], ...]) -> bool:
    """Whether two objects' globs may read one file: a path both globs match, in lower case (so a
    case-insensitive file system is covered too; on Linux `A.csv` and `a.csv` then share too), or a
    file both expand to now (a symlinked folder reaches one file by two paths)."""
    return any(_meet(_segments(a.lower()), _segments(b.lower()), "**", _segment_meets, [_MAX_STATES])
               or (files & others) for a, files in ours for b, others in theirs)


def _segments(pattern: str) -> tuple[str, ...]:
    # `.` and empty segments name no folder (`a/./b`, `a//b`); `..` after a glob is refused at load
    return tuple(s for s in pattern.split("/") if s not in ("", "."))


def _segment_meets(a: str, b: str, budget: list[int]) -> bool:
    """Whether two one-segment globs (fnmatch's, as Python's glob reads a segment) match one name."""
    return _meet(_tokens(a), _tokens(b), "*", _char_meets, budget)


def _tokens(segment: str) -> tuple[str, ...]:
    """A segment's glob as tokens: `*`, `?`, a `[...]` set, or one literal character."""
    return tuple(re.findall(r"\*|\?|\[!?\]?[^\]]*\]|.", re.sub(r"\*+", "*", segment)))


def _char_meets(a: str, b: str, budget: list[int]) -> bool:
    """Whether two one-character tokens accept a common character (two sets are taken to)."""
    if len(a) > 1 and len(b) > 1:
        return True
    char, other = (a, b) if len(a) == 1 else (b, a)
    return "?" in (char, other) or char == other or (len(other) > 1 and fnmatch.fnmatchcase(char, other))


# past this many steps over both levels, two globs are taken to meet (erring on the side of one file):
# a hostile glob costs at most this much per pair
_MAX_STATES = 200_000


def _meet(a: tuple[str, ...], b: tuple[str, ...], star: str, meets: Callable[[str, str, list[int]], bool],
          budget: list[int]) -> bool:
    """Whether two sequences of glob tokens match a common sequence: a walk over both at once (the
    product of their automata), `star` standing for any number of the other side's tokens: `**` in
    a path (Python's recursive glob: zero or more folders), `*` in a name."""
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) == (len(a), len(b)):
            return True
        budget[0] -= 1
        if budget[0] < 0:
            return True
        steps = []
        if i < len(a) and a[i] == star:
            steps += [(i + 1, j)] + ([(i, j + 1)] if j < len(b) else [])
        if j < len(b) and b[j] == star:
            steps += [(i, j + 1)] + ([(i + 1, j)] if i < len(a) else [])
        if i < len(a) and j < len(b) and star not in (a[i], b[j]) and meets(a[i], b[j], budget):
            steps.append((i + 1, j + 1))
        for step in steps:
            if step not in seen:
                seen.add(step)
                todo.append(step)
    return False


def share_classification(plans: list[ContractPlan]) -> list[ContractPlan]:
    """Every plan with each column classified that any plan of `plans` classifies on the same
    physical table (a table of that name, in any case, on any server: `_table_key`; on a file
    server, any object whose files may be the same: `_file_patterns`): a second contract cannot
    declassify a column by leaving `classification` out, nor by naming its file another way. A
    column classified only by another file says which (`ColumnPlan.classified_by`). The union is
    over the contracts loaded together: a file checked alone knows only its own classifications.
    Each plan keeps the union by table (`ContractPlan.classified_tables`), for the names of a table
    only its warehouse knows (engine/other_names.py)."""
    servers = {id(plan): [_ANY_SERVER] for plan in plans}
    by_table: dict[tuple, dict[str, tuple[str, str]]] = {}  # table -> folded column -> (classification, file)
    by_files: list[tuple[tuple, dict[str, tuple[str, str]]]] = []  # classified file objects
    expanded: dict[tuple[str, str], frozenset[str]] = {}  # each glob expanded once per load

    def reads(plan: ContractPlan, physical_name: str) -> tuple[tuple[str, frozenset[str]], ...]:
        """Each glob the object reads, with the files it matches now."""
        out = []
        for pattern in _file_patterns(plan, physical_name):
            key = (plan.folder or "", pattern)
            if key not in expanded:
                expanded[key] = _files_now(plan, pattern)
            out.append((pattern, expanded[key]))
        return tuple(out)
    for plan in plans:
        for server in servers[id(plan)]:
            for obj in plan.objects:
                found = by_table.setdefault(_table_key(server, obj.physical_name), {})
                classified = {server[2](c.physical_name): (c.classification_shared, plan.file)
                              for c in obj.columns if c.classified and not c.classified_by}
                for column, source in classified.items():
                    found.setdefault(column, source)
                patterns = reads(plan, obj.physical_name) if classified else ()
                if patterns:
                    by_files.append((patterns, classified))
    if not any(by_table.values()):
        return plans
    tables = tuple(sorted((table, tuple(sorted((column, *source) for column, source in columns.items())))
                          for table, columns in by_table.items() if columns))
    files = tuple((patterns, tuple(sorted((column, *source) for column, source in columns.items())))
                  for patterns, columns in by_files)
    out = []
    for plan in plans:
        def union(physical_name: str) -> dict[str, tuple[str, str]]:
            merged: dict[str, tuple[str, str]] = {}
            for server in servers[id(plan)]:
                for column, source in by_table.get(_table_key(server, physical_name), {}).items():
                    merged.setdefault(column, source)
            patterns = reads(plan, physical_name) if by_files else ()
            for theirs, columns in by_files if patterns else ():
                if _same_files(patterns, theirs):
                    for column, source in columns.items():
                        merged.setdefault(column, source)
            return merged

        fold = servers[id(plan)][0][2] if servers[id(plan)] else str.lower
        shared_tables: dict[int, dict] = {}  # a contract's SQL rules share one tables map: shared once

        def classify(obj: ObjectPlan) -> ObjectPlan:
            merged = union(obj.physical_name)
            columns = tuple(replace(c, classification=merged[fold(c.physical_name)][0],
                                    classified_by=merged[fold(c.physical_name)][1])
                            if not c.classified and fold(c.physical_name) in merged else c for c in obj.columns)
            checks = tuple(_shared_check(c, union, fold, shared_tables) for c in obj.checks)
            return obj if (columns, checks) == (obj.columns, obj.checks) else replace(obj, columns=columns,
                                                                                      checks=checks)

        objects = tuple(classify(o) for o in plan.objects)
        out.append(replace(plan, objects=objects, classified_tables=tables, classified_files=files))
    return out


def classified_by_table(plans: list[ContractPlan]) -> Callable[[str], set[str]]:
    """The columns any of `plans` classifies on a table (named as `_table_key` names it), by its
    physicalName: what `init --against` withholds, a table the contract has no object for too."""
    found: dict[str, set[str]] = {}
    for plan in plans:
        for obj in plan.objects:
            found.setdefault(_table_key(_ANY_SERVER, obj.physical_name), set()).update(
                c.physical_name for c in obj.columns if c.classified)
    return lambda physical_name: found.get(_table_key(_ANY_SERVER, physical_name), set())


def _shared_check(check: CheckPlan, union, fold, shared_tables: dict[int, dict]) -> CheckPlan:
    """A check that reads another table of the contract, told which of its columns are classified
    by any contract of that table: a relationship's target, the tables a SQL rule may read (whose
    judge, where the rule runs, then refuses a classified column used as anything but a count)."""
    if check.kind == "relationship" and not check.params.get("target_classified") \
            and union(str(check.params["target_table"])):
        return replace(check, params=replace(check.params, target_classified=True))
    if check.kind == "sql" and check.params.get("tables"):
        original = check.params["tables"]
        if id(original) not in shared_tables:
            shared = {table: {column: classified or fold(column) in union(table) for column, classified in
                              columns.items()} for table, columns in original.items()}
            shared_tables[id(original)] = original if shared == original else shared
        tables = shared_tables[id(original)]
        if tables is not original:
            return replace(check, params=replace(check.params, tables=tables))
    return check


def classified_on(plan: ContractPlan, physical_name: str) -> dict[str, tuple[str, str]]:
    """What the contracts loaded with `plan` classify on a table (named as `_table_key` names it):
    column in lower case -> (classification, file)."""
    key = _table_key(_ANY_SERVER, physical_name)
    return next(({column: (word, file) for column, word, file in columns}
                 for table, columns in plan.classified_tables if table == key), {})


def classified_below(plan: ContractPlan, folder: str) -> dict[str, tuple[str, str]]:
    """What the contracts loaded with `plan` classify on the files below `folder` (a lake table's
    location, as its catalog names it): column in lower case -> (classification, file)."""
    location = folder[len("file://"):] if folder.startswith("file://") else folder
    pattern = location.rstrip("/") + "/**"
    if not is_remote(pattern):
        pattern = resolved(pattern)
    ours = ((pattern, _files_now(plan, pattern)),)
    found: dict[str, tuple[str, str]] = {}
    for theirs, columns in plan.classified_files:
        if _same_files(ours, theirs):
            for column, word, file in columns:
                found.setdefault(column, (word, file))
    return found
