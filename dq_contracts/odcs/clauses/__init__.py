"""The clause table: one row per kind of ODCS clause, each a small function of the clause context
returning a `CheckPlan` or a `NotEnforced`. The functions live by clause family beside this file.
Each check kind's row (odcs/check_kinds.py) names the clauses that compile to it."""

from __future__ import annotations

from typing import Any, Callable
from dq_contracts.odcs.clauses.context import Clause, Outcome
from dq_contracts.odcs.clauses.properties import _length, _pattern, _relationship, _bound, _enum, _format, _multiple_of, _other_option, _required, _unique
from dq_contracts.odcs.clauses.quality import _custom, _metric, _sql, _text, _v30_rule
from dq_contracts.odcs.clauses.sla import _schema, _latency, _sla_other

CLAUSES: dict[str, Callable[[Clause], Outcome]] = {
    "schema": _schema,
    "required": _required,
    "unique": _unique,
    "option:minimum": _bound("minimum"),
    "option:maximum": _bound("maximum"),
    "option:exclusiveMinimum": _bound("exclusiveMinimum"),
    "option:exclusiveMaximum": _bound("exclusiveMaximum"),
    "option:minLength": _length("minLength"),
    "option:maxLength": _length("maxLength"),
    "option:pattern": _pattern,
    "option:format": _format,
    "option:multipleOf": _multiple_of,
    "option:*": _other_option,
    "enum": _enum,
    "relationship": _relationship,
    "metric:nullValues": _metric("null_values", "null_values", True, "NULL values"),
    "metric:missingValues": _metric("missing_values", "missing_values", True, "missing values"),
    "metric:invalidValues": _metric("invalid_values", "invalid_values", True, "invalid values"),
    "metric:duplicateValues": _metric("duplicate_values", "duplicate_values", False, "duplicate values"),
    "metric:rowCount": _metric("row_count", "row_count", False, "row count"),
    "quality:sql": _sql,
    "quality:text": _text,
    "quality:custom": _custom,
    "quality:v30_rule": _v30_rule,
    "sla:latency": _latency,
    "sla:*": _sla_other,
}



def quality_kind(rule: dict[str, Any]) -> str:
    kind = str(rule.get("type") or "library")
    if kind == "library":
        if "metric" in rule:
            return f"metric:{rule['metric']}"
        return "quality:v30_rule" if "rule" in rule else "quality:text"
    return f"quality:{kind}"
