"""Listed values and bounds compared with a column's values as the values they are.

A value a contract lists (`enum`, `validValues`, `missingValues`) or a bound (`minimum`, …,
`multipleOf`) is never rendered with the column's type when that would change it (2.5 on an
INTEGER column is not 2; 9007199254740993 on a DOUBLE column is not 9007199254740992; the number 1
on a text column is the text '1', which '01' is not). Each value is taken by what the column's
numbers are (its family: the declared type, else the type the catalog reads, `CheckedObject.catalog`):

- text: every value as the text it writes (`1` is '1', `2.5` is '2.5', a YAML boolean 'true' or
  'false'), compared byte by byte;
- integer: an integer, or a float or text that writes one; any other value is held by no row, so it
  is decided here (never valid, never missing);
- float (DOUBLE, REAL, FLOAT): the column widened to DOUBLE (exact), each value as the double it is;
  an integer no double holds is held by no row, and a bound is moved to the doubles beside it;
- decimal (DECIMAL, NUMERIC, or a number of a type not known): each value as an exact decimal (a float
  as the decimal it writes, `0.1`; an integral one as the integer it is exactly);
- other (dates, times, booleans): each value with its own type, as the engine reads it.
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.engine import nested
from dq_contracts.engine.sql import as_bytes
from dq_contracts.odcs.plans import CheckPlan
from dq_contracts.odcs.type_names import is_text

TEXT, INTEGER, FLOAT, DECIMAL, OTHER = "text", "integer", "float", "decimal", "other"

# a type's name as the catalog (or a physicalType) spells it, without arguments -> its family
_TYPE_FAMILIES = {name: family for family, names in {
    INTEGER: ("tinyint", "smallint", "integer", "int", "bigint", "hugeint", "utinyint", "usmallint", "uinteger",
              "ubigint", "uhugeint", "int1", "int2", "int4", "int8", "int16", "int32", "int64", "int128", "mediumint",
              "long", "short", "byte", "serial", "bigserial", "smallserial"),
    FLOAT: ("real", "float", "double", "double precision", "float4", "float8", "float32", "float64", "binary_double",
            "binary_float"),
    DECIMAL: ("decimal", "numeric", "number", "bignumeric", "bigdecimal", "dec", "money"),
    TEXT: ("varchar", "character varying", "char", "character", "bpchar", "text", "string", "uuid", "citext", "name",
           "nvarchar", "nchar", "tinytext", "mediumtext", "longtext", "clob"),
}.items() for name in names}
# a declared logicalType -> its family (number: the catalog's type says which)
_LOGICAL_FAMILIES = {"string": TEXT, "integer": INTEGER, "number": None}
# the kinds whose values or bounds this module compares
COMPARING = ("range", "accepted_values", "missing_values", "invalid_values", "multiple_of")


def type_family(type_text: Any) -> str | None:
    """`DECIMAL(38,0)` -> decimal, `double precision` -> float, `character varying(8)` -> text."""
    plain = re.sub(r"\s+", " ", re.sub(r"\(.*", "", str(type_text or "")).strip().lower())
    return _TYPE_FAMILIES.get(plain.removesuffix(" unsigned").removesuffix(" signed"))


def declared_family(check: CheckPlan, checked: Any, values: list = ()) -> str | None:
    """The family the contract settles alone; None when only the catalog can say (a number, or a
    column of no declared type)."""
    if check.params.get("path"):
        logical, physical = (list(check.params.get("leaf_type") or []) + [None, None])[:2]
        if nested.leaf_is_text(check):
            return TEXT
        return _LOGICAL_FAMILIES.get(str(logical).lower(), OTHER) if logical else type_family(physical) or DECIMAL
    column = checked.obj.column(check.params["column"])
    if is_text(column, values):
        return TEXT
    logical = str(column.logical_type).lower() if column is not None and column.logical_type else None
    if logical is not None and logical not in _LOGICAL_FAMILIES:
        return OTHER
    physical = type_family(column.physical_type) if column is not None else None
    return _LOGICAL_FAMILIES.get(logical) or physical


def needs_catalog(check: CheckPlan, checked: Any) -> bool:
    """Whether the check's family is the catalog's to say."""
    return check.kind in COMPARING and not check.params.get("path") and \
        declared_family(check, checked, _values(check)) is None


def family(check: CheckPlan, checked: Any) -> str:
    found = declared_family(check, checked, _values(check))
    if found is not None:
        return found
    seen = type_family(((checked.catalog or {}).get(str(check.params["column"]).lower()) or {}).get("type_text"))
    return seen or DECIMAL  # a number of a type not known: exact decimals (DOUBLE compares them as doubles)


def _values(check: CheckPlan) -> list:
    return [v for v in (check.params.get("values") or check.params.get("valid_values") or []) if v is not None]


# --- a value as each family holds it ---------------------------------------------------------------

def as_text(value: Any) -> str:
    """A listed value as the text it writes: a YAML boolean as JSON writes it, a float as Python's
    shortest text for it (what the contract wrote), anything else as str() writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def as_number(value: Any) -> Fraction | None:
    """A listed value's exact number: an integer, the double a float is, the decimal a text writes;
    None for anything else (a boolean, an infinity, a NaN, text that writes no number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if isinstance(value, (str, Decimal)):
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            return None
        return Fraction(number) if number.is_finite() else None
    return None


def _decimal(value: Any, number: Fraction) -> Decimal:
    """The decimal a value writes: a fraction listed as a float is the decimal of its shortest text
    (0.1, not 0.1000000000000000055…); an integral one the integer it is exactly."""
    if number.denominator == 1:
        return Decimal(number.numerator)
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(str(value).strip())


def _double(number: Fraction) -> float | None:
    """The double that is exactly `number`, or None."""
    try:
        near = float(number)
    except OverflowError:
        return None
    return near if Fraction(near) == number else None


def _literal_decimal(value: Decimal) -> ColumnElement:
    digits = len(value.as_tuple().digits)
    scale = max(0, -value.as_tuple().exponent)
    if scale == 0:
        return sa.literal(int(value), sa.BigInteger() if int(value) in range(-2**63, 2**63) else sa.Numeric(digits, 0))
    return sa.cast(sa.literal(str(value), sa.String), sa.Numeric(max(digits, scale), scale))


def _literal_double(value: float) -> ColumnElement:
    return sa.cast(sa.literal(repr(value), sa.String), sa.Double)


def _held(value: Any, kind: str) -> ColumnElement | None:
    """The value as a literal the column's family compares exactly; None when no row can hold it."""
    if kind == TEXT:
        return sa.literal(as_text(value), sa.String)
    if kind == OTHER:
        return sa.literal(value)
    number = as_number(value)
    if number is None:
        return None
    if kind == INTEGER:
        return _literal_decimal(Decimal(number.numerator)) if number.denominator == 1 else None
    if kind == FLOAT:
        double = _double(number)
        return None if double is None else _literal_double(double)
    return _literal_decimal(_decimal(value, number))


def compared(check: CheckPlan, checked: Any, column: ColumnElement, kind: str) -> ColumnElement:
    """The column as its family compares: text byte by byte, a float widened to DOUBLE."""
    if kind == TEXT:
        return as_bytes(column, checked.dialect)
    return sa.cast(column, sa.Double) if kind == FLOAT else column


def listed(check: CheckPlan, checked: Any, column: ColumnElement, values: list) -> tuple[ColumnElement, list]:
    """The compared column and the literals of the listed values a row of it can hold (a list's null
    is the kind's to judge: check_kinds)."""
    kind = family(check, checked)
    held = [h for h in (_held(v, kind) for v in values if v is not None) if h is not None]
    return compared(check, checked, column, kind), held


def one_of(expression: ColumnElement, held: list) -> ColumnElement:
    """`x IN (…)`; false when no listed value can be held (decided here, never sent as `IN ()`)."""
    return expression.in_(held) if held else sa.false()


# --- bounds ----------------------------------------------------------------------------------------

def bound_of(check: CheckPlan, checked: Any, column: ColumnElement, bound: Any, lower: bool,
             strict: bool) -> tuple[ColumnElement, ColumnElement, bool] | None:
    """(the compared column, the bound's literal, strict) for a number bound on a column of numbers,
    so that the comparison is exact; None for any other (the kind's own typed bound judges it)."""
    number = as_number(bound) if isinstance(bound, (int, float)) else None
    kind = family(check, checked) if number is not None else None
    if kind == FLOAT:
        double = _double(number)
        if double is None and abs(number) > Fraction(sys.float_info.max):  # beyond every finite double:
            # the largest one, past which only an infinity lies
            double, strict = math.copysign(sys.float_info.max, number), lower == (number > 0)
        elif double is None:  # no double is the bound: the doubles beside it, judged inclusively
            near = float(number)
            above, below = (near, math.nextafter(near, -math.inf)) if Fraction(near) > number else \
                (math.nextafter(near, math.inf), near)
            double, strict = (above if lower else below), False
        return sa.cast(column, sa.Double), _literal_double(double), strict
    if kind in (INTEGER, DECIMAL):
        return column, _literal_decimal(_decimal(bound, number)), strict
    return None


# --- multipleOf ------------------------------------------------------------------------------------

_SAFE = 2**53  # below it a double's value fits DECIMAL(38, 10) with its 10 places; above it, it is an integer

# the exact remainder of a large double by an integer, where `%` on doubles is not the engine's
_BIG_REMAINDER: dict[str, Callable[[ColumnElement, ColumnElement], ColumnElement]] = {
    "postgresql": lambda number, whole: sa.cast(number, sa.Numeric()) % whole,  # NUMERIC: no overflow there
}


def remainder(check: CheckPlan, checked: Any, column: ColumnElement, divisor: Any) -> ColumnElement | None:
    """The condition of a value that is not a multiple of `divisor`, in the column's own exact
    arithmetic: an integer or decimal column by its own `%` (a DECIMAL(38,0) is never cast to a type
    too small for it), a float below 2^53 in DECIMAL(38,10) as before, above it (an integer there)
    by the divisor's numerator; None for a column the kind judges as before (text holding numbers)."""
    kind = family(check, checked)
    written = _decimal(divisor, as_number(divisor))
    exact_divisor = _literal_decimal(written)
    if kind in (INTEGER, DECIMAL):
        return sa.func.abs(column % exact_divisor) != 0
    if kind != FLOAT:
        return None
    number = sa.cast(column, sa.Double)
    finite = (number - number) == 0  # false for NaN and ±Infinity; always true where there are none (MySQL)
    small = sa.func.abs(number) < _SAFE
    as_decimal = sa.cast(sa.case((sa.and_(finite, small), number)), sa.Numeric(38, 10))
    # an integer x is a multiple of p/q (lowest terms) exactly when p divides it
    whole = Fraction(written).numerator
    big = sa.case((sa.and_(finite, sa.not_(small)), number))
    spelled = _BIG_REMAINDER.get(checked.dialect, lambda n, w: n % sa.cast(w, sa.Double))
    over = spelled(big, _literal_decimal(Decimal(whole)))
    return sa.or_(sa.not_(finite), sa.and_(small, sa.func.abs(as_decimal % exact_divisor) != 0),
                  sa.and_(sa.not_(small), sa.func.abs(over) != 0))
