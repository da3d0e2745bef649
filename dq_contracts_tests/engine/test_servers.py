"""One row per server type (odcs/servers.py) and one per dialect (engine/dialects.py): every row has
every field, the two tables agree, and a dialect whose row cannot make a session read-only and
time-limited is refused unless the operator vouches for its credentials."""

from __future__ import annotations

import dataclasses
import sqlite3
import typing

import pytest
import yaml

from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts.engine.dialects import DIALECTS, GENERIC, Dialect, no_server_timeout
from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.servers import SERVER_TYPES, ServerType, server_type, server_type_of_dialect, sqlglot_dialect


def _fields_given(row: object, cls: type) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, \
            f"{cls.__name__}.{f.name} has a default: a row that forgets it would not say so"
        value = getattr(row, f.name)
        optional = type(None) in typing.get_args(hints[f.name])
        assert value is not None or optional, f"{row}: {f.name} is None"


@pytest.mark.parametrize("row", SERVER_TYPES, ids=[r.names[0] for r in SERVER_TYPES])
def test_every_server_type_has_every_field(row):
    _fields_given(row, ServerType)
    assert row.names and all(n == n.lower() for n in row.names)
    assert not (row.files and row.database_file)


@pytest.mark.parametrize("row", [*DIALECTS.values(), GENERIC], ids=[*DIALECTS, "generic"])
def test_every_dialect_has_every_field(row):
    _fields_given(row, Dialect)
    assert row.measures_per_statement > 0 and row.distinct_counts_per_statement > 0
    # the server stops a statement at the timeout, or a timer does: a row that begins a session has one
    assert row.begin is None or row.interrupt is not None or row.server_timeout is not no_server_timeout


def test_the_two_tables_agree():
    names = [n for row in SERVER_TYPES for n in row.names]
    assert len(names) == len(set(names)), "a type name in two rows"
    for row in SERVER_TYPES:
        if row.dialect is not None:  # the engine reaches the type: its dialect has a row
            assert row.dialect in DIALECTS, f"{row.names[0]}: dialect {row.dialect!r} has no engine row"
            assert DIALECTS[row.dialect].driver or row.files or row.database_file
    for name, dialect in DIALECTS.items():
        assert dialect.name == name
        speaking = [r for r in SERVER_TYPES if r.dialect == name and not r.files]
        assert speaking, f"engine row {name!r}: no server type speaks it"
        # the engine reads a dialect's server type back (its sqlglot dialect, default schema, case):
        # every SQL type speaking it must say the same
        assert len({(r.sqlglot, r.default_schema, r.case_sensitive) for r in speaking}) == 1, name
        assert server_type_of_dialect(name) is speaking[0]
        assert sqlglot_dialect(name) == speaking[0].sqlglot


def test_type_names_are_one_row_in_any_case():
    assert server_type("Postgres") is server_type("postgresql")
    assert server_type("cloudsql") is not server_type("postgres")
    assert server_type("kafka").handling == "not enforced"  # an ODCS type: a row, saying why
    assert server_type("nosuchdb") is None


# A type the engine has no row for, reached through the operator's URL in a dialect it has no row
# for either: SQLite, which SQLAlchemy has built in (ODCS has no `sqlite` type; `exasol`, whose SQL
# rules are judged as generic SQL, stands in)
SQLITE_CONTRACT = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "lite", "version": "1.0.0", "status": "active",
    "servers": [{"server": "lite", "type": "exasol", "host": "lite.example"}],
    "schema": [{"name": "t", "properties": [
        {"name": "id", "logicalType": "integer", "required": True, "unique": True},
    ], "quality": [{"metric": "rowCount", "mustBeGreaterThan": 1}]}],
}


def _sqlite(tmp_path) -> tuple:
    database = tmp_path / "lite.db"
    with sqlite3.connect(database) as con:
        con.execute("CREATE TABLE t (id INTEGER NOT NULL)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (2,)])
    folder = tmp_path / "contracts"
    folder.mkdir()
    (folder / "lite.odcs.yaml").write_text(yaml.safe_dump(SQLITE_CONTRACT))
    return folder, {"DQ_CONTRACTS_LITE_URL": f"sqlite:///{database}"}


def _run(folder, environ) -> dict:
    loaded = load_contracts([folder], environ=environ)
    assert not loaded.problems, loaded.problems
    with Warehouses(environ) as warehouses:
        return {r.name: r for r in run_contract(loaded.plans[0], warehouses)}


def test_a_dialect_that_cannot_make_a_session_read_only_is_refused(tmp_path):
    folder, environ = _sqlite(tmp_path)
    results = _run(folder, environ)
    assert results and all(not r.passed for r in results.values())
    for result in results.values():
        assert "dialect 'sqlite' has no row here that makes a check session read-only and time-limited" \
            in result.error, result.error
        assert "DQ_CONTRACTS_LITE_READ_ONLY=true" in result.error


def test_with_the_credentials_declared_read_only_it_runs(tmp_path):
    folder, environ = _sqlite(tmp_path)
    results = _run(folder, {**environ, "DQ_CONTRACTS_LITE_READ_ONLY": "true"})
    verdicts = {name: (r.passed, r.observed, r.error) for name, r in results.items()}
    assert verdicts == {"schema": (True, 0, None), "id__not_null": (True, 0, None),
                        "id__unique": (False, 1, None), "row_count": (True, 3, None)}, verdicts


def test_the_engine_refuses_an_engine_nobody_vouched_for(tmp_path):
    """The refusal holds where a session begins too, for an engine not built by connections."""
    import sqlalchemy as sa

    from dq_contracts.engine.sessions import ReadOnlyRefused, Session

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(ReadOnlyRefused, match="DQ_CONTRACTS_<SERVER>_READ_ONLY=true"):
        Session(engine, 5).run(lambda c: c.execute(sa.text("SELECT 1")).scalar())
    engine.dispose()


def test_the_resource_declares_read_only_credentials_as_the_environment_does(tmp_path):
    from dq_contracts.dagster_defs.resource import ServerSettings, WarehouseResource
    from dq_contracts.odcs.declaration import declaration_of

    folder, environ = _sqlite(tmp_path)
    resource = WarehouseResource(servers={"lite": ServerSettings(url=environ["DQ_CONTRACTS_LITE_URL"], read_only=True)})
    assert declaration_of("lite", resource.environ()).credentials_read_only
    assert not declaration_of("lite", {"DQ_CONTRACTS_LITE_READ_ONLY": "false"}).credentials_read_only
