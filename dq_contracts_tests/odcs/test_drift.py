"""`init --against`'s rules as a table (odcs/drift.py): a property as written, its column as measured
now, the property as the table is now."""

from __future__ import annotations

import datetime as dt
import decimal
from types import SimpleNamespace

import pytest

import yaml

from dq_contracts.odcs.drift import Edits, drift_diff, redrawn
from dq_contracts.odcs.drift_lines import edited


def _column(name, family="integer", **measured):
    return SimpleNamespace(**{"name": name, "type_text": "INTEGER", "family": family, "nulls": 0, "distinct": 3,
                              "minimum": 1, "maximum": 3, "max_length": None, "values": None, **measured})


REDRAWN = [  # property as written, the column now (rows: 3), the property as the table is now
    ({"name": "a", "required": True, "description": "kept"}, _column("a", nulls=1, distinct=2),
     {"name": "a", "description": "kept"}),
    ({"name": "a", "unique": True}, _column("a", nulls=1, distinct=2), {"name": "a", "unique": True}),
    ({"name": "a", "unique": True}, _column("a", distinct=2), {"name": "a"}),
    ({"name": "a", "primaryKey": True, "primaryKeyPosition": 1}, _column("a", distinct=2), {"name": "a"}),
    ({"name": "a", "logicalTypeOptions": {"minimum": 0, "maximum": 10, "exclusiveMaximum": 10}},
     _column("a", family="number", minimum=decimal.Decimal("-2.5"), maximum=decimal.Decimal("12")),
     {"name": "a", "logicalTypeOptions": {"minimum": -3, "maximum": 20, "exclusiveMaximum": 10}}),
    ({"name": "a", "logicalTypeOptions": {"minimum": 0, "maximum": 10}}, _column("a", minimum=2, maximum=5),
     {"name": "a", "logicalTypeOptions": {"minimum": 0, "maximum": 10}}),  # never narrowed
    ({"name": "d", "logicalTypeOptions": {"minimum": "2026-01-01", "maximum": "2026-12-31"}},
     _column("d", family="date", minimum=dt.date(2025, 6, 1), maximum=dt.date(2027, 1, 2)),
     {"name": "d", "logicalTypeOptions": {"minimum": "2025-01-01", "maximum": "2027-01-02"}}),
    ({"name": "s", "logicalTypeOptions": {"maxLength": 4}}, _column("s", family="string", max_length=9),
     {"name": "s", "logicalTypeOptions": {"maxLength": 9}}),
    ({"name": "s", "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["b", "a"]}}]},
     _column("s", family="string", distinct=2, values=["a", "c"]),
     {"name": "s", "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["b", "a", "c"]}}]}),
    ({"name": "A", "physicalName": "A", "required": True}, _column("a", nulls=1),
     {"name": "A", "physicalName": "A"}),  # a column matched ignoring case
]


@pytest.mark.parametrize("prop,column,expected", REDRAWN)
def test_a_property_as_the_table_is_now(prop, column, expected):
    table = SimpleNamespace(name="t", rows=3, columns=[column], measured_at=dt.datetime.now(dt.timezone.utc))
    doc = {"id": "x", "schema": [{"name": "t", "properties": [prop]}]}
    edits = Edits()
    now = redrawn(doc, [table], {}, edits=edits)
    assert now["schema"][0]["properties"] == [expected]
    text = yaml.safe_dump(doc, sort_keys=False)
    assert (drift_diff(text, doc, [table], {}, "c.yaml") == "") is (prop == expected)
    # each change made to the file's own lines (drift_lines.py), which then read as the document made
    assert prop == expected or yaml.safe_load(edited(text, edits, now)) == now


def test_an_empty_table_bears_every_clause_and_a_compound_key_is_judged_only_on_nulls():
    props = [{"name": "a", "primaryKey": True, "required": True, "unique": True}, {"name": "b", "primaryKey": True}]
    columns = [_column("a", distinct=1), _column("b", distinct=1)]
    empty = SimpleNamespace(name="t", rows=0, columns=columns)
    doc = {"schema": [{"name": "t", "properties": props}]}
    assert redrawn(doc, [empty], {}) == doc
    full = SimpleNamespace(name="t", rows=3, columns=columns)
    kept = [sorted(p) for p in redrawn(doc, [full], {})["schema"][0]["properties"]]
    assert kept == [["name", "primaryKey", "required"], ["name", "primaryKey"]]  # `unique` was not: dropped
