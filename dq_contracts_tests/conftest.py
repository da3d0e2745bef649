from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DQ_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "odcs" / "corpus"
SCHEMAS = SHARED / "odcs" / "schemas"
CONTRACTS = REPO / "contracts"


def duckdb_with(path: Path, *statements: str) -> Path:
    """A DuckDB file holding what the statements build; the writer is closed after (DuckDB: one
    writer per file, and the checks open it read-only)."""
    import sqlalchemy as sa

    writer = sa.create_engine(f"duckdb:///{path}")
    with writer.begin() as c:
        for statement in statements:
            c.exec_driver_sql(statement)
    writer.dispose()
    return path


def demo_shop(folder: Path, tables: list[str] | None = None, **kwargs) -> Path:
    """A copy of the bundled contracts in `folder/contracts` with the demo warehouse beside it, in
    `folder/demo_data` (the contracts' DuckDB path is relative to their own files); returns the
    contracts folder."""
    import shutil

    from dq_contracts.demo import write_tables

    contracts = folder / "contracts"
    shutil.copytree(CONTRACTS, contracts, dirs_exist_ok=True)
    if tables != []:
        write_tables(folder / "demo_data" / "warehouse.duckdb", tables, **kwargs)
    return contracts


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


def start_cluster():
    """A new PostgreSQL cluster on 127.0.0.1; CI must have the server, elsewhere the test may skip."""
    from dq_contracts_tests.pgcluster import PgCluster

    try:
        return PgCluster.start()
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def postgres():
    """One cluster for the whole session."""
    cluster = start_cluster()
    yield cluster
    cluster.destroy()


@pytest.fixture
def pg_database(postgres):
    """A fresh database of its own for one test; returns its SQLAlchemy URL (superuser)."""
    import uuid

    import sqlalchemy as sa

    name = "t_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(postgres.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    yield postgres.url(name)
