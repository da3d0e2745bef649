"""`init --against`'s changes (odcs/drift.py records them) made to the contract file's own lines, so
that its diff is a patch of the file: comments, quoting and layout kept wherever nothing changed.
Block YAML as a person or init writes it is edited so: a value on its key's line, a key on a line of
its own, a list item of block YAML, a block or one-line list of text. Anything else answers None,
and drift.py diffs the documents as it writes them. The edited text is parsed again and must be the
very document drift.py made, else None: a line edit never says what the document does not."""

from __future__ import annotations

import re
from typing import Any, Sequence

import yaml

from dq_contracts.odcs.draft import MARK, _y
from dq_contracts.odcs.loader import _NoTimestampLoader

_BLANK = re.compile(r"^\s*(#.*)?$")  # a blank line, or a comment alone on its line


class _Unfit(Exception):
    """A change this module cannot make to the lines as they are written."""


def _node(root: yaml.Node, path: Sequence[str | int]) -> tuple[yaml.Node | None, yaml.Node]:
    """(the key node, the value node) at `path`; the key is None for a list item."""
    key, node = None, root
    for part in path:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            if pair is None:
                raise _Unfit(path)
            key, node = pair
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            key, node = None, node.value[part]
        else:
            raise _Unfit(path)
    return key, node


class _Lines:
    def __init__(self, text: str):
        self.lines = text.splitlines(keepends=True)
        self.eol = "\r\n" if "\r\n" in text else "\n"
        self.replaced: dict[int, list[str]] = {}
        self.after: dict[int, list[str]] = {}

    def replace(self, index: int, lines: list[str]) -> None:
        if index in self.replaced:
            raise _Unfit(index)  # two changes on one line: not made here
        self.replaced[index] = lines

    def insert_after(self, index: int, lines: list[str]) -> None:
        if index == len(self.lines) - 1 and not self.lines[index].endswith(("\n", "\r")):
            self.lines[index] += self.eol
        self.after.setdefault(index, []).extend(line + self.eol for line in lines)

    def dash_of(self, item: yaml.Node) -> int:
        """The column of a block list item's dash (`- ` before the item)."""
        line, column = self.lines[item.start_mark.line], item.start_mark.column
        if column < 2 or line[column - 2:column] != "- " or line[:column - 2].strip():
            raise _Unfit(item)
        return column - 2

    def last_line_of(self, item: yaml.Node) -> int:
        """The last line of a block list item: to where the next token starts, less the blank and
        comment lines before it (a comment above the next item is that item's)."""
        row, column = item.end_mark.line, item.end_mark.column
        end = row - 1 if row >= len(self.lines) or not self.lines[row][:column].strip() else row
        while end > item.start_mark.line and _BLANK.match(self.lines[end]):
            end -= 1
        return end

    def text(self) -> str:
        out = []
        for index, line in enumerate(self.lines):
            out += self.replaced.get(index, [line])
            out += self.after.get(index, [])
        return "".join(out)


def _set(lines: _Lines, key: yaml.Node | None, value: yaml.Node, new: Any) -> None:
    if key is None:
        raise _Unfit(value)
    if isinstance(value, yaml.SequenceNode) and not value.flow_style and isinstance(new, list):
        # a block list of text: the new values appended, item by item, after its last
        old = [v.value for v in value.value]
        if not value.value or new[:len(old)] != old:
            raise _Unfit(value)
        last = value.value[-1]
        if last.start_mark.line != last.end_mark.line:
            raise _Unfit(last)
        dash = lines.dash_of(last)
        lines.insert_after(last.start_mark.line, [" " * dash + "- " + _y(v) for v in new[len(old):]])
        return
    row = key.start_mark.line
    if value.start_mark.line != row or value.end_mark.line != row:
        raise _Unfit(value)
    line = lines.lines[row]
    rest = line[value.end_mark.column:]
    ending = rest[len(rest.rstrip("\r\n")):]
    comment = rest.strip()
    # init's comment said what was measured then: it goes with the value it explained
    kept = "" if not comment or MARK in comment else "  " + comment
    lines.replace(row, [line[:value.start_mark.column] + _y(new) + kept + ending])


def _delete(lines: _Lines, key: yaml.Node | None, value: yaml.Node) -> None:
    if key is None or value.end_mark.line != key.start_mark.line:
        raise _Unfit(value)
    row = key.start_mark.line
    if lines.lines[row][:key.start_mark.column].strip():  # the key shares its line (`- key: …`, a flow mapping)
        raise _Unfit(key)
    lines.replace(row, [])


def _drop(lines: _Lines, item: yaml.Node) -> None:
    lines.dash_of(item)
    for row in range(item.start_mark.line, lines.last_line_of(item) + 1):
        lines.replace(row, [])


def _append(lines: _Lines, sequence: yaml.Node, drawn: list[str], indent: int) -> None:
    if not isinstance(sequence, yaml.SequenceNode) or sequence.flow_style or not sequence.value:
        raise _Unfit(sequence)
    last = sequence.value[-1]
    dash = lines.dash_of(last)
    lines.insert_after(lines.last_line_of(last), [" " * dash + line[indent:] for line in drawn])


def edited(text: str, edits: list[tuple], now: Any) -> str | None:
    """The file's text with every change made to its own lines, or None where one cannot be."""
    try:
        root = yaml.compose(text, Loader=_NoTimestampLoader)
        if root is None:
            return None
        lines = _Lines(text)
        for edit in edits:
            kind, path = edit[0], edit[1]
            key, node = _node(root, path)
            if kind == "set":
                _set(lines, key, node, edit[2])
            elif kind == "delete":
                _delete(lines, key, node)
            elif kind == "drop":
                _drop(lines, node)
            else:
                _append(lines, node, edit[2], edit[3])
        result = lines.text()
        again = yaml.load(result, Loader=_NoTimestampLoader)  # noqa: S506 (the safe loader's subclass)
    except (_Unfit, yaml.YAMLError, ValueError, IndexError):
        return None
    return result if again == now else None
