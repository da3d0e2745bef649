"""Contract text as people read it: a character that shows nothing, or shows other text than it is
(a bidirectional override such as U+202E, a zero-width space or joiner, a control, a private-use or
unassigned code point, a filler or a variation selector), escaped visibly as `\\u202e`. Every text of a contract that reaches Dagster
or the command line passes here; names never hold such a character at all (names.ascii_name)."""

from __future__ import annotations

import bisect
import re
import unicodedata
from typing import Any, Iterable

# The characters that hide or reorder text: controls, format characters (bidirectional overrides,
# zero-width spaces and joiners), private-use, surrogates, unassigned, line and paragraph separators
INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
KEPT = frozenset("\n\t")  # a description's lines and indents show as what they are
# Unicode's Default_Ignorable_Code_Point property (DerivedCoreProperties.txt, Unicode 15.1): what a
# renderer shows as nothing though its category is a letter or a mark (U+3164 HANGUL FILLER, U+034F
# COMBINING GRAPHEME JOINER, variation selectors…); plus U+2800 BRAILLE PATTERN BLANK, a symbol that
# shows as a blank where no space is expected. Inclusive (first, last) ranges, sorted.
IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_FIRSTS = [first for first, _ in IGNORABLE]


def invisible(char: str) -> bool:
    """Whether one character hides or reorders text (a category of INVISIBLE, or IGNORABLE)."""
    if unicodedata.category(char) in INVISIBLE:
        return True
    at = bisect.bisect_right(_FIRSTS, ord(char)) - 1
    return at >= 0 and ord(char) <= IGNORABLE[at][1]


def visible(text: Any) -> str:
    """`text` with every character that hides or reorders text written as `\\uXXXX` (`\\UXXXXXXXX`
    beyond the first plane)."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text  # the common case, at no cost
    return "".join(_escaped(c) if c not in KEPT and invisible(c) else c for c in text)


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


# what a mail client, Slack, Teams, a terminal or a CI log may show as a line break (str.splitlines'
# set), and the tab: on one line each is written as its escape, in the spelling a reader knows
LINE_BREAKS = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x0b": "\\v", "\x0c": "\\f", "\x1c": "\\x1c",
               "\x1d": "\\x1d", "\x1e": "\\x1e", "\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_LINE_BREAK = re.compile("[" + "".join(LINE_BREAKS) + "]")


def one_line(text: Any) -> str:
    """`visible(text)` on one line: each line break (LINE_BREAKS, every one Unicode has) and the tab
    written escaped, for a report or a message whose every line is one of its own (a contract's text
    cannot make a line that looks like the report's). The diff's report and the alerts both use it."""
    return visible(_LINE_BREAK.sub(lambda found: LINE_BREAKS[found.group()], str(text)))


def described(text: Any) -> str:
    """`visible(text)` as Markdown that loads nothing: Dagster renders descriptions as Markdown, where
    `![t](https://…)` fetches an image and raw HTML (`<img src=…>`) is HTML when a person opens the
    page. `<` and the `[` of `![` become character references, which CommonMark shows as the characters
    and never reads as structure (so no tag, no image); applied twice it changes nothing."""
    return visible(text).replace("<", "&lt;").replace("![", "!&#91;")


# What a CI runner takes for a command wherever a job prints a line: GitHub's `::name …::` at a
# line's start (after blanks), and anywhere in a line `##name[…]`: GitHub's legacy `##[name …]`,
# which its runner still reads when the first form does not parse (actions/runner
# ActionCommandManager), Azure Pipelines' `##vso[…]`, TeamCity's `##teamcity[…]`
_RUNNER_COMMAND = re.compile(r"^(\s*):(?=:)|#(?=#\w*\[)", re.M)


def uncommanded(text: str) -> str:
    """`text` with no line a CI runner would read as a command of its own: the first character of
    each such prefix written `\\u003a` or `\\u0023`. Every line the command line prints passes here,
    but the workflow commands `--format github` writes itself."""
    return _RUNNER_COMMAND.sub(lambda m: "\\u0023" if m.group(1) is None else m.group(1) + "\\u003a", text)


def say(*parts: object, file=None) -> None:
    """print one line: each part on one line (`one_line`: a contract's id, version, name or file
    holding a line break cannot add a line of its own, such as a forged summary), with what hides or
    reorders text escaped, and no text of a contract read by a CI runner as a command. Every line the
    commands write passes here; a text of several lines goes through `say_lines`."""
    print(*(uncommanded(one_line(p)) for p in parts), file=file)


def say_lines(lines: Iterable[object], file=None) -> None:
    """`say` each of `lines` (a report, a plan, indented JSON: their own lines, and no others)."""
    for line in lines:
        say(line, file=file)
