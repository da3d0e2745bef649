"""The engine side of the clause table: one row per check kind, from plan to SQL to verdict.

Each `Kind` says how its checks are measured (a column of the table's one aggregate scan, or work
of its own on the connection), which columns its samples would show, how those samples are
fetched, how the verdict is reached, the clause's own query (the one a person runs to see the
rows at fault), and the result in one sentence. The runner knows nothing of any kind: it dispatches
through `KINDS`. Adding a kind means adding its row here and its ODCS row (odcs/check_kinds.py),
its clause function, and its cases (README: "Adding a check kind"). The functions of the kinds
with work of their own (a relationship, a SQL rule, the schema check) are in engine/own_queries.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from dq_contracts.odcs.plans import CheckPlan
from dq_contracts.engine.sql import as_bytes, compound_duplicates, orphan_samples
from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine import exact, nested
from dq_contracts.engine import own_queries as own
from dq_contracts.engine import sentences as say
from dq_contracts.engine.results import CheckResult, unevaluated
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.sentences import Words
from dq_contracts.engine.verdicts import Verdict, judge_count, judge_freshness, judge_scalar, judge_schema

Measure = Callable[[CheckPlan, CheckedObject], tuple[str, ColumnElement]]
Violation = Callable[[CheckPlan, CheckedObject], ColumnElement]
Evaluate = Callable[[CheckPlan, CheckedObject, sa.Connection], Any]
Samples = Callable[[CheckPlan, CheckedObject, int], sa.Select | None]
FailingRows = Callable[[CheckPlan, CheckedObject], "sa.Select | sa.TextClause | None"]
Judge = Callable[[CheckPlan, Any, "int | None", CheckedObject], Verdict]


@dataclass(frozen=True)
class Kind:
    """The engine's row of one check kind (its ODCS row is `odcs.check_kinds.CHECK_KINDS`, keyed
    alike). The fields with no default are the ones every kind must state: a kind without words
    or a verdict of its own is not one the engine can run."""

    name: str
    _: KW_ONLY
    judge: Judge  # the measurement against the clause's conditions
    failing_rows: FailingRows | None  # the clause's own query, for people: the offending rows (or, where
    # there are none to list, the one value the clause judges); never run by the engine
    words: Words  # the result in one sentence (sentences.py)
    measure: Measure | None = None  # a column of the one aggregate scan, keyed so equal measures are shared
    evaluate: Evaluate | None = None  # or a query (or catalog read) of its own
    sample_columns: Callable[[CheckPlan], list[str]] = lambda check: []  # noqa: E731
    samples: Samples | None = None
    hint: str = ""  # said before a database error, to name the likely cause (formatted with the params)
    in_aggregate: Callable[[CheckPlan], bool] = lambda check: True  # noqa: E731 - when `measure` applies
    # the condition an offending row meets, for kinds judged row by row: their samples come from one
    # scan shared by every failing clause of the table
    violation: Violation | None = None
    # the parameters that make a row-level measure what it is: two checks alike in these (and their
    # column) share one column of the scan
    identity: tuple[str, ...] = ()
    # whether the measure goes to the table's statement of distinct counts (see _keys_apart)
    apart: Callable[[CheckPlan], bool] = lambda check: False  # noqa: E731
    # whether its result is told against the table's rows ("1 row of 120"): the scan then counts
    # them even when it measures nothing else (a relationship's own op)
    counts_rows: bool = True


# --- measures of the one aggregate ----------------------------------------------------------------

def _column(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    """The checked value: the column, or a nested property's field of it (engine/nested.py)."""
    if check.params.get("path"):
        return nested.value(check, checked.table, dialect_of(checked.dialect))
    return checked.table.c[check.params["column"]]


def _compared(check: CheckPlan, checked: CheckedObject, values: Iterable[Any] = ()) -> ColumnElement:
    """The check's column as compared with `values` (CheckedObject.compared); a nested value by its
    leaf's declared type."""
    if check.params.get("path"):
        col = _column(check, checked)
        return as_bytes(col, checked.dialect) if nested.leaf_is_text(check) else col
    return checked.compared(check.params["column"], _column(check, checked), values)


def _row(checked: CheckedObject) -> Any:
    return dialect_of(checked.dialect)


def _as_text(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    """The check's column as a regular expression reads it: always text, byte by byte (a pattern
    under a nondeterministic collation is an error on PostgreSQL), whatever the column's type (a
    native UUID, DATE or TIMESTAMP is judged on its text form)."""
    column = _column(check, checked)
    if dialect_of(checked.dialect).binary_text is None:
        return sa.cast(column, sa.String)
    return as_bytes(column, checked.dialect)


def _count_where(condition: ColumnElement) -> ColumnElement:
    return sa.func.count(sa.case((condition, 1)))


def _typed_bound(check: CheckPlan, value: Any) -> ColumnElement:
    logical = check.params.get("logical_type")
    if logical == "date":
        return sa.cast(sa.bindparam(None, str(value), type_=sa.String), sa.Date)
    if logical == "time":  # a time of day compares as a time, never as a timestamp
        return sa.cast(sa.bindparam(None, str(value).removesuffix("Z"), type_=sa.String), sa.Time)
    if logical == "timestamp":
        return sa.cast(sa.bindparam(None, utc_text(value), type_=sa.String), sa.DateTime)
    return sa.bindparam(None, exact_number(value))


# BIGINT's range: an integral float inside it is bound as the integer it is exactly
_INT64 = range(-2**63, 2**63)


def exact_number(value: Any) -> Any:
    """An integral float (`1.0e+18`) within the 64-bit integer range as that integer, exactly the
    float's value: compared with a float, an integer column is compared in double precision, where
    999999999999999999 is not below 1.0e+18. Any other value as it is."""
    if isinstance(value, float) and value.is_integer() and int(value) in _INT64:
        return int(value)
    return value


def utc_text(value: Any) -> str:
    """A timestamp bound as naive UTC text: an offset (`Z`, `-05:00`) is applied, never dropped; the
    session runs in UTC, so naive and zoned columns compare alike."""
    text = str(value)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text  # not ISO: the database judges it as written
    if moment.tzinfo is None:
        return text
    return moment.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ")


def _range(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    p, col = check.params, _column(check, checked)
    zoned = dialect_of(checked.dialect).zoned_time
    if p.get("logical_type") == "time" and zoned is not None:  # a TIMETZ column, or a bound's offset
        text = str(p["bound"]).removesuffix("Z") + ("+00:00" if str(p["bound"]).endswith("Z") else "")
        value, strict = sa.cast(col, zoned), p["strict"]
        bound = sa.cast(sa.bindparam(None, text, type_=sa.String), zoned)
    else:
        # a number bound on a column of numbers, compared exactly (engine/exact.py); any other typed
        numbers = exact.bound_of(check, checked, col, p["bound"], p["lower"], p["strict"]) \
            if p.get("logical_type") in (None, "number", "integer") else None
        value, bound, strict = numbers or (col, _typed_bound(check, p["bound"]), p["strict"])
    if p["lower"]:
        outside = value <= bound if strict else value < bound
    else:
        outside = value >= bound if strict else value > bound
    nan = dialect_of(checked.dialect).nan
    if nan is None or not _numeric_bound(check):
        return outside
    # a NaN is outside every bound; ordered, it would pass a minimum (PostgreSQL, DuckDB, Snowflake and
    # Spark sort it above every number). ±Infinity are ordered as numbers: the comparison judges them
    return sa.or_(outside, nan(col))


def _numeric_bound(check: CheckPlan) -> bool:
    """Whether a range compares numbers that may be NaN: a number bound on a column that is not
    declared an integer (or a date, a time, …), whose NaN test the engine can then run."""
    bound = check.params["bound"]
    return check.params.get("logical_type") in (None, "number") and isinstance(bound, (int, float)) \
        and not isinstance(bound, bool)


def _length(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    # characters of the value's text form: a length of a UUID or a date is of how it is written
    length = dialect_of(checked.dialect).length(sa.cast(_column(check, checked), sa.String))
    return length < check.params["bound"] if check.params["lower"] else length > check.params["bound"]


def _pattern(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    col = _column(check, checked)
    return sa.and_(col.is_not(None),
                   sa.not_(dialect_of(checked.dialect).regex(_as_text(check, checked), check.params["pattern"])))


# A list's null is left out of its IN: `x NOT IN ('ok', NULL)` is never true, so a listed null would
# let every value through. What a listed null means is the kind's: NULL is valid for validValues and
# enum (NULL rows are never judged by them: `required` does), missing for missingValues.


def _accepted(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    col = _column(check, checked)
    value, held = exact.listed(check, checked, col, check.params["values"])
    return sa.and_(col.is_not(None), sa.not_(exact.one_of(value, held)))


def _missing(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    col, values = _column(check, checked), check.params["values"]
    value, held = exact.listed(check, checked, col, values)
    conditions = [exact.one_of(value, held)] if held else []
    if None in values:  # a nested field's NULL only where its structs are there (_is_null)
        conditions.append(_is_null(check, checked) if check.params.get("path") else col.is_(None))
    return sa.or_(*conditions) if conditions else sa.false()  # a list of nothing a row holds: none missing


def _invalid(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    p, col = check.params, _column(check, checked)
    invalid = []
    if p.get("valid_values") is not None:
        value, held = exact.listed(check, checked, col, p["valid_values"])
        invalid.append(sa.not_(exact.one_of(value, held)))
    if p.get("pattern") is not None:
        invalid.append(sa.not_(dialect_of(checked.dialect).regex(_as_text(check, checked), p["pattern"])))
    return sa.and_(col.is_not(None), sa.or_(*invalid))


def _multiple(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    divisor = sa.cast(sa.bindparam(None, str(check.params["divisor"]), type_=sa.String), sa.Numeric(38, 10))
    col = _column(check, checked)
    # a column of numbers in its own exact arithmetic (engine/exact.py): DECIMAL(38,0), HUGEINT, 1e30
    own = exact.remainder(check, checked, col, check.params["divisor"])
    if own is not None:
        return own
    if dialect_of(checked.dialect).nan is None:  # no NaN, no infinity (MySQL, MariaDB)
        # abs: MariaDB's remainder of a negative multiple is a negative zero, which it finds unequal to 0
        return sa.func.abs(sa.cast(col, sa.Numeric(38, 10)) % divisor) != 0
    # x - x is 0 for every finite number and NaN for NaN and ±Infinity, on every engine: those are
    # multiples of nothing, and never reach the cast to DECIMAL, which refuses them (the value as a
    # double, so that a column of text holding numbers is read as before)
    number = sa.cast(col, sa.Double)
    finite = (number - number) == 0
    as_decimal = sa.cast(sa.case((finite, col)), sa.Numeric(38, 10))
    return sa.or_(sa.not_(finite), sa.func.abs(as_decimal % divisor) != 0)


def _listing(check: CheckPlan, checked: CheckedObject) -> CheckedObject:
    """The checked object with a table of the columns that name an offending row: the object's
    primary key, then the columns the check names."""
    keys = [c.physical_name for c in checked.obj.columns if c.primary_key]
    names = list(dict.fromkeys([*keys, *named_columns(check)]))
    return replace(checked, table=checked.own_table(names))


def _rows_where(violation: Callable[[CheckPlan, CheckedObject], ColumnElement]) -> FailingRows:
    """`SELECT <key and checked columns> FROM t WHERE <violation>`: every offending row."""

    def failing_rows(check: CheckPlan, checked: CheckedObject) -> sa.Select:
        if nested.through_items(check):  # the offending items themselves
            inner, items = nested.items_view(check, checked, _row(checked))
            return sa.select(*items.table.c).where(violation(inner, items))
        listing = _listing(check, checked)
        return sa.select(*listing.table.c).where(violation(check, listing))

    return failing_rows


def _offending(violation: Violation) -> Violation:
    """The violation, or a value there but malformed (a JSON member not of its declared type, an item
    of a JSON "array" that is not one: engine/nested.py), which no clause judging values lets pass."""

    def offending(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
        bad = nested.malformed(check, checked.table, _row(checked))
        found = violation(check, checked)
        return found if bad is None else sa.or_(found, bad)

    return offending


def _row_level(name: str, violation: Violation, identity: tuple[str, ...], words: Words, **extra: Any) -> Kind:
    """A kind defined by the condition an offending row meets: counted in the aggregate, sampled by
    it, and listed by it."""
    violation = _offending(violation)

    def measure(check: CheckPlan, checked: CheckedObject) -> tuple[str, ColumnElement]:
        key = ":".join([check.kind, nested.subject(check), *(repr(check.params.get(k)) for k in identity)])
        return key, _count_where(violation(check, checked))

    def samples(check: CheckPlan, checked: CheckedObject, limit: int) -> sa.Select:
        col = _compared(check, checked, _sampled_values(check))  # distinct as the check tells values apart
        return sa.select(col.label(check.params["column"])).where(violation(check, checked)).group_by(col) \
            .order_by(col).limit(limit)

    return Kind(name, measure=nested.itemwise(measure, _row), judge=judge_count,
                samples=nested.itemwise_query(samples, _row), sample_columns=_one_column,
                failing_rows=_rows_where(violation), violation=violation, identity=identity, words=words, **extra)


def _sampled_values(check: CheckPlan) -> list[Any]:
    return list(check.params.get("values") or check.params.get("valid_values") or [])


def _nulls(check: CheckPlan, checked: CheckedObject) -> tuple[str, ColumnElement]:
    if check.params.get("path"):  # a field of a struct that is there
        return f"nulls:{nested.subject(check)}", _count_where(_is_null(check, checked))
    col = _column(check, checked)
    if nested.MALFORMED in checked.table.c:  # an item not of its declared type is there, not NULL
        return f"nulls:{check.params['column']}", _count_where(sa.and_(col.is_(None),
                                                                       sa.not_(checked.table.c[nested.MALFORMED])))
    return f"nulls:{check.params['column']}", sa.func.count() - sa.func.count(col)


def _is_null(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    if check.params.get("path"):  # a NULL struct's fields are not judged: the struct's own `required` is
        return nested.is_null(check, checked.table, _row(checked))
    if nested.MALFORMED in checked.table.c:  # an item not of its declared type is there, not NULL
        return sa.and_(_column(check, checked).is_(None), sa.not_(checked.table.c[nested.MALFORMED]))
    return _column(check, checked).is_(None)


def _rows(check: CheckPlan, checked: CheckedObject) -> tuple[str, ColumnElement]:
    return "rows", sa.func.count()


def _count_rows(check: CheckPlan, checked: CheckedObject) -> sa.Select:
    return sa.select(sa.func.count().label("rows")).select_from(checked.table)


def _single(check: CheckPlan) -> str | None:
    columns = check.params.get("columns") or []
    return columns[0] if len(columns) == 1 else None


def _duplicates(check: CheckPlan, checked: CheckedObject) -> tuple[str, ColumnElement]:
    """Rows beyond the first of each key (a primary key's NULL keys too). unique, primaryKey and
    duplicateValues on the same column share one measure key, so the work is done once."""
    key = check.params["columns"]
    is_key = check.kind == "primary_key"  # a key also has no NULL
    prefix = "pk:" if is_key else "dups:"
    if _single(check) is None:  # a compound key: its own GROUP BY, as a subquery of the table's statement
        return prefix + ",".join(key), compound_duplicates(checked.table, key, count_nulls=is_key,
                                                           compared=checked.key).scalar_subquery()
    col = _key(check, checked)
    extra = sa.func.count(col) - sa.func.count(sa.distinct(col))
    return prefix + nested.subject(check), (sa.func.count() - sa.func.count(col)) + extra if is_key else extra


def _key(check: CheckPlan, checked: CheckedObject) -> ColumnElement:
    """A single key as grouped and counted distinct: its column, or a struct's field."""
    if check.params.get("path"):
        return _compared(check, checked)
    return checked.key(_single(check), checked.table.c[_single(check)])


def _keys_apart(check: CheckPlan) -> bool:
    """A single column's distinct count goes to a statement of distinct counts (measured, 2M rows,
    19 clauses): PostgreSQL plans no parallel workers for an aggregate holding COUNT(DISTINCT …)
    (3.98 s in one statement; 1.72 s for the rest, in parallel, + 2.08 s of distinct counts), and
    DuckDB costs the same either way (0.84 / 0.82 s) but holds a hash table per distinct count at
    once: 500 of them take 1.1 GB on a 3-row table, so they go 50 to a statement there. (A struct's
    field stays in the table's statement: the GROUP BY of key columns reads columns only.)"""
    return _single(check) is not None and not check.params.get("path")


def _key_groups(check: CheckPlan, checked: CheckedObject, *, null_keys: bool = False) -> sa.Select:
    """The key values held by more than one row (with null_keys, and the keys with a NULL part)."""
    cols = ([_key(check, checked).label(check.params["column"])] if check.params.get("path") else
            [checked.key(c, checked.table.c[c]).label(c) for c in check.params["columns"]])
    complete = sa.and_(*(c.is_not(None) for c in cols))
    repeated = sa.func.count() > 1
    groups = sa.select(*cols).group_by(*cols)
    return groups.having(sa.or_(repeated, sa.not_(complete))) if null_keys else groups.where(complete).having(repeated)


def _duplicate_samples(check: CheckPlan, checked: CheckedObject, limit: int) -> sa.Select | None:
    if _single(check) is None:
        return None
    groups = _key_groups(check, checked)
    if check.params.get("path"):  # by its label: Spark resolves no struct field of the table after GROUP BY
        return groups.order_by(list(groups.selected_columns)[0]).limit(limit)
    return groups.order_by(_key(check, checked)).limit(limit)


def _duplicate_rows(check: CheckPlan, checked: CheckedObject) -> sa.Select:
    """Each repeated key with its number of rows; for a primary key, the keys with a NULL part too."""
    return _key_groups(check, checked, null_keys=check.kind == "primary_key").add_columns(
        sa.func.count().label("rows"))


def _age(check: CheckPlan, checked: CheckedObject) -> tuple[str, ColumnElement]:
    """Seconds between the run's moment and the newest value, computed in the database: a naive
    timestamp counts as UTC whatever the session's time zone (its epoch is taken as written)."""
    epoch = dialect_of(checked.dialect).epoch(sa.func.max(_column(check, checked)))
    now = sa.bindparam(None, checked.now.timestamp(), type_=sa.Float)
    return f"age:{check.params['column']}", now - epoch


def _newest(check: CheckPlan, checked: CheckedObject) -> sa.Select:
    return sa.select(sa.func.max(_column(check, checked)).label("newest")).select_from(checked.table)


# --- kinds with work of their own: engine/own_queries.py, but for a relationship's listing ------

def _orphan_rows(check: CheckPlan, checked: CheckedObject) -> sa.Select:
    """Every row whose key points at nothing: the samples' condition, on a table that also names the row."""
    source = _listing(check, checked).table
    _, target = own.relationship_tables(check, checked)
    orphaned = orphan_samples(source, check.params["columns"], target, check.params["target_columns"],
                              compared=checked.key)
    return sa.select(*source.c).where(orphaned.whereclause)


def named_columns(check: CheckPlan) -> list[str]:
    """Every column of the checked table that the check names."""
    return [c for c in [check.params.get("column"), *(check.params.get("columns") or [])]
            if isinstance(c, str) and c]


def _one_column(check: CheckPlan) -> list[str]:
    column = check.params.get("column")
    return [column] if isinstance(column, str) and column else []


_NULL_ROWS = _rows_where(_is_null)
_NULLS = nested.itemwise(_nulls, _row)


def _keyed(kind: str, words: Words) -> Kind:
    """unique, primary_key, duplicate_values: a distinct count for one column, a GROUP BY for several."""
    return Kind(kind, measure=_duplicates, judge=judge_count, sample_columns=named_columns,
                samples=_duplicate_samples, failing_rows=_duplicate_rows, apart=_keys_apart, words=words)


_DUPLICATES = say.keys("duplicate value", "duplicate values", "no duplicate value of {key}")

# One row per check kind. Its ODCS row (what it is called, its parameters, what it reads of a
# partitioned table, what its observed value counts) is `odcs.check_kinds.CHECK_KINDS`.
KINDS: dict[str, Kind] = {k.name: k for k in [
    Kind("schema", evaluate=own.catalog, judge=judge_schema, failing_rows=None, words=say.schema, counts_rows=False),
    Kind("not_null", measure=_NULLS, judge=judge_count, failing_rows=_NULL_ROWS, words=say.nulls),
    Kind("null_values", measure=_NULLS, judge=judge_count, failing_rows=_NULL_ROWS, words=say.nulls),
    _keyed("unique", _DUPLICATES),
    _keyed("primary_key", say.keys("duplicate or NULL key", "duplicate or NULL keys", "every {key} present and unique")),
    _keyed("duplicate_values", _DUPLICATES),
    _row_level("range", _range, ("lower", "strict", "bound", "logical_type"), say.offending(say.beyond)),
    _row_level("length", _length, ("lower", "bound"), say.offending(
        lambda p: f"{'shorter' if p['lower'] else 'longer'} than {p['bound']} characters")),
    _row_level("pattern", _pattern, ("pattern",), say.offending(
        lambda p: f"not a valid {p['format']}" if p.get("format") else f"not matching {p['pattern']}",
        lambda p: f"every value a valid {p['format']}" if p.get("format") else f"every value matching {p['pattern']}")),
    _row_level("accepted_values", _accepted, ("values",), say.offending(
        lambda p: f"outside the accepted values ({say.listed(p['values'])})")),
    _row_level("missing_values", _missing, ("values",), say.offending(
        lambda p: f"counted as missing ({say.listed(p['values'])})")),
    _row_level("invalid_values", _invalid, ("valid_values", "pattern"), say.offending(
        lambda p: f"invalid (valid: {say.valid(p)})", lambda p: f"no invalid value (valid: {say.valid(p)})")),
    _row_level("multiple_of", _multiple, ("divisor",), say.offending(
        lambda p: f"not a multiple of {say.number(p['divisor'])}",
        lambda p: f"every value a multiple of {say.number(p['divisor'])}"),
        hint="multipleOf needs a numeric column, and {column} could not be read as a number"),
    Kind("row_count", measure=_rows, judge=judge_count, failing_rows=_count_rows, words=say.row_count),
    Kind("freshness", measure=_age, judge=judge_freshness, failing_rows=_newest, words=say.freshness,
         hint="freshness needs a date or timestamp column, and {column} could not be read as one"),
    Kind("relationship", evaluate=own.relationship, judge=judge_count, sample_columns=named_columns,
         samples=own.relationship_samples, failing_rows=_orphan_rows, words=say.offending(
             lambda p: f"pointing at no {say.target(p)}", lambda p: f"no row pointing at a missing {say.target(p)}")),
    Kind("sql", evaluate=own.sql_rule, judge=judge_scalar, failing_rows=own.rule_statement, words=say.sql_rule,
         counts_rows=False),
]}


def describe(check: CheckPlan, result: CheckResult) -> str:
    """The result in one sentence: what was found, in words and units, and what the contract wants."""
    if check.params.get("refusal"):
        return f"not run: {check.params['refusal']}"
    if result.error:
        return unevaluated(result.error)
    return say.with_levels(check, result, KINDS[check.kind].words(check, result))


def uses_aggregate(check: CheckPlan) -> bool:
    """Whether the check is a column of the one aggregate scan (else it does work of its own)."""
    kind = KINDS[check.kind]
    return kind.measure is not None and kind.in_aggregate(check)
