"""The linter, as CI runs it: ruff with the project's rule set (pyproject.toml [tool.ruff])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "dq_contracts", "dq_contracts_tests",
                           "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_would_see_an_unused_import(tmp_path):
    (tmp_path / "probe.py").write_text("import os\n")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                           str(ROOT / "pyproject.toml"), str(tmp_path / "probe.py")], capture_output=True, text=True)
    assert proc.returncode == 1 and "F401" in proc.stdout
