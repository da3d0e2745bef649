"""Run a compiled object's checks against its warehouse and return one result per check.

A check that could not be evaluated (missing table, lost connection, timeout, bad SQL) fails at
its severity with the error in its result; it is never reported as passing, and the other checks
of the table still report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import sqlalchemy as sa

from dq_contracts.plans import CheckPlan, ContractPlan, ObjectPlan, percent_of
from dq_contracts.sql import (
    compound_duplicates,
    measure_for,
    orphan_samples,
    orphans,
    render,
    samples_query,
    table_for,
)
from dq_contracts.sqlrules import judge_sql_rule

DEFAULT_TIMEOUT_SECONDS = 300
SAMPLE_LIMIT = 5


@dataclass
class CheckResult:
    contract_id: str
    contract_version: str
    asset_key: tuple[str, ...]
    object: str
    name: str
    clause: str
    kind: str
    severity: str
    passed: bool
    observed: Any = None
    threshold: str = ""
    unit: str = "rows"
    row_count: int | None = None
    sql: str | None = None
    error: str | None = None
    samples: list[Any] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """pass, warn, fail (an ERROR clause broken) or error (could not be evaluated)."""
        if self.passed:
            return "pass"
        if self.error:
            return "error"
        return "fail" if self.severity == "ERROR" else "warn"

    def to_json(self) -> dict[str, Any]:
        return {
            "asset_key": list(self.asset_key), "name": self.name, "clause": self.clause, "kind": self.kind,
            "passed": self.passed, "severity": self.severity, "observed": _jsonable(self.observed),
            "threshold": self.threshold, "unit": self.unit, "row_count": self.row_count,
            "error": self.error, "sql": self.sql, "samples": self.samples, "details": self.details,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (int, float, str, bool)):
        return value
    return float(value) if hasattr(value, "__float__") else str(value)


def scrub(message: str, secrets: Iterable[str] = ()) -> str:
    """Error text without credentials: URLs lose their passwords, known secrets are masked."""
    text = re.sub(r"(://[^:/@\s]+:)[^@\s]+@", r"\1***@", message)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text.splitlines()[0][:500] if text else text


class StatementTimeout(Exception):
    """A query ran longer than the statement timeout and was cancelled."""


@contextlib.contextmanager
def read_only(engine: sa.Engine, timeout_seconds: float) -> Iterator[sa.Connection]:
    """A connection in a read-only transaction with a statement timeout.

    PostgreSQL does both itself. DuckDB engines are opened read-only (connections.engine_for) and have
    no statement timeout, so a timer interrupts the query instead.
    """
    with engine.connect() as connection:
        timer: threading.Timer | None = None
        fired = threading.Event()
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql("SET TRANSACTION READ ONLY")
            connection.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout_seconds * 1000)}")
        elif engine.dialect.name == "duckdb":
            driver = connection.connection.driver_connection

            def interrupt() -> None:
                fired.set()
                driver.interrupt()

            timer = threading.Timer(timeout_seconds, interrupt)
            timer.daemon = True
            timer.start()
        try:
            yield connection
        except Exception as exc:
            if fired.is_set():
                raise StatementTimeout(f"the query ran longer than the {timeout_seconds:g} s statement "
                                       "timeout and was cancelled") from exc
            raise
        finally:
            if timer is not None:
                timer.cancel()
            connection.rollback()


def _age_seconds(value: Any, now: dt.datetime) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    else:
        return None
    return (now - moment).total_seconds()


def run_object(
    contract: ContractPlan,
    obj: ObjectPlan,
    engine: sa.Engine,
    *,
    schema: str | None = None,
    selected: Iterable[str] | None = None,
    now: dt.datetime | None = None,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    secrets: Iterable[str] = (),
) -> list[CheckResult]:
    """Every selected check of one schema object: one aggregate scan plus one query per other kind."""
    now = now or dt.datetime.now(dt.timezone.utc)
    wanted = set(selected) if selected is not None else None
    checks = [c for c in obj.checks if wanted is None or c.name in wanted]
    secrets = list(secrets)
    dialect = engine.dialect.name
    columns = sorted({c for check in checks if check.kind != "schema" for c in
                      ([check.params.get("column")] + list(check.params.get("columns") or [])) if c})
    table = table_for(obj.physical_name, schema, columns)

    def result(check: CheckPlan, **kwargs: Any) -> CheckResult:
        return CheckResult(contract.id, contract.version, obj.asset_key, obj.name, check.name, check.clause,
                           check.kind, check.severity, threshold=check.threshold_text(), unit=check.unit,
                           **kwargs)

    results: dict[str, CheckResult] = {}
    measures: dict[str, Any] = {}
    keyed: dict[str, str] = {}
    for check in checks:
        found = measure_for(check, table, dialect) if check.kind != "schema" else None
        if found:
            key, expression = found
            measures.setdefault(key, expression)
            keyed[check.name] = key
    label = {key: f"m{i}" for i, key in enumerate(["rows", *[k for k in measures if k != "rows"]])}
    measures.setdefault("rows", sa.func.count())
    aggregate = sa.select(*(measures[k].label(label[k]) for k in label)).select_from(table)
    row_count: int | None = None
    values: dict[str, Any] = {}
    aggregate_sql = render(aggregate, engine)
    aggregate_error: str | None = None
    try:
        with read_only(engine, timeout_seconds) as connection:
            row = connection.execute(aggregate).one()
        values = {k: row._mapping[label[k]] for k in label}
        row_count = int(values["rows"])
    except Exception as exc:  # any failure: these checks fail with the error, others still run
        aggregate_error = scrub(f"{type(exc).__name__}: {exc}", secrets)

    for check in checks:
        if check.name in keyed:
            if aggregate_error:
                results[check.name] = result(check, passed=False, error=aggregate_error, sql=aggregate_sql)
                continue
            observed = values[keyed[check.name]]
            if check.kind == "freshness":
                age = _age_seconds(observed, now)
                results[check.name] = result(check, passed=check.passes(age), observed=age, row_count=row_count,
                                             sql=aggregate_sql, details={"newest": _jsonable(observed)})
                continue
            count = int(observed or 0)
            measured: Any = percent_of(count, row_count or 0) if check.unit == "percent" else count
            results[check.name] = result(check, passed=check.passes(measured), observed=measured,
                                         row_count=row_count, sql=aggregate_sql,
                                         details={"count": count} if check.unit == "percent" else {})
        else:
            results[check.name] = _run_own_query(check, obj, table, engine, schema, result, row_count,
                                                 timeout_seconds, secrets)
    for check in checks:
        if not results[check.name].passed and results[check.name].error is None:
            _add_samples(check, results[check.name], obj, table, engine, schema, timeout_seconds, secrets)
    return [results[c.name] for c in checks]


def _add_samples(check, result: CheckResult, obj, table, engine, schema, timeout_seconds, secrets) -> None:
    """Only after a failure: a few offending values, never of a classified column."""
    columns = [c for c in ([check.params.get("column")] + list(check.params.get("columns") or [])) if c]
    if not columns:
        return
    if any((obj.column(c) is not None and obj.column(c).classified) for c in columns):
        result.details["samples_withheld"] = "the column is classified; sample values are never fetched"
        return
    if check.kind == "relationship":
        target = table_for(check.params["target_table"], schema, check.params["target_columns"])
        source = table_for(obj.physical_name, schema, check.params["columns"])
        statement = orphan_samples(source, check.params["columns"], target, check.params["target_columns"],
                                   SAMPLE_LIMIT)
    else:
        statement = samples_query(check, table, engine.dialect.name, SAMPLE_LIMIT)
    if statement is None:
        return
    try:
        with read_only(engine, timeout_seconds) as connection:
            rows = connection.execute(statement).fetchall()
        result.samples = [_jsonable(r[0]) if len(r) == 1 else [_jsonable(v) for v in r] for r in rows]
    except Exception as exc:  # samples are a courtesy: their failure never changes the verdict
        result.details["samples_error"] = scrub(f"{type(exc).__name__}: {exc}", secrets)


def _run_own_query(check, obj, table, engine, schema, result, row_count, timeout_seconds, secrets) -> CheckResult:
    statement: Any = None
    try:
        if check.kind == "schema":
            return _schema_check(check, obj, engine, schema, result, timeout_seconds)
        if check.kind in ("primary_key", "duplicate_values"):
            statement = compound_duplicates(table, check.params["columns"], count_nulls=check.kind == "primary_key")
        elif check.kind == "relationship":
            target = table_for(check.params["target_table"], schema, check.params["target_columns"])
            source = table_for(obj.physical_name, schema, check.params["columns"])
            statement = orphans(source, check.params["columns"], target, check.params["target_columns"])
        elif check.kind == "sql":
            if check.params.get("refusal"):  # refused when compiled: this clause fails, the others run
                return result(check, passed=False, error=f"not run: {check.params['refusal']}",
                              sql=str(check.params.get("query") or ""))
            preparer = engine.dialect.identifier_preparer
            qualified = ".".join(preparer.quote(p) for p in ([schema] if schema and "." not in obj.physical_name
                                                             else []) + obj.physical_name.split("."))
            column = preparer.quote(check.params["column"]) if check.params.get("column") else None
            verdict = judge_sql_rule(str(check.params["query"]), dialect=_sqlglot_dialect(engine),
                                     table=qualified, column=column)
            if verdict.refusal or verdict.unresolved:
                return result(check, passed=False, error=f"not run: {verdict.refusal or verdict.unresolved}",
                              sql=verdict.sql)
            statement = sa.text(verdict.sql)
        else:
            return result(check, passed=False, error=f"no measure for check kind {check.kind!r}")
        with read_only(engine, timeout_seconds) as connection:
            rows = connection.execute(statement).fetchall()
        value = rows[0][0] if rows and len(rows[0]) else None
        if isinstance(value, bool):
            value = int(value)
        observed = float(value) if value is not None and not isinstance(value, int) else value
        if check.unit == "percent" and observed is not None and check.kind != "sql":
            observed = percent_of(observed, row_count or 0)
        sql = statement.text if isinstance(statement, sa.TextClause) else render(statement, engine)
        return result(check, passed=check.passes(observed), observed=observed, row_count=row_count, sql=sql,
                      error=None if observed is not None else "the query returned NULL or no row")
    except Exception as exc:
        sql = None
        if statement is not None:
            sql = statement.text if isinstance(statement, sa.TextClause) else render(statement, engine)
        return result(check, passed=False, error=scrub(f"{type(exc).__name__}: {exc}", secrets), sql=sql)


def _sqlglot_dialect(engine: sa.Engine) -> str | None:
    return {"postgresql": "postgres", "duckdb": "duckdb", "sqlite": "sqlite", "mysql": "mysql"}.get(
        engine.dialect.name)


_TYPE_SPELLINGS = {
    "int4": "integer", "int": "integer", "int32": "integer", "int8": "bigint", "int64": "bigint", "long": "bigint",
    "int2": "smallint", "float8": "double", "double precision": "double", "float4": "real", "float": "double",
    "numeric": "decimal", "bool": "boolean", "character varying": "varchar", "string": "varchar", "text": "varchar",
    "timestamp without time zone": "timestamp", "timestamptz": "timestamp with time zone",
    "timestamp with time zone": "timestamp with time zone",
}


def normalise_type(text: str) -> str:
    """`int4`/`INTEGER`, `varchar(2)`/`VARCHAR(2)`, `numeric(12,2)`/`DECIMAL(12,2)` compare equal."""
    lowered = re.sub(r"\s+", " ", str(text).strip().lower())
    match = re.match(r"^([a-z0-9 ]+?)\s*(\(.*\))?$", lowered)
    if not match:
        return lowered
    base, args = match.group(1).strip(), (match.group(2) or "").replace(" ", "")
    return _TYPE_SPELLINGS.get(base, base) + args


def same_type(real: str, declared: str) -> bool:
    """Equal after normalising; arguments count only when both sides have them, because some
    warehouses drop them (DuckDB keeps no VARCHAR length)."""
    a, b = normalise_type(real), normalise_type(declared)
    if a == b:
        return True
    return ("(" not in a or "(" not in b) and a.split("(")[0] == b.split("(")[0]


def _schema_check(check, obj, engine, schema, result, timeout_seconds) -> CheckResult:
    parts = obj.physical_name.split(".")
    table_schema = ".".join(parts[:-1]) if len(parts) > 1 else schema
    with read_only(engine, timeout_seconds) as connection:  # the catalog read gets the same limits
        inspector = sa.inspect(connection)
        actual = {c["name"].lower(): c for c in inspector.get_columns(parts[-1], schema=table_schema)}
    missing, mismatched = [], []
    declared = set()
    for column in check.params["columns"]:
        declared.add(column["name"].lower())
        found = actual.get(column["name"].lower())
        if found is None:
            missing.append(column["name"])
        elif column.get("physical_type"):
            real = found["type"].compile(dialect=engine.dialect)
            if not same_type(real, column["physical_type"]):
                mismatched.append(f"{column['name']}: declared {column['physical_type']}, found {real}")
    extra = sorted(name for name in actual if name not in declared)
    observed = len(missing) + len(mismatched)
    return result(check, passed=observed == 0, observed=observed,
                  details={"missing": missing, "type_mismatches": mismatched, "undeclared_columns": extra},
                  error=None if actual else "the table has no columns or does not exist")
