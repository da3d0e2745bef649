"""Nested properties: a property's path below its column, and which of its clauses can be checked.

ODCS nests properties in two ways: `properties` of an `object` (a struct field, `address.city`) and
`items` of an `array` (each element, `tags[]`). A path is the column and the steps below it, each a
field's physical name or ITEMS; the engine renders it per dialect (engine/nested.py). A clause on an
array's items counts items, not rows.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from dq_contracts.odcs.names import dagster_name

ITEMS = "[]"  # the step into an array's items (never a field's name: a field named `[]` is refused below)

# clause kinds that judge one value at a time, or distinct values: checkable wherever the value can be
# addressed; `unique` and `duplicateValues` only above any array (duplicates among items of all rows
# are not what a property's uniqueness means)
ROW_KINDS = {"required", "option:minimum", "option:maximum", "option:exclusiveMinimum", "option:exclusiveMaximum",
             "option:minLength", "option:maxLength", "option:pattern", "option:format", "option:multipleOf",
             "enum", "metric:nullValues", "metric:missingValues", "metric:invalidValues"}
DISTINCT_KINDS = {"unique", "metric:duplicateValues"}
# clauses that are not enforced wherever they are, for reasons of their own (their functions say which)
OWN_REASON_KINDS = {"option:*", "quality:text", "quality:custom", "quality:v30_rule"}

# the SQLAlchemy dialects (servers.py `dialect`) whose engine row addresses struct fields and unnests
# arrays (engine/dialects.py `field_access`, `unnest`); elsewhere a nested clause is not enforced
NESTED_DIALECTS = {"duckdb", "postgresql", "hive", "databricks"}


def step_of(prop: dict[str, Any]) -> str:
    return str(prop.get("physicalName") or prop.get("name"))


def label(path: tuple[tuple[str, dict], ...]) -> str:
    """`address.city`, `tags[]`, `lines[].sku`: the path as people read it (property names)."""
    text = ""
    for i, (step, prop) in enumerate(path):
        text += ITEMS if step == ITEMS else ("." if i else "") + str(prop.get("name"))
    return text


def name_base(path: tuple[tuple[str, dict], ...], name: Any = dagster_name) -> str:
    """`address__city`, `tags__items`: the Dagster name of a nested property, each step a part."""
    return "__".join("items" if step == ITEMS else name(str(prop.get("name"))) for step, prop in path)


def steps(path: tuple[tuple[str, dict], ...]) -> list[str]:
    """The steps below the column, as the engine renders them."""
    return [step for step, _ in path[1:]]


def refusal(kind: str, path: tuple[tuple[str, dict], ...], rule: Any, dialect: str | None,
            file_format: str | None) -> tuple[str, str] | None:
    """(reason code, detail) of a clause of a nested property that cannot be checked here, or None.
    `dialect`: the SQLAlchemy dialect of the contract's first SQL server (None: none named; the engine
    decides when it runs)."""
    if kind in OWN_REASON_KINDS:
        return None
    below = steps(path)
    if kind not in ROW_KINDS | DISTINCT_KINDS:
        return "nested_property", kind.split(":")[-1]
    if kind in DISTINCT_KINDS and ITEMS in below:
        return "nested_property", f"{kind.split(':')[-1]} on an array's items"
    if below.count(ITEMS) > 1:
        return "nested_property", "an array inside an array"
    if ITEMS in below and isinstance(rule, dict) and str(rule.get("unit") or "rows").lower() != "rows":
        return "nested_property", "a percent of an array's items (a count of items is checked)"
    if file_format == "csv":
        return "nested_unaddressable", "a CSV file holds no nested values"
    if dialect is not None and dialect not in NESTED_DIALECTS:
        return "nested_unaddressable", f"the {dialect} engine here addresses no struct field or array item"
    return None


def classified(path: tuple[tuple[str, dict], ...], words: Container[str]) -> bool:
    """Whether any property on the path is classified: its values are then never sampled."""
    return any(str(prop.get("classification") or "").strip().lower() in words for _, prop in path)


def classified_below(prop: dict[str, Any], words: Container[str], depth: int = 0) -> str | None:
    """`ssn: pii`, `[]: secret`: the first field or item below a property that is classified (its
    path from the property, and its classification), or None. A column any part of which is
    classified is a classified column: its value, whole, holds the classified one."""
    below = [(step_of(p), p) for p in prop.get("properties") or [] if isinstance(p, dict)] \
        if isinstance(prop.get("properties"), list) else []
    if isinstance(prop.get("items"), dict):
        below.append((ITEMS, prop["items"]))
    for step, child in below if depth <= 64 else ():  # the loader bounds depth; this only stops a cycle
        word = str(child.get("classification") or "").strip()
        if word.lower() in words:
            return f"{step}: {word}"
        deeper = classified_below(child, words, depth + 1)
        if deeper is not None:
            return f"{step}{'' if deeper.startswith(ITEMS) else '.'}{deeper}"
    return None


def any_classified(prop: dict[str, Any], words: Container[str]) -> bool:
    """The property itself or any field or item below it is classified."""
    return str(prop.get("classification") or "").strip().lower() in words or classified_below(prop, words) is not None


_SHAPE_KEYS = ("name", "physicalName", "logicalType", "physicalType")


def declared_shape(prop: dict[str, Any], depth: int = 0) -> dict[str, Any] | None:
    """What the schema check compares of a nested property: its names and types, its fields
    (`properties`) and its items, at any depth; None for a property with neither."""
    fields = [p for p in prop.get("properties") or [] if isinstance(p, dict)] if isinstance(
        prop.get("properties"), list) else []
    items = prop.get("items") if isinstance(prop.get("items"), dict) else None
    if not fields and items is None or depth > 64:  # the loader bounds depth; this only stops a cycle
        return None
    shape: dict[str, Any] = {k: prop[k] for k in _SHAPE_KEYS if k in prop}
    if fields:
        shape["properties"] = [declared_shape(f, depth + 1) or {k: f[k] for k in _SHAPE_KEYS if k in f}
                               for f in fields]
    if items is not None:
        shape["items"] = declared_shape(items, depth + 1) or {k: items[k] for k in _SHAPE_KEYS if k in items}
    return shape


def unknown_classification(prop: dict[str, Any]) -> str | None:
    """The warning for a `classification` that is neither a word known to classify nor one known
    not to: it classifies the column all the same (plans.CLASSIFIED), so a word this tool does not
    know never lets a value out; the warning says so and what it may have meant."""
    from dq_contracts.odcs.plans import CLASSIFYING, NOT_CLASSIFYING
    from dq_contracts.odcs.spelling import did_you_mean

    word = str(prop.get("classification") or "").strip()
    if not word or word.lower() in CLASSIFYING + NOT_CLASSIFYING:
        return None
    return (f"classification {word!r} is not one of {', '.join(CLASSIFYING + NOT_CLASSIFYING)}"
            f"{did_you_mean(word.lower(), CLASSIFYING + NOT_CLASSIFYING)}: the column is taken as classified "
            f"(no value of it leaves the database); write {' or '.join(NOT_CLASSIFYING[:2])} if it is not")
