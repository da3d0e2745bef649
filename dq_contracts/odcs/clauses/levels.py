"""A quality rule's warn level: a `customProperties` entry `warnThreshold` beside the rule's operators,
which stay its fail level. `{property: warnThreshold, value: {mustBeLessThan: 1}}` beside
`mustBeLessThan: 5` warns from 1 and fails from 5."""

from __future__ import annotations

from typing import Any

from dq_contracts.odcs.clauses.vocabulary import _UNITS
from dq_contracts.odcs.normalise import OPERATORS
from dq_contracts.odcs.plans import Condition, warn_level_error
from dq_contracts.odcs.spelling import did_you_mean

WARN_THRESHOLD = "warnThreshold"
# the DataQ ADR's other name: here the rule's own operators are the fail level
FAIL_THRESHOLD = "failThreshold"


class BadLevel(Exception):
    """A warn level that cannot be used as written: its message, and the parts of the document it is at."""

    def __init__(self, message: str, parts: list):
        super().__init__(message)
        self.parts = parts


def warn_conditions(rule: dict[str, Any], parts: list, fail: tuple[Condition, ...],
                    clean: int | None = None) -> tuple[Condition, ...]:
    """The rule's warn level (() when it has none); BadLevel when one is written but wrong: a misspelt
    entry, an operator that is not ODCS's, a value that is no finite number, a level that is not reached
    before the fail level (every value that fails the rule must break the warn level too), or one that
    the measure of clean data (`clean`, the kind's: 0 NULLs) already breaks."""
    entries = rule.get("customProperties")
    if not isinstance(entries, list):
        return ()
    found: list[tuple[int, Any]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("property"), str):
            continue
        name, at = entry["property"], [*parts, "customProperties", i]
        if name == FAIL_THRESHOLD:
            raise BadLevel(f"{FAIL_THRESHOLD}: the rule's own operator is its fail level (write it on the "
                           f"rule, e.g. mustBeLessThan: 5); only {WARN_THRESHOLD} goes in customProperties",
                           [*at, "property"])
        if name != WARN_THRESHOLD:
            hint = did_you_mean(name, [WARN_THRESHOLD])
            if hint:
                raise BadLevel(f"unknown customProperties entry {name!r}{hint}", [*at, "property"])
            continue  # any other custom property is the author's own
        found.append((i, entry.get("value")))
    if not found:
        return ()
    if len(found) > 1:
        raise BadLevel(f"{WARN_THRESHOLD} is given {len(found)} times; give one",
                       [*parts, "customProperties", found[1][0]])
    i, value = found[0]
    at = [*parts, "customProperties", i, "value"]
    warn = _conditions(value, at)
    percent = _UNITS.get(str(rule.get("unit") or "rows").strip().lower()) == "percent"
    why = warn_level_error(warn, fail, "%" if percent else "", clean)
    if why:
        raise BadLevel(why, at)
    return warn


def _conditions(value: Any, at: list) -> tuple[Condition, ...]:
    """`{mustBeLessThan: 1}` (several operators: all must hold, as on the rule) → conditions."""
    if not isinstance(value, dict) or not value:
        raise BadLevel(f"{WARN_THRESHOLD} needs a value of ODCS operators, as on the rule (e.g. "
                       f"{{mustBeLessThan: 1}}), got {value!r}", at)
    out = []
    for op, bound in value.items():
        if op not in OPERATORS:
            raise BadLevel(f"{WARN_THRESHOLD}: {op!r} is not an ODCS operator{did_you_mean(op, OPERATORS)}",
                           [*at, op])
        if op in ("mustBeBetween", "mustNotBeBetween"):
            if not (isinstance(bound, list) and len(bound) == 2 and all(_number(v) for v in bound)):
                raise BadLevel(f"{WARN_THRESHOLD}: {op} needs two numbers, got {bound!r}", [*at, op])
            bound = (min(bound), max(bound))
        elif not _number(bound):
            raise BadLevel(f"{WARN_THRESHOLD}: {op} needs a number, got {bound!r}", [*at, op])
        out.append(Condition(op, bound))
    return tuple(out)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def misplaced(node: dict[str, Any], parts: list) -> list[tuple[str, list]]:
    """A `warnThreshold` (or a near spelling) among a property's own customProperties: (why, where) each.
    Its flags fail on one offending row, so no level comes before them: the entry would do nothing."""
    entries = node.get("customProperties")
    return [(f"{entry['property']!r} on a property: its flags (required, unique, the bounds, lengths, "
             f"patterns) fail on one offending row, so nothing warns before them; put {WARN_THRESHOLD} on a "
             "quality rule of the property (metric: nullValues with mustBeLessThan, say)", [*parts, "customProperties", i])
            for i, entry in enumerate(entries if isinstance(entries, list) else [])
            if isinstance(entry, dict) and isinstance(entry.get("property"), str)
            and (entry["property"] in (WARN_THRESHOLD, FAIL_THRESHOLD) or did_you_mean(entry["property"], [WARN_THRESHOLD]))]
