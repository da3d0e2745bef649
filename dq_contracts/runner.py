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
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, TypeVar

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
from dq_contracts.partitions import PER_PARTITION, Partition, PartitionKeyError, scope_of
from dq_contracts.plans import CheckPlan, ContractPlan, ObjectPlan
from dq_contracts.schema_check import normalise_type, same_type  # noqa: F401 - re-exported for callers
from dq_contracts.sql import render, table_for

DEFAULT_TIMEOUT_SECONDS = 300
SAMPLE_LIMIT = 5
# A failing clause with at most this many offending rows has all of them read, in one scan shared by
# every such clause of the table; one with more reads the first SAMPLE_SCAN it meets and stops.
RARE_ROWS = 200
SAMPLE_SCAN = 100
T = TypeVar("T")
# Measures per statement, by dialect: PostgreSQL refuses a target list of more than 1,664 entries,
# and a wide table's aggregate is split into as few statements as fit, each one scan of its columns.
MEASURES_PER_STATEMENT = {"postgresql": 1500}
DEFAULT_MEASURES_PER_STATEMENT = 2000
# Distinct counts per statement (kinds._keys_apart): DuckDB holds a hash table for each at once.
DISTINCT_COUNTS_PER_STATEMENT = {"duckdb": 50, "postgresql": 1500}
# Dialects where a key column's repeated rows, its NULLs and its 5 smallest repeated keys come from
# one GROUP BY (a bounded `min(key, 5)`), so a failing unique or primary key needs no second pass
# for samples; PostgreSQL has no bounded aggregate, and its COUNT(DISTINCT …) is faster than its
# hash GROUP BY (2M rows: 0.57 s against 2.37 s).
KEY_GROUPS = {"duckdb"}
# ... for a table of a few key columns: a GROUP BY is a scan of its own, so a wide table of many
# (1,000 unique columns: 1,000 statements) takes its distinct counts 50 to a scan instead
KEY_GROUPS_MOST = 10


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
    partition: str | None = None  # the partition key it judged; None for the whole table

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
            "error": self.error, "message": self.message, "sql": self.sql,
            "samples": self.samples, "details": self.details,
            **({"partition": self.partition} if self.partition is not None else {}),
        }  # not aggregate_sql: a table's scan is the same for its every clause (reports give it once per object)


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


def withheld(exc: BaseException, clause: str, why: str) -> str:
    """A failure told by its kind alone: the exception's class, the driver's class and SQLSTATE
    where the driver gives them (psycopg2's `pgcode`), and the clause; never the message, which a
    database writes from the data (`invalid input syntax for type integer: "999-88-7777"`, a regex
    engine's echo of a pattern, DETAIL and LINE lines, SQLAlchemy's `[SQL: …]`)."""
    orig = getattr(exc, "orig", None)  # the driver's exception under SQLAlchemy's
    driver = [type(orig).__name__] if orig is not None and type(orig).__name__ != type(exc).__name__ else []
    code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None) or getattr(exc, "pgcode", None)
    kind = ", ".join([*driver, *([f"SQLSTATE {code}"] if isinstance(code, str) and code.isalnum() else [])])
    named = f"{type(exc).__name__} ({kind})" if kind else type(exc).__name__
    return f"{named} in {clause}; the database's message is withheld: {why}"


class StatementTimeout(Exception):
    """A query ran longer than the statement timeout and was cancelled."""


# Exceptions whose message this package writes, from the contract and the catalog alone: shown as
# they are. Any other (the driver's, SQLAlchemy's, Python's on a value) may quote the data.
OWN_MESSAGES: tuple[type[BaseException], ...] = (Unmeasurable, StatementTimeout, PartitionKeyError)


def touches_classified(contract: ContractPlan, obj: ObjectPlan, check: CheckPlan | None = None) -> str | None:
    """Why a statement of this check may meet a classified value (None if it cannot): every SQL rule
    (it may read any table), every statement on an object with a classified column (samples,
    measures, key groups, freshness, the catalog), and a relationship whose target has one."""
    if check is not None and check.kind == "sql":
        return "a SQL rule's error may quote any value it reads"
    if obj.has_classified:
        return "the table has a classified column"
    if check is not None and check.kind == "relationship":
        target = None if check.params.get("target_contract") else contract.object(str(check.params["target_object"]))
        if check.params.get("target_classified") or (target is not None and target.has_classified):
            return "the referenced table has a classified column"
    return None


def error_of(exc: BaseException, clause: str, why: str | None, secrets: Iterable[str] = ()) -> str:
    """What a person may read of an error: no credential, and, where `why` says a classified value
    may be among what the database quotes, nothing of its message (`withheld`)."""
    if isinstance(exc, OWN_MESSAGES):
        return scrub(str(exc), secrets)
    if why is not None:
        return withheld(exc, clause, why)
    return scrub(f"{type(exc).__name__}: {exc}", secrets)


def _settings(timeout_seconds: float) -> sa.TextClause:
    # one statement, local to the transaction: the timeout; every timestamp literal and comparison in
    # UTC whatever the role's or database's time zone; and names resolved in pg_catalog alone, since
    # PostgreSQL weighs a function of every schema on the search path equally and an exact type match
    # wins (a `public.length(varchar)` would answer our `length(code)`). Tables are always named with
    # their schema (connections.connection_for). set_config is refused in contracts' SQL.
    return sa.text("SELECT set_config('statement_timeout', :ms, true), set_config('TimeZone', 'UTC', true), "
                   "set_config('search_path', 'pg_catalog', true)").bindparams(ms=str(int(timeout_seconds * 1000)))


class _Deadline:
    """DuckDB has no statement timeout: a timer interrupts the connection's query instead."""

    def __init__(self, connection: sa.Connection, timeout_seconds: float) -> None:
        self.fired = threading.Event()
        self.timer: threading.Timer | None = None
        if connection.dialect.name == "duckdb":
            driver = connection.connection.driver_connection

            def interrupt() -> None:
                self.fired.set()
                driver.interrupt()

            self.timer = threading.Timer(timeout_seconds, interrupt)
            self.timer.daemon = True
            self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def _begin(engine: sa.Engine, timeout_seconds: float) -> sa.Connection:
    """A connection in a read-only transaction with the timeout set: on PostgreSQL `BEGIN READ ONLY`
    and one settings statement; DuckDB engines are opened read-only (connections.engine_for)."""
    if engine.dialect.name == "postgresql":
        connection = engine.execution_options(postgresql_readonly=True).connect()
        try:
            connection.execute(_settings(timeout_seconds))
        except BaseException:
            connection.close()
            raise
        return connection
    return engine.connect()


def _server_timeout(exc: BaseException) -> bool:
    """PostgreSQL cancelled the statement at its statement_timeout (SQLSTATE 57014, and not an
    administrator's cancel): said as our own timeout, whose words hold nothing of the data."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "pgcode", None) == "57014" and "statement timeout" in str(orig)


def _timed_out(timeout_seconds: float) -> StatementTimeout:
    return StatementTimeout(f"the query ran longer than the {timeout_seconds:g} s statement timeout and was "
                            "cancelled")


@contextlib.contextmanager
def read_only(engine: sa.Engine, timeout_seconds: float) -> Iterator[sa.Connection]:
    """A connection in a read-only transaction with a statement timeout, rolled back at the end."""
    connection = _begin(engine, timeout_seconds)
    deadline = _Deadline(connection, timeout_seconds)
    try:
        yield connection
    except Exception as exc:
        if deadline.fired.is_set() or _server_timeout(exc):
            raise _timed_out(timeout_seconds) from exc
        raise
    finally:
        deadline.cancel()
        try:
            connection.rollback()
        finally:
            connection.close()


class Session:
    """One connection and one read-only transaction for every statement of an object: on PostgreSQL
    `BEGIN READ ONLY`, one settings statement, the work, `ROLLBACK`; no ping per statement. A
    statement that fails ends the transaction (both engines abort it), and the next one begins anew,
    so one check's error never costs the others."""

    def __init__(self, engine: sa.Engine, timeout_seconds: float) -> None:
        self.engine, self.timeout_seconds = engine, timeout_seconds
        self._connection: sa.Connection | None = None

    def run(self, work: Callable[[sa.Connection], T]) -> T:
        """`work` on the session's connection; whatever it fetches, it fetches before returning."""
        if self._connection is None:
            self._connection = _begin(self.engine, self.timeout_seconds)
        deadline = _Deadline(self._connection, self.timeout_seconds)
        try:
            return work(self._connection)
        except Exception as exc:
            self.close()
            if deadline.fired.is_set() or _server_timeout(exc):
                raise _timed_out(self.timeout_seconds) from exc
            raise
        finally:
            deadline.cancel()

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.rollback()
            except Exception:  # noqa: BLE001 - a connection already lost has nothing to roll back
                pass
            finally:
                connection.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    partition: Partition | None = None,
) -> list[CheckResult]:
    """Every selected check of one schema object: one aggregate scan plus one query per other kind.
    `files` (connections.Files) when the server is files that DuckDB reads. With `partition`, every
    check the partition scope table (partitions.PARTITION_SCOPE) runs per partition reads only that
    partition's rows, and its result carries the key; the table-wide ones read the whole table.

    Whatever goes wrong in one check (its query, its verdict, its samples) becomes that check's
    failed result; every other check still reports.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    wanted = set(selected) if selected is not None else None
    checks = [c for c in obj.checks if wanted is None or c.name in wanted]
    secrets = list(secrets)
    if schema is None and engine.dialect.name == "postgresql":
        schema = "public"  # the session resolves names in pg_catalog alone (_settings): tables name their schema
    common = dict(schema=schema, now=now, timeout_seconds=timeout_seconds, secrets=secrets, files=files)
    if partition is None:
        return _run_checks(contract, obj, engine, checks, **common)
    # two passes, each with its own scan, in one session: the partition's clauses on its rows, the
    # others on the whole table
    per = {c.name: scope_of(c.kind, c.params.get("query"))[0] == PER_PARTITION for c in checks}
    wide = [c for c in checks if not per[c.name]]
    each = [c for c in checks if per[c.name]]
    with Session(engine, timeout_seconds) as session:
        done = {r.name: r for r in (_run_checks(contract, obj, engine, wide, session=session, **common)
                                    if wide else [])}
        for r in _run_checks(contract, obj, engine, each, partition=partition, session=session,
                             **common) if each else []:
            r.partition = partition.key
            done[r.name] = r
    return [done[c.name] for c in checks]


def _run_checks(contract: ContractPlan, obj: ObjectPlan, engine: sa.Engine, checks: list[CheckPlan], *,
                schema: str | None, now: dt.datetime, timeout_seconds: float, secrets: list[str], files: Any,
                partition: Partition | None = None, session: Session | None = None) -> list[CheckResult]:
    """run_object's work for `checks`, every one of them on the partition's rows when one is given;
    in `session` when given (the caller closes it), else in one of its own."""
    results: dict[str, CheckResult] = {}

    def result(check: CheckPlan, **kwargs: Any) -> CheckResult:
        return CheckResult(contract.id, contract.version, obj.asset_key, obj.name, check.name, check.clause,
                           check.kind, check.severity, threshold=check.threshold_text(), unit=check.unit,
                           **kwargs)

    def error_text(check: CheckPlan, exc: BaseException) -> str:
        return error_of(exc, check.where or check.clause, touches_classified(contract, obj, check), secrets)

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
        if partition is None:
            scope = Scope(obj, table_for(obj.physical_name, schema, columns, preparer, files), engine.dialect.name,
                          schema, preparer, now, files)
        else:
            scope = Scope(obj, None, engine.dialect.name, schema, preparer, now, files, partition)
            scope = replace(scope, table=scope.own_table(columns))
    except Exception as exc:  # a name this dialect cannot quote: every check says so
        return [_worded(c, results.get(c.name) or failure(c, exc)) for c in checks]

    with contextlib.nullcontext(session) if session is not None else Session(engine, timeout_seconds) as session:
        aggregated = [c for c in runnable if uses_aggregate(c)]
        # no scan when nothing is measured by one and no result is told in rows: the schema check
        # reads the catalog, and a partitioned run's table-wide pass must not count a whole
        # PostgreSQL table for nothing
        scan = aggregated or any(KINDS[c.kind].counts_rows for c in runnable)
        measured = _measure(aggregated, scope, session) if scan else Measured()
        for check in runnable:
            results[check.name] = _judged(check, scope, session, measured, result, failure)
        failing = [(c, results[c.name]) for c in runnable if not results[c.name].passed and results[c.name].error is None]
        _add_samples(failing, scope, session, error_text, measured)
    return [_worded(c, results[c.name]) for c in checks]


def _judged(check: CheckPlan, scope: Scope, session: Session, measured: Measured, result: Any,
            failure: Any) -> CheckResult:
    """One check's result, from its measure of the table's statements or from its own query."""
    kind = KINDS[check.kind]
    judge = kind.judge or judge_count
    key = measured.key_of.get(check.name)
    measuring = measured.sql.get(key) if key is not None else None  # what measures it, for a debug log
    own = _own_sql(check, scope, session.engine)  # what a person runs to see the rows at fault
    ran: list[str | None] = []

    def sqls() -> dict[str, Any]:
        """The clause's own query for people (else what ran), and what measured it."""
        sql = next((r for r in ran if r), measuring)
        return {"sql": own if own is not None or key is not None else sql, "aggregate_sql": sql}

    try:
        if key is not None:
            if key in measured.errors:
                raise measured.errors[key]
            raw = measured.values[key]
        else:
            def evaluate(connection: sa.Connection) -> Any:
                try:
                    return kind.evaluate(check, scope, connection)
                finally:
                    ran.append(_last_sql(connection))

            raw = session.run(evaluate)
        verdict = judge(check, raw, measured.row_count, scope)
    except Exception as exc:  # one check's exception is that check's failed result
        outcome = failure(check, exc, **sqls())
        if kind.hint and not isinstance(exc, (Unmeasurable, *_TRANSIENT)):
            outcome.error = f"{kind.hint.format(**check.params)}: {outcome.error}"
        return outcome
    return result(check, passed=verdict.passed, observed=verdict.observed, row_count=measured.row_count,
                  error=verdict.error, details=verdict.details, **sqls())


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


@dataclass
class Measured:
    """What the table's statements measured: each check's measure key, the values and errors by key,
    the row count, and the SQL of the statement each key came from."""

    key_of: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, Exception] = field(default_factory=dict)
    row_count: int | None = None
    sql: dict[str, str] = field(default_factory=dict)  # by measure key
    samples: dict[str, list[Any]] = field(default_factory=dict)  # by measure key, where the measure found them


def _measure(checks: list[CheckPlan], scope: Scope, session: Session) -> Measured:
    """The one scan: every measure of the table as a column of one SELECT, each shared measure once,
    and the distinct counts in a second one (kinds._keys_apart); a wide table's in as few as fit.

    If a statement fails for a reason of its own (a type a measure cannot apply to, a bad pattern),
    each of its measures runs alone, so the one at fault fails and the others still report; a
    timeout or a lost server fails them all at once (running them again would only repeat it)."""
    measured = Measured()
    statements: list[dict[str, Any]] = [{"rows": sa.func.count()}, {}]
    grouped: dict[str, dict[str, tuple[bool, Any]]] = {}  # key column -> measure key -> (primary key?, expression)
    seen = {"rows"}  # a measure two checks share is built once (a wide table has thousands)
    for check in checks:
        kind = KINDS[check.kind]
        key, expression = kind.measure(check, scope)
        measured.key_of[check.name] = key
        if key in seen:
            continue
        seen.add(key)
        apart = kind.apart(check)
        if apart and scope.dialect in KEY_GROUPS:
            grouped.setdefault(check.params["columns"][0], {})[key] = (check.kind == "primary_key", expression)
        else:
            statements[1 if apart else 0][key] = expression
    for column, keys in grouped.items():
        if len(grouped) > KEY_GROUPS_MOST or not _run_key_groups(column, keys, scope, session, measured):
            statements[1].update({key: expression for key, (_, expression) in keys.items()})  # distinct counts
    limits = (MEASURES_PER_STATEMENT.get(scope.dialect, DEFAULT_MEASURES_PER_STATEMENT),
              DISTINCT_COUNTS_PER_STATEMENT.get(scope.dialect, DEFAULT_MEASURES_PER_STATEMENT))
    for measures, most in zip(statements, limits):
        keys = list(measures)
        for start in range(0, len(keys), most):
            _run_measures({k: measures[k] for k in keys[start:start + most]}, scope, session, measured)
    rows = measured.values.get("rows")
    measured.row_count = int(rows) if rows is not None else None
    return measured


def _run_key_groups(column: str, keys: dict[str, tuple[bool, Any]], scope: Scope, session: Session,
                    measured: Measured) -> bool:
    """One GROUP BY of a key column: its repeated rows, its NULL rows and (unless the column is
    classified) its 5 smallest repeated keys. False if the statement failed for a reason of its own."""
    # the table with this one column: SQLAlchemy's cache key walks every column of a FROM, which on
    # a table of 1,000 key columns cost more than the statements themselves
    col = scope.own_table([column]).c[column]
    groups = sa.select(col.label("k"), sa.func.count().label("n")).group_by(col).subquery("g")
    present = groups.c.k.is_not(None)
    measures = [sa.func.coalesce(sa.func.sum(groups.c.n - 1).filter(present), 0).label("repeated"),
                sa.func.coalesce(sa.func.sum(groups.c.n).filter(groups.c.k.is_(None)), 0).label("nulls")]
    described = scope.obj.column(column)
    if not (described is not None and described.classified):  # never a classified value, not even held
        measures.append(sa.func.min(groups.c.k, SAMPLE_LIMIT).filter(sa.and_(present, groups.c.n > 1))
                        .label("repeated_keys"))
    statement = sa.select(*measures).select_from(groups)
    try:
        row = session.run(lambda connection: connection.execute(statement).one())
    except _TRANSIENT as exc:
        measured.errors.update(dict.fromkeys(keys, exc))
        return True
    except Exception:  # noqa: BLE001 - measured again as distinct counts, where each error is its own
        return False
    sql = render(statement, session.engine)
    for key, (is_key, _) in keys.items():
        measured.values[key] = int(row.repeated) + (int(row.nulls) if is_key else 0)
        measured.sql[key] = sql
        if "repeated_keys" in row._fields:
            measured.samples[key] = list(row.repeated_keys or [])
    return True


def _run_measures(measures: dict[str, Any], scope: Scope, session: Session, measured: Measured) -> None:
    labels = {key: f"m{i}" for i, key in enumerate(measures)}
    statement = sa.select(*(measures[k].label(labels[k]) for k in measures)).select_from(scope.table)
    sql = render(statement, session.engine)
    measured.sql.update(dict.fromkeys(measures, sql))
    try:
        row = session.run(lambda connection: connection.execute(statement).one())
        measured.values.update({k: row._mapping[labels[k]] for k in measures})
        return
    except _TRANSIENT as exc:
        measured.errors.update(dict.fromkeys(measures, exc))
        return
    except Exception as exc:
        if len(measures) == 1:
            measured.errors.update(dict.fromkeys(measures, exc))
            return
        first = exc
    for key, expression in measures.items():  # the table itself first: if it fails, all do
        if measured.errors.get("rows") is not None:
            measured.errors[key] = measured.errors["rows"]
            continue
        alone = sa.select(expression.label("m"), sa.func.count().label("n")).select_from(scope.table)
        try:
            measured.values[key] = session.run(lambda connection: connection.execute(alone).one().m)
        except Exception as exc:  # noqa: PERF203 - each measure on its own, by design
            measured.errors[key] = exc if key != "rows" else first


def _last_sql(connection: sa.Connection) -> str | None:
    return connection.info.pop(LAST_SQL, None)


def _count_of(result: CheckResult) -> int | None:
    count = result.details.get("count", result.observed)
    return int(count) if isinstance(count, (int, float)) and not isinstance(count, bool) else None


def _add_samples(failing: list[tuple[CheckPlan, CheckResult]], scope: Scope, session: Session,
                 error_text: Any, measured: Measured | None = None) -> None:
    """Only after a failure: a few offending values, never of a classified column, for every failing
    clause of the table in at most two statements: one scan that reads all the offending rows of the
    clauses that have few, and one row of bounded subqueries for the others (the first rows each
    meets, a kind's own sample query). Samples are a courtesy: whatever goes wrong here never changes
    the verdict."""
    rare: list[tuple[CheckPlan, CheckResult]] = []
    bounded: list[tuple[CheckPlan, CheckResult, sa.Select]] = []
    for check, result in failing:
        kind = KINDS[check.kind]
        try:
            columns = kind.sample_columns(check)
            if not columns or (kind.samples is None and kind.violation is None):
                continue
            if any((scope.obj.column(c) is not None and scope.obj.column(c).classified) for c in columns):
                result.details["samples_withheld"] = "the column is classified; sample values are never fetched"
                continue
            count = _count_of(result)
            found = measured.samples.get(measured.key_of.get(check.name, "")) if measured is not None else None
            if found is not None:  # the measure's own GROUP BY found them
                result.samples = _keep(found)
            elif kind.violation is not None and count is not None and count <= RARE_ROWS:
                rare.append((check, result))
            elif kind.violation is not None:
                column = scope.table.c[check.params["column"]]
                bounded.append((check, result, sa.select(column).where(kind.violation(check, scope))
                                .limit(SAMPLE_SCAN)))
            else:
                statement = kind.samples(check, scope, SAMPLE_LIMIT)
                if statement is not None:
                    bounded.append((check, result, statement))
        except Exception as exc:  # noqa: BLE001
            result.details["samples_error"] = error_text(check, exc)
    if rare:
        _rare_samples(rare, scope, session, error_text)
    if bounded:
        _bounded_samples(bounded, scope, session, error_text)


def _keep(values: Iterable[Any]) -> list[Any]:
    """Up to SAMPLE_LIMIT distinct values, smallest first (NULL last), as JSON values."""
    seen = {(tuple(v) if isinstance(v, (list, tuple)) else v) for v in values}
    ordered = sorted(seen, key=lambda v: (v is None, v))[:SAMPLE_LIMIT]
    return [[_jsonable(x) for x in v] if isinstance(v, tuple) else _jsonable(v) for v in ordered]


def _rare_samples(rare: list[tuple[CheckPlan, CheckResult]], scope: Scope, session: Session,
                  error_text: Any) -> None:
    """`SELECT <violation flag, value> per clause FROM t WHERE <any violation>`: one scan, and no more
    rows than the clauses' offending rows (each at most RARE_ROWS)."""
    violations = [KINDS[c.kind].violation(c, scope) for c, _ in rare]
    columns = []
    for i, ((check, _), violation) in enumerate(zip(rare, violations)):
        columns += [sa.case((violation, True), else_=False).label(f"f{i}"),
                    scope.table.c[check.params["column"]].label(f"v{i}")]
    statement = sa.select(*columns).where(sa.or_(*violations))
    try:
        rows = session.run(lambda connection: connection.execute(statement).fetchall())
    except Exception as exc:  # each clause alone, so only the one at fault says so
        if isinstance(exc, _TRANSIENT):
            for check, result in rare:
                result.details["samples_error"] = error_text(check, exc)
            return
        _bounded_samples([(c, r, KINDS[c.kind].samples(c, scope, SAMPLE_LIMIT)) for c, r in rare], scope,
                         session, error_text, together=False)
        return
    for i, (_, result) in enumerate(rare):
        result.samples = _keep(row[2 * i + 1] for row in rows if row[2 * i])


def _bounded_samples(bounded: list[tuple[CheckPlan, CheckResult, sa.Select]], scope: Scope, session: Session,
                     error_text: Any, *, together: bool = True) -> None:
    """One row: per clause, its sample query as an array subquery; a query of several columns (a
    compound key) runs on its own. If the row fails, each clause alone."""
    arrays, alone = [], []
    for check, result, statement in bounded:
        if together and len(statement.selected_columns) == 1:
            inner = statement.subquery()
            arrays.append((check, result, statement, sa.select(sa.func.array_agg(list(inner.c)[0]))
                           .scalar_subquery()))
        else:
            alone.append((check, result, statement))
    if arrays:
        row_of = sa.select(*(a.label(f"s{i}") for i, (*_, a) in enumerate(arrays)))
        try:
            row = session.run(lambda connection: connection.execute(row_of).one())
        except Exception as exc:
            if isinstance(exc, _TRANSIENT):
                for check, result, *_ in arrays:
                    result.details["samples_error"] = error_text(check, exc)
                arrays = []
            else:
                alone += [(c, r, st) for c, r, st, _ in arrays]
                arrays = []
        for i, (check, result, statement, _) in enumerate(arrays):
            value = row[i]
            if value is None:
                result.samples = []
            elif isinstance(value, (list, tuple)):
                result.samples = _keep(value)
            else:  # an array of a type the driver returns as text: that clause's query alone
                alone.append((check, result, statement))
    for check, result, statement in alone:
        try:
            rows = session.run(lambda connection, s=statement: connection.execute(s).fetchmany(SAMPLE_SCAN))
            result.samples = _keep(r[0] if len(r) == 1 else tuple(r) for r in rows)
        except Exception as exc:  # noqa: PERF203 - each clause on its own, by design
            result.details["samples_error"] = error_text(check, exc)
