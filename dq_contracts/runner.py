"""Run a compiled object's checks against its warehouse and return one result per check.

A check that could not be evaluated (missing table, lost connection, timeout, bad SQL) fails at
its severity with the error in its result; it is never reported as passing, and the other checks
of the table still report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import sqlalchemy as sa

from dq_contracts import wording
from dq_contracts.kinds import (
    KINDS,
    LAST_SQL,
    Scope,
    Unmeasurable,
    judge_count,
    named_columns,
    readable,
    uses_aggregate,
)
from dq_contracts.plans import CheckPlan, ContractPlan, ObjectPlan
from dq_contracts.schema_check import normalise_type, same_type  # noqa: F401 - re-exported for callers
from dq_contracts.sql import render, table_for

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
    sql: str | None = None  # the clause's own query: the rows at fault (or the one value it judges)
    error: str | None = None
    samples: list[Any] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    aggregate_sql: str | None = None  # what measured it: the table's one scan, or the kind's own query
    message: str = ""  # one sentence for people (wording.describe); never a value of the data

    def __post_init__(self) -> None:
        if not self.message and self.error:  # a result built without its plan still says what went wrong
            self.message = wording.unevaluated(self.error)

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
            "error": self.error, "message": self.message, "sql": self.sql, "aggregate_sql": self.aggregate_sql,
            "samples": self.samples, "details": self.details,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (int, str, bool)):
        return value
    number = float(value) if hasattr(value, "__float__") else None  # Decimal, numpy, float
    return number if number is not None and math.isfinite(number) else str(value)  # strict JSON: no NaN


def scrub(message: str, secrets: Iterable[str] = ()) -> str:
    """Error text without credentials: URLs lose their passwords, known secrets are masked."""
    text = re.sub(r"(://[^:/@\s]+:)[^@\s]+@", r"\1***@", message)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text.splitlines()[0][:500] if text else text


_DRIVER = re.compile(r"^([\w.]+: \([\w.]+\) )")
_WITH_DIGITS = re.compile(r"\S*\d\S*")


def redact_literals(message: str) -> str:
    """A database error without any value it may quote (`invalid input syntax for type integer:
    "999-88-7777"`, `date out of range: 123456789-01-01`): its kind is kept, everything from the
    first quote on is cut, and every word with a digit goes. For checks on objects that hold (or
    reference) classified columns, and every SQL rule."""
    prefix = _DRIVER.match(message)
    head = prefix.group(1) if prefix else ""
    body = message[len(head):]
    cut = min((i for i in (body.find("'"), body.find('"')) if i >= 0), default=-1)
    if cut >= 0:
        body = body[:cut].rstrip() + " …"
    return head + _WITH_DIGITS.sub("…", body) + " (values withheld)"


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
            # every timestamp literal and comparison in UTC, whatever the role's or database's time zone
            connection.exec_driver_sql("SET LOCAL TIME ZONE 'UTC'")
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
    files: Any = None,
) -> list[CheckResult]:
    """Every selected check of one schema object: one aggregate scan plus one query per other kind.
    `files` (connections.Files) when the server is files that DuckDB reads.

    Whatever goes wrong in one check (its query, its verdict, its samples) becomes that check's
    failed result; every other check still reports.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    wanted = set(selected) if selected is not None else None
    checks = [c for c in obj.checks if wanted is None or c.name in wanted]
    secrets = list(secrets)
    results: dict[str, CheckResult] = {}

    def result(check: CheckPlan, **kwargs: Any) -> CheckResult:
        return CheckResult(contract.id, contract.version, obj.asset_key, obj.name, check.name, check.clause,
                           check.kind, check.severity, threshold=check.threshold_text(), unit=check.unit,
                           **kwargs)

    def touches_classified(check: CheckPlan) -> bool:
        """Any column of this object, or of the object a relationship reads, is classified."""
        if check.kind != "relationship":
            return obj.has_classified
        target = None if check.params.get("target_contract") else contract.object(str(check.params["target_object"]))
        return obj.has_classified or bool(check.params.get("target_classified")) or (
            target is not None and target.has_classified)

    def error_text(check: CheckPlan, exc: BaseException) -> str:
        """What a person may read of an error: no credential, and no value it quotes where a
        classified value could be among them."""
        text = scrub(str(exc) if isinstance(exc, Unmeasurable) else f"{type(exc).__name__}: {exc}", secrets)
        if not isinstance(exc, Unmeasurable) and (check.kind == "sql" or touches_classified(check)):
            text = redact_literals(text)
        return text

    def failure(check: CheckPlan, exc: BaseException, **kwargs: Any) -> CheckResult:
        return result(check, passed=False, error=error_text(check, exc), **kwargs)

    runnable = []
    for check in checks:
        if check.params.get("refusal"):  # refused when compiled: this clause fails, the others run
            results[check.name] = result(check, passed=False, error=f"not run: {check.params['refusal']}",
                                         sql=str(check.params.get("query") or "") or None)
        elif check.kind not in KINDS:
            results[check.name] = result(check, passed=False, error=f"no engine for check kind {check.kind!r}")
        else:
            runnable.append(check)

    try:
        columns = sorted({c for check in runnable if check.kind != "schema" for c in named_columns(check)})
        preparer = engine.dialect.identifier_preparer
        scope = Scope(obj, table_for(obj.physical_name, schema, columns, preparer, files), engine.dialect.name,
                      schema, preparer, now, files)
    except Exception as exc:  # a name this dialect cannot quote: every check says so
        return [_worded(c, results.get(c.name) or failure(c, exc)) for c in checks]

    aggregated = [c for c in runnable if uses_aggregate(c)]
    key_of, values, row_count, aggregate_sql, errors = _aggregate(aggregated, scope, engine, timeout_seconds)
    for check in runnable:
        kind = KINDS[check.kind]
        judge = kind.judge or judge_count
        key = key_of.get(check.name)
        measured = aggregate_sql if key is not None else None  # what measures it, for a debug log
        own = _own_sql(check, scope, engine)  # what a person runs to see the rows at fault
        try:
            if key is not None:
                if key in errors:
                    raise errors[key]
                raw = values[key]
            else:
                with read_only(engine, timeout_seconds) as connection:
                    try:
                        raw = kind.evaluate(check, scope, connection)
                    finally:
                        measured = _last_sql(connection) or measured
            verdict = judge(check, raw, row_count, scope)
        except Exception as exc:  # one check's exception is that check's failed result
            outcome = failure(check, exc, sql=own if own is not None or key is not None else measured,
                              aggregate_sql=measured)
            if kind.hint and not isinstance(exc, (Unmeasurable, *_TRANSIENT)):
                outcome.error = f"{kind.hint.format(**check.params)}: {outcome.error}"
            results[check.name] = outcome
            continue
        results[check.name] = result(check, passed=verdict.passed, observed=verdict.observed, row_count=row_count,
                                     sql=own if own is not None or key is not None else measured,
                                     aggregate_sql=measured, error=verdict.error, details=verdict.details)

    for check in runnable:
        outcome = results[check.name]
        if not outcome.passed and outcome.error is None:
            _add_samples(check, outcome, scope, engine, timeout_seconds, error_text)
    return [_worded(c, results[c.name]) for c in checks]


def _own_sql(check: CheckPlan, scope: Scope, engine: sa.Engine) -> str | None:
    """The clause's own query, rendered for people; None when the kind has none or it cannot be built
    (then the check's verdict says why, not this)."""
    failing_rows = KINDS[check.kind].failing_rows
    try:
        statement = failing_rows(check, scope) if failing_rows is not None else None
        return readable(statement, engine) if statement is not None else None
    except Exception:  # noqa: BLE001 - a courtesy: never changes the verdict
        return None


def _worded(check: CheckPlan, result: CheckResult) -> CheckResult:
    """The result with its sentence; should its kind's words fail, the plain measurement and threshold."""
    try:
        result.message = wording.describe(check, result)
    except Exception:  # noqa: BLE001 - a courtesy: never changes the verdict
        result.message = wording.unevaluated(result.error) if result.error else wording.generic(check, result)
    return result


_TRANSIENT = (StatementTimeout, sa.exc.OperationalError, sa.exc.InterfaceError)


def _aggregate(checks: list[CheckPlan], scope: Scope, engine: sa.Engine, timeout_seconds: float
               ) -> tuple[dict[str, str], dict[str, Any], int | None, str, dict[str, Exception]]:
    """The one scan: every measure of the table as a column of one SELECT, each shared measure once.

    If that statement fails for a reason of its own (a type a measure cannot apply to, a bad
    pattern), each measure runs alone, so the one at fault fails and the others still report;
    a timeout or a lost server fails them all at once (running them again would only repeat it).
    Returns (measure key by check name, values by key, row count, SQL, errors by key)."""
    measures: dict[str, Any] = {"rows": sa.func.count()}
    key_of: dict[str, str] = {}
    for check in checks:
        key, expression = KINDS[check.kind].measure(check, scope)
        measures.setdefault(key, expression)
        key_of[check.name] = key
    labels = {key: f"m{i}" for i, key in enumerate(measures)}
    statement = sa.select(*(measures[k].label(labels[k]) for k in measures)).select_from(scope.table)
    sql = render(statement, engine)
    try:
        with read_only(engine, timeout_seconds) as connection:
            row = connection.execute(statement).one()
        values = {k: row._mapping[labels[k]] for k in measures}
        return key_of, values, int(values["rows"]), sql, {}
    except _TRANSIENT as exc:
        return key_of, {}, None, sql, dict.fromkeys(measures, exc)
    except Exception as exc:
        if len(measures) == 1:
            return key_of, {}, None, sql, {"rows": exc}
        first = exc
    values, errors = {}, {}
    for key, expression in measures.items():  # the table itself first: if it fails, all do
        if errors.get("rows") is not None:
            errors[key] = errors["rows"]
            continue
        try:
            with read_only(engine, timeout_seconds) as connection:
                values[key] = connection.execute(sa.select(expression).select_from(scope.table)).scalar()
        except Exception as exc:  # noqa: PERF203 - each measure on its own, by design
            errors[key] = exc if key != "rows" else first
    rows = values.get("rows")
    return key_of, values, int(rows) if rows is not None else None, sql, errors


def _last_sql(connection: sa.Connection) -> str | None:
    return connection.info.pop(LAST_SQL, None)


def _add_samples(check: CheckPlan, result: CheckResult, scope: Scope, engine: sa.Engine, timeout_seconds: float,
                 error_text: Any) -> None:
    """Only after a failure: a few offending values, never of a classified column. Samples are a
    courtesy: whatever goes wrong here never changes the verdict."""
    kind = KINDS[check.kind]
    try:
        columns = kind.sample_columns(check)
        if not columns or kind.samples is None:
            return
        if any((scope.obj.column(c) is not None and scope.obj.column(c).classified) for c in columns):
            result.details["samples_withheld"] = "the column is classified; sample values are never fetched"
            return
        statement = kind.samples(check, scope, SAMPLE_LIMIT)
        if statement is None:
            return
        with read_only(engine, timeout_seconds) as connection:
            rows = connection.execute(statement).fetchall()
        result.samples = [_jsonable(r[0]) if len(r) == 1 else [_jsonable(v) for v in r] for r in rows]
    except Exception as exc:
        result.details["samples_error"] = error_text(check, exc)
