"""The draft's rules as tables: rounding outward, which names suggest personal data, and what a
column's measures suggest (odcs/draft.py)."""

from __future__ import annotations

import datetime as dt
import math
from types import SimpleNamespace

import pytest
import yaml

from dq_contracts.odcs.draft import MARK, draft_text, few_values, personal, _round

ROUNDED = [  # value, floor, ceil
    (1234, 1000, 2000), (7, 7, 7), (0.37, 0.3, 0.4), (-20, -20, -20), (-23.5, -30, -20), (0, 0, 0), (99.99, 90, 100),
]
NAMES = [  # name, personal
    ("email", True), ("customer_email", True), ("first_name", True), ("lastName", True), ("phone_no", True),
    ("ip", True), ("client_ip", True), ("birth_date", True), ("card_number", True), ("ssn", True),
    ("status", False), ("zipped", False), ("shipping_mode", False), ("order_id", False), ("country_code", False),
]


FEW = [  # distinct, rows, a set of valid values
    (2, 3, True), (10, 1000, True), (11, 1000, False), (3, 3, False), (0, 0, False), (None, 5, False), (1, 1, False),
]


@pytest.mark.parametrize("distinct,rows,expected", FEW)
def test_few_values(distinct, rows, expected):
    assert few_values(distinct, rows) is expected


@pytest.mark.parametrize("value,low,high", ROUNDED)
def test_round_outward(value, low, high):
    assert (_round(value, math.floor), _round(value, math.ceil)) == (low, high)


@pytest.mark.parametrize("name,expected", NAMES)
def test_personal_names(name, expected):
    assert personal(name) is expected


def _column(name, family, **measured):
    return SimpleNamespace(**{"name": name, "type_text": "VARCHAR", "family": family, "nulls": 0, "distinct": None,
                              "minimum": None, "maximum": None, "max_length": None, "values": None, **measured})


NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
SUGGESTED = [  # column, the property's keys expected (beyond name/physical*/logicalType)
    (_column("id", "integer", distinct=3, minimum=1, maximum=3), {"required", "primaryKey", "logicalTypeOptions"}),
    (_column("code", "string", distinct=3, max_length=4), {"required", "unique", "logicalTypeOptions"}),
    (_column("note", "string", nulls=1, distinct=1, max_length=2, values=["x"]), {"logicalTypeOptions", "quality"}),
    (_column("email", "string", distinct=1, max_length=9, values=["a@b.io"]), {"required", "logicalTypeOptions"}),
    (_column("d", "date", distinct=2, minimum=dt.date(2025, 3, 4), maximum=dt.date(2026, 1, 1)),
     {"required", "logicalTypeOptions"}),
]


@pytest.mark.parametrize("column,keys", SUGGESTED, ids=[c.name for c, _ in SUGGESTED])
def test_suggestions(column, keys):
    table = SimpleNamespace(name="t", rows=3, columns=[column], measured_at=NOW)
    text = draft_text([table], ["  - server: w", "    type: duckdb"], "urn:x")
    prop = yaml.safe_load(text)["schema"][0]["properties"][0]
    assert set(prop) - {"name", "physicalName", "physicalType", "logicalType"} == keys
    assert "a@b.io" not in text
    suggested = {k for k in keys if k != "logicalTypeOptions"} | set(prop.get("logicalTypeOptions", {}))
    marked = {line.split(":")[0].strip().lstrip("# ") for line in text.splitlines() if MARK in line}
    assert suggested - {"quality"} <= marked


def test_latency_on_newest_timestamp():
    old = _column("loaded", "timestamp", distinct=3, minimum=NOW, maximum=NOW - dt.timedelta(days=3, hours=1))
    new = _column("updated", "timestamp", distinct=3, minimum=NOW, maximum=NOW - dt.timedelta(hours=30))
    table = SimpleNamespace(name="t", rows=3, columns=[old, new], measured_at=NOW)
    sla = yaml.safe_load(draft_text([table], [], "urn:x"))["slaProperties"]
    assert sla == [{"property": "latency", "value": 3, "unit": "d", "element": "t.updated"}]


ODD_NAMES = ["a\nb: c", "x # y", "'q'", "caf\u00e9", "\u202eevil"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_names_stay_one_scalar(name):
    """A column or table name is written by yaml.safe_dump wherever it appears, comments included."""
    column = _column(name, "timestamp", distinct=1, minimum=NOW, maximum=NOW, values=None)
    status = _column("status", "string", distinct=2, max_length=9, values=[name, "ok"])
    table = SimpleNamespace(name=name, rows=3, columns=[column, status], measured_at=NOW)
    text = draft_text([table], [], "urn:x")
    assert text.isascii()
    doc = yaml.safe_load(text)
    assert doc["schema"][0]["properties"][0]["name"] == name
    assert doc["slaProperties"][0]["element"] == f"{name}.{name}"
    assert doc["schema"][0]["properties"][1]["quality"][0]["arguments"]["validValues"] == [name, "ok"]


NULL_BUDGETS = [  # NULLs, rows → the suggested (fail, warn) levels in percent; None: no rule
    (1, 100, (2, 1)),
    (32, 1000, (7, 4)),  # 3.2 %: warn above 4 %, fail above 7 %
    (1, 3, (70, 40)),
    (2, 5, (80, 40)),
    (23, 50, None),  # 46 %: twice it rounded up is 100 %, which fails nothing
    (3, 3, None),  # every row NULL
    (0, 3, None),  # no NULL: `required` instead
]


@pytest.mark.parametrize("nulls,rows,levels", NULL_BUDGETS, ids=[f"{n}-of-{r}" for n, r, _ in NULL_BUDGETS])
def test_a_column_with_nulls_gets_a_warn_and_a_fail_level(nulls, rows, levels):
    table = SimpleNamespace(name="t", rows=rows, columns=[_column("note", "string", nulls=nulls)], measured_at=NOW)
    prop = yaml.safe_load(draft_text([table], [], "urn:x"))["schema"][0]["properties"][0]
    rules = [r for r in prop.get("quality", []) if r["metric"] == "nullValues"]
    if levels is None:
        assert rules == []
        return
    [rule] = rules
    assert (rule["unit"], rule["mustBeLessOrEqualTo"]) == ("percent", levels[0])
    assert rule["customProperties"] == [{"property": "warnThreshold", "value": {"mustBeLessOrEqualTo": levels[1]}}]
