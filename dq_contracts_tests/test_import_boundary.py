"""The three wings import one way, `dagster_defs -> engine -> odcs`, with no cycle (checked on the
source, every import statement, lazy ones included, so the rule is over folders, not a list)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dq_contracts

PACKAGE = Path(dq_contracts.__file__).parent

# wing -> (the wings of dq_contracts it may import, third-party roots it may not import)
WINGS = {
    "odcs": ({"odcs"}, ("dagster", "dagster_", "sqlalchemy", "duckdb", "psycopg2")),
    "engine": ({"odcs", "engine"}, ("dagster", "dagster_")),
    "dagster_defs": ({"odcs", "engine", "dagster_defs"}, ()),
}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("dq_contracts", *parts))
        found[name.removesuffix(".__init__")] = path
    return found


def imports_of(name: str, path: Path) -> set[str]:
    found = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # `from pkg import module`
    return found


def wing_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "dq_contracts" and parts[1] in WINGS else None


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {m for m in imports_of(name, path) if m in known and m != name} for name, path in known.items()}


def test_every_module_of_the_package_is_in_a_wing_or_is_an_entry_point():
    loose = {m for m in modules() if wing_of(m) is None and m.count(".") > 0 and m.split(".")[1] not in WINGS}
    assert loose == {"dq_contracts.cli", "dq_contracts.cli_init", "dq_contracts.cli_streams", "dq_contracts.demo", "dq_contracts.demo_defs"}


@pytest.mark.parametrize("wing", sorted(WINGS))
def test_a_wing_imports_only_the_wings_below_it(wing):
    allowed, forbidden = WINGS[wing]
    wrong = {}
    for name, path in modules().items():
        if wing_of(name) != wing:
            continue
        for imported in imports_of(name, path):
            other = wing_of(imported)
            if (imported.startswith("dq_contracts.") and other is None and imported.count(".") >= 1
                    and imported.split(".")[1] not in WINGS) or (other is not None and other not in allowed):
                wrong.setdefault(name, set()).add(imported)
            if imported.startswith(forbidden) if forbidden else False:
                wrong.setdefault(name, set()).add(imported)
    assert wrong == {}


def test_no_import_cycle():
    edges = graph()
    cycles = []
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    # the package's __init__ is imported by everything (Python imports parents first): not an edge back
    cycles = [c for c in cycles if "dq_contracts" not in c]
    assert cycles == []


def test_the_rule_sees_a_wrong_import():
    """The checker itself: a module of odcs importing the engine, lazily, is caught."""
    tree = "def f():\n    from dq_contracts.engine.connections import Files\n"
    path = PACKAGE / "odcs" / "__probe__.py"
    path.write_text(tree)
    try:
        imported = imports_of("dq_contracts.odcs.__probe__", path)
    finally:
        path.unlink()
    assert wing_of(next(m for m in imported if m.startswith("dq_contracts.engine"))) == "engine"


def test_the_readme_layout_draws_every_module_and_only_those():
    import re

    readme = (PACKAGE.parent / "README.md").read_text()
    block = readme.split("## Layout", 1)[1].split("```", 2)[1].split("dq_contracts_tests/", 1)[0]
    drawn = set(re.findall(r"\b([a-z_]+\.py)\b", block))
    files = {p.name for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" and p.parent.name != "clauses"}
    assert files - drawn == set(), "modules the Layout does not draw"
    assert drawn - files - {"__init__.py"} == set(), "the Layout draws modules that do not exist"
    for wing in WINGS:
        assert f"  {wing}/" in block


def test_no_test_module_imports_another():
    """Shared fixtures are conftest's (pytest gives them), shared helpers the support modules':
    a test module is never imported, so running one file alone never runs another's setup."""
    tests = PACKAGE.parent / "dq_contracts_tests"
    wrong = {}
    for path in sorted(tests.rglob("*.py")):
        for imported in imports_of(f"dq_contracts_tests.{path.stem}", path):
            last = imported.split(".")[-1]
            if imported.startswith("dq_contracts_tests") and (last.startswith("test_") or last == "conftest"):
                wrong.setdefault(path.name, set()).add(imported)
    assert wrong == {}
