from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from dq_contracts_tests.support import (pg_env, pg_server, snowflake_dialect_importable, snowflake_emulator,
                                       snowflake_engine, snowflake_env, snowflake_server, start_cluster)

snowflake_dialect_importable()  # before any test loads the snowflake dialect


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


@pytest.fixture
def warehouse_of(request, tmp_path):
    """A factory: kind (duckdb, postgres, snowflake) -> (server entry, environment, writable engine) of a
    fresh warehouse of that kind."""
    def make(kind: str):
        if kind == "duckdb":
            path = tmp_path / "wh.duckdb"
            return {"server": "local", "type": "duckdb", "database": str(path), "schema": "main"}, {}, \
                sa.create_engine(f"duckdb:///{path}")
        if kind == "snowflake":
            return request.getfixturevalue("snowflake")
        url = request.getfixturevalue("pg_database")
        return pg_server(url), pg_env(url), sa.create_engine(url)

    return make


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse(request, warehouse_of):
    """(server entry, environment, writable engine) of a fresh warehouse."""
    return warehouse_of(request.param)

@pytest.fixture
def snowflake(tmp_path):
    """(server entry, environment, engine) of a fresh Snowflake, emulated by fakesnow on DuckDB."""
    with snowflake_emulator(tmp_path / "snowflake"):
        engine = snowflake_engine()
        yield snowflake_server(), snowflake_env(), engine
        engine.dispose()
