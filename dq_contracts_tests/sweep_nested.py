"""The corpus sweep's nested columns (test_sweep.py): the DuckDB type a nested declaration (the
schema check's `nested` params) is built as, and where a path leads in a declaration and in a value.
A path is the steps below the column, each a field's physical name or "[]" (an array's items)."""

from __future__ import annotations

import functools
import re
from typing import Any

import duckdb

NESTED_SQL = {"integer": "BIGINT", "number": "DOUBLE", "boolean": "BOOLEAN", "date": "DATE",
              "timestamp": "TIMESTAMP", "time": "TIME"}
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_ ]*(\(\d+(,\s*\d+)?\))?")


@functools.lru_cache(maxsize=None)
def duckdb_knows(type_text: str) -> bool:
    """Whether DuckDB builds a scalar of this declared physicalType (a field is built as declared then,
    as a column is: the schema check compares a field's physicalType)."""
    if not _PLAIN.fullmatch(type_text.strip()):
        return False
    try:
        duckdb.connect().execute(f"SELECT CAST(NULL AS {type_text})")
    except duckdb.Error:
        return False
    return True


def step_of(prop: dict) -> str:
    return str(prop.get("physicalName") or prop.get("name"))


def nested_sql(shape: dict) -> str:
    """STRUCT("a" VARCHAR, …), <item>[] (an array of arrays too: the product does not enforce its
    items, but the schema check still compares its shape); a scalar field of its declared
    physicalType where DuckDB builds it, else of its logicalType."""
    if shape.get("properties"):
        return "STRUCT(" + ", ".join('"{}" {}'.format(step_of(f).replace('"', '""'), nested_sql(f))
                                     for f in shape["properties"]) + ")"
    if isinstance(shape.get("items"), dict):
        return nested_sql(shape["items"]) + "[]"
    physical = str(shape.get("physicalType") or "")
    if physical and duckdb_knows(physical):
        return physical
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
