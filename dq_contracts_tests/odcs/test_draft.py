"""The draft's rules as tables: rounding outward, which names suggest personal data, and what a
column's measures suggest (odcs/draft.py)."""

from __future__ import annotations

import datetime as dt
import math
from types import SimpleNamespace

import pytest
import yaml

from dq_contracts.odcs.draft import MARK, Unwritable, draft_text, few_values, personal, _round

ROUNDED = [  # value, floor, ceil
    (1234, 1000, 2000), (7, 7, 7), (0.37, 0.3, 0.4), (-20, -20, -20), (-23.5, -30, -20), (0, 0, 0), (99.99, 90, 100),
]
NAMES = [  # name, personal
    ("email", True), ("customer_email", True), ("first_name", True), ("lastName", True), ("phone_no", True),
    ("ip", True), ("client_ip", True), ("birth_date", True), ("card_number", True), ("ssn", True),
    ("status", False), ("zipped", False), ("shipping_mode", False), ("order_id", False), ("country_code", False),
    # the special categories (GDPR art. 9), money, dates of birth, government ids, by word or stem
    ("salary", True), ("base_salary", True), ("annualIncome", True), ("iban", True), ("account_no", True),
    ("dob", True), ("DOB", True), ("dateOfBirth", True), ("birthdate", True), ("religion", True),
    ("religious_affiliation", True), ("ethnicity", True), ("race", True), ("diagnosis", True),
    ("diagnoses_icd10", True), ("health_status", True), ("sexual_orientation", True), ("political_party", True),
    ("union_member", True), ("fingerprint_hash", True), ("genetic_marker", True), ("SSN", True),
    ("customerSSN", True), ("passport_no", True), ("National_ID", True), ("tax_id", True), ("nhs", True),
    ("latitude", True), ("blood_type", True), ("is_pregnant", True),
    ("trace_id", False), ("amount", False), ("placed", False), ("updated_at", False), ("quantity", False),
    ("priority", False), ("sku", False),
    # credentials, cards, criminal records (GDPR art. 10), ids of people and their things
    ("pwd", True), ("passwd", True), ("pin", True), ("api_key", True), ("apikey", True), ("private_key", True),
    ("otp", True), ("credential", True), ("salt", True), ("hash", True), ("cvc", True), ("cc_number", True),
    ("diagnosis", True), ("religion", True), ("ethnicity", True), ("sex", True), ("sexual_orientation", True),
    ("political_party", True), ("criminal_record", True), ("dni", True), ("vin", True), ("imei", True),
    ("ipaddr", True), ("login", True), ("license_plate", True), ("client_ip_address", True),
    ("accent", False), ("vintage", False), ("hashtag_count", False), ("success", False), ("pinned", False),
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
    (_column("email", "string", distinct=1, max_length=9, values=["a@b.io"]), {"required", "classification"}),
    (_column("d", "date", distinct=2, minimum=dt.date(2025, 3, 4), maximum=dt.date(2026, 1, 1)),
     {"required", "logicalTypeOptions"}),
    # unique today by chance, not by rule: no `unique` on an amount, a timestamp, a date
    (_column("amount", "number", distinct=3, minimum=1.5, maximum=99), {"required", "logicalTypeOptions"}),
    (_column("placed_at", "timestamp", distinct=3, minimum=NOW - dt.timedelta(days=1), maximum=NOW), {"required"}),
    (_column("day", "date", distinct=3, minimum=dt.date(2025, 3, 4), maximum=dt.date(2026, 1, 1)),
     {"required", "logicalTypeOptions"}),
]


def test_a_key_gets_a_minimum_and_no_maximum():
    """Tomorrow's id is higher than today's highest: a maximum on a key fails the next load."""
    table = SimpleNamespace(name="t", rows=3, measured_at=NOW,
                            columns=[_column("customer_id", "integer", distinct=3, minimum=1, maximum=3),
                                     _column("qty", "integer", distinct=3, minimum=1, maximum=3)])
    props = yaml.safe_load(draft_text([table], ["  - server: w", "    type: duckdb"], "urn:x"))["schema"][0]["properties"]
    options = {p["name"]: p.get("logicalTypeOptions") for p in props}
    assert options == {"customer_id": {"minimum": 1}, "qty": {"minimum": 1, "maximum": 3}}


def test_each_draft_is_named_after_its_table():
    """Two drafts in one folder: two names, no clash warning."""
    table = SimpleNamespace(name="orders", rows=0, measured_at=NOW, columns=[])
    assert yaml.safe_load(draft_text([table], ["  - server: w", "    type: duckdb"], "urn:x"))["name"] == "orders"


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


# text a table may hold, each of which YAML reads otherwise when written as it stands: flow indicators,
# comment, anchor, alias, tag, block scalar and directive marks, quotes, a leading dash, line breaks
# (YAML 1.1's too), NUL, a lone surrogate, words YAML reads as null, booleans or numbers, a long text
HOSTILE = [",", "open, chargeback_fraud", "x]", "[x", "{a: b}", "}", "?x", "? x", "a: b", ":", "#c", "a #c", "&a",
           "*a", "!tag", "|", ">", "'", '"', "%YAML", "@x", "`x`", "-", "- x", "-1", "a\nb", "a\r\nb", "\n",
           "a\x85b", "a\u2028b", "\t", "a\x00b", "null", "Null", "~", "", "true", "no", "yes", "on", "1e3",
           "1_000", "0x1f", "0o7", "1:20", ".nan", ".inf", "-.inf", "2026-01-02", "=", "<<", " lead", "trail ",
           "x" * 5000, "y " * 3000]


def _reread(text, tmp_path):
    """The draft as validate and check read it."""
    from dq_contracts.odcs.loader import read_document

    (tmp_path / "c.odcs.yaml").write_text(text, encoding="utf-8")
    document, problems = read_document(tmp_path / "c.odcs.yaml", explicit=True)
    assert document is not None, problems
    return document.data


@pytest.mark.parametrize("value", HOSTILE, ids=[ascii(v)[:24] for v in HOSTILE])
def test_hostile_text_is_read_back_exactly(value, tmp_path):
    """A table's own text, as validValues, as a column and table name and in init's comments, is read
    back as exactly what was measured: one emitter (yaml's) writes every value, never a join of them."""
    stamp = _column(value, "timestamp", distinct=1, minimum=NOW, maximum=NOW)
    status = _column("status", "string", distinct=3, max_length=9, values=["open", value, "paid"])
    table = SimpleNamespace(name=value, rows=9, columns=[stamp, status], measured_at=NOW)
    text = draft_text([table], ["  - server: w", "    type: duckdb"], "urn:x")
    assert text.isascii()
    doc = _reread(text, tmp_path)
    obj = doc["schema"][0]
    assert (obj["name"], obj["physicalName"]) == (value.split(".")[-1], value)
    assert [p["name"] for p in obj["properties"]] == [value, "status"]
    assert obj["properties"][1]["quality"][0]["arguments"]["validValues"] == ["open", value, "paid"]
    assert doc["slaProperties"][0]["element"] == f"{value.split('.')[-1]}.{value}"
    # a comment stays on its line: every line is a comment, or text YAML reads (none starts a key of its own)
    assert set(doc) == {"apiVersion", "kind", "id", "name", "version", "status", "servers", "schema", "slaProperties"}


HOSTILE_LISTS = [  # whole lists of hostile values, in one validValues
    HOSTILE[:10], HOSTILE[10:20], HOSTILE[20:30], HOSTILE[30:40], HOSTILE[40:50], HOSTILE[50:],
]


@pytest.mark.parametrize("values", HOSTILE_LISTS)
def test_hostile_lists_are_read_back_exactly(values, tmp_path):
    status = _column("status", "string", distinct=len(values), max_length=9, values=values)
    table = SimpleNamespace(name="t", rows=99, columns=[status], measured_at=NOW)
    doc = _reread(draft_text([table], [], "urn:x"), tmp_path)
    assert doc["schema"][0]["properties"][0]["quality"][0]["arguments"]["validValues"] == values


def test_a_value_yaml_cannot_hold_is_not_suggested(tmp_path):
    """A lone surrogate has no UTF-8 and no escape the contract's loader reads: no validValues are
    suggested of its column (the comment says why), and a name holding one is not written at all."""
    status = _column("status", "string", distinct=2, max_length=9, values=["\ud800", "ok"])
    table = SimpleNamespace(name="t", rows=9, columns=[status], measured_at=NOW)
    text = draft_text([table], [], "urn:x")
    prop = _reread(text, tmp_path)["schema"][0]["properties"][0]
    assert "quality" not in prop and "cannot be written as YAML" in text
    with pytest.raises(Unwritable):
        draft_text([SimpleNamespace(name="t\ud800", rows=9, columns=[], measured_at=NOW)], [], "urn:x")


WITHHELD = [  # a personal column's measures: nothing of them but counts is written
    _column("salary", "integer", distinct=3, minimum=52000, maximum=251000),
    _column("birth_date", "date", distinct=3, minimum=dt.date(1961, 3, 14), maximum=dt.date(1990, 7, 1)),
    _column("religion", "string", distinct=2, max_length=11, values=["Zoroastrian", "Jain"]),
    _column("diagnosis", "string", nulls=1, distinct=2, max_length=5, values=["J45.0", "E11"]),
    _column("dob_ts", "timestamp", distinct=3, minimum=NOW - dt.timedelta(days=9000), maximum=NOW),
    _column("status", "string", distinct=2, max_length=4, values=["Jain", "open"], withheld="classified pii"),
]


@pytest.mark.parametrize("column", WITHHELD, ids=[c.name for c in WITHHELD])
def test_a_personal_columns_values_are_not_written(column):
    """No value, range, earliest date, longest length or latency of a personal column (by its name,
    or classified by the contract init compares with): only what counts say, marked as withheld."""
    table = SimpleNamespace(name="t", rows=3, columns=[column], measured_at=NOW)
    text = draft_text([table], [], "urn:x")
    written = [str(v) for v in (column.minimum, column.maximum, column.max_length, *(column.values or ())) if v]
    assert not any(v in text for v in [*written, "52", "251", "1961", "1990", "observed", "earliest", "longest"])
    doc = yaml.safe_load(text)
    prop = doc["schema"][0]["properties"][0]
    assert "logicalTypeOptions" not in prop and "slaProperties" not in doc
    assert [r["metric"] for r in prop.get("quality", [])] in ([], ["nullValues"])
    assert "no value, range or length of it is read or written" in text
    # classified, so that check takes no sample of it (one the compared contract classifies is already)
    assert prop.get("classification") == ("pii" if personal(column.name) else None)


BOUNDS = [  # finite range, NaNs, -Infinity, +Infinity seen → the bounds suggested
    ((1.0, 2.0), 0, 0, 0, {"minimum": 1, "maximum": 2}),
    ((1.0, 2.0), 1, 0, 0, {}),  # a NaN fails every bound
    ((1.5, 1.5), 0, 1, 1, {}),
    ((1.5, 1.5), 0, 1, 0, {"maximum": 2}),  # -Infinity fails a minimum only
    ((1.5, 1.5), 0, 0, 2, {"minimum": 1}),
    ((None, None), 2, 1, 0, {}),  # nothing finite
]


@pytest.mark.parametrize("finite,nans,below,above,bounds", BOUNDS)
def test_bounds_of_finite_values_only(finite, nans, below, above, bounds, tmp_path):
    """A double column's bounds come from its finite values, and none a value seen today fails."""
    column = _column("x", "number", distinct=3, minimum=finite[0], maximum=finite[1], nans=nans, below=below,
                     above=above)
    text = draft_text([SimpleNamespace(name="t", rows=9, columns=[column], measured_at=NOW)], [], "urn:x")
    prop = _reread(text, tmp_path)["schema"][0]["properties"][0]
    assert prop.get("logicalTypeOptions", {}) == bounds
    assert ("NaN" in text) == bool(nans) and ("+Infinity" in text) == bool(above) and "nan" not in text
