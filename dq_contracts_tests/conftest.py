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


# In a run that builds every demo table ("Materialize all"), this relationship reads customers, which
# fails ERROR (blocking) clauses, so Dagster skips it; run alone, it passes.
SKIPPED_IN_A_FULL_RUN = {("orders", "customer_id__references_customers")}
DEMO_CHECKS = 52


def run_checks(defs, selection=None, instance=None, **kwargs):
    """Run contract checks as a person would from the UI (no job of ours needed): every check of
    `defs`, or those `selection` (an AssetSelection) names."""
    import dagster as dg

    job = dg.define_asset_job("checks_under_test", selection=selection or dg.AssetSelection.all_asset_checks())
    merged = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    return merged.resolve_job_def("checks_under_test").execute_in_process(
        instance=instance or dg.DagsterInstance.ephemeral(), raise_on_error=False, **kwargs)
