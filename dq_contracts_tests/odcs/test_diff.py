"""`dq-contracts diff`, one test per row of cases/diff.yaml: two fragments of one contract, the changes
found (each breaking or not), each Dagster check's history (kept, new, gone), the version bump."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dq_contracts.odcs.check_kinds import CHECK_KINDS
from dq_contracts.odcs.diff import CHANGE_KINDS, FAMILIES
from dq_contracts.odcs.diff_clauses import ASPECTS, FAMILY_OF_KIND
from dq_contracts.odcs.diff_report import diff_paths, exit_code

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "diff.yaml").read_text())


def build(fragment: dict, version: str) -> dict:
    schema = fragment.get("schema") or [{"name": "t", "physicalName": "t",
                                         "properties": fragment["properties"], **(fragment.get("object") or {})}]
    doc = {"apiVersion": fragment.get("api", "v3.1.0"), "kind": "DataContract", "id": "c",
           "version": fragment.get("version", version), "status": "active", "schema": schema}
    if "sla" in fragment:
        doc["slaProperties"] = fragment["sla"]
    return doc


def _diff(case: dict, tmp_path: Path):
    old, new = tmp_path / "old.odcs.yaml", tmp_path / "new.odcs.yaml"
    old.write_text(yaml.safe_dump(build(case["old"], "1.0.0"), sort_keys=False))
    new.write_text(yaml.safe_dump(build(case["new"], "2.0.0"), sort_keys=False))
    result = diff_paths(str(old), str(new))
    assert result.errors == [], [e.render() for e in result.errors]
    assert len(result.diffs) == 1
    return result


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_diff_case(case, tmp_path):
    result = _diff(case, tmp_path)
    found = result.diffs[0]
    assert sorted([c.code, c.where, c.breaking] for c in found.changes) == sorted(case["changes"]), \
        [(c.code, c.where, c.detail) for c in found.changes]
    for code, _, breaking in case["changes"]:  # the table's flag is the classification's
        assert CHANGE_KINDS[code].breaking is breaking, code
    by_where = {c.where: c for c in found.changes}
    for where, text in (case.get("detail") or {}).items():
        assert text in by_where[where].detail, by_where[where].detail
    for where, text in (case.get("words") or {}).items():
        assert by_where[where].words == text
    fates = {fate: sorted("/".join(f.asset_key) + "/" + f.name for f in found.checks if f.fate == fate)
             for fate in ("kept", "new", "gone")}
    assert fates["new"] == sorted(case.get("new_checks", [])), fates
    assert fates["gone"] == sorted(case.get("gone", [])), fates
    if "kept" in case:
        assert fates["kept"] == sorted(case["kept"]), fates
    if "version_problem" in case:
        if case["version_problem"] is None:
            assert found.version_problem is None
        else:
            assert case["version_problem"] in (found.version_problem or ""), found.version_problem
    if "exit" in case:
        assert exit_code(result, allow_breaking=False) == case["exit"]
    assert exit_code(result, allow_breaking=True) == 0


def test_every_change_has_rows_each_way():
    """Each change of an object, column or type has a row (the contract-level ones are the command
    line's: folders, ids), and each family of clauses a breaking row and one that is not."""
    shown = {code for case in CASES for code, _, _ in case["changes"]}
    by_cli = {"contract_removed", "contract_added", "id_changed"}
    families = {code.rsplit("_", 1)[0] for code in CHANGE_KINDS if code.startswith(tuple(FAMILIES))}
    assert set(FAMILIES) <= families
    fixed = {code for code in CHANGE_KINDS if not code.startswith(tuple(FAMILIES))}
    assert not fixed - shown - by_cli, sorted(fixed - shown - by_cli)
    for family in FAMILIES:
        ways = {CHANGE_KINDS[code].breaking for code in shown if code.startswith(family + "_")}
        assert ways == {True, False}, (family, ways)


def test_every_check_kind_has_a_family_and_its_aspects():
    """A new check kind must say how two versions of its clause compare (diff_clauses.py)."""
    assert set(CHECK_KINDS) - {"schema"} == set(FAMILY_OF_KIND)
    assert set(CHECK_KINDS) == set(ASPECTS)
