"""The README's reference of every clause kind is what scripts/clause_reference.py writes from the
clause table and the check kinds, and each of its examples is a valid contract fragment that compiles
to the row's check kind (or to the not-enforced list), as `dq-contracts validate` loads it."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from dq_contracts.odcs.check_kinds import PRIMARY_KEY
from dq_contracts.odcs.clauses import CLAUSES
from dq_contracts.odcs.problems import errors_of
from dq_contracts_tests.support import REPO


def reference():
    if "clause_reference" not in sys.modules:  # a dataclass needs its module registered
        spec = importlib.util.spec_from_file_location("clause_reference", REPO / "scripts" / "clause_reference.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["clause_reference"] = module
        spec.loader.exec_module(module)
    return sys.modules["clause_reference"]


def test_the_readme_reference_is_what_the_tables_write():
    ref = reference()
    written = ref.readme_region((REPO / "README.md").read_text())
    assert written == ref.region(), "run `python scripts/clause_reference.py` and read the change"


def test_every_clause_of_the_table_has_one_row():
    rows = [row.clause for row in reference().ROWS]
    assert sorted(rows) == sorted([*CLAUSES, PRIMARY_KEY]), "a clause without a reference row, or a row too many"


@pytest.mark.parametrize("row", reference().ROWS, ids=lambda row: row.clause)
def test_each_example_validates_and_compiles_to_its_row(row):
    ref = reference()
    result, said = ref.compiled(row)
    assert errors_of(said) == [], [p.render() for p in said]
    plan = result.plans[0]
    kind = ref.kind_of(row.clause)
    checks = [c for o in plan.objects for c in o.checks if c.kind != "schema"]
    if row.clause == "schema":
        assert kind == "schema" and all(any(c.kind == "schema" for c in o.checks) for o in plan.objects)
    elif kind is None:  # a clause the table does not enforce: exactly one not-enforced entry, said by validate
        assert checks == [] and len(plan.not_enforced) == 1, plan.not_enforced
        assert [p.severity for p in said] == ["warning"], [p.render() for p in said]
    else:
        assert [c.kind for c in checks] == [kind] and said == [], ([c.kind for c in checks], said)
