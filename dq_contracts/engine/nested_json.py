"""Values inside a JSON column, per dialect (a dialect row's `json`, used by engine/nested.py): a member,
its text, an array's items, and a leaf declared a number or a boolean read only from a JSON value of
that type, exactly. PostgreSQL's `json`/`jsonb` (`-> 'key'`, `jsonb_typeof`) and DuckDB's JSON
(`-> '$."key"'`, `json_type`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.sql.elements import ColumnElement


@dataclass(frozen=True)
class JsonAccess:
    """How a dialect addresses values inside a JSON column (a dialect row's `json`): they have no
    declared inner types, so a leaf is read as text and cast to its declared logicalType. A leaf
    declared a number or a boolean is read only from a JSON value of that type (`kinds`), as an exact
    number (`exact`; an integer's fraction tested, never rounded: 999.6 is no integer), and one of
    another type (`"abc"`, an object) is malformed: an offending value for every clause that judges
    values (check_kinds._offending), never an error of the whole check."""

    types: tuple[str, ...]  # the column types (physicalType, lower case) read as JSON
    member: Callable[[ColumnElement, str], ColumnElement]  # a member, still JSON: `value -> 'key'`
    text: Callable[[ColumnElement], ColumnElement]  # a JSON value as text: `value #>> '{}'`
    elements: Callable[[ColumnElement], ColumnElement]  # an array's elements, one row each, in a SELECT list
    kind: Callable[[ColumnElement], ColumnElement]  # a JSON value's own type (`jsonb_typeof`, `json_type`)
    array: str  # `kind` of an array: anything else in an array column is one malformed item
    kinds: dict[str, tuple[str, ...]]  # logicalType -> the JSON types (`kind`) a leaf of it is read from
    # logicalType -> its value read from the text of a JSON value of its type; NULL (malformed) for a
    # number with a fraction declared an integer, or an integer beyond the engine's integers
    exact: dict[str, Callable[[ColumnElement], ColumnElement]]


def _pg_member(expression: ColumnElement, key: str) -> ColumnElement:
    # a key is a value here, not a name: bound, never spliced
    return expression.op("->", return_type=JSONB)(sa.bindparam(None, key, type_=sa.Text))


def _pg_text(expression: ColumnElement) -> ColumnElement:
    return expression.op("#>>", return_type=sa.Text)(sa.literal([], type_=ARRAY(sa.Text)))


def _pg_kind(value: ColumnElement) -> ColumnElement:
    return sa.func.jsonb_typeof(sa.cast(value, JSONB))  # a `json` column's member is json: as jsonb


def _pg_elements(value: ColumnElement) -> ColumnElement:
    # anything but an array (an object, a scalar) is one item, malformed: counted, never an error
    return sa.func.jsonb_array_elements(sa.case((_pg_kind(value) == "array", sa.cast(value, JSONB)),
                                                (_pg_kind(value) != "null", sa.func.jsonb_build_array(value))))


def _integral(number: ColumnElement, most: int, integer: Callable[[ColumnElement], ColumnElement]) -> ColumnElement:
    """An exact number as an integer when it has no fraction and fits (|n| <= most), else NULL: tested,
    never rounded (CAST(999.6 AS INTEGER) is 1000)."""
    return sa.case((sa.and_(sa.func.trunc(number) == number, sa.func.abs(number) <= most), integer(number)))


_BIGINT_MOST = 2**63 - 1
POSTGRES_JSON = JsonAccess(types=("json", "jsonb"), member=_pg_member, text=_pg_text, elements=_pg_elements,
                           kind=_pg_kind, array="array",
                           kinds={"integer": ("number",), "number": ("number",), "boolean": ("boolean",)},
                           exact={"integer": lambda text: _integral(sa.cast(text, sa.Numeric), _BIGINT_MOST,
                                                                    lambda n: sa.cast(n, sa.BigInteger)),
                                  "number": lambda text: sa.cast(text, sa.Numeric),
                                  "boolean": lambda text: sa.cast(text, sa.Boolean)})


class _JsonList(sa.types.UserDefinedType):
    """DuckDB's JSON[]: a JSON array cast to a list of JSON values, so that unnest gives its items."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "JSON[]"


class _HugeInt(sa.types.UserDefinedType):
    """DuckDB's HUGEINT: a JSON integer read exactly, as a Python int (a DECIMAL would be a float)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "HUGEINT"


def _duckdb_member(expression: ColumnElement, key: str) -> ColumnElement:
    # a JSONPath of one quoted key, bound as a value: a bare key such as `$y` or `/x` would be read as
    # a path of its own
    path = '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return expression.op("->", return_type=sa.Text)(sa.bindparam(None, path, type_=sa.Text))


# DuckDB's struct access on a JSON column gives JSON, not values: a JSON null is the text `null` and a
# string keeps its quotes; `->> '$'` reads a JSON value as its text, a JSON null as NULL
def _duckdb_elements(value: ColumnElement) -> ColumnElement:
    kind = sa.func.json_type(value)
    return sa.sql.functions.Function("unnest", sa.case((kind == "ARRAY", sa.cast(value, _JsonList())),
                                                       (kind != "NULL", sa.func.list_value(value))))


_DUCKDB_NUMBERS = ("BIGINT", "UBIGINT", "DOUBLE", "HUGEINT", "UHUGEINT")
DUCKDB_JSON = JsonAccess(types=("json",), member=_duckdb_member,
                         text=lambda value: value.op("->>", return_type=sa.Text)(sa.literal("$", type_=sa.Text)),
                         elements=_duckdb_elements, kind=sa.func.json_type, array="ARRAY",
                         kinds={"integer": _DUCKDB_NUMBERS, "number": _DUCKDB_NUMBERS, "boolean": ("BOOLEAN",)},
                         # an integer exactly, through DECIMAL(38,0) (tested as a double, then read from
                         # its text), a number as a double (DuckDB's bare DECIMAL is DECIMAL(18,3): it
                         # would round 1.2345)
                         exact={"integer": lambda text: _integral(
                                    sa.cast(text, sa.Double), 10**38 - 1,
                                    lambda n: sa.cast(sa.cast(text, sa.Numeric(38, 0)), _HugeInt())),
                                "number": lambda text: sa.cast(text, sa.Double),
                                "boolean": lambda text: sa.cast(text, sa.Boolean)})
