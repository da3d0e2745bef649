"""Rewrite v3.0.x vocabulary into v3.1+ vocabulary, for compiling only.

The caller's document is never changed: `normalise` works on a deep copy and returns it with the
list of rewrites it made, so that `dq-contracts plan` can show them. Each rewrite is one small
function in `REWRITES`, applied in order.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from dq_contracts.odcs.paths import pointer

OPERATORS = (
    "mustBe",
    "mustNotBe",
    "mustBeGreaterThan",
    "mustBeGreaterOrEqualTo",
    "mustBeLessThan",
    "mustBeLessOrEqualTo",
    "mustBeBetween",
    "mustNotBeBetween",
)

# v3.0 library `rule` names (free text in v3.0) that have a v3.1 `metric` with the same meaning.
V30_RULE_TO_METRIC = {
    "duplicateCount": "duplicateValues",
    "duplicateValues": "duplicateValues",
    "validValues": "invalidValues",
    "invalidValues": "invalidValues",
    "nullCheck": "nullValues",
    "nullValues": "nullValues",
    "missingValues": "missingValues",
    "rowCount": "rowCount",
    "countCheck": "rowCount",
}
COUNT_METRICS = {"nullValues", "missingValues", "invalidValues", "duplicateValues"}


@dataclass(frozen=True, slots=True)
class Rewrite:
    pointer: str
    message: str
    merged: str | None = None  # a clause pointer that no longer exists on its own after the rewrite

    def to_json(self) -> dict[str, str]:
        return {"clause": self.pointer, "message": self.message}


def quality_items(document: dict[str, Any]) -> Iterator[tuple[list[str | int], dict[str, Any]]]:
    """(parts, rule) for every quality rule at object and (nested) property level."""
    for oi, obj in enumerate(_list(document.get("schema"))):
        if not isinstance(obj, dict):
            continue
        for qi, rule in enumerate(_list(obj.get("quality"))):
            if isinstance(rule, dict):
                yield ["schema", oi, "quality", qi], rule
        yield from _property_quality(obj.get("properties"), ["schema", oi])


def _property_quality(properties: Any, base: list[str | int]) -> Iterator[tuple[list[str | int], dict]]:
    for pi, prop in enumerate(_list(properties)):
        if not isinstance(prop, dict):
            continue
        here = [*base, "properties", pi]
        for qi, rule in enumerate(_list(prop.get("quality"))):
            if isinstance(rule, dict):
                yield [*here, "quality", qi], rule
        if prop.get("properties"):  # (most properties have none: no generator for them)
            yield from _property_quality(prop["properties"], here)


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _rule_to_metric(document: dict) -> list[Rewrite]:
    out = []
    for parts, rule in quality_items(document):
        name = rule.get("rule")
        if "metric" in rule or not isinstance(name, str):
            continue
        if rule.get("type", "library") != "library":
            continue
        metric = V30_RULE_TO_METRIC.get(name)
        if metric is None:
            continue  # left as `rule`: the compiler lists it as not enforced
        del rule["rule"]
        rule["metric"] = metric
        out.append(Rewrite(pointer(parts), f"rule: {name} → metric: {metric}"))
    return out


def _valid_values_to_arguments(document: dict) -> list[Rewrite]:
    out = []
    for parts, rule in quality_items(document):
        for key in ("validValues", "missingValues", "pattern"):
            if key in rule and rule.get("metric") in ("invalidValues", "missingValues"):
                arguments = rule.setdefault("arguments", {})
                if isinstance(arguments, dict):
                    arguments.setdefault(key, rule.pop(key))
                    out.append(Rewrite(pointer(parts), f"{key} → arguments.{key}"))
    return out


def _default_operator(document: dict) -> list[Rewrite]:
    # v3.0 allows a library rule without an operator; for a count metric it means "must be 0".
    out = []
    for parts, rule in quality_items(document):
        if rule.get("metric") in COUNT_METRICS and not any(op in rule for op in OPERATORS):
            rule["mustBe"] = 0
            out.append(Rewrite(pointer(parts), "no operator → mustBe: 0"))
    return out


def _placeholders(document: dict) -> list[Rewrite]:
    out = []
    for parts, rule in quality_items(document):
        query = rule.get("query")
        if isinstance(query, str) and "${" in query:
            new = re.sub(r"\$\{(object|property|table|column|model|field)\}", r"{\1}", query)
            if new != query:
                rule["query"] = new
                out.append(Rewrite(pointer([*parts, "query"]), "${…} placeholders → {…}"))
    return out


def _exclusive_bounds(document: dict) -> list[Rewrite]:
    # v3.0: exclusiveMinimum/Maximum are booleans modifying minimum/maximum; v3.1: they are bounds.
    out = []
    for parts, prop in all_properties(document):
        options = prop.get("logicalTypeOptions")
        if not isinstance(options, dict):
            continue
        for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            flag = options.get(exclusive)
            if not isinstance(flag, bool):
                continue
            where = pointer([*parts, "logicalTypeOptions", exclusive])
            bound_at = pointer([*parts, "logicalTypeOptions", bound])
            if flag and bound in options:
                options[exclusive] = options.pop(bound)
                out.append(Rewrite(where, f"{exclusive}: true + {bound} → {exclusive}: value", merged=bound_at))
            else:
                del options[exclusive]
                merged_into = bound_at if bound in options else None
                out.append(Rewrite(merged_into or where, f"{exclusive}: {str(flag).lower()} dropped",
                                   merged=where))
    return out


def _sla_default_element(document: dict) -> list[Rewrite]:
    default = document.get("slaDefaultElement")
    if not isinstance(default, str):
        return []
    out = []
    for i, sla in enumerate(_list(document.get("slaProperties"))):
        if isinstance(sla, dict) and "element" not in sla:
            sla["element"] = default
            out.append(Rewrite(pointer(["slaProperties", i]), f"slaDefaultElement → element: {default}"))
    return out


def all_properties(document: dict) -> Iterator[tuple[list[str | int], dict]]:
    for oi, obj in enumerate(_list(document.get("schema"))):
        if isinstance(obj, dict):
            yield from _walk_properties(obj.get("properties"), ["schema", oi])


# a module function, not a closure: a recursive closure is a reference cycle, garbage only the
# cyclic collector frees (which loading pauses)
def _walk_properties(properties: Any, base: list[str | int]) -> Iterator[tuple[list[str | int], dict]]:
    for pi, prop in enumerate(_list(properties)):
        if isinstance(prop, dict):
            here = [*base, "properties", pi]
            yield here, prop
            if prop.get("properties"):  # (most properties have none: no generator for them)
                yield from _walk_properties(prop["properties"], here)


REWRITES: tuple[Callable[[dict], list[Rewrite]], ...] = (
    _rule_to_metric,
    _valid_values_to_arguments,
    _default_operator,
    _placeholders,
    _exclusive_bounds,
    _sla_default_element,
)


def normalise(document: dict[str, Any]) -> tuple[dict[str, Any], list[Rewrite]]:
    """A v3.1+ vocabulary copy of a v3.0.x document, with the rewrites made."""
    copied = copy.deepcopy(document)
    rewrites: list[Rewrite] = []
    for rewrite in REWRITES:
        rewrites.extend(rewrite(copied))
    return copied, rewrites
