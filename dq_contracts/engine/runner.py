"""Run a compiled object's checks against its warehouse and return one result per check.

A check that could not be evaluated (missing table, lost connection, timeout, bad SQL) fails at
its severity with the error in its result; it is never reported as passing, and the other checks
of the table still report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import replace
from typing import Any, Iterable, TypeVar

import sqlalchemy as sa

from dq_contracts.engine.sentences import generic
from dq_contracts.engine.check_kinds import KINDS, describe, named_columns, uses_aggregate
from dq_contracts.engine.own_queries import LAST_SQL, readable
from dq_contracts.engine.verdicts import Unmeasurable, leveled
from dq_contracts.engine.nested import NotAddressable
from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.exact import needs_catalog
from dq_contracts.engine.schema_check import read_catalog
from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine.other_names import classified_where_read
from dq_contracts.odcs.servers import server_type_of_dialect
from dq_contracts.odcs.check_kinds import PER_PARTITION, reach_of
from dq_contracts.odcs.partitions import Partition
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, ObjectPlan
from dq_contracts.engine.sql import render, table_for
from dq_contracts.engine.file_types import read_declared
from dq_contracts.engine.schema_check import family_of
from dq_contracts.engine.results import CheckResult, error_of, masked, result_of, touches_classified, unevaluated
from dq_contracts.engine.samples import SAMPLE_LIMIT, _add_samples
from dq_contracts.engine.sessions import CREDENTIALS_READ_ONLY, DEFAULT_TIMEOUT_SECONDS, Session
from dq_contracts.engine.results import Measured
from dq_contracts.engine.sessions import TRANSIENT

T = TypeVar("T")
# A wide table's aggregate is split into as few statements as fit (the dialect's row says how many
# measures and distinct counts one holds: dialects.Dialect), each one scan of its columns. Where the
# row has `key_groups`, each key column gets one GROUP BY for its repeated rows, NULLs and samples,
# for a table of a few key columns: a GROUP BY is a scan of its own, so a wide table of many (1,000
# unique columns: 1,000 statements) takes its distinct counts 50 to a scan instead
KEY_GROUPS_MOST = 10


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
    check whose kind's reach (odcs.check_kinds) is per partition reads only that
    partition's rows, and its result carries the key; the table-wide ones read the whole table.

    Whatever goes wrong in one check (its query, its verdict, its samples) becomes that check's
    failed result; every other check still reports.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    secrets = list(secrets)
    if schema is None and dialect_of(engine.dialect.name).names_need_schema:
        # the session resolves names in the catalog schema alone: tables name their schema
        schema = server_type_of_dialect(engine.dialect.name).default_schema
    # before anything is read of it: the classified tables it reads under another name
    obj = classified_where_read(contract, obj, engine, schema, files, timeout_seconds)
    wanted = set(selected) if selected is not None else None
    checks = [c for c in obj.checks if wanted is None or c.name in wanted]
    common = dict(schema=schema, now=now, timeout_seconds=timeout_seconds, secrets=secrets, files=files)
    if partition is None:
        return _run_checks(contract, obj, engine, checks, **common)
    # two passes, each with its own scan, in one session: the partition's clauses on its rows, the
    # others on the whole table
    per = {c.name: reach_of(c.kind, c.params.get("query"))[0] == PER_PARTITION for c in checks}
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
        return result_of(contract, obj, check, **kwargs)

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

    with contextlib.nullcontext(session) if session is not None else Session(engine, timeout_seconds) as session:
        if runnable and files is not None:  # what DuckDB only guessed, read as declared (engine/file_types.py)
            files = _read_declared(files, obj, session)
        try:
            columns = sorted({c for check in runnable if check.kind != "schema" for c in named_columns(check)})
            preparer = engine.dialect.identifier_preparer
            vouched = bool(engine.get_execution_options().get(CREDENTIALS_READ_ONLY))
            if partition is None:
                checked = CheckedObject(obj, table_for(obj.physical_name, schema, columns, preparer, files),
                                        engine.dialect.name, schema, preparer, now, files, vouched=vouched)
            else:
                checked = CheckedObject(obj, None, engine.dialect.name, schema, preparer, now, files, partition,
                                        vouched)
                checked = replace(checked, table=checked.own_table(columns))
        except Exception as exc:  # a name this dialect cannot quote: every check says so
            return [_worded(c, results.get(c.name) or failure(c, exc)) for c in checks]

        for check in list(runnable):  # a kind that cannot say how it runs fails that check alone
            try:
                uses_aggregate(check)
            except Exception as exc:  # noqa: BLE001
                runnable.remove(check)
                results[check.name] = failure(check, exc)
        if any(needs_catalog(c, checked) for c in runnable):  # a number of a type only the catalog says
            checked = replace(checked, catalog=_catalog(checked, session))
        aggregated = [c for c in runnable if uses_aggregate(c)]
        # no scan when nothing is measured by one and no result is told in rows: the schema check
        # reads the catalog, and a partitioned run's table-wide pass must not count a whole
        # PostgreSQL table for nothing
        scan = aggregated or any(KINDS[c.kind].counts_rows for c in runnable)
        measured = _measure(aggregated, checked, session) if scan else Measured()
        for check in runnable:
            results[check.name] = _judged(check, checked, session, measured, result, failure)
        _said_by_the_schema(runnable, results)
        failing = [(c, results[c.name]) for c in runnable if not results[c.name].passed and results[c.name].error is None]
        try:
            _add_samples(failing, checked, session, error_text, measured)
        except Exception as exc:  # noqa: BLE001 - samples are a courtesy: the verdicts stand
            for check, failed in failing:
                failed.details.setdefault("samples_error", error_text(check, exc))
    if secrets:  # before the sentences, which quote samples
        for r in results.values():
            r.samples, r.observed = masked(r.samples, secrets), masked(r.observed, secrets)
    return [_worded(c, results[c.name]) for c in checks]


def _read_declared(files: Any, obj: ObjectPlan, session: Session) -> Any:
    """The files with the object's guessed columns read as declared; as they are if that fails (a
    timeout, a lost session): each check then meets the error itself."""
    try:
        return session.run(lambda connection: read_declared(files, obj, connection, family_of))
    except Exception:  # noqa: BLE001
        return files


def _catalog(checked: CheckedObject, session: Session) -> dict[str, Any] | None:
    """The object's columns as its catalog reads them (names and types only), for a number's
    values and bounds to compare exactly in its own type (engine/exact.py), and read once: the
    schema check's too. Unread, numbers compare as exact decimals, and the checks' own statements
    report what is wrong with the table."""
    try:
        return session.run(lambda connection: read_catalog(checked, connection))
    except Exception:  # noqa: BLE001 - the checks' own statements say why
        return None


def _judged(check: CheckPlan, checked: CheckedObject, session: Session, measured: Measured, result: Any,
            failure: Any) -> CheckResult:
    """One check's result, from its measure of the table's statements or from its own query."""
    kind = KINDS[check.kind]
    judge = kind.judge
    key = measured.key_of.get(check.name)
    measuring = measured.sql.get(key) if key is not None else None  # what measures it, for a debug log
    own = _own_sql(check, checked, session.engine)  # what a person runs to see the rows at fault
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
                    return kind.evaluate(check, checked, connection)
                finally:
                    ran.append(_last_sql(connection))

            raw = session.run(evaluate)
        verdict = leveled(check, judge(check, raw, measured.row_count, checked))
    except Exception as exc:  # one check's exception is that check's failed result
        outcome = failure(check, exc, **sqls())
        if kind.hint and not isinstance(exc, (Unmeasurable, *TRANSIENT)):
            with contextlib.suppress(Exception):  # a hint the params cannot fill: the error alone
                outcome.error = f"{kind.hint.format(**check.params)}: {outcome.error}"
        return outcome
    return result(check, passed=verdict.passed, observed=verdict.observed, row_count=measured.row_count,
                  error=verdict.error, details=verdict.details, level=verdict.level, **sqls())


# a declared logicalType, as the sentence "X is VARCHAR, not a number" ends
_AS_DECLARED = {"integer": "an integer", "number": "a number", "string": "text", "boolean": "a boolean",
                "date": "a date", "timestamp": "a timestamp", "time": "a time", "array": "an array",
                "object": "an object"}
_TEMPORAL = ("date", "timestamp")


def _said_by_the_schema(checks: list[CheckPlan], results: dict[str, CheckResult]) -> None:
    """A check that errored on a column the schema check found missing or of another type says that,
    in words, from the catalog the run read already, instead of the engine's error (`isnan(VARCHAR)`,
    a Binder error about a column it cannot find, withheld beside a classified one). Names and types
    only: no value of the data."""
    from dq_contracts.engine.schema_check import family_of

    schema = next((c for c in checks if c.kind == "schema"), None)
    details = results[schema.name].details if schema is not None else None
    if not isinstance(details, dict) or "observed_columns" not in details:
        return
    found = {str(name).lower(): str(type_text) for name, type_text in details["observed_columns"]}
    declared = {str(c["name"]).lower(): c for c in schema.params["columns"]}
    # column -> what the schema check said of it ("amount: the table spells it 'Amount'; …" and the like)
    said = {str(e).split(":", 1)[0].lower(): str(e)
            for e in (*details.get("type_mismatches", ()), *details.get("logical_type_mismatches", ()))}

    def words(check: CheckPlan, column: str) -> str | None:
        key = column.lower()
        if key in {str(name).lower() for name in details.get("missing") or ()}:
            return f"column {column} is missing from the table (see the schema check)"
        if key in said and "spells it" in said[key]:
            return f"column {said[key]} (see the schema check)"
        if key in said and key in found and key in declared:
            wanted = declared[key].get("physical_type") or _AS_DECLARED.get(
                str(declared[key].get("logical_type") or "").lower(), declared[key].get("logical_type"))
            return f"{column} is {found[key]}, not {wanted} (see the schema check)"
        if check.kind == "freshness" and key in found and family_of(found[key]) not in _TEMPORAL:
            return f"{column} is {found[key]}, not a date or timestamp: freshness needs one"
        return None

    for check in checks:
        result = results[check.name]
        if check.kind == "schema" or result.error is None or result.error.startswith("not run: "):
            continue
        result.error = next((w for w in (words(check, c) for c in named_columns(check)) if w), result.error)


def _own_sql(check: CheckPlan, checked: CheckedObject, engine: sa.Engine) -> str | None:
    """The clause's own query, rendered for people; None when the kind has none or it cannot be built
    (then the check's verdict says why, not this)."""
    failing_rows = KINDS[check.kind].failing_rows
    try:
        statement = failing_rows(check, checked) if failing_rows is not None else None
        return readable(statement, engine) if statement is not None else None
    except Exception:  # noqa: BLE001 - a courtesy: never changes the verdict
        return None


def _worded(check: CheckPlan, result: CheckResult) -> CheckResult:
    """The result with its sentence; should its kind's words fail, the plain measurement and threshold."""
    try:
        result.message = describe(check, result)
    except Exception:  # noqa: BLE001 - a courtesy: never changes the verdict
        result.message = unevaluated(result.error) if result.error else generic(check, result)
    return result


def _measure(checks: list[CheckPlan], checked: CheckedObject, session: Session) -> Measured:
    """The one scan: every measure of the table as a column of one SELECT, each shared measure once,
    and the distinct counts in a second one (kinds._keys_apart); a wide table's in as few as fit.

    If a statement fails for a reason of its own (a type a measure cannot apply to, a bad pattern),
    each of its measures runs alone, so the one at fault fails and the others still report; a
    timeout or a lost server fails them all at once (running them again would only repeat it)."""
    measured = Measured()
    dialect = dialect_of(checked.dialect)
    statements: list[dict[str, Any]] = [{"rows": sa.func.count()}, {}]
    grouped: dict[str, dict[str, tuple[bool, Any]]] = {}  # key column -> measure key -> (primary key?, expression)
    seen = {"rows"}  # a measure two checks share is built once (a wide table has thousands)
    # and one two kinds spell alike (enum and invalidValues' validValues: the same NOT IN), by its SQL
    same: dict[str, str] = {}  # SQL with its values -> the key measuring it
    alias: dict[str, str] = {}  # key -> the key of the same SQL measured first
    for check in checks:
        kind = KINDS[check.kind]
        try:
            key, expression = kind.measure(check, checked)
        except NotAddressable as exc:  # a nested value this dialect cannot reach: that check says so
            measured.key_of[check.name] = key = f"unaddressable:{check.name}"
            measured.errors[key] = Unmeasurable(f"not enforced: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - a measure that cannot be built fails its check alone
            measured.key_of[check.name] = key = f"unbuilt:{check.name}"
            measured.errors[key] = exc
            continue
        measured.key_of[check.name] = key
        if key in seen:
            continue
        seen.add(key)
        sql = _literal_sql(expression, session.engine)
        if sql is not None and same.setdefault(sql, key) != key:
            alias[key] = same[sql]
            continue
        try:
            apart = kind.apart(check)
            grouping = check.params["columns"][0] if apart and dialect.key_groups else None
        except Exception as exc:  # noqa: BLE001 - that check's failed result alone
            measured.errors[key] = exc
            continue
        if grouping is not None:
            grouped.setdefault(grouping, {})[key] = (check.kind == "primary_key", expression)
        else:
            statements[1 if apart else 0][key] = expression
    for column, keys in grouped.items():
        if len(grouped) > KEY_GROUPS_MOST or not _run_key_groups(column, keys, checked, session, measured):
            statements[1].update({key: expression for key, (_, expression) in keys.items()})  # distinct counts
    limits = (dialect.measures_per_statement, dialect.distinct_counts_per_statement)
    for measures, most in zip(statements, limits):
        keys = list(measures)
        for start in range(0, len(keys), most):
            _run_measures({k: measures[k] for k in keys[start:start + most]}, checked, session, measured)
    for key, first in alias.items():
        for found in (measured.values, measured.errors, measured.sql, measured.samples):
            if first in found:
                found[key] = found[first]
    rows = measured.values.get("rows")
    measured.row_count = int(rows) if rows is not None else None
    return measured


def _literal_sql(expression: Any, engine: sa.Engine) -> str | None:
    """An expression's SQL with its values written in, to tell two measures apart; None if a value
    has no literal form (then it is measured on its own)."""
    try:
        return str(expression.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
    except Exception:  # noqa: BLE001 - only a missed sharing
        return None


def _run_key_groups(column: str, keys: dict[str, tuple[bool, Any]], checked: CheckedObject, session: Session,
                    measured: Measured) -> bool:
    """One GROUP BY of a key column: its repeated rows, its NULL rows and (unless the column is
    classified) its 5 smallest repeated keys. False if the statement failed for a reason of its own."""
    # the table with this one column: SQLAlchemy's cache key walks every column of a FROM, which on
    # a table of 1,000 key columns cost more than the statements themselves
    try:
        col = checked.key(column, checked.own_table([column]).c[column])  # text byte by byte, whatever its collation
        groups = sa.select(col.label("k"), sa.func.count().label("n")).group_by(col).subquery("g")
        present = groups.c.k.is_not(None)
        measures = [sa.func.coalesce(sa.func.sum(groups.c.n - 1).filter(present), 0).label("repeated"),
                    sa.func.coalesce(sa.func.sum(groups.c.n).filter(groups.c.k.is_(None)), 0).label("nulls")]
        described = checked.obj.column(column)
        if not (described is not None and described.classified):  # never a classified value, not even held
            measures.append(sa.func.min(groups.c.k, SAMPLE_LIMIT).filter(sa.and_(present, groups.c.n > 1))
                            .label("repeated_keys"))
        statement = sa.select(*measures).select_from(groups)
        row = session.run(lambda connection: connection.execute(statement).one())
    except TRANSIENT as exc:
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


def _run_measures(measures: dict[str, Any], checked: CheckedObject, session: Session, measured: Measured) -> None:
    labels = {key: f"m{i}" for i, key in enumerate(measures)}
    statement = sa.select(*(measures[k].label(labels[k]) for k in measures)).select_from(checked.table)
    sql = render(statement, session.engine)
    measured.sql.update(dict.fromkeys(measures, sql))
    try:
        row = session.run(lambda connection: connection.execute(statement).one())
        measured.values.update({k: row._mapping[labels[k]] for k in measures})
        return
    except TRANSIENT as exc:
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
        alone = sa.select(expression.label("m"), sa.func.count().label("n")).select_from(checked.table)
        try:
            measured.values[key] = session.run(lambda connection: connection.execute(alone).one().m)
        except Exception as exc:  # noqa: PERF203 - each measure on its own, by design
            measured.errors[key] = exc if key != "rows" else first


def _last_sql(connection: sa.Connection) -> str | None:
    return connection.info.pop(LAST_SQL, None)


