"""The corpus sweep's nested columns (test_sweep.py): the DuckDB type a nested declaration (the
schema check's `nested` params) is built as, and where a path leads in a declaration and in a value.
A path is the steps below the column, each a field's physical name or "[]" (an array's items)."""

from __future__ import annotations

from typing import Any

NESTED_SQL = {"integer": "BIGINT", "number": "DOUBLE", "boolean": "BOOLEAN", "date": "DATE",
              "timestamp": "TIMESTAMP", "time": "TIME"}


def step_of(prop: dict) -> str:
    return str(prop.get("physicalName") or prop.get("name"))


def nested_sql(shape: dict) -> str:
    """STRUCT("a" VARCHAR, …), <item>[] (an array of arrays too: the product does not enforce its
    items, but the schema check still compares its shape)."""
    if shape.get("properties"):
        return "STRUCT(" + ", ".join('"{}" {}'.format(step_of(f).replace('"', '""'), nested_sql(f))
                                     for f in shape["properties"]) + ")"
    if isinstance(shape.get("items"), dict):
        return nested_sql(shape["items"]) + "[]"
    return NESTED_SQL.get(str(shape.get("logicalType") or "").lower(), "VARCHAR")


def shape_at(shape: dict, path: tuple[str, ...] | list[str]) -> dict:
    """The declaration of the field or item a path leads to."""
    for step in path:
        shape = shape["items"] if step == "[]" else next(f for f in shape["properties"] if step_of(f) == step)
    return shape


def planted_at(value: Any, path: tuple[str, ...] | list[str], bad: Any) -> Any:
    """The nested value with `bad` at the path (in the first item of each array on it)."""
    here = value
    for step in path[:-1]:
        here = here[0] if step == "[]" else here[step]
    here[0 if path[-1] == "[]" else path[-1]] = bad
    return value
