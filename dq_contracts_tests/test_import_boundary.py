"""The pure core never imports dagster (checked statically, on the source)."""

from __future__ import annotations

import ast
from pathlib import Path

import dq_contracts

CORE = ["problems", "paths", "loader", "normalise", "validate", "plans", "compiler", "sqlrules", "core", "cli",
        "sql", "runner", "connections", "checking", "demo", "kinds", "schema_check", "wording",
        "partitions", "declaration"]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_core_modules_do_not_import_dagster():
    package = Path(dq_contracts.__file__).parent
    for name in CORE:
        modules = imported_modules(package / f"{name}.py")
        assert not any(m == "dagster" or m.startswith(("dagster.", "dagster_")) for m in modules), (name, modules)
