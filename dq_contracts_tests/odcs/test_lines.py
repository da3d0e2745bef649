"""Every check and schema object knows where it is written: its line in the file, and its named path."""

from __future__ import annotations

import pytest

from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.loader import read_document
from dq_contracts.odcs.paths import named_path, parts_of
from dq_contracts_tests.support import CONTRACTS

ORDERS = CONTRACTS / "orders.odcs.yaml"

# (object, check, the line the clause's block starts on or None, the first line from there that holds
# the clause, its named path)
CHECKS = [
    ("orders", "order_total__minimum", "- name: order_total", "minimum:",
     "schema.orders.properties.order_total.logicalTypeOptions.minimum"),
    ("orders", "currency__pattern", "- name: currency", "pattern:",
     "schema.orders.properties.currency.logicalTypeOptions.pattern"),
    ("orders", "order_id__not_null", "- name: order_id", "required: true",
     "schema.orders.properties.order_id.required"),
    ("orders", "order_id__primary_key", "- name: order_id", "primaryKey: true",
     "schema.orders.properties.order_id.primaryKey"),
    ("orders", "status_is_known", None, "- id: status_is_known", "schema.orders.properties.status.quality[0]"),
    ("orders", "orders_volume", None, "- id: orders_volume", "schema.orders.quality[0]"),
    ("orders", "orders_latency", None, "- id: orders_latency", "slaProperties[0]"),
    ("order_items", "line_no__exclusive_minimum", "- name: line_no", "exclusiveMinimum:",
     "schema.order_items.properties.line_no.logicalTypeOptions.exclusiveMinimum"),
    ("order_items", "quantity__null_values", "- name: quantity", "- metric: nullValues",
     "schema.order_items.properties.quantity.quality[0]"),
]

OBJECTS = [("orders", "- name: orders"), ("order_items", "- name: order_items")]


def line_in_text(block: str | None, needle: str) -> int:
    """1-based number of the first line holding `needle` at or after the line that is `block`."""
    lines = ORDERS.read_text(encoding="utf-8").splitlines()
    start = 0 if block is None else next(i for i, line in enumerate(lines) if line.strip() == block)
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


@pytest.fixture(scope="module")
def plan():
    result = load_contracts([ORDERS])
    assert not result.errors, result.errors
    return result.plans[0]


@pytest.mark.parametrize("object_name, check_name, block, needle, where", CHECKS)
def test_a_check_knows_its_line_and_named_path(plan, object_name, check_name, block, needle, where):
    check = next(c for c in plan.object(object_name).checks if c.name == check_name)
    assert check.where == where
    assert check.line == line_in_text(block, needle)


@pytest.mark.parametrize("object_name, line", OBJECTS)
def test_a_schema_object_knows_its_line(plan, object_name, line):
    assert plan.object(object_name).line == line_in_text(None, line)


def test_every_check_is_where_its_clause_is(plan):
    document, _ = read_document(ORDERS)
    checks = [c for o in plan.objects for c in o.checks]
    assert len(checks) > 20
    for check in checks:
        parts = parts_of(check.clause)
        assert (check.line, check.where) == (document.line_of(parts), named_path(document.data, parts)), check.name
    for obj in plan.objects:
        assert obj.line == document.line_of(parts_of(obj.pointer))
