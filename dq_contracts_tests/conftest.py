from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from dq_contracts_tests.support import pg_env, pg_server, start_cluster, start_spark


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


@pytest.fixture(scope="session")
def spark():
    """One Spark Thrift server for the whole session (it takes some 15 s to start)."""
    server = start_spark()
    yield server
    server.stop()


@pytest.fixture
def spark_database(spark):
    """A fresh Spark database (schema) of its own for one test; returns its SQLAlchemy URL."""
    import uuid

    name = "t_" + uuid.uuid4().hex[:12]
    with spark.admin.connect() as c:
        c.exec_driver_sql(f"CREATE DATABASE {name}")
    yield spark.url(name)


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


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse(request, tmp_path):
    """(server entry, environment, writable engine) of a fresh warehouse."""
    if request.param == "duckdb":
        path = tmp_path / "wh.duckdb"
        return {"server": "local", "type": "duckdb", "database": str(path), "schema": "main"}, {}, \
            sa.create_engine(f"duckdb:///{path}")
    url = request.getfixturevalue("pg_database")
    return pg_server(url), pg_env(url), sa.create_engine(url)
