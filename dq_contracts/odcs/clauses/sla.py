"""Object clauses (the schema check) and SLA clauses (latency as freshness, crons as schedules)."""

from __future__ import annotations

import math
import re

from dq_contracts.odcs.clauses.nested import declared_shape
from dq_contracts.odcs.clauses.context import Clause, Outcome
from dq_contracts.odcs.clauses.vocabulary import AMBIGUOUS_UNITS, NOT_TEMPORAL, SLA_REASONS, TIME_UNITS, Reason
from dq_contracts.odcs.spelling import did_you_mean
from dq_contracts.odcs.plans import Condition, NotEnforced


def _schema(c: Clause) -> Outcome:
    columns = [p for p in c.obj.get("properties") or [] if isinstance(p, dict)]
    if not columns:
        return c.skip("no_columns")
    return c.check("schema", "schema", f"{c.object_name} schema: {len(columns)} declared columns present, "
                   "declared physical types match",
                   params={"columns": [{"name": str(p.get("physicalName") or p.get("name")),
                                        "physical_type": p.get("physicalType"),
                                        "logical_type": p.get("logicalType"),
                                        "required": p.get("required") is True,
                                        **({"nested": declared_shape(p)} if declared_shape(p) else {})}
                                       for p in columns]})



def _latency(c: Clause) -> Outcome:
    sla = c.value
    unit_text = str(sla.get("unit") or "").strip()
    unit = unit_text.lower()
    if unit in AMBIGUOUS_UNITS:
        c.contract.problem(c.parts + ["unit"], f"unit {unit_text!r} is ambiguous ({AMBIGUOUS_UNITS[unit]}); "
                           "this latency is not enforced", "warning")
        return c.skip("ambiguous_unit", f"{unit_text!r}: {AMBIGUOUS_UNITS[unit]}")
    if unit not in TIME_UNITS:
        return c.skip("unknown_unit", repr(unit_text) + did_you_mean(unit, TIME_UNITS))
    value = sla.get("value")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return c.skip("not_comparable", f"value {sla.get('value')!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return c.skip("not_comparable", f"value {sla.get('value')!r}")
    if c.prop is None:
        return c.skip("unknown_element", repr(sla.get("element")))
    try:  # a latency beyond any float (a 400-digit integer) is no latency: one contract's, not the folder's
        seconds = float(value) * TIME_UNITS[unit]
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        return c.skip("not_comparable", f"value {sla.get('value')!r}: too large for a latency")
    description = f"{c.where()} latency: newest value at most {value} {unit_text} old"
    arguments = dict(rule={"id": sla.get("id")} if sla.get("id") else None,
                     conditions=(Condition("mustBeLessOrEqualTo", seconds),),
                     params={"max_age_seconds": seconds, "logical_type": c.prop.get("logicalType")})
    declared = _not_temporal(c.prop)
    if declared:
        return c.fails("freshness", "freshness", description, f"the SLA element {c.column} is declared {declared}: "
                       "freshness needs a date or timestamp column; this check will fail", [*c.parts, "element"],
                       "warning", **arguments)
    return c.check("freshness", "freshness", description, **arguments)  # its dimension: timeliness (its row)



def _not_temporal(prop: dict) -> str | None:
    """How a column is declared, when that declaration rules out a date or timestamp; else None
    (undeclared, or a string whose physical type is a date or time: judged at run time). A string
    with no physicalType is text: no engine reads the age of text (every family alike)."""
    logical = str(prop.get("logicalType") or "").strip().lower()
    physical = str(prop.get("physicalType") or "").strip().lower()
    if logical in NOT_TEMPORAL:
        return f"logicalType {logical}"
    if logical == "string" and not re.search(r"date|time", physical):
        return f"logicalType string, physicalType {physical}" if physical else "logicalType string"
    return None



def _sla_other(c: Clause) -> Outcome:
    prop = str(c.value.get("property") or "").strip()
    reason = SLA_REASONS.get(prop.lower(), "not a data-quality clause")
    return NotEnforced(c.pointer, Reason.NOT_DATA_QUALITY, f"SLA {prop}: {reason}", c.object_name or None)
