"""The semantics this package decides where ODCS is silent (README: Semantics)."""

from __future__ import annotations

import pytest

from dq_contracts.odcs.clauses.vocabulary import TIME_UNITS
from dq_contracts.odcs.plans import CheckPlan, Condition, percent_of


def check(*conditions):
    return CheckPlan("c", "row_count", "/x", "t", None, "ERROR", "", conditions=tuple(conditions))


@pytest.mark.parametrize("value,passes", [(0, False), (1, True), (5, True), (10, True), (11, False)])
def test_must_be_between_is_inclusive(value, passes):
    assert check(Condition("mustBeBetween", (1, 10))).passes(value) is passes


@pytest.mark.parametrize("value,passes", [(0, True), (1, False), (10, False), (11, True)])
def test_must_not_be_between_is_its_negation(value, passes):
    assert check(Condition("mustNotBeBetween", (1, 10))).passes(value) is passes


def test_a_null_observation_never_passes():
    assert check(Condition("mustBe", 0)).passes(None) is False
    assert check(Condition("mustNotBe", 5)).passes(None) is False


def test_a_check_without_conditions_never_passes():
    assert check().passes(0) is False


def test_percent_divides_by_all_rows_and_is_zero_on_an_empty_table():
    assert percent_of(1, 200) == 0.5
    assert percent_of(0, 0) == 0.0


@pytest.mark.parametrize("unit,seconds", [("d", 86400), ("days", 86400), ("h", 3600), ("hours", 3600),
                                          ("min", 60), ("y", 365 * 86400), ("mo", 30 * 86400), ("ms", 0.001)])
def test_time_units(unit, seconds):
    assert TIME_UNITS[unit] == seconds


def test_bare_m_is_refused_as_ambiguous():
    assert "m" not in TIME_UNITS


def test_between_bounds_are_sorted(write_contract):
    from dq_contracts.odcs.load import load_contracts

    path = write_contract("""
        apiVersion: v3.1.0
        kind: DataContract
        id: c
        version: 1.0.0
        status: active
        schema:
          - name: t
            quality:
              - metric: rowCount
                mustBeBetween: [10, 1]
    """)
    plan = load_contracts([path]).plans[0]
    row_count = next(c for c in plan.objects[0].checks if c.kind == "row_count")
    assert row_count.conditions == (Condition("mustBeBetween", (1, 10)),)
