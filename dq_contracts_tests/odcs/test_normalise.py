"""Each v3.0 → v3.1 rewrite, on a snippet; the caller's document is never changed."""

from __future__ import annotations

import copy

import pytest

from dq_contracts.odcs.normalise import normalise


def doc(rule=None, options=None, sla=None, default_element=None):
    prop = {"name": "a", "logicalType": "integer"}
    if rule is not None:
        prop["quality"] = [rule]
    if options is not None:
        prop["logicalTypeOptions"] = options
    d = {"apiVersion": "v3.0.2", "schema": [{"name": "t", "properties": [prop]}]}
    if sla is not None:
        d["slaProperties"] = [sla]
    if default_element:
        d["slaDefaultElement"] = default_element
    return d


def prop_of(d):
    return d["schema"][0]["properties"][0]


REWRITES = [
    ("rule → metric", doc({"rule": "duplicateCount", "mustBe": 0}),
     lambda d: prop_of(d)["quality"][0] == {"metric": "duplicateValues", "mustBe": 0}),
    ("validValues → invalidValues + arguments", doc({"rule": "validValues", "validValues": ["x"], "mustBe": 0}),
     lambda d: prop_of(d)["quality"][0] == {"metric": "invalidValues", "arguments": {"validValues": ["x"]}, "mustBe": 0}),
    ("no operator means must be 0", doc({"rule": "nullCheck"}),
     lambda d: prop_of(d)["quality"][0] == {"metric": "nullValues", "mustBe": 0}),
    ("boolean exclusiveMinimum → value", doc(options={"minimum": 5, "exclusiveMinimum": True}),
     lambda d: prop_of(d)["logicalTypeOptions"] == {"exclusiveMinimum": 5}),
    ("false exclusiveMaximum dropped", doc(options={"maximum": 5, "exclusiveMaximum": False}),
     lambda d: prop_of(d)["logicalTypeOptions"] == {"maximum": 5}),
    ("${object} → {object}", doc({"type": "sql", "query": "SELECT COUNT(*) FROM ${object} WHERE ${property} < 0"}),
     lambda d: prop_of(d)["quality"][0]["query"] == "SELECT COUNT(*) FROM {object} WHERE {property} < 0"),
    ("slaDefaultElement → element", doc(sla={"property": "latency", "value": 1, "unit": "d"}, default_element="t.a"),
     lambda d: d["slaProperties"][0]["element"] == "t.a"),
]


@pytest.mark.parametrize("label,document,check", REWRITES, ids=[r[0] for r in REWRITES])
def test_rewrite(label, document, check):
    before = copy.deepcopy(document)
    normalised, rewrites = normalise(document)
    assert check(normalised)
    assert rewrites, "every rewrite is recorded"
    assert all(r.pointer.startswith("/") and r.message for r in rewrites)
    assert document == before, "the stored document is never rewritten"


def test_unknown_v30_rule_is_left_and_listed_not_enforced(write_contract):
    from dq_contracts.odcs.load import load_contracts

    path = write_contract("""
        apiVersion: v3.0.2
        kind: DataContract
        id: c
        version: 1.0.0
        status: active
        schema:
          - name: t
            properties:
              - name: a
                logicalType: integer
                quality:
                  - rule: between
                    mustBeGreaterThan: 1
                    mustBeLessThan: 9
    """)
    result = load_contracts([path])
    assert result.problems == []
    assert [n.code for n in result.plans[0].not_enforced] == ["unknown_v30_rule"]


def test_v30_rule_with_two_operators_keeps_both(write_contract):
    from dq_contracts.odcs.load import load_contracts

    path = write_contract("""
        apiVersion: v3.0.2
        kind: DataContract
        id: c
        version: 1.0.0
        status: active
        schema:
          - name: t
            quality:
              - rule: rowCount
                mustBeGreaterThan: 1
                mustBeLessThan: 9
    """)
    result = load_contracts([path])
    assert result.problems == []
    check = next(c for c in result.plans[0].objects[0].checks if c.kind == "row_count")
    assert [c.operator for c in check.conditions] == ["mustBeGreaterThan", "mustBeLessThan"]
    assert check.passes(5) and not check.passes(9) and not check.passes(1)
    assert [r.message for r in result.plans[0].rewrites] == ["rule: rowCount → metric: rowCount"]
