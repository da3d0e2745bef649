"""A declared `physicalType` judged as a type name before any engine reads it.

The text is contract input. Where the engine resolves it (engine/schema_check.py: DuckDB's
`typeof(CAST(NULL AS <type>))`), it stands in a statement, so it is judged here by sqlglot's
tokenizer and parser in the server's dialect: only words, numbers, and the brackets and commas of
type arguments (`VARCHAR(8)`, `DECIMAL(12, 2)`, `INTEGER[]`, `STRUCT(a INTEGER)`), parsed as one
data type; and what is rendered is those tokens again, never the text (a comment or anything the
parser skipped is gone). Anything else is None: the engine is not asked about it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_LENGTH = 200

# The common case, judged without sqlglot (its import is a tenth of a second of every run): one
# word, with the words of the standard's multi-word names (`double precision`, `character varying`,
# `timestamp with time zone`), or a type that takes arguments (by its name) with numbers as arguments
# (`VARCHAR(8)`, `DECIMAL(12, 2)`). Inside `CAST(NULL AS …)` such text is a type name or a syntax error.
_WORD = r"[A-Za-z_][A-Za-z0-9_]*"
_MORE = r"(?:(?i: precision| varying| unsigned| signed| with time zone| without time zone| with local time zone))?"
_WORDS_ONLY = re.compile(rf"{_WORD}{_MORE}")
_TAKES_ARGUMENTS = frozenset({"varchar", "char", "character", "character varying", "nvarchar", "nchar", "bpchar",
                              "decimal", "numeric", "number", "bit", "bit varying", "varbit", "float", "time",
                              "timestamp", "datetime", "datetime2", "string", "binary", "varbinary"})
_WITH_ARGUMENTS = re.compile(rf"({_WORD}{_MORE}) ?\( ?(\d+(?: ?, ?\d+)?) ?\)({_MORE})")

# numeric arguments anywhere in a type's name: `varchar(8)`, `timestamp(3) with time zone`
_ARGS = re.compile(r"\(\s*(\d+(?:\s*,\s*\d+)*)\s*\)")


def plain_type(text: str, dialect: str | None) -> str | None:
    """The type name rendered from its own tokens, or None when it is not a plain type name."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_LENGTH:
        return None
    simple = re.sub(r"\s+", " ", text.strip())
    if _WORDS_ONLY.fullmatch(simple):
        return simple
    found = _WITH_ARGUMENTS.fullmatch(simple)
    if found and found.group(1).lower() in _TAKES_ARGUMENTS:
        arguments = re.sub(r" ?, ?", ", ", found.group(2))
        return f"{found.group(1)}({arguments}){found.group(3)}"
    # sqlglot is imported here, when a declared type is judged, not by every run that loads this module
    from sqlglot import exp
    from sqlglot.dialects import Dialect
    from sqlglot.parser import Parser
    from sqlglot.tokens import TokenType

    # the tokens of a type name: words (type keywords, other names, `with time zone`), numbers, and
    # the punctuation of arguments and arrays; a string, a quoted name, `;`, an operator is none of them
    _PUNCTUATION = {TokenType.L_PAREN, TokenType.R_PAREN, TokenType.COMMA, TokenType.L_BRACKET, TokenType.R_BRACKET}
    _WORDS = {TokenType.VAR, TokenType.WITH, *Parser.TYPE_TOKENS}
    # what a data type's tree may hold: types, their arguments, a struct's field names
    _INERT = (exp.DataType, exp.DataTypeParam, exp.Literal, exp.ColumnDef, exp.Identifier)
    try:
        tokens = Dialect.get_or_raise(dialect).tokenizer_class().tokenize(text)
        tree = exp.DataType.build(text, dialect=dialect, udt=True)
    except Exception:  # noqa: BLE001 - sqlglot's errors are of many classes: not a type name
        return None
    if not isinstance(tree, exp.DataType) or not all(isinstance(node, _INERT) for node in tree.walk()):
        return None
    depth, out, previous = 0, "", None
    for token in tokens:
        if token.token_type not in _WORDS | _PUNCTUATION and token.token_type is not TokenType.NUMBER:
            return None
        # arguments only after a type keyword (VARCHAR(8), STRUCT(…)): after another name, the engine
        # could read `name(…)` as a call in a type modifier
        if token.token_type is TokenType.L_PAREN and previous not in Parser.TYPE_TOKENS:
            return None
        previous = token.token_type
        if token.token_type in (TokenType.VAR, TokenType.NUMBER) and not re.fullmatch(r"\w+", token.text):
            return None
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth < 0:
            return None
        if token.token_type in (TokenType.VAR, TokenType.NUMBER) or token.token_type in _WORDS:
            out += (" " if out and out[-1] not in "([ " else "") + token.text
        else:
            out += token.text + (" " if token.token_type is TokenType.COMMA else "")
    return out if depth == 0 else None


def split_arguments(text: str) -> tuple[str, str]:
    """(the type's name without its numeric arguments, the arguments as `(a,b)` or ""):
    `timestamp(3) with time zone` → (`timestamp with time zone`, `(3)`)."""
    # the type's own arguments, not a field's inside a STRUCT(…) or MAP(…)
    found = next((m for m in _ARGS.finditer(text) if text[:m.start()].count("(") == text[:m.start()].count(")")),
                 None)
    if not found:
        return re.sub(r"\s+", " ", text.strip()), ""
    base = (text[:found.start()] + " " + text[found.end():]).strip()
    return re.sub(r"\s+", " ", base).replace(" [", "["), "(" + re.sub(r"\s", "", found.group(1)) + ")"


# How a declared physicalType changed between two versions of a contract (`dq-contracts diff`):
# integer and float sizes in bytes per spelling; a text type's length is its argument (none:
# unbounded); a decimal's precision, scale and whole digits. Another type altogether is "changed".
_INT_SIZES = {"tinyint": 1, "int1": 1, "smallint": 2, "int2": 2, "mediumint": 3, "int": 4, "integer": 4,
              "int4": 4, "bigint": 8, "int8": 8, "long": 8, "hugeint": 16}
_FLOAT_SIZES = {"real": 4, "float4": 4, "double": 8, "double precision": 8, "float8": 8}
_TEXT = {"varchar", "character varying", "char", "character", "nvarchar", "nchar", "bpchar", "string", "text"}
_DECIMAL = {"decimal", "numeric", "number"}
_SIZED = re.compile(r"\s*([a-z][a-z0-9_ ]*?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*")


def type_order(old: str, new: str) -> str:
    """"same", "narrowed", "widened", or "changed" (another family, or a decimal narrowed one way and
    widened another)."""
    a, b = _SIZED.fullmatch(old.lower()), _SIZED.fullmatch(new.lower())
    if not (a and b):
        return "same" if old.strip().lower() == new.strip().lower() else "changed"
    (na, pa, sa), (nb, pb, sb) = a.groups(), b.groups()
    for sizes in (_INT_SIZES, _FLOAT_SIZES):
        if na in sizes and nb in sizes:
            return _order(sizes[na], sizes[nb])
    if na in _TEXT and nb in _TEXT:  # varchar(8) → varchar(4) narrows; → text widens
        return _order(float(pa) if pa else float("inf"), float(pb) if pb else float("inf"))
    if na in _DECIMAL and nb in _DECIMAL and pa and pb:
        ways = {_order(int(pa), int(pb)), _order(int(sa or 0), int(sb or 0)),
                _order(int(pa) - int(sa or 0), int(pb) - int(sb or 0))} - {"same"}
        return ways.pop() if len(ways) == 1 else "changed" if ways else "same"
    return "same" if (na, pa, sa) == (nb, pb, sb) else "changed"


def _order(old: float, new: float) -> str:
    return "same" if old == new else "narrowed" if new < old else "widened"


# Words of a physicalType that name a text type (VARCHAR, CHAR(3), TEXT, citext, STRING, CLOB)
TEXT_TYPES = ("char", "text", "string", "clob")


def is_text(column: Any, values: Iterable[Any] = ()) -> bool:
    """Whether a column's values are compared as text (by the checks, and so by the diff): its
    logicalType is string; with none, its physicalType names a text type, or every value it is
    compared with is text. `column`: a ColumnPlan, or None."""
    if column is not None and column.logical_type:
        return str(column.logical_type).lower() == "string"
    if column is not None and column.physical_type and any(w in str(column.physical_type).lower() for w in TEXT_TYPES):
        return True
    present = [v for v in values if v is not None]
    return bool(present) and all(isinstance(v, str) for v in present)
