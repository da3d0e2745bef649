"""`dq-contracts diff` as a user runs it: the README's example as written, in a real git repository
in a temporary folder (`git show HEAD:… | dq-contracts diff - …`), in a shell holding only PATH and
HOME; JSON, --allow-breaking, folders, and an unreadable side (file:line, exit 1, no traceback)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from dq_contracts_tests.support import REPO

SECTION = "### Changes between contract versions: dq-contracts diff"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]


def readme_example() -> tuple[str, str]:
    """The section's command (its bash block) and the output it shows (its first text block)."""
    text = (REPO / "README.md").read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ")]
    command = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    return command, shown


def shell_environment() -> dict[str, str]:
    """PATH and HOME only, PATH without the virtual environment the tests run in."""
    ours = {str(Path(sys.prefix) / "bin"), str(REPO / ".venv" / "bin")}
    path = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p not in ours)
    return {"PATH": path, "HOME": os.environ.get("HOME", "/root")}


def shop_repository(folder: Path) -> Path:
    """A git repository holding the demo's orders contract at HEAD, then the change the README
    describes made in its work tree (order_total's minimum 0 → 1, version 1.1.0), lines unchanged."""
    (folder / "contracts").mkdir(parents=True)
    contract = folder / "contracts" / "orders.odcs.yaml"
    text = (REPO / "contracts" / "orders.odcs.yaml").read_text()
    contract.write_text(text)
    (folder / ".venv").symlink_to(Path(sys.prefix))  # the command says .venv/bin/dq-contracts
    for step in (["init", "-q"], ["add", "contracts"], ["commit", "-q", "-m", "orders 1.0.0"]):
        subprocess.run([*GIT, *step], cwd=folder, check=True, env=shell_environment())
    start = text.index("name: order_total")
    minimum = text.index("minimum: 0\n", start)
    assert text.count("\nversion: 1.0.0\n") == 1
    changed = (text[:minimum] + "minimum: 1\n" + text[minimum + len("minimum: 0\n"):]).replace(
        "\nversion: 1.0.0\n", "\nversion: 1.1.0\n")
    contract.write_text(changed)
    return folder


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=shell_environment(), capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_the_readme_example_runs_as_written_on_a_git_repository(tmp_path):
    command, shown = readme_example()
    shop = shop_repository(tmp_path / "shop")
    done = run(command, shop)
    assert done.returncode == 1, done.stderr  # the README: "the exit code is 1"
    assert done.stdout == shown, done.stdout
    assert done.stderr == ""
    allowed = run(command.strip() + " --allow-breaking", shop)
    assert allowed.returncode == 0 and allowed.stdout == shown


def test_the_json_report_says_the_change_and_each_check_s_history(tmp_path):
    shop = shop_repository(tmp_path / "shop")
    done = run("git show HEAD:contracts/orders.odcs.yaml | .venv/bin/dq-contracts diff - contracts/orders.odcs.yaml"
               " --format json", shop)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    (contract,) = report["contracts"]
    assert contract["old"] == {"file": "<stdin>", "version": "1.0.0"}
    assert [(c["code"], c["where"], c["breaking"], c["location"]) for c in contract["changes"]] == [
        ("bound_tightened", "orders.order_total__minimum", True, "contracts/orders.odcs.yaml:68")]
    assert {c["history"] for c in contract["checks"]} == {"kept"}
    assert "major version bump" in contract["version_problem"]
    assert report["breaking"] is True and report["errors"] == []


def test_an_unreadable_side_is_an_error_at_its_line_and_nothing_is_compared(tmp_path):
    shop = shop_repository(tmp_path / "shop")
    (shop / "broken.odcs.yaml").write_text("apiVersion: v3.1.0\nkind: DataContract\nschema: [ {name: t\n")
    for command, where in (("cat broken.odcs.yaml | .venv/bin/dq-contracts diff - contracts/orders.odcs.yaml",
                            "<stdin>:4: invalid YAML"),
                           (".venv/bin/dq-contracts diff contracts/orders.odcs.yaml broken.odcs.yaml",
                            "broken.odcs.yaml:4: invalid YAML"),
                           (".venv/bin/dq-contracts diff contracts/orders.odcs.yaml missing.odcs.yaml",
                            "missing.odcs.yaml: no such file or folder"),
                           (".venv/bin/dq-contracts diff - - < broken.odcs.yaml", "<stdin>: only one side"),
                           # the shell's process substitution is a pipe: said as one, not as missing
                           (".venv/bin/dq-contracts diff <(git show HEAD:contracts/orders.odcs.yaml) "
                            "contracts/orders.odcs.yaml", "not a regular file (a pipe such as the shell's <(…)"),
                           (r"printf 'id: x\377' | .venv/bin/dq-contracts diff - contracts/orders.odcs.yaml",
                            "<stdin>: not UTF-8 text"),
                           # a folder too large to be one of contracts (its walk stops, bounded)
                           (".venv/bin/dq-contracts diff / contracts/orders.odcs.yaml",
                            "/: holds more than 100,000 files and folders: not read")):
        done = run(command, shop)
        assert done.returncode == 1, (command, done.stderr)
        assert where in done.stderr, (command, done.stderr)
        assert "Traceback" not in done.stderr and done.stdout == ""
        allowed = run(command + " --allow-breaking", shop)
        assert allowed.returncode == 1  # breaking may be allowed, an unreadable side is never compared
    as_json = run(".venv/bin/dq-contracts diff contracts/orders.odcs.yaml broken.odcs.yaml --format json", shop)
    assert as_json.returncode == 1
    (error,) = json.loads(as_json.stdout)["errors"]
    assert (error["file"], error["line"]) == ("broken.odcs.yaml", 4) and "invalid YAML" in error["message"]


def test_folders_pair_contracts_by_id(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    for name in ("orders", "customers"):
        (old / f"{name}.odcs.yaml").write_text((REPO / "contracts" / f"{name}.odcs.yaml").read_text())
    (new / "orders.odcs.yaml").write_text((REPO / "contracts" / "orders.odcs.yaml").read_text())
    (new / "payments.odcs.yaml").write_text((REPO / "contracts" / "payments.odcs.yaml").read_text())
    done = subprocess.run([str(Path(sys.prefix) / "bin" / "dq-contracts"), "diff", "old", "new", "--format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    codes = {(c["id"], ch["code"], ch["breaking"]) for c in report["contracts"] for ch in c["changes"]}
    assert ("urn:dq-contracts:demo:customers", "contract_removed", True) in codes
    assert ("urn:dq-contracts:demo:payments", "contract_added", False) in codes
    fates = {(c["id"], f["history"]) for c in report["contracts"] for f in c["checks"]}
    assert ("urn:dq-contracts:demo:customers", "gone") in fates and ("urn:dq-contracts:demo:payments", "new") in fates
    # orders' relationship to customers no longer compiles without customers beside it: said as removed,
    # and why (its clause is now not enforced: the target is elsewhere)
    orders = next(c for c in report["contracts"] if c["id"] == "urn:dq-contracts:demo:orders")
    assert [ch["code"] for ch in orders["changes"]] == ["relationship_removed", "not_enforced_changed"]
    assert "enforced → [target_elsewhere]" in orders["changes"][1]["detail"]


def test_the_readme_example_runs_from_the_repository_root():
    """As written where the README is: HEAD's orders contract against the work tree's (no change on a
    clean checkout; whatever changed there otherwise, said without an error)."""
    command, _ = readme_example()
    done = run(command, REPO)
    assert done.returncode in (0, 1) and done.stderr == "", done.stderr
    assert done.stdout.startswith("<stdin> urn:dq-contracts:demo:orders "), done.stdout
    clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "contracts/orders.odcs.yaml"], cwd=REPO).returncode == 0
    if clean:
        assert done.returncode == 0 and "  no change\n" in done.stdout
