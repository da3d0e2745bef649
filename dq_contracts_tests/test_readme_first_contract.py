"""README "Your first contract" and "Checks of a table Dagster does not build", followed as written.

Each fenced block of the sections is a step, in order, in a temporary folder standing for the user's
project, in a shell holding only PATH and HOME: a `bash` block is run (its exit code is 0, or what a
trailing `# exit N` says); a `yaml` or `python` block whose first line is `# <path>` is that file,
written as shown; a `text` block is what the command before it shows: each of its lines is a line of
that command's output, or, starting with `… `, the end of one. Two steps are stood in for, and say so:
the install block is not run (installing the package again takes half a minute of the two cores the
tests share): the project's `.venv` is a link to the repository's own, an editable install of this
checkout, so `. .venv/bin/activate` puts the same commands on PATH; and the DuckDB file that the
`init` step reads is made by the test, as the table the user already has.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from dq_contracts_tests.support import REPO, clean_shell, dg_project, duckdb_with, readme_blocks_of, readme_section

EXTERNAL = "Checks of a table Dagster does not build"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def steps(title: str, before: str | None = None) -> list[tuple[str, str]]:
    blocks = readme_blocks_of(readme_section(title))
    if before:  # the section without its subsection's steps
        blocks = blocks[:len(blocks) - len(readme_blocks_of(readme_section(before)))]
    return blocks


def link_the_installed_venv(project: Path) -> None:
    (project / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)


def follow(blocks: list[tuple[str, str]], project: Path, env: dict[str, str]) -> list[str]:
    """Run the steps in `project`; every command run, as run."""
    ran, output = [], None
    for language, text in blocks:
        first = text.splitlines()[0]
        if language in ("yaml", "python"):
            assert re.fullmatch(r"# [\w./-]+", first), f"a {language} block that names no file: {first}"
            path = project / first[2:].strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif language == "bash":
            if "pip install" in text:  # the install: stood in for by the repository's venv (see above)
                assert text.startswith("python3 -m venv .venv && . .venv/bin/activate"), text
                link_the_installed_venv(project)
                continue
            wanted = re.search(r"#\s*exit (\d+)\s*$", text.strip())
            proc = subprocess.run(["bash", "-c", f". .venv/bin/activate\n{text}"], cwd=project, env=env,
                                  capture_output=True, text=True, timeout=300, check=False)
            output = ANSI.sub("", proc.stdout + proc.stderr)
            assert proc.returncode == int(wanted.group(1) if wanted else 0), (text, output[-3000:])
            assert "Traceback" not in output, (text, output[-3000:])
            ran.append(text.strip())
        elif language == "text":
            assert output is not None, "a text block before any command"
            lines = [line.rstrip() for line in output.splitlines()]
            for expected in text.splitlines():
                if expected.startswith("… "):
                    assert any(line.endswith(expected[2:]) for line in lines), (expected, output[-3000:])
                else:
                    assert expected.rstrip() in lines, (expected, output[-3000:])
    return ran


@pytest.mark.slow
def test_your_first_contract_runs_as_written(tmp_path):
    project = tmp_path / "myproject"
    project.mkdir()
    # the table the user already has, which the README's `init` step draws from
    duckdb_with(project / "shop.duckdb", "CREATE TABLE customers (customer_id INTEGER, country VARCHAR)",
                "INSERT INTO customers VALUES (1, 'DE'), (2, 'FR'), (3, 'DE')")
    ran = follow(steps("Your first contract", before=EXTERNAL), project, clean_shell())
    assert [r.split()[:2] for r in ran] == [
        ["mkdir", "-p"], ["dq-contracts", "validate"], ["dq-contracts", "plan"], ["dq-contracts", "check"],
        ["echo", "'4,-3.50,lost'"], ["dq-contracts", "init"], ["dagster", "definitions"]]
    assert (project / "contracts" / "customers.odcs.yaml").is_file()


@pytest.mark.slow
def test_an_external_tables_checks_run_from_dg_as_written(tmp_path):
    """In a project as `create-dagster project shop` lays it out (create-dagster is not installed
    here: the layout is made offline, and the project's package is on PYTHONPATH instead of installed),
    holding the contract and data of "Your first contract"."""
    first = readme_blocks_of(readme_section("Your first contract"))
    project, _ = dg_project(tmp_path)  # its own environment is the clean shell's, below
    package = project / "src" / "shop"
    link_the_installed_venv(project)
    # the contract and its data, as "Your first contract" writes them (its first data step and file)
    follow([b for b in first if b[0] == "yaml" and b[1].startswith("# contracts/")]
           + [next(b for b in first if b[0] == "bash" and b[1].startswith("mkdir"))], project, clean_shell())
    env = {**clean_shell(), "PYTHONPATH": str(project / "src")}
    ran = follow(steps(EXTERNAL), project, env)
    assert ran == ["dg scaffold defs dq_contracts.ContractsComponent contracts",
                   "dg check defs && dg launch --job dq_contracts_checks__contracts"]
    assert "contract_jobs: true" in (package / "defs" / "contracts" / "defs.yaml").read_text()


def test_the_install_step_names_the_dagster_pins_of_the_package():
    """The releases the README tells a project to take are the ones pyproject.toml pins."""
    import tomllib

    pins = [d for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
            if d.startswith("dagster")]
    section = re.sub(r"\s+", " ", readme_section("Your first contract"))
    assert pins and all(re.fullmatch(r"[\w-]+==[\d.]+", pin) for pin in pins), pins
    for pin in pins:
        name, release = pin.split("==")
        said = re.search(rf"`{re.escape(name)}`\D*?(\d+\.\d+\.\d+)", section)  # the first release after it
        assert said and said.group(1) == release, (pin, said and said.group(0))
    # create-dagster is released with dagster itself: every `create-dagster==X` the README names is dagster's
    dagster = dict(p.split("==") for p in pins)["dagster"]
    named = re.findall(r"create-dagster==([\d.]+)", (REPO / "README.md").read_text())
    assert named and set(named) == {dagster}, named
