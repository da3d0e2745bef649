"""BigQuery, Redshift, Trino and SQL Server (and Snowflake, also run through fakesnow, and Databricks,
also run on Spark's Thrift server): compiled and parsed, not run here. Every statement the engine
would send for every check kind (the aggregate scan, each kind's own query and samples, the
relationship's anti-join, the SQL rule) is built by the
engine's own functions in the dialect's SQLAlchemy package, compiled with its values as literals, and
parsed by sqlglot in that warehouse's dialect. The schema check only reads the catalog: nothing to
compile."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlglot
import yaml
from sqlalchemy.dialects import registry

import sqlalchemy as sa

from dq_contracts.engine.check_kinds import KINDS
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.dialects import DIALECTS, read_only_refusal
from dq_contracts.engine.sql import table_for
from dq_contracts.odcs.load import load_contracts
from dq_contracts.odcs.servers import server_type_of_dialect, sqlglot_dialect

# SQLAlchemy dialect -> (its registry name, how its regex shows, how a name is quoted)
COMPILED = {
    "bigquery": ("bigquery", "REGEXP_CONTAINS(", "`"),
    "redshift": ("redshift.psycopg2", " ~ ", '"'),
    "trino": ("trino", "regexp_like(", '"'),
    "mssql": ("mssql.pyodbc", "regexp_like(", "["),
    "snowflake": ("snowflake", "regexp_instr(", '"'),
    "databricks": ("databricks", " RLIKE ", "`"),  # also run on Spark's Thrift server (test_spark.py)
}

NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.timezone.utc)

CONTRACT = {
    "apiVersion": "v3.2.0", "kind": "DataContract", "id": "k", "version": "1.0.0", "status": "active",
    "schema": [{
        "name": "orders", "physicalName": "Orders",
        "properties": [
            {"name": "id", "logicalType": "integer", "primaryKey": True},
            {"name": "code", "logicalType": "string", "required": True, "unique": True,
             "logicalTypeOptions": {"minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$"}},
            {"name": "amount", "logicalType": "number",
             "logicalTypeOptions": {"minimum": 0, "exclusiveMaximum": 100, "multipleOf": 0.5}},
            {"name": "day", "logicalType": "date", "logicalTypeOptions": {"minimum": "2020-01-01"}},
            {"name": "kind", "logicalType": "string", "enum": [{"value": "a"}, {"value": "b"}],
             "quality": [{"metric": "invalidValues", "arguments": {"validValues": ["a", "b"]}, "mustBe": 0},
                         {"metric": "missingValues", "arguments": {"missingValues": [None, "", "n/a"]},
                          "mustBeLessThan": 20, "unit": "percent"},
                         {"metric": "nullValues", "mustBeLessOrEqualTo": 0}]},
            {"name": "parent", "logicalType": "integer", "relationships": [{"to": "orders.id"}],
             "quality": [{"metric": "duplicateValues", "mustBe": 0}]},
            {"name": "ts", "logicalType": "timestamp"},
        ],
        "quality": [
            {"metric": "rowCount", "mustBeBetween": [3, 5]},
            {"metric": "duplicateValues", "arguments": {"properties": ["code", "kind"]}, "mustBe": 0},
            {"type": "sql", "name": "positive", "query": "SELECT COUNT(*) FROM {object} WHERE amount < 0",
             "mustBe": 0},
        ],
    }],
    "slaProperties": [{"property": "latency", "value": 1, "unit": "d", "element": "orders.ts"}],
}


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "k.odcs.yaml"
    path.write_text(yaml.safe_dump(CONTRACT))
    loaded = load_contracts([path])
    assert loaded.problems == []
    return loaded.plans[0]


class _Recorder:
    """A connection that runs nothing: what a kind's `evaluate` executes is kept, and answers 0."""

    def __init__(self, dialect: sa.Dialect) -> None:
        self.info: dict = {}
        self.engine = type("Engine", (), {"dialect": dialect})()
        self.sent: list = []

    def execute(self, statement):
        self.sent.append(statement)
        return type("Result", (), {"scalar": lambda _: 0, "fetchmany": lambda _, n: [(0,)]})()


def statements(plan, name: str) -> dict[str, list]:
    """Check name -> the statements the engine builds for it in dialect `name`."""
    dialect = registry.load(COMPILED[name][0])()
    obj = plan.objects[0]
    schema = server_type_of_dialect(name).default_schema or "analytics"
    columns = sorted({c.physical_name for c in obj.columns})
    checked = CheckedObject(obj, table_for(obj.physical_name, schema, columns, dialect.identifier_preparer, None),
                            name, schema, dialect.identifier_preparer, NOW, None,
                            vouched=True)  # these rows connect only on the operator's `_READ_ONLY`
    built: dict[str, list] = {}
    measures = []
    for check in obj.checks:
        kind, found = KINDS[check.kind], []
        if kind.measure is not None and kind.in_aggregate(check):
            _, expression = kind.measure(check, checked)
            measures.append(expression.label(f"m{len(measures)}"))
            found.append(sa.select(expression.label("m")).select_from(checked.table))
        if kind.evaluate is not None and check.kind != "schema":
            recorder = _Recorder(dialect)
            kind.evaluate(check, checked, recorder)
            found += recorder.sent
        for make in (kind.failing_rows, kind.samples and (lambda c, o: kind.samples(c, o, 5))):
            if make:
                statement = make(check, checked)
                found += [statement] if statement is not None else []
        built[check.name] = found
    built["(the aggregate)"] = [sa.select(sa.func.count().label("rows"), *measures).select_from(checked.table)]
    return built


def compiled(statement, name: str) -> str:
    dialect = registry.load(COMPILED[name][0])()
    sql = str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    # a driver of `%(name)s` parameters reads `%%` as `%`: the server receives the one
    return sql.replace("%%", "%") if dialect.paramstyle in ("pyformat", "format") else sql


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_every_kind_compiles_and_parses_in_the_warehouses_dialect(plan, name):
    built = statements(plan, name)
    kinds = {c.kind for c in plan.objects[0].checks}
    assert kinds == set(KINDS), f"the contract misses kinds {set(KINDS) - kinds}"
    for check in plan.objects[0].checks:
        assert built[check.name] or check.kind == "schema", f"{check.name}: nothing built"
    for check_name, found in built.items():
        for statement in found:
            sql = compiled(statement, name)
            try:
                parsed = sqlglot.parse(sql, read=sqlglot_dialect(name))
            except sqlglot.errors.ParseError as exc:
                raise AssertionError(f"{name} {check_name}: sqlglot cannot parse\n{sql}\n{exc}") from exc
            assert len(parsed) == 1 and isinstance(parsed[0], sqlglot.exp.Query), (check_name, sql)


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_the_dialects_own_functions_and_quoting(plan, name):
    _, regex, quote = COMPILED[name]
    built = statements(plan, name)
    pattern = compiled(built["code__pattern"][0], name)
    assert regex.lower() in pattern.lower(), pattern
    assert f"{quote}Orders" in pattern, pattern  # every part quoted, as written
    if name == "mssql":  # text compared byte by byte, whatever the column's collation
        accepted = compiled(built["kind__accepted_values"][0], name)
        assert "COLLATE Latin1_General_100_BIN2" in accepted, accepted
        assert "len(concat(" in compiled(built["code__max_length"][0], name).lower()
        assert "NOT regexp_like(" in pattern, pattern  # a predicate: never `regexp_like(…) = 0`


@pytest.mark.parametrize("name", ["bigquery", "redshift", "trino", "mssql"])
def test_compiled_only_dialects_run_only_on_the_operators_word(name):
    assert DIALECTS[name].begin is None
    assert "DQ_CONTRACTS_<SERVER>_READ_ONLY=true" in read_only_refusal(name)
