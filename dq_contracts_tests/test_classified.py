"""Classified columns, by construction: a column is classified if any contract of its physical
table says so (principle 3), and no value of one leaves the database whatever the error
(principle 4). Each case is a row; each row runs against real servers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts import cli

PLANTED = "999-88-7777"
PLANTED_TIME = "2026-05-31 07:41:13"


def contract(cid: str, server: dict, table: str, ssn: str, *, classified: bool, asset: str) -> dict:
    """One object on `table`: its `ssn` column (named as given) with a pattern its value misses, and
    a freshness SLA on `seen_at`; the classification only where `classified`."""
    mark = {"classification": "pii"} if classified else {}
    return {"apiVersion": "v3.1.0", "kind": "DataContract", "id": cid, "version": "1.0.0", "status": "active",
            "servers": [server],
            "schema": [{"name": "people", "physicalName": table,
                        "customProperties": [{"property": "dagsterAssetKey", "value": asset}],
                        "properties": [
                            {"name": ssn, "logicalType": "string", "logicalTypeOptions": {"pattern": "^[0-9]+$"},
                             **mark},
                            {"name": "seen_at", "logicalType": "timestamp", **mark}]}],
            "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "people.seen_at"}]}


def people(name: str = "people", ssn: str = "ssn") -> list[str]:
    return [f"CREATE TABLE {name} ({ssn} VARCHAR(20), seen_at TIMESTAMP)",
            f"INSERT INTO {name} VALUES ('{PLANTED}', '{PLANTED_TIME}')"]


# (case, DDL beside `people`, B's server ("same" or "other"), B's physicalName, B's column name,
#  is it A's classified table on DuckDB, on PostgreSQL)
SHARED = [
    ("same table", {}, "same", "people", "ssn", True, True),
    # DuckDB ignores case; on PostgreSQL the quoted "People" is another table, which it then holds
    ("names in another case", {"postgres": people('"People"', '"SSN"')}, "same", "People", "SSN", True, False),
    ("schema written out", {}, "same", "{schema}.people", "ssn", True, True),
    ("another schema", dict.fromkeys(["duckdb", "postgres"], ["CREATE SCHEMA other", *people("other.people")]),
     "same", "other.people", "ssn", False, False),
    ("another server", {}, "other", "people", "ssn", False, False),
]


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_servers(request, tmp_path):
    """(engine, [server, the other server], environment, [a writable engine on each])."""
    if request.param == "duckdb":
        paths = [tmp_path / "wh.duckdb", tmp_path / "other.duckdb"]
        return ("duckdb", [{"server": "local", "type": "duckdb", "database": str(p)} for p in paths], {},
                [sa.create_engine(f"duckdb:///{p}") for p in paths])
    from dq_contracts_tests.test_faults import pg_env, pg_server

    url = sa.make_url(request.getfixturevalue("pg_database"))
    other = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f'CREATE DATABASE "{other}"')
    admin.dispose()
    urls = [url, url.set(database=other)]
    return ("postgres", [pg_server(u.render_as_string(hide_password=False)) for u in urls],
            pg_env(url.render_as_string(hide_password=False)), [sa.create_engine(u) for u in urls])


@pytest.mark.parametrize("case, ddl, where, table, ssn, on_duckdb, on_postgres", SHARED, ids=[r[0] for r in SHARED])
def test_a_column_is_classified_if_any_contract_of_its_table_says_so(two_servers, tmp_path, capsys, monkeypatch,
                                                                    case, ddl, where, table, ssn, on_duckdb,
                                                                    on_postgres):
    from dq_contracts import build_contract_defs

    engine, servers, environ, writers = two_servers
    shared = on_duckdb if engine == "duckdb" else on_postgres
    for writer, statements in zip(writers, [[*people(), *ddl.get(engine, [])], people()]):
        with writer.begin() as c:
            for statement in statements:
                c.exec_driver_sql(statement)
        writer.dispose()
    schema = "main" if engine == "duckdb" else "public"
    a = contract("a", servers[0], "people", "ssn", classified=True, asset="a/people")
    b = contract("b", servers[0 if where == "same" else 1], table.format(schema=schema), ssn, classified=False,
                 asset="b/people")
    for name, doc in (("a", a), ("b", b)):
        (tmp_path / f"{name}.odcs.yaml").write_text(yaml.safe_dump(doc))
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    capsys.readouterr()
    cli.main(["check", str(tmp_path / "a.odcs.yaml"), str(tmp_path / "b.odcs.yaml"), "--format", "json"])
    out = capsys.readouterr().out
    of_b = {r["kind"]: r for r in json.loads(out)["results"] if r["asset_key"] == ["b", "people"]}
    pattern, fresh = of_b["pattern"], of_b["freshness"]
    assert not pattern["passed"] and fresh["passed"] is False  # both fail: 2026 is more than a day ago
    if shared:
        assert pattern["samples"] == [] and "samples_withheld" in pattern["details"]
        assert fresh["observed"] is None and "observed_withheld" in fresh["details"]
        assert PLANTED not in out and PLANTED_TIME.replace(" ", "T") not in out
    else:  # another table: nothing of A's applies, and B's own values show as B wrote it
        assert pattern["samples"] == [PLANTED] and "newest_utc" in fresh["details"]

    defs = build_contract_defs([tmp_path / "a.odcs.yaml", tmp_path / "b.odcs.yaml"])
    spec = next(s for s in defs.resolve_all_asset_specs() if s.key.path == ["b", "people"])
    said = {c.name: c.constraints.other for c in spec.metadata["dagster/column_schema"].columns}
    assert set(said) == {ssn, "seen_at"}
    for other in said.values():  # and which file says so
        found = [re.fullmatch(r"classification: pii \(from (.+)\)", o) for o in other]
        assert [Path(f.group(1)).resolve() for f in found if f] == ([tmp_path / "a.odcs.yaml"] if shared else [])
        assert len(found) == len(other)
