"""DuckDB lets one process write a file, or any number read it: a check that meets a file another
process is writing waits for it (a pipeline rebuilding a table), and so does the demo's writer that
meets a check run (the automation sensor's, while "Materialize all" rebuilds the tables)."""

from __future__ import annotations

import select
import subprocess
import sys

import sqlalchemy as sa

from dq_contracts.demo import write_tables
from dq_contracts.engine.contracts import Warehouses, run_contract
from dq_contracts_tests.support import duckdb_with, plan_of

HOLD = """
import sys, time, duckdb
connection = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "read")
print("holding", flush=True)
time.sleep(float(sys.argv[3]))
connection.close()
print("released", flush=True)
"""


def hold(path, mode: str, seconds: float) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(path), mode, str(seconds)], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline().strip() == "holding"
    return process


def released(process: subprocess.Popen) -> bool:
    """Whether the holder has let go of the file by now (said so on its stdout), without waiting."""
    return bool(select.select([process.stdout], [], [], 0)[0]) and process.stdout.readline().strip() == "released"


def test_a_check_waits_for_a_file_another_process_writes(tmp_path):
    database = duckdb_with(tmp_path / "w.duckdb", "CREATE TABLE t (a INTEGER)", "INSERT INTO t VALUES (1), (2)")
    plan, _ = plan_of(tmp_path, {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "l", "version": "1.0.0",
                                 "status": "active",
                                 "servers": [{"server": "local", "type": "duckdb", "database": str(database)}],
                                 "schema": [{"name": "t", "properties": [{"name": "a", "logicalType": "integer",
                                                                          "unique": True}]}]})
    writer = hold(database, "write", 2)
    try:
        with Warehouses() as warehouses:
            results = run_contract(plan, warehouses)
        let_go = released(writer)  # the check could only read once the writer had let go
    finally:
        writer.wait()
    assert [(r.name, r.passed, r.error) for r in results if r.name == "a__unique"] == [("a__unique", True, None)]
    assert let_go  # it waited for the writer, and did not fail at once


def test_the_demo_writer_waits_for_a_check_that_reads_the_file(tmp_path):
    database = tmp_path / "demo.duckdb"
    write_tables(database, ["orders"])
    reader = hold(database, "read", 2)
    try:
        written = write_tables(database, ["orders"])
        let_go = released(reader)  # the writer could only write once the reader had let go
    finally:
        reader.wait()
    assert let_go
    engine = sa.create_engine(f"duckdb:///{database}")
    with engine.connect() as c:
        assert c.exec_driver_sql("SELECT count(*) FROM analytics.orders").scalar() == written["orders"]
    engine.dispose()
