from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from dq_contracts_tests.support import (fresh_warehouse, snowflake_dialect_importable, snowflake_emulator,
                                       snowflake_engine, snowflake_env, snowflake_server, start_cluster, start_mariadb,
                                       start_spark)

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
    # dropped now (some 7 ms), not with the cluster: the 500-odd a run leaves made its folder 4.7 GB,
    # removed in 10-27 s at the session's end; FORCE ends a session a test's engine still holds
    admin = sa.create_engine(postgres.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()


@pytest.fixture
def warehouse_of(request, tmp_path):
    """A factory: kind (duckdb, postgres, mariadb, snowflake) -> (server entry, environment, writable
    engine) of a fresh warehouse of that kind (support.fresh_warehouse)."""
    return lambda kind: fresh_warehouse(request, kind, tmp_path)


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def warehouse(request, warehouse_of):
    """(server entry, environment, writable engine) of a fresh warehouse."""
    return warehouse_of(request.param)


@pytest.fixture(scope="session")
def mariadb():
    """One MariaDB server for the whole session, with a user `dq_reader` granted nothing yet."""
    from dq_contracts_tests.mariadbcluster import READER, READER_PASSWORD

    server = start_mariadb()
    admin = sa.create_engine(server.url())
    with admin.begin() as c:
        c.execute(sa.text(f"CREATE USER '{READER}'@'127.0.0.1' IDENTIFIED BY :pw"), {"pw": READER_PASSWORD})
    admin.dispose()
    yield server
    server.destroy()


@pytest.fixture
def mariadb_database(mariadb):
    """A fresh database of its own for one test: (the root's URL, the URL of a user granted SELECT on
    it alone)."""
    import uuid

    from dq_contracts_tests.mariadbcluster import READER, READER_PASSWORD

    name = "t_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(mariadb.url())
    with admin.begin() as c:
        c.exec_driver_sql(f"CREATE DATABASE `{name}`")
        c.exec_driver_sql(f"GRANT SELECT ON `{name}`.* TO '{READER}'@'127.0.0.1'")
    admin.dispose()
    yield mariadb.url(name), mariadb.url(name, READER, READER_PASSWORD)
    admin = sa.create_engine(mariadb.url())
    with admin.begin() as c:
        c.exec_driver_sql(f"DROP DATABASE `{name}`")
    admin.dispose()


@pytest.fixture
def snowflake(tmp_path):
    """(server entry, environment, engine) of a fresh Snowflake, emulated by fakesnow on DuckDB."""
    with snowflake_emulator(tmp_path / "snowflake"):
        engine = snowflake_engine()
        yield snowflake_server(), snowflake_env(), engine
        engine.dispose()
