"""Types decided by the warehouse (issue 25, item 3): a column of a real type on each engine, what a
contract declares of it, and the verdict of one check. The declared `physicalType` is resolved by the
engine where it can (DuckDB `typeof(CAST(NULL AS …))`, PostgreSQL `to_regtype`), the observed type is
the catalog's own spelling (never SQLAlchemy's reflection: PostgreSQL's `xml` and a bare `bpchar` made
the schema check fail with a CompileError), an engine's own types are of a logical family (a UUID is a
string, a list an array), and the text-only kinds (pattern, format, lengths) read a natively typed
column's text form.

A row: (engine, the column's SQL type as that engine writes it, its values, what the property
declares besides its name, the check's kind, whether it passes). Files are written by DuckDB from the
values cast to the type (`json`: as JSON text, so DuckDB's reader infers the type itself). ROWS each
failed before the warehouse decided (a wrong verdict, or an error such as the CompileError); HELD are
their other side, which held before too and must still hold.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
import yaml

from dq_contracts.engine.connections import connection_for, engine_for
from dq_contracts.engine.runner import run_object
from dq_contracts.odcs.load import load_contracts
from dq_contracts_tests.support import lake_engine, spark_table, write_lake

U1, U2 = "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "6fa459ea-ee8a-3ca4-894e-db77e160355e"

# What the warehouse decides now, each row a wrong verdict or an error before
ROWS = [
    # DuckDB: its own names of a declared type (float is REAL there), its own types in the families
    ("duckdb", "VARCHAR", ["a"], {"physicalType": "bpchar"}, "schema", True),
    ("duckdb", "REAL", [1.5], {"physicalType": "float"}, "schema", True),
    ("duckdb", "DOUBLE", [1.5], {"physicalType": "float"}, "schema", False),
    ("duckdb", "UUID", [U1], {"physicalType": "varchar"}, "schema", True),
    ("duckdb", "UUID", [U1], {"logicalType": "string", "logicalTypeOptions": {"maxLength": 36}}, "length", True),
    ("duckdb", "UUID", [U1], {"logicalType": "string", "logicalTypeOptions": {"maxLength": 35}}, "length", False),
    ("duckdb", "INTEGER[]", [[1, 2]], {"logicalType": "integer"}, "schema", False),
    ("duckdb", "STRUCT(a INTEGER)", [{"a": 1}], {"logicalType": "string"}, "schema", False),
    # PostgreSQL: the catalog's names (format_type), types SQLAlchemy does not know, serial, text forms
    ("postgres", "xml", ["<a/>"], {"logicalType": "string"}, "schema", True),
    ("postgres", "xml", ["<a/>"], {"physicalType": "xml"}, "schema", True),
    ("postgres", "xml", ["<a/>"], {"physicalType": "text"}, "schema", False),
    ("postgres", "bpchar", ["a"], {"physicalType": "bpchar"}, "schema", True),
    ("postgres", "bpchar", ["a"], {"logicalType": "string"}, "schema", True),
    ("postgres", "integer", [1], {"physicalType": "serial"}, "schema", True),
    ("postgres", "bigint", [1], {"physicalType": "bigserial"}, "schema", True),
    ("postgres", "text", ["a"], {"physicalType": "varchar"}, "schema", False),
    ("postgres", "uuid", [U1], {"physicalType": "varchar"}, "schema", True),
    ("postgres", "uuid", [U1], {"logicalType": "string", "logicalTypeOptions": {"maxLength": 36}}, "length", True),
    ("postgres", "date", ["2024-01-31"],
     {"logicalType": "string", "logicalTypeOptions": {"maxLength": 10}}, "length", True),
    ("postgres", "integer[]", [[1, 2]], {"logicalType": "integer"}, "schema", False),
    # MariaDB: information_schema's COLUMN_TYPE, types SQLAlchemy does not know
    ("mariadb", "inet6", ["::1"], {"logicalType": "string"}, "schema", True),
    ("mariadb", "inet4", ["10.0.0.1"], {"physicalType": "inet4"}, "schema", True),
    # Snowflake (fakesnow)
    ("snowflake", "DATE", ["2024-01-31"],
     {"logicalType": "string", "logicalTypeOptions": {"pattern": "^2024-"}}, "pattern", True),
    # files: what DuckDB's reader makes of them (JSON's UUID-shaped strings are read as UUID)
    ("json", "VARCHAR", [U1, U2], {"physicalType": "varchar"}, "schema", True),
    ("json", "VARCHAR", [U1, U2], {"physicalType": "string"}, "schema", True),
    ("json", "VARCHAR", [U1, U2], {"logicalType": "string", "logicalTypeOptions": {"minLength": 36}}, "length", True),
    ("parquet", "BIGINT[]", [[1, 2]], {"logicalType": "integer"}, "schema", False),
    ("csv", "VARCHAR", ["a"], {"physicalType": "bpchar"}, "schema", True),
    # a Delta table: its log's types as DuckDB reads the Arrow schema
    ("delta", "list<int64>", [[1, 2]], {"logicalType": "integer"}, "schema", False),
    ("delta", "string", ["a"], {"physicalType": "bpchar"}, "schema", True),
    # Spark
    ("spark", "ARRAY<INT>", [None], {"logicalType": "integer"}, "schema", False),
]

# The same comparisons' other side, which held before the warehouse decided too: a resolved name must
# still tell different types apart, and a native column's text form still be judged
HELD = [
    # DuckDB
    ("duckdb", "VARCHAR", ["a"], {"physicalType": "text"}, "schema", True),
    ("duckdb", "DOUBLE", [1.5], {"physicalType": "float8"}, "schema", True),
    ("duckdb", "INTEGER", [1], {"physicalType": "int4"}, "schema", True),
    ("duckdb", "BIGINT", [1], {"physicalType": "int4"}, "schema", False),
    ("duckdb", "DECIMAL(12,2)", [1.5], {"physicalType": "numeric(12,2)"}, "schema", True),
    ("duckdb", "DECIMAL(12,2)", [1.5], {"physicalType": "numeric(10,2)"}, "schema", False),
    ("duckdb", "TIMESTAMPTZ", ["2024-01-01 00:00:00+00"],
     {"physicalType": "timestamp with time zone"}, "schema", True),
    ("duckdb", "TIMESTAMP", ["2024-01-01 00:00:00"], {"physicalType": "timestamptz"}, "schema", False),
    ("duckdb", "UUID", [U1], {"logicalType": "string"}, "schema", True),
    ("duckdb", "UUID", [U1], {"physicalType": "integer"}, "schema", False),
    ("duckdb", "UUID", [U1, U2],
     {"logicalType": "string", "logicalTypeOptions": {"format": "uuid"}}, "pattern", True),
    ("duckdb", "DATE", ["2024-01-31"],
     {"logicalType": "string", "logicalTypeOptions": {"pattern": "^2024-"}}, "pattern", True),
    ("duckdb", "INTEGER[]", [[1, 2]], {"logicalType": "array"}, "schema", True),
    # PostgreSQL
    ("postgres", "char(3)", ["abc"], {"physicalType": "character(3)"}, "schema", True),
    ("postgres", "integer", [1], {"physicalType": "bigserial"}, "schema", False),
    ("postgres", "integer", [1], {"physicalType": "int4"}, "schema", True),
    ("postgres", "real", [1.5], {"physicalType": "float4"}, "schema", True),
    ("postgres", "double precision", [1.5], {"physicalType": "float"}, "schema", True),
    ("postgres", "real", [1.5], {"physicalType": "float"}, "schema", False),
    ("postgres", "varchar(8)", ["a"], {"physicalType": "character varying(8)"}, "schema", True),
    ("postgres", "timestamp(3) with time zone", ["2024-01-01 00:00:00+00"],
     {"physicalType": "timestamptz(3)"}, "schema", True),
    ("postgres", "uuid", [U1], {"logicalType": "string"}, "schema", True),
    ("postgres", "uuid", [U1, U2],
     {"logicalType": "string", "logicalTypeOptions": {"format": "uuid"}}, "pattern", True),
    ("postgres", "integer[]", [[1, 2]], {"logicalType": "array"}, "schema", True),
    # MariaDB
    ("mariadb", "uuid", [U1], {"logicalType": "string"}, "schema", True),
    ("mariadb", "uuid", [U1, U2],
     {"logicalType": "string", "logicalTypeOptions": {"format": "uuid"}}, "pattern", True),
    ("mariadb", "inet4", ["10.0.0.1"],
     {"logicalType": "string", "logicalTypeOptions": {"format": "ipv4"}}, "pattern", True),
    ("mariadb", "int(11)", [1], {"physicalType": "INTEGER"}, "schema", True),
    ("mariadb", "date", ["2024-01-31"], {"logicalType": "integer"}, "schema", False),
    # Snowflake (fakesnow)
    ("snowflake", "DATE", ["2024-01-31"],
     {"logicalType": "string", "logicalTypeOptions": {"maxLength": 10}}, "length", True),
    # files
    ("json", "VARCHAR", [U1, U2],
     {"logicalType": "string", "logicalTypeOptions": {"format": "uuid"}}, "pattern", True),
    ("parquet", "BIGINT[]", [[1, 2]], {"logicalType": "array"}, "schema", True),
    ("parquet", "BIGINT[]", [[1, 2]], {"physicalType": "BIGINT[]"}, "schema", True),
    ("parquet", "REAL", [1.5], {"physicalType": "float"}, "schema", True),
    ("delta", "list<int64>", [[1, 2]], {"logicalType": "array"}, "schema", True),
    ("delta", "float32", [1.5], {"physicalType": "float"}, "schema", True),
    ("csv", "DATE", ["2024-01-31"],
     {"logicalType": "string", "logicalTypeOptions": {"pattern": "^2024-01"}}, "pattern", True),
    # Spark
    ("spark", "INT", [1], {"physicalType": "integer"}, "schema", True),
    ("spark", "DATE", ["2024-01-31"],
     {"logicalType": "string", "logicalTypeOptions": {"maxLength": 10}}, "length", True),
]

FILES = {"json": ".json", "parquet": ".parquet", "csv": ".csv"}
MARKS = {"postgres": (pytest.mark.postgres,), "mariadb": (pytest.mark.mariadb,), "spark": (pytest.mark.spark,)}
PARAMS = [pytest.param(*row, marks=MARKS.get(row[0], ()), id=f"{row[0]}-{row[1]}-{row[4]}-{json.dumps(row[3])}")
          for row in ROWS + HELD]


def plan_for(tmp_path, declared: dict):
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "ty", "version": "1.0.0", "status": "active",
           "schema": [{"name": "t", "physicalName": "t", "properties": [{"name": "c", **declared}]}]}
    path = tmp_path / "ty.odcs.yaml"
    path.write_text(yaml.safe_dump(doc))
    loaded = load_contracts([path])
    assert loaded.problems == [], [p.message for p in loaded.problems]
    return loaded.plans[0]


def table(engine: sa.Engine, ddl: str, values: list) -> None:
    """Table t of one column c of type `ddl` (test data, the engine's own words) holding `values`."""
    quote = engine.dialect.identifier_preparer.quote
    with engine.begin() as c:
        c.exec_driver_sql(f"CREATE TABLE {quote('t')} ({quote('c')} {ddl})")
        for value in values:
            c.execute(sa.text(f"INSERT INTO {quote('t')} VALUES (:v)"), {"v": value})


def files(tmp_path, fmt: str, ddl: str, values: list) -> tuple[sa.Engine, object]:
    """File t.<fmt> written by DuckDB, and a file server's (engine, files) reading it."""
    writer = sa.create_engine("duckdb:///:memory:")
    path = str(tmp_path / f"t{FILES[fmt]}")
    with writer.begin() as c:
        c.exec_driver_sql(f"CREATE TABLE src (c {ddl})")
        for value in values:
            c.execute(sa.text("INSERT INTO src VALUES (:v)"), {"v": value})
        c.execute(sa.text(f"COPY src TO :path (FORMAT {fmt})").bindparams(path=path))
    writer.dispose()
    connection = connection_for({"server": "f", "type": "local", "format": fmt, "path": "{model}" + FILES[fmt]}, {},
                                str(tmp_path))
    return engine_for(connection), connection.files


@pytest.mark.parametrize("backend, ddl, values, declared, kind, passed", PARAMS)
def test_a_type_is_what_the_warehouse_says(backend, ddl, values, declared, kind, passed, tmp_path, warehouse_of):
    plan = plan_for(tmp_path, declared)
    [check] = [c for c in plan.objects[0].checks if c.kind == kind]
    found = None
    if backend in FILES:
        engine, found = files(tmp_path, backend, ddl, values)
    elif backend == "delta":
        import pyarrow as pa

        arrow = {"list<int64>": pa.list_(pa.int64()), "string": pa.string(), "float32": pa.float32()}[ddl]
        server, environ = write_lake("delta", tmp_path, "t", pa.table({"c": pa.array(values, arrow)}))
        engine, found = lake_engine(server, environ, tmp_path)
    elif backend == "spark":
        engine = warehouse_of("spark")[2]
        spark_table(engine, "t", {"c": ddl}, [[v] for v in values])
    elif backend == "mariadb":
        server, environ, admin = warehouse_of("mariadb")
        table(admin, ddl, values)
        engine = engine_for(connection_for(server, environ))
    else:
        engine = warehouse_of(backend)[2]
        table(engine, ddl, values)
    [result] = run_object(plan, plan.objects[0], engine, selected=[check.name], files=found)
    assert result.error is None, result.error
    assert result.passed is passed, (result.observed, result.details)


# (declared text, what is sent to the engine, or None: not a plain type name, never sent)
JUDGED = [
    ("bpchar", "bpchar"),
    ("numeric(12,2)", "numeric(12, 2)"),
    ("timestamp(3) with time zone", "timestamp(3) with time zone"),
    ("INTEGER[]", "INTEGER[]"),
    ("STRUCT(a INT)", "STRUCT(a INT)"),
    ("int -- a comment", "int"),  # rendered from the tokens: the comment is not sent
    ("int; DROP TABLE t", None),
    ("INT), (SELECT password FROM users", None),
    ("varchar(8) COLLATE nocase", None),
    ("ENUM('a', 'b')", None),
    ('"quoted"', None),
    ("main.mood", None),
    ("x(random())", None),  # arguments only after a type keyword: else a modifier could call a function
    ("int(", None),
    ("", None),
    ("x" * 300, None),
]


@pytest.mark.parametrize("text, sent", JUDGED)
def test_a_declared_type_reaches_the_engine_only_as_a_plain_type_name(text, sent):
    from dq_contracts.odcs.type_names import plain_type

    assert plain_type(text, "duckdb") == sent


def test_a_type_name_that_is_no_plain_type_is_never_sent_and_each_name_is_asked_once(tmp_path, warehouse_of):
    engine = warehouse_of("duckdb")[2]
    with engine.begin() as c:
        c.exec_driver_sql("CREATE TABLE t (c VARCHAR, d INTEGER, e DOUBLE)")
    doc_properties = [{"name": "c", "physicalType": "INT), (SELECT 42"}, {"name": "d", "physicalType": "int4"},
                      {"name": "e", "physicalType": "int4"}]
    doc = {"apiVersion": "v3.1.0", "kind": "DataContract", "id": "ty", "version": "1.0.0", "status": "active",
           "schema": [{"name": "t", "physicalName": "t", "properties": doc_properties}]}
    path = tmp_path / "ty.odcs.yaml"
    path.write_text(yaml.safe_dump(doc))
    plan = load_contracts([path]).plans[0]
    statements: list[str] = []
    sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    [result] = run_object(plan, plan.objects[0], engine, selected=["schema"])
    assert not result.passed and result.error is None
    assert result.details["type_mismatches"] == ["c: declared INT), (SELECT 42, found VARCHAR",
                                                 "e: declared int4, found DOUBLE"]
    assert not any("42" in s for s in statements)
    assert sum("typeof" in s for s in statements) == 1  # int4 asked once, for both columns


@pytest.mark.parametrize("observed, declared, same", [("INTEGER", "int4", True), ("VARCHAR", "bpchar", True),
                                                      ("FLOAT", "float", True), ("DOUBLE", "float", False),
                                                      ("DECIMAL(12,2)", "numeric(12,2)", True),
                                                      ("DECIMAL(12,2)", "decimal(10,2)", False)])
def test_one_declared_type_is_compared_as_the_engine_names_it(observed, declared, same, warehouse_of):
    """The hook nested fields are compared through: one observed type against one declared."""
    from dq_contracts.engine.schema_check import is_declared_type

    with warehouse_of("duckdb")[2].connect() as connection:
        assert is_declared_type(connection, observed, declared) is same
