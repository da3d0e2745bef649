"""Check names: valid Dagster names, unique per asset, stable across versions and reordering."""

from __future__ import annotations

import re

import yaml

from dq_contracts.odcs.load import load_contracts

BASE = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "c", "version": "1.0.0", "status": "active",
    "schema": [{
        "name": "t",
        "properties": [
            {"name": "Customer-ID", "logicalType": "string", "required": True,
             "quality": [{"metric": "nullValues", "mustBe": 0}, {"metric": "nullValues", "mustBeLessThan": 5}]},
            {"name": "amount", "logicalType": "number", "logicalTypeOptions": {"minimum": 0, "maximum": 9}},
        ],
        "quality": [{"metric": "rowCount", "mustBeGreaterThan": 0}, {"id": "my-rule", "metric": "rowCount", "mustBe": 3}],
    }],
}


def names(tmp_path, document, file="c.odcs.yaml"):
    path = tmp_path / file
    path.write_text(yaml.safe_dump(document))
    result = load_contracts([path])
    assert result.problems == []
    return {
        (c.kind, c.property, tuple((x.operator, str(x.value)) for x in c.conditions)): c.name
        for c in result.plans[0].objects[0].checks
    }


def test_names_are_valid_and_unique(tmp_path):
    found = names(tmp_path, BASE)
    assert all(re.fullmatch(r"[a-z0-9_]+", n) for n in found.values()), found
    assert len(set(found.values())) == len(found)
    assert "customer_id__not_null" in found.values()
    assert "my_rule" in found.values()


def test_names_survive_a_new_version_and_reordering(tmp_path):
    before = names(tmp_path, BASE, "a.odcs.yaml")
    moved = yaml.safe_load(yaml.safe_dump(BASE))
    moved["version"] = "1.1.0"
    obj = moved["schema"][0]
    obj["properties"].reverse()
    obj["properties"][1]["quality"].reverse()
    obj["quality"].reverse()
    after = names(tmp_path, moved, "b.odcs.yaml")
    assert before == after


def test_plan_names_the_schedules_dagster_defines():
    """`dq-contracts plan` on the bundled contracts names each cron's schedule as Dagster does with
    contract_jobs=True (short names, never the URN)."""
    import subprocess
    import sys
    from pathlib import Path

    from dq_contracts.dagster_defs.definitions import build_contract_defs

    root = Path(__file__).resolve().parents[2]
    shown = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "plan", "contracts"], cwd=root,
                           capture_output=True, text=True, timeout=120, check=True).stdout
    planned = set(re.findall(r"\[schedule (\S+) with contract_jobs=True\]", shown))
    defined = {s.name for s in build_contract_defs(root / "contracts", contract_jobs=True).schedules}
    assert planned == defined and len(defined) == 3
    assert "urn" not in " ".join(planned)


# (property name, the name of its `required` check): readable from any script, never a bare `x`, and
# nothing that hides or reorders text (names.ascii_name)
PROPERTY_NAMES = [
    ("größe", "grosse__not_null"),
    ("café", "cafe__not_null"),
    ("Ærø", "aero__not_null"),
    ("日付", "u65e5_u4ed8__not_null"),
    ("注文 ID", "u6ce8_u6587_id__not_null"),
    ("размер", "razmer__not_null"),
    ("Ωμέγα", "omega__not_null"),
    ("اسم", "u0627_u0633_u0645__not_null"),
    ("ｆｕｌｌ", "full__not_null"),
    ("٣ days", "3_days__not_null"),
    ("amount\u202e", "amount__not_null"),  # a bidirectional override
    ("am\u200bount", "amount__not_null"),  # a zero-width space
    ("a\u2066b\u2069", "ab__not_null"),  # an isolate
    ("\u200b", "x__not_null"),  # nothing visible at all
    # letters and marks that show nothing (Default_Ignorable_Code_Point)
    ("am\u3164ount", "amount__not_null"),  # HANGUL FILLER (NFKD: U+1160)
    ("\u115fid", "id__not_null"),  # HANGUL CHOSEONG FILLER
    ("co\uffa0de", "code__not_null"),  # HALFWIDTH HANGUL FILLER
    ("na\u034fme", "name__not_null"),  # COMBINING GRAPHEME JOINER
    ("ke\ufe0fy", "key__not_null"),  # a variation selector
    ("ta\U000e0100g", "tag__not_null"),  # a supplementary variation selector
    ("\u17b4day", "day__not_null"),  # KHMER VOWEL INHERENT AQ
    ("mo\u180bnth", "month__not_null"),  # MONGOLIAN FREE VARIATION SELECTOR
    ("\u2800", "x__not_null"),  # BRAILLE PATTERN BLANK
]


def test_a_name_from_any_property_name(tmp_path):
    document = yaml.safe_load(yaml.safe_dump(BASE))
    document["schema"][0]["properties"] = [{"name": n, "logicalType": "string", "required": True}
                                           for n, _ in PROPERTY_NAMES]
    made = {c.property: c.name for c in plan_of(tmp_path, document).objects[0].checks if c.kind == "not_null"}
    expected = {n: name for n, name in PROPERTY_NAMES}
    # names alike are told apart by their clause (a hash), as any two equal names are
    alike = {name for name in expected.values() if list(expected.values()).count(name) > 1}
    for prop, name in expected.items():
        assert made[prop] == name or (name in alike and re.fullmatch(re.escape(name) + "_[0-9a-f]{6}", made[prop])), \
            (prop, made[prop])
    assert len(set(made.values())) == len(made)


def plan_of(tmp_path, document):
    path = tmp_path / "n.odcs.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    result = load_contracts([path])
    assert [p.message for p in result.errors] == []
    return result.plans[0]


# (text of a contract, as people are shown it): what hides or reorders text is escaped visibly
SHOWN = [
    ("amount\u202e", "amount\\u202e"),
    ("am\u200bount", "am\\u200bount"),
    ("a\u2066b\u2069", "a\\u2066b\\u2069"),
    ("bell\x07", "bell\\u0007"),
    ("over\rwrite", "over\\u000dwrite"),
    ("tag\U000e0041", "tag\\U000e0041"),
    ("line\u2028break", "line\\u2028break"),
    ("größe 日付 café", "größe 日付 café"),  # letters of any script show as they are
    ("two\nlines\tand a tab", "two\nlines\tand a tab"),
    ("am\u3164ount", "am\\u3164ount"),  # HANGUL FILLER: a letter that shows nothing
    ("\u115f\u1160x\uffa0", "\\u115f\\u1160x\\uffa0"),
    ("na\u034fme", "na\\u034fme"),  # COMBINING GRAPHEME JOINER
    ("ke\ufe0fy ta\U000e0100g", "ke\\ufe0fy ta\\U000e0100g"),  # variation selectors
    ("\u17b4\u17b5\u180b\u180f", "\\u17b4\\u17b5\\u180b\\u180f"),
    ("soft\u00adhyphen \u2800", "soft\\u00adhyphen \\u2800"),
    ("\u2764\ufe0f e\u0301", "\u2764\\ufe0f e\u0301"),  # a combining accent shows: kept
]


def test_what_people_are_shown_of_a_contracts_text():
    from dq_contracts.odcs.visible import visible

    assert [visible(text) for text, _ in SHOWN] == [shown for _, shown in SHOWN]


def test_nested_names_are_parts_of_their_path_and_unique(tmp_path):
    """A struct field's check is `<property>__<field>__…`, an array's items' `<property>__items__…`;
    a top-level property whose name spells the same path is a collision, resolved as any other (each
    name gains a hash of its clause)."""
    document = {**BASE, "schema": [{"name": "t", "properties": [
        {"name": "address", "logicalType": "object", "properties": [
            {"name": "City", "logicalType": "string", "required": True}]},
        {"name": "address__city", "logicalType": "string", "required": True},
        {"name": "tags", "logicalType": "array", "items": {"logicalType": "integer", "required": True}},
    ]}]}
    found = names(tmp_path, document)
    nested, flat = found[("not_null", "address.City", (("mustBe", "0"),))], found[("not_null", "address__city",
                                                                                  (("mustBe", "0"),))]
    assert nested != flat and nested.startswith("address__city__not_null") and flat.startswith("address__city__not")
    assert found[("not_null", "tags[]", (("mustBe", "0"),))] == "tags__items__not_null"
    assert len(set(found.values())) == len(found) and all(re.fullmatch(r"[a-z0-9_]+", n) for n in found.values())
