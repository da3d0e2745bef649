"""One row per check kind, split by wing and keyed alike: the ODCS row (odcs/check_kinds.py) and the
engine's (engine/check_kinds.py). Every kind has every field in both, the two tables have the same
keys, every clause the rows name is a clause of the clause table, and every kind has its cases: the
compiler's (odcs/cases/clauses.yaml) and the engine's (engine/cases/<kind>.yaml)."""

from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path

import pytest
import yaml

from dq_contracts.engine.check_kinds import KINDS, Kind
from dq_contracts.odcs.check_kinds import CHECK_KINDS, PRIMARY_KEY, REACHES, CheckKind, reach_of
from dq_contracts.odcs.clauses import CLAUSES
from dq_contracts.odcs.params import Params

# the clauses that never compile to a check: each becomes a not-enforced entry with its reason
NEVER_A_CHECK = {"option:*", "quality:text", "quality:custom", "quality:v30_rule", "sla:*"}
# ODCS v3's data-quality dimensions
DIMENSIONS = {"accuracy", "completeness", "conformity", "consistency", "coverage", "timeliness", "uniqueness"}
CASES = yaml.safe_load((Path(__file__).parents[1] / "odcs" / "cases" / "clauses.yaml").read_text())
ENGINE_CASES = {path.stem: yaml.safe_load(path.read_text()) for path in (Path(__file__).parent / "cases").glob("*.yaml")}


def test_the_wings_tables_have_the_same_kinds():
    assert set(CHECK_KINDS) == set(KINDS)
    assert all(row.name == name for name, row in CHECK_KINDS.items())
    assert all(row.name == name for name, row in KINDS.items())


def test_the_odcs_row_has_no_default():
    """A row that leaves a field out is an error where it is written, not a silent "table-wide"."""
    assert [f.name for f in fields(CheckKind) if f.default is not MISSING or f.default_factory is not MISSING] == []


def test_the_engine_row_states_what_every_kind_needs():
    required = {f.name for f in fields(Kind) if f.default is MISSING and f.default_factory is MISSING}
    assert required == {"name", "judge", "failing_rows", "words"}


@pytest.mark.parametrize("name", sorted(CHECK_KINDS))
def test_every_kind_has_every_field_of_its_odcs_row(name):
    row = CHECK_KINDS[name]
    assert row.clauses and all(c in CLAUSES or c == PRIMARY_KEY for c in row.clauses), row.clauses
    assert isinstance(row.params, type) and issubclass(row.params, Params)
    assert row.reach in REACHES and row.reach_why.strip()
    assert row.observed_unit.strip()
    assert row.dimension is None or row.dimension in DIMENSIONS
    assert reach_of(name, "SELECT 1 WHERE {partition}")[0] in REACHES[:2]  # a placeholder is resolved


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_has_every_field_of_its_engine_row(name):
    kind = KINDS[name]
    assert callable(kind.judge) and callable(kind.words)
    assert (kind.measure is None) != (kind.evaluate is None), "one scan's column, or work of its own"
    assert kind.failing_rows is None or callable(kind.failing_rows)
    assert bool(kind.identity) == (kind.violation is not None), "a row-level measure is keyed by its parameters"
    assert set(kind.identity) <= {f.name for f in fields(CHECK_KINDS[name].params)}


def test_every_clause_of_the_clause_table_makes_one_kind_or_none():
    claimed = [c for row in CHECK_KINDS.values() for c in row.clauses if c != PRIMARY_KEY]
    assert len(claimed) == len(set(claimed)), "a clause compiles to one kind"
    assert set(CLAUSES) - set(claimed) == NEVER_A_CHECK


def test_every_kind_has_its_cases():
    """cases/clauses.yaml holds what the compiler makes of each kind's clauses."""
    cased = {case["expect"]["kind"] for case in CASES if "kind" in case["expect"]}
    assert cased == set(CHECK_KINDS)


def test_every_kind_has_its_engine_cases():
    """engine/cases/<kind>.yaml holds what the engine says of each kind on a small table: at least one
    case that passes and one that fails, and no file is named after a kind that does not exist."""
    assert set(ENGINE_CASES) - set(CHECK_KINDS) == set(), "a cases file of no kind"
    verdicts = {kind: {case["expect"]["passed"] for case in ENGINE_CASES.get(kind) or []} for kind in CHECK_KINDS}
    assert {kind: v for kind, v in verdicts.items() if v != {True, False}} == {}
