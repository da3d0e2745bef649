"""Find and read ODCS contract files safely.

YAML is read with libyaml (`CSafeLoader`, about 15x faster than the pure-Python loader) with the
timestamp resolver removed, so that dates stay strings as they would in JSON. Before anything is
built, one pass over the parser's events refuses documents that are nested too deep or whose
aliases would expand into a huge document (a "billion laughs" bomb): both would otherwise hang or
crash the recursive composer. Line numbers are only looked up when a problem needs one.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

from dq_contracts.problems import Problem

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 64
MAX_EXPANDED_NODES = 200_000

CONTRACT_SUFFIXES = (".odcs.yaml", ".odcs.yml", ".odcs.json")
DATA_SUFFIXES = (".yaml", ".yml", ".json")
_KIND_HINT = re.compile(rb"DataContract")


class _NoTimestampLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe loader that keeps dates and timestamps as the strings they were written as, and refuses
    what YAML allows but a contract cannot mean: a key given twice (the last would silently win)
    and keys that are not text (`on:` is a boolean in YAML 1.1)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                hint = " (YAML 1.1 reads it as a boolean)" if isinstance(key, bool) else ""
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key_node.value!r} is not text{hint}; quote it", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}: given twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_NoTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass
class LoadedDocument:
    """One contract file's parsed content, with a lazy map from document paths to lines."""

    file: str  # as the user should see it (relative to the working directory when possible)
    data: Any
    text: str = field(repr=False, default="")
    is_json: bool = False
    _root_node: Any = field(default=None, repr=False)

    def line_of(self, parts: Sequence[str | int]) -> int | None:
        """Line (1-based) of the node at `parts`, or of its nearest ancestor that exists."""
        if self._root_node is None:
            try:
                self._root_node = yaml.compose(self.text, Loader=_NoTimestampLoader) or False
            except yaml.YAMLError:
                self._root_node = False
        node = self._root_node
        if not node:
            return None
        line = node.start_mark.line + 1
        for part in parts:
            child = None
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if getattr(key, "value", None) == str(part):
                        child = value
                        line = key.start_mark.line + 1
                        break
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if 0 <= part < len(node.value):
                    child = node.value[part]
                    line = child.start_mark.line + 1
            if child is None:
                break
            node = child
        return line


def display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def find_contract_files(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[Problem]]:
    """Every candidate file under `paths` (files or folders, searched recursively), sorted."""
    found: dict[Path, None] = {}
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for candidate in sorted(path.rglob("*")):
                if candidate.is_file() and candidate.name.lower().endswith(DATA_SUFFIXES):
                    if not any(part.startswith(".") for part in candidate.relative_to(path).parts):
                        found[candidate] = None
        elif path.is_file():
            found[path] = None
        else:
            problems.append(Problem(str(raw), "no such file or folder"))
    return list(found), problems


# `*name` where YAML reads an alias (after a space, `[`, `{` or `,`): `COUNT(*)` or `a * b` are not
_ALIAS = re.compile(r"(?:^|[\s\[{,])\*[^\s,\]}]")


def _too_deep(root: Any) -> bool:
    """Whether a node graph without aliases nests deeper than MAX_DEPTH (only collections walked)."""
    todo = [(root, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, yaml.MappingNode):
            todo.extend((v, depth + 1) for pair in node.value for v in pair if not isinstance(v, yaml.ScalarNode))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((v, depth + 1) for v in node.value if not isinstance(v, yaml.ScalarNode))
    return False


def _guard_yaml(text: str) -> str | None:
    """Refuse deep nesting and alias bombs by walking parser events (no recursion, no building)."""
    sizes: dict[str, int] = {}
    stack: list[list[Any]] = []  # [anchor, expanded size so far]
    total = 0
    for event in yaml.parse(text, Loader=_NoTimestampLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            stack.append([event.anchor, 1])
            if len(stack) > MAX_DEPTH:
                return f"nesting is deeper than {MAX_DEPTH} levels"
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size = stack.pop()
            if anchor:
                sizes[anchor] = size
            if stack:
                stack[-1][1] += size
            else:
                total += size
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            size = 1 if isinstance(event, yaml.ScalarEvent) else sizes.get(event.anchor, 1)
            if isinstance(event, yaml.ScalarEvent) and event.anchor:
                sizes[event.anchor] = 1
            if stack:
                stack[-1][1] += size
            else:
                total += size
        if (stack and stack[-1][1] > MAX_EXPANDED_NODES) or total > MAX_EXPANDED_NODES:
            return (
                f"the document expands to more than {MAX_EXPANDED_NODES:,} nodes "
                "(aliases repeated too often: refused as an alias bomb)"
            )
    return None


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"duplicate key {key!r}: given twice in one object")
        result[key] = value
    return result


def _json_depth_ok(data: Any) -> bool:
    todo = [(data, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, dict):
            todo.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            todo.extend((v, depth + 1) for v in node)
    return True


def read_document(path: Path, *, explicit: bool = False) -> tuple[LoadedDocument | None, list[Problem]]:
    """Parse one file. Returns (None, []) for a file that is not a contract and was not named."""
    shown = display_path(path)
    is_contract_name = path.name.lower().endswith(CONTRACT_SUFFIXES)
    try:
        size = path.stat().st_size
    except OSError as exc:
        return None, [Problem(shown, f"cannot read the file: {exc.strerror or exc}")]
    if size > MAX_FILE_BYTES:
        if not (is_contract_name or explicit):
            return None, []
        return None, [
            Problem(shown, f"file is {size / 1024 / 1024:.1f} MiB, over the limit of "
                           f"{MAX_FILE_BYTES // 1024 // 1024} MiB for a contract; refused")
        ]
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, [Problem(shown, f"cannot read the file: {exc.strerror or exc}")]
    if not is_contract_name and not explicit and not _KIND_HINT.search(raw):
        return None, []  # e.g. a defs.yaml beside the contracts
    if b"\x00" in raw:
        return None, [Problem(shown, "not a text file (contains NUL bytes); refused")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [Problem(shown, f"not UTF-8 text (invalid byte at offset {exc.start}); refused")]

    is_json = path.name.lower().endswith(".json")
    if is_json:
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except RecursionError:
            return None, [Problem(shown, f"nesting is deeper than {MAX_DEPTH} levels")]
        except ValueError as exc:
            line = getattr(exc, "lineno", None)
            msg = getattr(exc, "msg", str(exc))
            return None, [Problem(shown, f"invalid JSON: {msg}", line=line)]
        if not _json_depth_ok(data):
            return None, [Problem(shown, f"nesting is deeper than {MAX_DEPTH} levels")]
    else:
        try:
            # compose once (libyaml), judge it, then build from the same nodes; the node tree is
            # kept, so line numbers of every clause cost nothing
            aliased = bool(_ALIAS.search(text))
            refusal = _guard_yaml(text) if aliased else None  # aliases: counted as expanded, from events
            if refusal:
                return None, [Problem(shown, refusal)]
            loader = _NoTimestampLoader(text)
            try:
                nodes, docs = [], []
                while loader.check_node():
                    nodes.append(loader.get_node())
                    if not aliased and _too_deep(nodes[-1]):  # (the event walk judged depth already)
                        return None, [Problem(shown, f"nesting is deeper than {MAX_DEPTH} levels")]
                    docs.append(loader.construct_document(nodes[-1]))
            finally:
                loader.dispose()
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            context = getattr(exc, "context", None)
            detail = f"{context}, {problem}" if context else problem
            if "nesting depth" in detail:
                return None, [Problem(shown, "nesting is deeper than the YAML parser allows", line=line)]
            return None, [Problem(shown, f"invalid YAML: {detail}", line=line)]
        except RecursionError:
            return None, [Problem(shown, f"nesting is deeper than {MAX_DEPTH} levels")]
        except ValueError as exc:  # e.g. an integer of more digits than Python converts
            return None, [Problem(shown, f"invalid YAML: {str(exc).splitlines()[0][:200]}")]
        if len(docs) > 1:
            return None, [Problem(shown, f"holds {len(docs)} YAML documents; a contract file holds one")]
        data = docs[0] if docs else None

    if not is_contract_name and not explicit:
        if not (isinstance(data, dict) and data.get("kind") == "DataContract"):
            return None, []
    if data is None:
        return None, [Problem(shown, "the file is empty")]
    if not isinstance(data, dict):
        kind = type(data).__name__.replace("str", "text").replace("list", "a list")
        return None, [Problem(shown, f"a contract is a mapping of keys, but this file holds {kind}")]
    return LoadedDocument(shown, data, text, is_json, _root_node=None if is_json else (nodes[0] if nodes else False)), []


def load_documents(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[LoadedDocument], list[Problem]]:
    """Read every contract under `paths`; files named on the command line are always contracts."""
    paths = list(paths)
    named = {Path(p) for p in paths if Path(p).is_file()}
    files, problems = find_contract_files(paths)
    documents: list[LoadedDocument] = []
    for file in files:
        document, found = read_document(file, explicit=file in named)
        problems.extend(found)
        if document is not None:
            documents.append(document)
    return documents, problems
