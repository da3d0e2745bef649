"""Find and read ODCS contract files safely.

YAML is read with libyaml (`CSafeLoader`, about 15x faster than the pure-Python loader) with the
timestamp resolver removed, so that dates stay strings as they would in JSON. A document is parsed
once: libyaml composes its node graph, and one walk over that graph refuses documents nested too
deep or whose aliases would expand into a huge document (a "billion laughs" bomb: an alias is a
shared node, counted at its expanded size without being expanded), builds the data, and notes the
line of every key and list item, so that finding a line costs a few dictionary lookups.

Whatever that walk does not expect (an error, a duplicate or non-text key, merge keys, explicit
tags, a recursive alias, a document too deep or too big) is read again the careful way: one pass
over the parser's events refuses nesting and alias bombs before anything is built, then PyYAML's
own constructor builds the data or words the error, and lines are looked up only when needed.
"""

from __future__ import annotations

import json
import operator
import os
import stat
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import yaml

from dq_contracts.odcs.problems import Problem
from dq_contracts.odcs.walk import walk_folder

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 64
MAX_EXPANDED_NODES = 200_000
# A longer text is guarded before it is composed (a node graph costs memory); contracts in the wild
# are far shorter.
MAX_SINGLE_PASS_CHARS = 256 * 1024

CONTRACT_SUFFIXES = (".odcs.yaml", ".odcs.yml", ".odcs.json")
DATA_SUFFIXES = (".yaml", ".yml", ".json")
_KIND_HINT = re.compile(rb"(?i)datacontract")  # in any case: `kind: Datacontract` is said, not skipped silently


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

    # This loader has no path resolvers (`add_path_resolver`), so the resolver has no path to follow
    # into and out of each node: C no-ops instead of two Python calls a node. And the tag of a plain
    # scalar depends on its text alone: the same short texts (keys, types, small numbers) recur in
    # every contract, so their tags are kept.
    descend_resolver = staticmethod(operator.is_)  # (parent, index) -> ignored
    ascend_resolver = staticmethod(tuple)  # () -> ignored
    _plain_tags: dict[str, str] = {}

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0] and not self.yaml_path_resolvers:
            tag = self._plain_tags.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(value) <= 64 and len(self._plain_tags) < 10_000:
                    self._plain_tags[value] = tag
            return tag
        return super().resolve(kind, value, implicit)


assert not _NoTimestampLoader.yaml_path_resolvers, "descend_resolver and ascend_resolver do nothing"
_NoTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# The lines of a document, as one flat dictionary of strings and integers (nothing that the garbage
# collector walks, so that a thousand documents' lines cost it nothing): every collection has a
# number (the root 0); the key of a mapping entry is "<number>:<key text>", of a list item
# "<number>#<index>", and its value is the entry's line << 32 | 1 + the number of the collection it
# holds (0 for a scalar). The root itself is under "".
_Lines = dict[str, int]


def _place(line: int, collection: int) -> int:
    return (line << 32) | (collection + 1)


@dataclass
class LoadedDocument:
    """One contract file's parsed content, with a map from document paths to lines."""

    file: str  # as the user should see it (relative to the working directory when possible)
    data: Any
    text: str = field(repr=False, default="")
    is_json: bool = False
    _lines: _Lines | None = field(default=None, repr=False, compare=False)  # None: not looked up yet

    def line_of(self, parts: Sequence[str | int]) -> int | None:
        """Line (1-based) of the node at `parts`, or of its nearest ancestor that exists."""
        place = self.root_place()
        if place is None:
            return None
        for part in parts:
            found = self.place_in(place, part)
            if found is None:
                break
            place = found
        return line_at(place)

    # `line_of` one part at a time, for a caller that looks up many paths with common prefixes: a
    # place is the root's or an entry's, and `line_at` its line

    def root_place(self) -> int | None:
        if self._lines is None:
            self._lines = _lines_of_text(self.text)
        return self._lines.get("")

    def place_in(self, place: int, part: str | int) -> int | None:
        """The place of `part` in the collection at `place`; None if there is none."""
        at = (place & 0xFFFFFFFF) - 1
        if at < 0:
            return None
        lines = self._lines or {}
        # a mapping entry by its key's text (`1` finds the key "1"), a list item by its index
        found = lines.get(f"{at}#{part}") if isinstance(part, int) else None
        return lines.get(f"{at}:{part}") if found is None else found


def line_at(place: int) -> int:
    return place >> 32


def _lines_of_text(text: str) -> _Lines:
    """The lines of a document read the careful way: composed again (empty if it cannot be)."""
    try:
        root = yaml.compose(text, Loader=_NoTimestampLoader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return {}
    return _index_lines(root) if root is not None else {}


def _index_lines(root: yaml.Node) -> _Lines:
    """`line_of`'s index of a node graph: in a mapping the first key of each text (non-text keys
    cannot be named), in a sequence every item. An aliased node is indexed once, where it is
    defined, and every path through an alias leads there (so a recursive alias is no endless walk)."""
    numbers: dict[int, int] = {}
    todo: list[yaml.Node] = []

    def number(node: yaml.Node) -> int:
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return -1
        if id(node) not in numbers:
            numbers[id(node)] = len(numbers)
            todo.append(node)
        return numbers[id(node)]

    lines: _Lines = {"": _place(root.start_mark.line + 1, number(root))}
    while todo:
        node = todo.pop()
        at = numbers[id(node)]
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key.value, str) and f"{at}:{key.value}" not in lines:
                    lines[f"{at}:{key.value}"] = _place(key.start_mark.line + 1, number(value))
        else:
            for index, item in enumerate(node.value):
                lines[f"{at}#{index}"] = _place(item.start_mark.line + 1, number(item))
    return lines


def display_path(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)


def _read_without_blocking(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file, opened so that a FIFO, a device or a file of /proc
    that would block refuses instead (O_NONBLOCK), and never more than the limit read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def find_contract_files(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[Problem]]:
    """Every candidate file under `paths` (files or folders, searched recursively), sorted."""
    found: dict[Path, None] = {}
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if os.path.isdir(path):
            candidates, refused = walk_folder(path, DATA_SUFFIXES)
            problems.extend(Problem(where, why) for where, why in refused)
            found.update(dict.fromkeys(candidates))
        elif os.path.isfile(path):
            found[path] = None
        elif os.path.exists(path):  # never read (it may block); the shell's <(git show …) is one
            problems.append(Problem(str(raw), "not a regular file (a pipe such as the shell's <(…), a device, a "
                                    "socket): not read; write it to a file, or give it to diff as - on stdin"))
        elif not path.is_absolute():  # a relative path is read from the current folder, which may not be the project's
            problems.append(Problem(str(raw), f"no such file or folder (looked for {os.path.abspath(path)}: a "
                                    "relative path is read from the current folder)"))
        else:
            problems.append(Problem(str(raw), "no such file or folder"))
    return list(found), problems


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


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# The values of short null, bool, int and float texts, by tag: they recur in every contract (true,
# 0, 1000), and what they are is immutable, so they are built once.
_PLAIN_VALUES: dict[str, dict[str, Any]] = {
    tag: {} for tag in ("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                        "tag:yaml.org,2002:float")
}
_UNSEEN = object()


class _NotRegular(Exception):
    """What the single pass leaves to the careful one (which finds the same, and words it)."""


def _read_yaml_once(text: str) -> tuple[Any, _Lines] | None:
    """(data, lines) of a one-document YAML text with nothing unusual in it, parsed once; None for
    anything else, to be read the careful way. It returns only what `yaml.load` would, and only
    where `_guard_yaml` passes: depth as written (an alias is a leaf), size as expanded."""
    loader = _NoTimestampLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, {}
        constructors = loader.yaml_constructors
        scalar, mapping, sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
        done: dict[int, tuple[Any, int, int] | None] = {}  # node -> (data, its number, expanded size)
        lines: _Lines = {}
        count = 0

        def build(node: yaml.Node, depth: int) -> tuple[Any, int]:
            """(data, number of the collection or -1) of a node that is not a plain text scalar."""
            nonlocal count
            kind = node.__class__
            if kind is scalar:
                count += 1
                known = _PLAIN_VALUES.get(node.tag)
                if known is None:
                    raise _NotRegular
                value = known.get(node.value, _UNSEEN)
                if value is _UNSEEN:
                    value = constructors[node.tag](loader, node)
                    if len(node.value) <= 32 and len(known) < 4096:
                        known[node.value] = value
                return value, -1
            seen = done.get(id(node), False)
            if seen is not False:  # an alias: the same data, counted at its expanded size
                if seen is None:
                    raise _NotRegular  # inside its own anchor
                count += seen[2]
                if count > MAX_EXPANDED_NODES:
                    raise _NotRegular
                return seen[0], seen[1]
            if depth >= MAX_DEPTH:
                raise _NotRegular
            done[id(node)] = None
            at = len(done) - 1
            start = count
            count += 1
            data: Any
            if kind is mapping and node.tag == _MAP:
                data = {}
                prefix = f"{at}:"
                for key_node, value_node in node.value:
                    name = key_node.value
                    if key_node.__class__ is not scalar or key_node.tag != _STR or name in data:
                        raise _NotRegular
                    if value_node.__class__ is scalar and value_node.tag == _STR:  # most values
                        count += 2
                        data[name] = value_node.value
                        lines[prefix + name] = (key_node.start_mark.line + 1) << 32
                    else:
                        count += 1
                        data[name], inner = build(value_node, depth + 1)
                        lines[prefix + name] = ((key_node.start_mark.line + 1) << 32) | (inner + 1)
            elif kind is sequence and node.tag == _SEQ:
                data = []
                prefix = f"{at}#"
                for index, item in enumerate(node.value):
                    if item.__class__ is scalar and item.tag == _STR:
                        count += 1
                        data.append(item.value)
                        lines[prefix + str(index)] = (item.start_mark.line + 1) << 32
                    else:
                        value, inner = build(item, depth + 1)
                        data.append(value)
                        lines[prefix + str(index)] = ((item.start_mark.line + 1) << 32) | (inner + 1)
            else:
                raise _NotRegular
            if count > MAX_EXPANDED_NODES:
                raise _NotRegular
            done[id(node)] = (data, at, count - start)
            return data, at

        if root.__class__ is yaml.ScalarNode and root.tag == _STR:
            data, at = root.value, -1
        else:
            data, at = build(root, 0)
        lines[""] = _place(root.start_mark.line + 1, at)
        return data, lines
    except Exception:  # whatever it is, the careful path finds it and words it
        return None
    finally:
        build = None  # the closure refers to itself: break the cycle now, not at the next collection
        loader.dispose()


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
        raw = _read_without_blocking(path, MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, [Problem(shown, f"cannot read the file: {exc.strerror or exc}")]
    if len(raw) > MAX_FILE_BYTES:  # it grew, or says a size of 0 (a file of /proc)
        return None, [Problem(shown, f"file is over the limit of {MAX_FILE_BYTES // 1024 // 1024} MiB for a "
                                     "contract; refused")]
    if not is_contract_name and not explicit and not _KIND_HINT.search(raw):
        return None, []  # e.g. a defs.yaml beside the contracts
    if b"\x00" in raw:
        return None, [Problem(shown, "not a text file (contains NUL bytes); refused")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [Problem(shown, f"not UTF-8 text (invalid byte at offset {exc.start}); refused")]

    is_json = path.name.lower().endswith(".json")
    lines = None
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
        once = _read_yaml_once(text) if len(text) <= MAX_SINGLE_PASS_CHARS else None
        if once is not None:
            data, lines = once
        else:
            try:
                refusal = _guard_yaml(text)
                if refusal:
                    return None, [Problem(shown, refusal)]
                docs = list(yaml.load_all(text, Loader=_NoTimestampLoader))
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
            kind = data.get("kind") if isinstance(data, dict) else None
            if isinstance(kind, str) and kind.strip().lower() == "datacontract":  # a contract, misspelt
                return None, [Problem(shown, f"skipped: `kind: {kind}` is not `kind: DataContract`, so this file is "
                                             "not read as a contract (a file not named *.odcs.yaml is read when its "
                                             "kind is DataContract, spelt so)", "kind", severity="warning")]
            return None, []
    if data is None:
        return None, [Problem(shown, "the file is empty")]
    if not isinstance(data, dict):
        kind = type(data).__name__.replace("str", "text").replace("list", "a list")
        return None, [Problem(shown, f"a contract is a mapping of keys, but this file holds {kind}")]
    return LoadedDocument(shown, data, text, is_json, lines), []


def load_documents(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[LoadedDocument], list[Problem]]:
    """Read every contract under `paths`; files named on the command line are always contracts."""
    paths = list(paths)
    named = {Path(p) for p in paths if os.path.isfile(p)}
    files, problems = find_contract_files(paths)
    documents: list[LoadedDocument] = []
    for file in files:
        document, found = read_document(file, explicit=file in named)
        problems.extend(found)
        if document is not None:
            documents.append(document)
    return documents, problems
