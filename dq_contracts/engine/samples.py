"""Samples of the rows a failing check found: a few, bounded, and never of a classified column."""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

import sqlalchemy as sa

from dq_contracts.engine.check_kinds import KINDS
from dq_contracts.engine.dialects import dialect_of
from dq_contracts.engine.results import CheckResult, _jsonable

from dq_contracts.engine.checked_object import CheckedObject
from dq_contracts.engine.sessions import Session
from dq_contracts.odcs.plans import CheckPlan
from dq_contracts.engine.results import Measured, counted
from dq_contracts.engine.sessions import TRANSIENT


SAMPLE_LIMIT = 5



# A failing clause with at most this many offending rows has all of them read, in one scan shared by
# every such clause of the table; one with more reads the first SAMPLE_SCAN it meets and stops.
RARE_ROWS = 200



SAMPLE_SCAN = 100



def _add_samples(failing: list[tuple[CheckPlan, CheckResult]], checked: CheckedObject, session: Session,
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
            if any((checked.obj.column(c) is not None and checked.obj.column(c).classified) for c in columns) \
                    or check.params.get("path_classified"):
                result.details["samples_withheld"] = "the column is classified; sample values are never fetched"
                continue
            count = counted(result)
            found = measured.samples.get(measured.key_of.get(check.name, "")) if measured is not None else None
            if found is not None:  # the measure's own GROUP BY found them
                result.samples = _keep(found)
            elif check.params.get("path"):  # a nested value: the kind's own query reads it (or its items)
                if kind.samples is not None:
                    bounded.append((check, result, kind.samples(check, checked, SAMPLE_LIMIT)))
            elif kind.violation is not None and count is not None and count <= RARE_ROWS:
                rare.append((check, result, kind.violation(check, checked)))
            elif kind.violation is not None:
                column = checked.table.c[check.params["column"]]
                bounded.append((check, result, sa.select(column).where(kind.violation(check, checked))
                                .limit(SAMPLE_SCAN)))
            else:
                statement = kind.samples(check, checked, SAMPLE_LIMIT)
                if statement is not None:
                    bounded.append((check, result, statement))
        except Exception as exc:  # noqa: BLE001
            result.details["samples_error"] = error_text(check, exc)
    for take, taken in ((_rare_samples, rare), (_bounded_samples, bounded)):
        try:
            if taken:
                take(taken, checked, session, error_text)
        except Exception as exc:  # noqa: BLE001 - a courtesy: the verdicts stand, their samples say why not
            for check, result, *_ in taken:
                if not result.samples:
                    result.details.setdefault("samples_error", error_text(check, exc))



def _keep(values: Iterable[Any]) -> list[Any]:
    """Up to SAMPLE_LIMIT distinct values, smallest first (NaN, then NULL, last), as JSON values; a
    struct, map, JSON document or array (a dict or list: unhashable) as its JSON text."""
    seen = {(tuple(_held(x) for x in v) if isinstance(v, tuple) else _held(v)) for v in values}
    try:
        ordered = sorted(seen, key=lambda v: (v is None, v is math.nan, 0 if v is None or v is math.nan else v))
    except TypeError:  # values of no one order (a driver's mixed types): as their text
        ordered = sorted(seen, key=lambda v: (v is None, str(v)))
    ordered = ordered[:SAMPLE_LIMIT]
    return [[_jsonable(x) for x in v] if isinstance(v, tuple) else _jsonable(v) for v in ordered]



def _held(value: Any) -> Any:
    """A value a set can hold: a dict or list as its JSON text, every NaN as the one NaN."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, ensure_ascii=False)
    return _one_nan(value)



def _one_nan(value: Any) -> Any:
    """Every NaN as the one `math.nan`: two NaNs are unequal, so a set would keep each row's."""
    return math.nan if isinstance(value, float) and math.isnan(value) else value



def _rare_samples(rare: list[tuple[CheckPlan, CheckResult, Any]], checked: CheckedObject, session: Session,
                  error_text: Any) -> None:
    """`SELECT <violation flag, value> per clause FROM t WHERE <any violation>`: one scan, and no more
    rows than the clauses' offending rows (each at most RARE_ROWS). Each clause's violation was built
    under its own guard (`_add_samples`)."""
    violations = [v for *_, v in rare]
    columns = []
    for i, (check, _, violation) in enumerate(rare):
        columns += [sa.case((violation, True), else_=False).label(f"f{i}"),
                    checked.table.c[check.params["column"]].label(f"v{i}")]
    statement = sa.select(*columns).where(sa.or_(*violations))
    try:
        rows = session.run(lambda connection: connection.execute(statement).fetchall())
    except Exception as exc:  # each clause alone, so only the one at fault says so
        if isinstance(exc, TRANSIENT):
            for check, result, _ in rare:
                result.details["samples_error"] = error_text(check, exc)
            return
        alone = []
        for check, result, _ in rare:
            try:
                alone.append((check, result, KINDS[check.kind].samples(check, checked, SAMPLE_LIMIT)))
            except Exception as own:  # noqa: BLE001, PERF203 - that clause's samples alone say so
                result.details["samples_error"] = error_text(check, own)
        _bounded_samples(alone, checked, session, error_text, together=False)
        return
    for i, (check, result, _) in enumerate(rare):
        try:
            result.samples = _keep(row[2 * i + 1] for row in rows if row[2 * i])
        except Exception as exc:  # noqa: BLE001, PERF203 - that clause's samples alone say so
            result.details["samples_error"] = error_text(check, exc)



def _bounded_samples(bounded: list[tuple[CheckPlan, CheckResult, sa.Select]], checked: CheckedObject, session: Session,
                     error_text: Any, *, together: bool = True) -> None:
    """One row: per clause, its sample query as an array subquery; a query of several columns (a
    compound key) runs on its own. If the row fails, each clause alone."""
    arrays, alone = [], []
    together = together and dialect_of(checked.dialect).sample_arrays
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
            if isinstance(exc, TRANSIENT):
                for check, result, *_ in arrays:
                    result.details["samples_error"] = error_text(check, exc)
                arrays = []
            else:
                alone += [(c, r, st) for c, r, st, _ in arrays]
                arrays = []
        for i, (check, result, statement, _) in enumerate(arrays):
            value = row[i]
            try:
                if value is None:
                    result.samples = []
                elif isinstance(value, (list, tuple)):
                    result.samples = _keep(value)
                else:  # an array of a type the driver returns as text: that clause's query alone
                    alone.append((check, result, statement))
            except Exception as exc:  # noqa: BLE001, PERF203 - that clause's samples alone say so
                result.details["samples_error"] = error_text(check, exc)
    for check, result, statement in alone:
        try:
            rows = session.run(lambda connection, s=statement: connection.execute(s).fetchmany(SAMPLE_SCAN))
            result.samples = _keep(r[0] if len(r) == 1 else tuple(r) for r in rows)
        except Exception as exc:  # noqa: PERF203 - each clause on its own, by design
            result.details["samples_error"] = error_text(check, exc)
