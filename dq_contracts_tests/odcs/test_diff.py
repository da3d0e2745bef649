"""`dq-contracts diff`, one test per row of cases/diff.yaml: two fragments of one contract, the changes
found (each breaking or not), each Dagster check's history (kept, new, gone), the version bump."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from dq_contracts.odcs.check_kinds import CHECK_KINDS
from dq_contracts.odcs.diff import CHANGE_KINDS, FAMILIES
from dq_contracts.odcs.diff_clauses import ASPECTS, FAMILY_OF_KIND
from dq_contracts.odcs import walk
from dq_contracts.odcs.diff_report import diff_paths, exit_code, report_text
from dq_contracts_tests.support import CORPUS

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "diff.yaml").read_text())


def build(fragment: dict, version: str) -> dict:
    schema = fragment.get("schema") or [{"name": "t", "physicalName": "t",
                                         "properties": fragment["properties"], **(fragment.get("object") or {})}]
    doc = {"apiVersion": fragment.get("api", "v3.1.0"), "kind": "DataContract", "id": "c",
           "version": fragment.get("version", version), "status": "active", "schema": schema}
    if "sla" in fragment:
        doc["slaProperties"] = fragment["sla"]
    for key in ("servers", "support"):
        if key in fragment:
            doc[key] = fragment[key]
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


OPPOSITE = {"added": "removed", "removed": "added", "tightened": "relaxed", "relaxed": "tightened",
            "changed": "changed"}


def _clause_changes(changes) -> list[tuple[str, str]]:
    found = []
    for change in changes:
        family, _, direction = change.code.rpartition("_")
        if family in FAMILIES:
            found.append((family, direction))
    return sorted(found)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_each_clause_change_read_backwards_is_its_opposite(case, tmp_path):
    """NEW → OLD undoes OLD → NEW: what was tightened is relaxed, what was added is removed, what
    cannot be ordered stays so."""
    forward = _diff(case, tmp_path).diffs[0].changes
    backward = _diff({**case, "old": case["new"], "new": case["old"]}, tmp_path).diffs[0].changes
    assert _clause_changes(backward) == sorted((f, OPPOSITE[d]) for f, d in _clause_changes(forward))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/odcs/corpus is not beside the checkout")
def test_every_readable_corpus_contract_against_itself_is_no_change():
    """Whatever a real contract holds, it compares with itself without an error: no change, every
    check keeps its history, exit 0."""
    compared = 0
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or not path.name.endswith((".yaml", ".yml", ".json")) or path.name == "index.json":
            continue
        result = diff_paths(str(path), str(path))
        if result.errors:  # the negative tests and other unreadable files: said, not compared
            assert exit_code(result, allow_breaking=True) == 1
            continue
        compared += 1
        for found in result.diffs:
            assert found.changes == [] and found.version_problem is None, (path, found.changes)
            assert {f.fate for f in found.checks} <= {"kept"}
        assert exit_code(result, allow_breaking=False) == 0
    assert compared >= 40, compared


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/odcs/corpus is not beside the checkout")
def test_every_corpus_contract_without_its_first_column_breaks(tmp_path):
    """Each readable real contract, its first object's first column taken out: that column is said
    removed and breaking, and the command fails."""
    import json

    from dq_contracts.odcs.loader import read_document

    tried = 0
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.suffix not in (".yaml", ".yml", ".json") or path.name == "index.json":
            continue
        if diff_paths(str(path), str(path)).errors:
            continue
        document, _ = read_document(path, explicit=True)
        objects = [o for o in document.data.get("schema") or [] if isinstance(o, dict) and o.get("properties")]
        if not objects:
            continue
        gone = objects[0]["properties"].pop(0)
        changed = tmp_path / f"{tried}.odcs.json"
        changed.write_text(json.dumps(document.data, default=str))
        result = diff_paths(str(path), str(changed))
        if result.errors:  # a column another clause needs (a key, an SLA element) may be refused without it
            continue
        tried += 1
        (found,) = result.diffs
        removed = [c for c in found.changes if c.code == "column_removed"]
        assert [c.where for c in removed] == [f"{objects[0]['name']}.{gone['name']}"], (path, found.changes)
        assert removed[0].breaking and exit_code(result, allow_breaking=False) == 1
    assert tried >= 20, tried


# (case, a folder side's files (None: a folder the walk cannot read), the limit of names walked
#  (negative: the limit of bytes), the error said at its path, or None when the folder is compared)
FOLDERS = [
    ("a folder of contracts", {"a/c.odcs.yaml": "contract"}, 100, None),
    ("a subfolder that cannot be read", {"a/c.odcs.yaml": "contract", "a/locked": None}, 100,
     "a/locked: cannot be read as a folder of contracts (Permission denied)"),
    ("the folder itself cannot be read", {"a": None}, 100, "a: cannot be read as a folder of contracts"),
    ("more names than the limit", {f"a/{i}.txt": "x" for i in range(6)}, 5,
     "a: holds more than 5 files and folders: not read"),
    ("more bytes of contract files than the limit", {"a/big.json": "x" * 2048}, -1024,
     "a: holds more than 0 MiB of contract files (.yaml, .yml, .json): not read"),
    ("hidden folders are not walked", {"a/c.odcs.yaml": "contract", **{f"a/.git/{i}": "x" for i in range(9)}}, 5,
     None),
]


@pytest.mark.parametrize("case, files, limit, error", FOLDERS, ids=[r[0] for r in FOLDERS])
def test_a_folder_side_is_walked_within_bounds(case, files, limit, error, tmp_path, monkeypatch):
    contract = tmp_path / "c.odcs.yaml"
    contract.write_text(yaml.safe_dump(build({"properties": [{"name": "a", "logicalType": "string"}]}, "1.0.0")))
    locked = set()
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            (tmp_path / name).mkdir(exist_ok=True)
            locked.add(name)
        else:
            (tmp_path / name).write_text(contract.read_text() if text == "contract" else text)
    scandir = os.scandir

    def refusing(path="."):  # chmod cannot lock out root: the walk is refused as a locked folder refuses it
        if os.fspath(path) in locked:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return scandir(path)
    monkeypatch.setattr(os, "scandir", refusing)
    if limit < 0:  # a limit on bytes
        monkeypatch.setattr(walk, "MAX_FOLDER_BYTES", -limit)
    else:
        monkeypatch.setattr(walk, "MAX_FOLDER_ENTRIES", limit)
    monkeypatch.chdir(tmp_path)
    result = diff_paths("a", "c.odcs.yaml")
    if error is None:
        assert result.errors == [] and len(result.diffs) == 1, [e.render() for e in result.errors]
    else:
        assert report_text(result)[0].startswith(error), report_text(result)
        assert exit_code(result, allow_breaking=True) == 1, report_text(result)


FAKE = "x\n  ok        t: fake\r\n1 breaking change(s)\t"
# (case, what the new side adds; the old side has none of it): a contract's text holding line
# breaks, shown in the text report, stays on its line (escaped), so it cannot fake the report's lines
ONE_LINE = [
    ("an object's description", {"object": {"description": FAKE}}),
    ("an object's tags", {"object": {"tags": [FAKE]}}),
    ("a column's classification", {"properties": [{"name": "a", "logicalType": "string", "classification": FAKE}]}),
    ("a column's description", {"properties": [{"name": "a", "logicalType": "string", "description": FAKE}]}),
]


@pytest.mark.parametrize("case, added", ONE_LINE, ids=[r[0] for r in ONE_LINE])
def test_contract_text_in_the_text_report_stays_on_its_line(case, added, tmp_path):
    base = {"properties": [{"name": "a", "logicalType": "string"}]}
    result = _diff({"old": base, "new": {**base, **added}}, tmp_path)
    lines = report_text(result)
    assert not any(set(line) & set("\n\r\t") for line in lines), lines
    assert not [line for line in lines if "fake" in line and "\\n  ok" not in line], lines
    assert lines[-1].endswith("not breaking") or lines[-1].endswith("version bump wrong"), lines


# every line break Unicode has (str.splitlines' set) and the tab, and how one_line writes it: the
# report's and the alerts' are one function (visible.one_line). A contract's text reaches the report
# through `visible` already (a change's detail), where a control is `\u0085`: on its line either way
BREAKS = [("\u2028", "\\u2028"), ("\u2029", "\\u2029"), ("\x85", "\\x85"), ("\r", "\\r"), ("\x0b", "\\v"),
          ("\x0c", "\\f"), ("\x1c", "\\x1c"), ("\x1d", "\\x1d"), ("\x1e", "\\x1e"), ("\t", "\\t"), ("\n", "\\n")]


@pytest.mark.parametrize("newline, spelled", BREAKS, ids=[repr(b) for b, _ in BREAKS])
def test_every_line_break_in_the_text_report_stays_on_its_line_as_in_an_alert(newline, spelled, tmp_path):
    from dq_contracts.odcs.alerting import one_line as alert_line
    from dq_contracts.odcs.visible import one_line

    base = {"properties": [{"name": "a", "logicalType": "string"}]}
    fake = f"x{newline}  ok        t: fake{newline}1 breaking change(s)"
    lines = report_text(_diff({"old": base, "new": {**base, "object": {"description": fake}}}, tmp_path))
    assert not any(len(line.splitlines()) > 1 or "\t" in line for line in lines), lines
    assert len([line for line in lines if "fake" in line]) == 1 and lines[-1].endswith("1 not breaking"), lines
    assert one_line(fake) == alert_line(fake) == f"x{spelled}  ok        t: fake{spelled}1 breaking change(s)"
