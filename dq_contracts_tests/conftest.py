from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DQ_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "odcs" / "corpus"
SCHEMAS = SHARED / "odcs" / "schemas"
CONTRACTS = REPO / "contracts"


@pytest.fixture
def write_contract(tmp_path):
    """Write YAML text to a contract file under tmp_path and return its path."""
    import textwrap

    def write(text: str, name: str = "c.odcs.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    return write
