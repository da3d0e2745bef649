"""`dg check defs` and `dagster definitions validate` as a CI gate, run as a user runs them: a
contract with an error, or a folder with none, fails the check (exit 1) with each problem said once
and no stack of dq_contracts' own frames; `strict` says the problems, not the stack; `dg list defs`
(a load, not a check) loads the valid contracts and logs each problem once."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

import pytest

from dq_contracts_tests.support import dg_project, dg_run

BROKEN = """\
apiVersion: v3.1.0
kind: DataContract
id: broken
version: 1.0.0
status: active
schema:
  - name: t
    properties:
      - name: a
        logicalType: integer
        logicalTypeOptions: {minimum: "zero"}
"""

VALID = """\
apiVersion: v3.1.0
kind: DataContract
id: fine
version: 1.0.0
status: active
servers:
  - server: local
    type: duckdb
    database: shop.duckdb
schema:
  - name: u
    properties:
      - name: b
        logicalType: integer
        required: true
"""

PROBLEM = 'contracts/broken.odcs.yaml:11: schema.t.properties.a.logicalTypeOptions.minimum: "zero" is not of type "number"'
EMPTY = "no contract file (*.odcs.yaml, *.odcs.yml, *.odcs.json) here: nothing to check"
PYTHON_DEFS = 'from dq_contracts import build_contract_defs\n\ndefs = build_contract_defs("contracts", strict=True)\n'


@dataclass(frozen=True)
class Case:
    id: str
    command: tuple[str, ...]  # from the project root; "dg …" on the component, "dagster …" on PYTHON_DEFS
    files: tuple[str, ...]  # contracts/<name>.odcs.yaml, from BROKEN and VALID
    attributes: str = ""  # the component's defs.yaml attributes
    exit_code: int = 1
    once: tuple[str, ...] = ()  # each printed exactly once
    absent: tuple[str, ...] = ()
    # the one frame of dq_contracts a refusal may show: where it is re-raised, bare of ours beneath
    frames: tuple[str, ...] = field(default=("component.py",))


CASES = [
    Case("check_fails_on_a_broken_contract", ("dg", "check", "defs"), ("broken", "fine"),
         once=(PROBLEM, "dg check defs (DAGSTER_IS_DEFS_VALIDATION_CLI=1) fails on these"),
         absent=("All definitions loaded successfully",)),
    Case("check_fails_on_a_folder_with_no_contract", ("dg", "check", "defs"), (), once=(EMPTY,)),
    Case("strict_says_the_problems_not_the_stack", ("dg", "check", "defs"), ("broken", "fine"), "  strict: true\n",
         once=(PROBLEM, "strict: true refuses every contract while one has an error")),
    Case("strict_in_python_under_dagster_definitions_validate",
         ("dagster", "definitions", "validate", "-f", "defs.py"), ("broken", "fine"),
         once=(PROBLEM, "strict: true refuses"), frames=("defs.py", "definitions.py")),
    # a load is no gate: the valid contract loads, the broken one is logged once (Dagster loads twice)
    Case("listing_loads_the_rest_and_logs_each_problem_once", ("dg", "list", "defs"), ("broken", "fine"),
         exit_code=0, once=(PROBLEM, "contracts/broken.odcs.yaml: not loaded (1 error(s))")),
    Case("listing_an_empty_folder_warns_once", ("dg", "list", "defs"), (), exit_code=0, once=(EMPTY,)),
    Case("check_passes_on_valid_contracts", ("dg", "check", "defs"), ("fine",), exit_code=0,
         once=("All definitions loaded successfully",), absent=("ERROR",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dg_check_defs_as_a_ci_gate(case, tmp_path):
    project, env = dg_project(tmp_path)
    (project / "contracts").mkdir()
    for name in case.files:
        (project / "contracts" / f"{name}.odcs.yaml").write_text({"broken": BROKEN, "fine": VALID}[name])
    (project / "src" / "shop" / "defs" / "contracts").mkdir()
    (project / "src" / "shop" / "defs" / "contracts" / "defs.yaml").write_text(
        "type: dq_contracts.ContractsComponent\n" + (f"attributes:\n{case.attributes}" if case.attributes else ""))
    (project / "defs.py").write_text(PYTHON_DEFS)
    if case.command[0] == "dg":
        ran = dg_run(project, env, *case.command[1:])
    else:
        ran = subprocess.run(case.command, cwd=project, env=env, capture_output=True, text=True, timeout=180,
                             check=False)
    out = ran.stdout + ran.stderr
    assert ran.returncode == case.exit_code, out
    for text in case.once:
        assert out.count(text) == 1, f"{text!r} said {out.count(text)} times:\n{out}"
    for text in case.absent:
        assert text not in out, out
    assert "Traceback (most recent call last)" not in out, out
    ours = re.findall(r'File "([^"]*)", line \d+', out)
    ours = [f for f in ours if re.search(r"dq_contracts/(dagster_defs|engine|odcs)/", f) or f.endswith("/defs.py")]
    assert all(f.endswith(case.frames) for f in ours) and len(ours) <= len(case.frames), out
