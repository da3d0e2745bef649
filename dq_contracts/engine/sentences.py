"""One sentence per check result, for people: counts with their units, ages as durations, the
contract's threshold in words. Each kind's row (`check_kinds.KINDS`) names its words, made of these.

Pure and Dagster-free. A sentence is built only from counts, ages, the threshold and the contract's
own text (bounds, patterns, names), never from a value of the data: samples are left out whatever
the column, and a measurement the runner withheld stays withheld.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

from dq_contracts.odcs.params import Params
from dq_contracts.odcs.plans import CheckPlan, Condition, Level
from dq_contracts.engine.results import CheckResult

Words = Callable[[CheckPlan, "CheckResult"], str]


def said(result: CheckResult) -> str:
    """A result for people, the one rendering that `dq-contracts check` and Dagster's metadata give:
    its sentence (`describe`, filled by the runner); a result made without one, its error, else its
    measurement against the threshold."""
    return result.message or result.error or f"observed {observed_text(result)}, expected {result.threshold}"


def observed_text(result: CheckResult) -> str:
    """The measurement with its unit: `-` when there is none, `2.5%`, `3600 s`."""
    value = result.observed
    if value is None:
        return "-"
    if isinstance(value, float):
        value = f"{value:.6g}"
    unit = "%" if result.unit == "percent" else (" s" if result.kind == "freshness" else "")
    return f"{value}{unit}"


def generic(check: CheckPlan, result: CheckResult) -> str:
    """A kind without words of its own: the measurement and the threshold."""
    return f"measured {number(result.observed)}; the contract wants {check.threshold_text() or 'nothing'}"


# --- numbers, rows and durations ------------------------------------------------------------------

def number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return str(int(number)) if number.is_integer() else f"{number:.10g}"


def _percent(value: float) -> str:
    """One decimal, but never 0.0 % for something that is there (nor 100.0 % for less than all)."""
    text = f"{value:.1f}"
    if text == "0.0" and value > 0:
        return f"{value:.2g}"
    if text == "100.0" and value < 100:
        return "99.9"
    return text.removesuffix(".0")


def rows(count: int, noun: str = "row") -> str:
    return f"{count} {noun if count == 1 else noun + 's'}"


AGE = "seconds of age"  # the observed unit of the kinds that measure an age (odcs/check_kinds.py)


def in_durations(threshold: str) -> str:
    """A threshold of seconds as people read it: `≤ 172800.0` → `≤ 2 d`."""
    return re.sub(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", lambda m: duration(float(m.group())), threshold)


def duration(seconds: float) -> str:
    """A human duration: s, min, h or d, to two significant figures below ten of a unit."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if abs(seconds) >= size or unit == "s":
            value = seconds / size
            break
    text = str(math.floor(value + 0.5)) if abs(value) >= 10 else f"{value:.1f}".removesuffix(".0")
    return f"{text} {unit}"


_WORDS_OF = {"mustBe": "exactly", "mustNotBe": "other than", "mustBeGreaterThan": "more than",
             "mustBeGreaterOrEqualTo": "at least", "mustBeLessThan": "fewer than",
             "mustBeLessOrEqualTo": "at most"}


def _wanted(condition: Condition, show: Callable[[Any], str], counted: bool) -> str:
    value = condition.value
    if condition.operator == "mustBeBetween":
        return f"between {show(value[0])} and {show(value[1])}"
    if condition.operator == "mustNotBeBetween":
        return f"not between {show(value[0])} and {show(value[1])}"
    words = _WORDS_OF.get(condition.operator, condition.operator)
    return f"{words if counted else words.replace('fewer', 'less')} {show(value)}"


def wants(check: CheckPlan, show: Callable[[Any], str] | None = None, conditions: tuple | None = None) -> str:
    """The threshold in words: `more than 0` (rows), `less than 5 %`, `at most 2 d`; `conditions`
    for another level than the fail level."""
    counted = show is None and check.unit != "percent"
    if show is None:
        show = (lambda v: f"{number(v)} %") if check.unit == "percent" else number  # noqa: E731
    return " and ".join(_wanted(c, show, counted) for c in (check.conditions if conditions is None else conditions)
                        ) or "nothing (no operator)"


def with_levels(check: CheckPlan, result: CheckResult, sentence: str) -> str:
    """A clause with a warn level says it, and which level was reached: `warn level reached: 2 NULLs
    in 100 rows (2 %); the contract wants less than 5 % (it warns unless less than 1 %)`."""
    if not check.warn_conditions:
        return sentence
    reached = "warn level reached: " if result.level == Level.WARN else ""
    return f"{reached}{sentence} (it warns unless {wants(check, conditions=check.warn_conditions)})"


def _none_allowed(check: CheckPlan) -> bool:
    """The default of a clause: not one offending row."""
    return check.unit == "rows" and [(c.operator, c.value) for c in check.conditions] == [("mustBe", 0)]


def _counted(check: CheckPlan, result: CheckResult) -> int | None:
    """The number of offending rows, whatever the unit."""
    if check.unit == "percent":
        count = result.details.get("count")
        return int(count) if count is not None else None
    return int(result.observed) if result.observed is not None else None


def _share(count: int, total: int | None) -> str:
    return f" ({_percent(100.0 * count / total)} %)" if total else ""


def _judged(check: CheckPlan, sentence: str) -> str:
    """The sentence, and the threshold unless it is the clause's default of none at all."""
    return sentence if _none_allowed(check) else f"{sentence}; the contract wants {wants(check)}"


Phrase = Callable[[Params], str]


def offending(what: Phrase, nothing: Phrase | None = None) -> Words:
    """`1 row of 120 below 0 (0.8 %)`; with none, `no value below 0 in 120 rows` (or `nothing`).
    Both phrases are made of the check's parameters: the contract's own text."""

    def words(check: CheckPlan, result: CheckResult) -> str:
        count, total = _counted(check, result), result.row_count
        phrase = what(check.params)
        noun = _noun(check)
        if noun == "item":  # an array's items are counted; the rows hold any number of them
            if count is None:
                return _judged(check, f"the items {phrase} were not counted")
            none = (nothing(check.params) if nothing is not None else f"no value {phrase}") + " among the items"
            return _judged(check, (none if count == 0 else f"{rows(count, noun)} {phrase}")
                           + (f" in {rows(total)}" if total is not None else ""))
        if count is None:
            return _judged(check, f"the rows {phrase} were not counted")
        if count == 0:
            none = nothing(check.params) if nothing is not None else f"no value {phrase}"
            return _judged(check, none + (f" in {rows(total)}" if total is not None else ""))
        of = f" of {total}" if total is not None else ""
        return _judged(check, f"{rows(count)}{of} {phrase}{_share(count, total)}")

    return words


def beyond(p: Params) -> str:
    """The side of a bound an offending value lies on: `below 0`, `at or above 100`."""
    side = {(True, False): "below", (True, True): "at or below", (False, False): "above",
            (False, True): "at or above"}[(bool(p["lower"]), bool(p["strict"]))]
    return f"{side} {number(p['bound']) if isinstance(p['bound'], (int, float)) else p['bound']}"


def valid(p: Params) -> str:
    rules = ([f"one of {listed(p['valid_values'])}"] if p.get("valid_values") is not None else []) + (
        [f"matching {p['pattern']}"] if p.get("pattern") is not None else [])
    return " or ".join(rules)


def listed(values: list[Any], most: int = 4) -> str:
    """The contract's own values, a few of them: `'a', 'b', NULL and 3 more`."""
    shown = ["NULL" if v is None else repr(v) for v in values[:most]]
    more = len(values) - most
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def samples_text(values: list[Any]) -> str:
    """Samples on one line, read without a click: `9999, 10000`, `'vip', NULL`; a row of several
    columns in parentheses, `(7, 'x')`. Text is quoted, as `listed` quotes the contract's values."""
    def one(value: Any) -> str:
        if isinstance(value, list):
            return f"({', '.join(one(v) for v in value)})"
        return "NULL" if value is None else repr(value) if isinstance(value, str) else number(value)

    return ", ".join(one(v) for v in values)


def target(p: Params) -> str:
    """What a relationship points at: `orders.order_id`, `orders(id, line)`."""
    obj, columns = p.get("target_object") or "?", list(p.get("target_columns") or [])
    return f"{obj}.{columns[0]}" if len(columns) == 1 else f"{obj}({', '.join(columns)})"


# --- kinds with words of their own ----------------------------------------------------------------

def _noun(check: CheckPlan) -> str:
    """What a row-level clause counts: rows, or an array's items (odcs/clauses/nested.py)."""
    return "item" if "[]" in (check.params.get("path") or []) else "row"


def nulls(check: CheckPlan, result: CheckResult) -> str:
    """`no NULL in 120 rows`, `3 NULLs in 120 rows (2.5 %)`; an array's `2 NULL items in 120 rows`."""
    count, total = _counted(check, result), result.row_count
    within = f" in {rows(total)}" if total is not None else ""
    if count is None:
        return _judged(check, "the NULLs were not counted")
    if _noun(check) == "item":
        return _judged(check, ("no NULL item" if count == 0 else rows(count, "NULL item")) + within)
    if count == 0:
        return _judged(check, f"no NULL{within}")
    return _judged(check, f"{rows(count, 'NULL')}{within}{_share(count, total)}")


def keys(one: str, many: str, nothing: str) -> Words:
    """`3 duplicate values of customer_id in 500 rows (0.6 %)`; `nothing` when there are none."""

    def words(check: CheckPlan, result: CheckResult) -> str:
        count, total = _counted(check, result), result.row_count
        key = (check.property if check.params.get("path") else ", ".join(check.params.get("columns") or [])) or "?"
        within = f" in {rows(total)}" if total is not None else ""
        if count is None:
            return _judged(check, f"the {many} of {key} were not counted")
        if count == 0:
            return _judged(check, nothing.format(key=key) + within)
        return _judged(check, f"{count} {one if count == 1 else many} of {key}{within}{_share(count, total)}")

    return words


def freshness(check: CheckPlan, result: CheckResult) -> str:
    allowed = wants(check, show=lambda v: duration(float(v))).removeprefix("at most ")
    if "observed_withheld" in result.details:  # a classified column: its age would give its newest value away
        verdict = "within" if result.passed else "beyond"
        return f"the newest value's age is withheld (the column is classified); it is {verdict} the {allowed} " \
               "the contract allows"
    if result.observed is None:
        return f"the newest row's age was not measured; the contract allows {allowed}"
    return f"newest row {duration(float(result.observed))} old; the contract allows {allowed}"


def row_count(check: CheckPlan, result: CheckResult) -> str:
    counted = "not measured" if result.observed is None else rows(int(result.observed))
    return f"{counted}; the contract wants {wants(check)}"


def sql_rule(check: CheckPlan, result: CheckResult) -> str:
    threshold = check.threshold_text()
    if result.observed is None:
        return f"SQL rule result not measured; the contract wants {threshold}"
    return f"SQL rule returned {number(result.observed)}; the contract wants {threshold}"


_SCHEMA_PARTS = (("missing", "missing {}"), ("type_mismatches", "{}"), ("logical_type_mismatches", "{}"))


def schema(check: CheckPlan, result: CheckResult) -> str:
    details = result.details
    declared = len(check.params.get("columns") or [])
    broken = [form.format(item) for key, form in _SCHEMA_PARTS for item in details.get(key) or []]
    undeclared = details.get("undeclared_columns") or []
    extra = f" ({rows(len(undeclared), 'undeclared column')}: {', '.join(undeclared)})" if undeclared else ""
    if not broken:
        return f"all {rows(declared, 'declared column')} present, of the declared types{extra}"
    differ = "column differs" if len(broken) == 1 else "columns differ"
    return f"{len(broken)} {differ} from the contract: {'; '.join(broken)}{extra}"


def code_block(text: str, language: str = "sql") -> str:
    """`text` as a markdown code block it cannot close: the fence is longer than any run of backticks
    in it (a rule's string literal, a MySQL name)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"
