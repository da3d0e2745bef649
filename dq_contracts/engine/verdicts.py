"""Verdicts: how a check kind's measurement is judged against its clause's conditions.

Apart from the kinds' table so that results and sentences may name `Unmeasurable` and `Verdict`
without importing every kind (the table imports the sentences)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.odcs.plans import CheckPlan, Level, percent_of

# A newest value up to this far ahead of the clock is clock skew between hosts, not bad data.
FUTURE_TOLERANCE_SECONDS = 300


@dataclass
class Verdict:
    passed: bool
    observed: Any = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    level: Level | None = None  # pass, warn or fail (`leveled`); None until judged against the levels


def leveled(check: CheckPlan, verdict: Verdict) -> Verdict:
    """The level the verdict reached: fail when the clause's fail level is broken, warn when only its
    warn level is (the check then fails, as a WARN check: its severity is the result's)."""
    level = Level.FAIL if not verdict.passed else Level.PASS
    if verdict.passed and verdict.error is None and check.warn_conditions:
        level = check.level(verdict.observed)
    verdict.passed, verdict.level = level == Level.PASS, level
    return verdict


class Unmeasurable(Exception):
    """The measurement cannot be judged (its message says why); the check fails with it."""


def judge_count(check: CheckPlan, value: Any, rows: int | None, checked: CheckedObject) -> Verdict:
    """A count of offending rows (or tuples), compared as rows or as a percent of all rows."""
    if value is None:
        raise Unmeasurable("the measurement came back NULL")
    count = int(value)
    if check.unit != "percent":
        return Verdict(check.passes(count), count)
    if rows is None:  # never a percent of a row count that was not measured
        raise Unmeasurable("the table's row count could not be measured, so no percent can be computed")
    measured = percent_of(count, rows)
    return Verdict(check.passes(measured), measured, details={"count": count})


def judge_freshness(check: CheckPlan, age: Any, rows: int | None, checked: CheckedObject) -> Verdict:
    if age is None:
        raise Unmeasurable(f"{check.params['column']} holds no value (an empty table, or every value NULL): "
                           "its freshness cannot be judged")
    age = float(age)
    column = checked.obj.column(check.params["column"])
    hidden = column is not None and column.classified  # the age would give the newest value away
    details: dict[str, Any] = ({"observed_withheld": "the column is classified: its newest value (and so its "
                                "age) is never shown, only the verdict"} if hidden else
                               {"newest_utc": (checked.now - dt.timedelta(seconds=age)).isoformat(timespec="seconds")})
    if age < -FUTURE_TOLERANCE_SECONDS:  # one row dated 2099 must not hide a table that stopped loading
        ahead = "" if hidden else f" {-age:.0f} s"
        return Verdict(False, None if hidden else age, error=f"the newest value of {check.params['column']} lies"
                       f"{ahead} in the future (more than the {FUTURE_TOLERANCE_SECONDS} s allowed for clock skew): "
                       "freshness cannot be judged", details=details)
    age = max(age, 0.0)
    return Verdict(check.passes(age), None if hidden else age, details=details)


def judge_scalar(check: CheckPlan, value: Any, rows: int | None, checked: CheckedObject) -> Verdict:
    """A SQL rule's single value, compared as it is (a NULL never passes)."""
    if value is None:
        raise Unmeasurable("the query returned NULL")
    if isinstance(value, bool):
        value = int(value)
    observed = value if isinstance(value, int) else float(value)
    # a rule reading a classified column was judged to use it only as COUNT(c), COUNT(DISTINCT c) or
    # c IS [NOT] NULL (sqlrules): its value is a count, never one of the column's values
    return Verdict(check.passes(observed), observed)


def judge_schema(check: CheckPlan, differences: dict[str, Any], rows: int | None, checked: CheckedObject) -> Verdict:
    """Missing columns and type mismatches fail; undeclared or nullable columns are information."""
    broken = sum(len(differences[k]) for k in ("missing", "type_mismatches", "logical_type_mismatches"))
    return Verdict(broken == 0, broken, details=differences)
