"""File servers: ODCS `local` servers with format csv, parquet or json are checked through DuckDB's
readers, with the same clauses and one scan per object, in a session that may read the server's
folder and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.connections import connection_for, engine_for

ROWS = "(VALUES (1, 'ann', '10.5'), (2, 'bob', '7'), (2, 'X9', 'lots')) t(id, name, amount)"

CONTRACT = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "lake", "version": "1.0.0", "status": "active",
    "schema": [{"name": "orders", "physicalType": "file", "properties": [
        {"name": "id", "logicalType": "integer", "required": True, "unique": True},
        {"name": "name", "logicalType": "string", "logicalTypeOptions": {"pattern": "^[a-z]+$"}},
        {"name": "amount", "logicalType": "number"},  # written as text in the files
        {"name": "shipped_at", "logicalType": "timestamp"},  # not in the files at all
    ], "quality": [{"metric": "rowCount", "mustBeGreaterThan": 2}]}],
}

FORMATS = [
    # (ODCS format, DuckDB COPY options, file suffix)
    ("csv", "(HEADER)", "csv"),
    ("parquet", "(FORMAT parquet)", "parquet"),
    ("json", "(FORMAT json)", "json"),
]


def lake(tmp_path, fmt: str, options: str, suffix: str, rows: str = ROWS, contract: dict = CONTRACT):
    """The contract's one table written as a file of `fmt`, and the contract, in a folder beside it."""
    (tmp_path / "data").mkdir()
    table = contract["schema"][0]["name"]
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM {rows}) TO '{tmp_path / 'data' / (table + '.' + suffix)}' {options}")
    con.close()
    doc = {**contract, "servers": [{"server": "lake", "type": "local", "format": fmt,
                                    "path": f"data/{{model}}.{suffix}"}]}
    path = tmp_path / "contracts" / "lake.odcs.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(doc).replace("path: data/", "path: ../data/"))
    return path


@pytest.mark.parametrize("fmt, options, suffix", FORMATS, ids=[f[0] for f in FORMATS])
def test_files_are_checked_with_the_same_clauses(tmp_path, fmt, options, suffix):
    contract = lake(tmp_path, fmt, options, suffix)
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", str(contract), "--format", "json"],
                          cwd="/", capture_output=True, text=True, timeout=120, check=False)
    assert "internal error" not in proc.stderr, proc.stderr
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    verdicts = {n: (r["passed"], r["observed"], r["error"]) for n, r in results.items()}
    assert verdicts == {
        "schema": (False, 2, None),
        "id__not_null": (True, 0, None),
        "id__unique": (False, 1, None),
        "name__pattern": (False, 1, None),
        "row_count": (True, 3, None),
    }
    schema = results["schema"]["details"]
    assert schema["missing"] == ["shipped_at"]
    assert [m.split(",")[0] for m in schema["logical_type_mismatches"]] == ["amount: declared logicalType number"]
    assert results["id__unique"]["samples"] == [2] and results["name__pattern"]["samples"] == ["X9"]
    assert "read_" in results["row_count"]["sql"] and proc.returncode == 1


def test_a_file_session_reads_the_server_folder_and_nothing_else(tmp_path):
    project = tmp_path / "project"  # the default root: the folder holding the contracts folder
    project.mkdir()
    contract = lake(project, "csv", "(HEADER)", "csv")
    server = yaml.safe_load(contract.read_text())["servers"][0]
    engine = engine_for(connection_for(server, {}, str(contract.parent)))
    secret = tmp_path / "secret.csv"  # beside the project, outside its root
    secret.write_text("password\nhunter2\n")
    with engine.connect() as c:
        inside = c.execute(sa.text("SELECT COUNT(*) FROM read_csv(:p)"), {"p": str(project / "data" / "orders.csv")})
        assert inside.scalar() == 3
        for statement in (f"SELECT * FROM read_csv('{secret}')", "SELECT * FROM glob('/etc/*')",
                          f"SELECT * FROM '{secret}'", "SET enable_external_access = true"):
            with pytest.raises(sa.exc.DBAPIError) as caught:
                c.exec_driver_sql(statement)
            assert "hunter2" not in str(caught.value)
    engine.dispose()


# SQL rules on files: `{object}` is the object's scan of its files. (name, query, mustBe, what the
# rows of ROWS give: the observed value, or a word of the refusal)
FILE_RULES = [
    ("no_negative_ids", "SELECT COUNT(*) FROM {object} WHERE id < 0", 0, 0),
    ("repeated_ids", "SELECT COUNT(*) - COUNT(DISTINCT id) FROM {object}", 0, 1),
    ("unknown_names", "SELECT COUNT(*) FROM {object} WHERE NOT list_contains(['ann', 'bob'], name)", 0, 1),
    ("aliased", "SELECT COUNT(*) FROM {object} AS o WHERE o.id = 2", 2, 2),
    ("qualified", "SELECT MAX({object}.id) FROM {object}", 2, 2),
    ("in_a_cte", "WITH big AS (SELECT id FROM {object} WHERE id > 1) SELECT COUNT(*) FROM big", 1, 2),
    ("an_alias_outside", "SELECT MAX(n) FROM (SELECT id AS n FROM {object}) q", 2, 2),
    ("a_row_number_outside", "WITH r AS (SELECT ROW_NUMBER() OVER (PARTITION BY id ORDER BY name) AS rn FROM "
     "{object}) SELECT COUNT(*) FROM r WHERE rn > 1", 0, 1),
    ("a_timestamp", "SELECT COUNT(*) FROM {object} WHERE date_diff('day', TIMESTAMP '2026-06-01', "
     "CAST('2026-06-03' AS TIMESTAMP)) = id", 2, 2),
    ("a_json_member", "SELECT COUNT(*) FROM {object} WHERE json_extract_string('{\"k\": \"bob\"}', 'k') = name "
     "OR '[\"ann\"]' ->> 0 = name", 2, 2),
    ("a_percentile", "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY id) FROM {object}", 2, 2),
    ("another_file", "SELECT COUNT(*) FROM read_csv('../secret.csv')", 0, "read_csv"),
    ("a_file_by_name", "SELECT COUNT(*) FROM '../secret.csv'", 0, "not an object of this contract"),
]


@pytest.mark.parametrize("fmt, options, suffix", FORMATS, ids=[f[0] for f in FORMATS])
def test_a_sql_rule_on_files_reads_the_objects_own_files(tmp_path, fmt, options, suffix):
    contract = lake(tmp_path, fmt, options, suffix)
    (tmp_path / "secret.csv").write_text("password\nhunter2\n")
    doc = yaml.safe_load(contract.read_text())
    doc["schema"][0]["quality"] += [{"type": "sql", "name": name, "query": query, "mustBe": must}
                                    for name, query, must, _ in FILE_RULES]
    contract.write_text(yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", str(contract), "--format", "json"],
                          cwd="/", capture_output=True, text=True, timeout=120, check=False)
    assert "internal error" not in proc.stderr and "hunter2" not in proc.stdout + proc.stderr, proc.stderr
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    for name, _, must, expected in FILE_RULES:
        result = results[name]
        if isinstance(expected, str):  # refused: another file is not the object's
            assert not result["passed"] and result["error"].startswith("not run:"), result
            assert expected in result["error"], result
        else:
            assert result["error"] is None, result
            assert (result["observed"], result["passed"]) == (expected, expected == must), result
            assert "read_" in result["sql"].lower(), result  # what ran: the reader's scan of the object's files


DAYS = "(VALUES (1, DATE '2026-06-01', 5), (2, DATE '2026-06-01', 7), (3, DATE '2026-06-02', -1)) t(id, day, amount)"
PARTITIONED = {
    "apiVersion": "v3.1.0", "kind": "DataContract", "id": "lake_days", "version": "1.0.0", "status": "active",
    "schema": [{"name": "sales", "physicalType": "file", "properties": [
        {"name": "id", "logicalType": "integer", "required": True},
        {"name": "day", "logicalType": "date", "partitioned": True},
        {"name": "amount", "logicalType": "integer", "logicalTypeOptions": {"minimum": 0}},
    ], "quality": [{"type": "sql", "name": "no_negative", "query": "SELECT COUNT(*) FROM {object} WHERE amount < 0 "
                    "AND {partition}", "mustBe": 0}],
        "customProperties": [{"property": "dagsterPartitions", "value": {"type": "daily", "start": "2026-06-01"}}]}],
}


@pytest.mark.parametrize("key, failing, rows", [
    ("2026-06-01", [], 2),
    ("2026-06-02", ["amount__minimum", "no_negative"], 1),
])
@pytest.mark.parametrize("fmt, options, suffix", FORMATS[:2], ids=[f[0] for f in FORMATS[:2]])
def test_a_partition_of_files_reads_its_rows_only(tmp_path, fmt, options, suffix, key, failing, rows):
    contract = lake(tmp_path, fmt, options, suffix, rows=DAYS, contract=PARTITIONED)
    proc = subprocess.run([sys.executable, "-m", "dq_contracts.cli", "check", str(contract), "--partition", key,
                           "--format", "json"], cwd="/", capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == (1 if failing else 0), proc.stderr
    results = {r["name"]: r for r in json.loads(proc.stdout)["results"]}
    assert all(r["error"] is None for r in results.values()), results
    assert sorted(n for n, r in results.items() if not r["passed"]) == failing
    assert results["amount__minimum"]["partition"] == key and results["amount__minimum"]["row_count"] == rows
