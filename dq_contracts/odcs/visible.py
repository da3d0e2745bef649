"""Contract text as people read it: a character that shows nothing, or shows other text than it is
(a bidirectional override such as U+202E, a zero-width space or joiner, a control, a private-use or
unassigned code point), escaped visibly as `\\u202e`. Every text of a contract that reaches Dagster
or the command line passes here; names never hold such a character at all (names.ascii_name)."""

from __future__ import annotations

import unicodedata
from typing import Any

# The characters that hide or reorder text: controls, format characters (bidirectional overrides,
# zero-width spaces and joiners), private-use, surrogates, unassigned, line and paragraph separators
INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
KEPT = frozenset("\n\t")  # a description's lines and indents show as what they are


def visible(text: Any) -> str:
    """`text` with every character that hides or reorders text written as `\\uXXXX` (`\\UXXXXXXXX`
    beyond the first plane)."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text  # the common case, at no cost
    return "".join(_escaped(c) if c not in KEPT and unicodedata.category(c) in INVISIBLE else c for c in text)


def _escaped(char: str) -> str:
    return f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"


def visible_all(value: Any) -> Any:
    """`value` with `visible` applied to every string in it (keys, items, values of dicts, lists, tuples)."""
    if isinstance(value, str):
        return visible(value)
    if type(value) is dict:
        return {visible_all(k): visible_all(v) for k, v in value.items()}
    if type(value) in (list, tuple):  # not a NamedTuple: a record of its own is left as it is
        return type(value)(visible_all(v) for v in value)
    return value
