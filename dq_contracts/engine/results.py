"""What one check's run gives: its result, and what a person may read of an error.

A result carries what people need (the clause's file, line and path, its dimension and severity,
the sentence), filled where the engine makes it, so nothing downstream looks the plan up again; an
error's text is scrubbed of credentials, and where a classified value may be among what the
database quotes, withheld.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from dq_contracts.odcs.closed_sets import StrEnum
from typing import Any, Iterable

from dq_contracts.engine.verdicts import Unmeasurable
from dq_contracts.odcs.declaration import NoFileMatches
from dq_contracts.odcs.partitions import PartitionKeyError
from dq_contracts.odcs.paths import clause_location
from dq_contracts.odcs.plans import CheckPlan, ClauseAt, ContractPlan, Level, ObjectPlan, Severity


class Status(StrEnum):
    """A result's verdict for people: passed, broken (a WARN or an ERROR clause), or not evaluated."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"  # an ERROR clause broken
    ERROR = "error"  # could not be evaluated


def status_of(passed: bool, severity: Severity | str, unevaluated: bool) -> Status:
    """The one rule from a verdict to its status: the engine's results and the report's records."""
    if passed:
        return Status.PASS
    if unevaluated:
        return Status.ERROR
    return Status.FAIL if severity == Severity.ERROR else Status.WARN


@dataclass
class CheckResult:
    contract_id: str
    contract_version: str
    asset_key: tuple[str, ...]
    object: str
    name: str
    clause: str
    kind: str
    severity: Severity
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
    # where a person finds the clause (`location`) and its ODCS dimension, from the plan (result_of)
    file: str = ""
    line: int | None = None
    where: str = ""  # the clause's dotted path, as people read it
    dimension: str | None = None
    # every clause the check answers (a compound key: each column's primaryKey), the first being `clause`
    answers: tuple[ClauseAt, ...] = ()
    # the level reached (pass, warn, fail; None when not evaluated) and the clause's warn level, if it
    # has one: a result that reached its warn level alone has severity WARN, whatever the clause's
    level: Level | None = None
    warn_threshold: str | None = None

    def __post_init__(self) -> None:
        if not self.message and self.error:  # a result built without its plan still says what went wrong
            self.message = unevaluated(self.error)

    @property
    def status(self) -> Status:
        return status_of(self.passed, self.severity, bool(self.error))

    @property
    def location(self) -> str:
        """`contracts/orders.odcs.yaml:42 schema.orders.properties…`; the pointer alone for a result
        made without its contract."""
        return clause_location(self.file, self.line, self.where or self.clause) if self.file else self.clause

    @property
    def clauses(self) -> list[str]:
        """Every clause pointer it answers, `clause` first."""
        return [a.pointer for a in self.answers] or [self.clause]

    @property
    def locations(self) -> list[str]:
        """Where a person finds each clause it answers, `location` first."""
        return [a.location(self.file) for a in self.answers] or [self.location]

    def to_json(self) -> dict[str, Any]:
        return {
            "asset_key": list(self.asset_key), "name": self.name, "clause": self.clause,
            "clauses": self.clauses, "locations": self.locations, "kind": self.kind,
            "passed": self.passed, "severity": self.severity, "observed": _jsonable(self.observed),
            "threshold": self.threshold, "unit": self.unit, "row_count": self.row_count,
            "status": self.status, "level": self.level, "warn_threshold": self.warn_threshold,
            "error": self.error, "message": self.message, "sql": self.sql,
            "samples": self.samples, "details": self.details,
            **({"partition": self.partition} if self.partition is not None else {}),
        }  # not aggregate_sql: a table's scan is the same for its every clause (reports give it once per object)



def result_of(contract: ContractPlan, obj: ObjectPlan, check: CheckPlan, **kwargs: Any) -> CheckResult:
    """A result of `check`, with what people need of its clause taken from the plan once, here; one
    that reached only its warn level is a WARN result, whatever the clause's severity: `check`'s exit
    code and Dagster's blocking follow the result's severity."""
    severity = Severity.WARN if kwargs.get("level") == Level.WARN else check.severity
    return CheckResult(contract.id, contract.version, obj.asset_key, obj.name, check.name, check.clause,
                       check.kind, severity, threshold=check.threshold_text(), unit=check.unit,
                       file=contract.file, line=check.line, where=check.where, dimension=check.dimension,
                       answers=check.answers, warn_threshold=check.warn_threshold_text(), **kwargs)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (int, str, bool)):
        return value
    if isinstance(value, bytes):  # text compared as its bytes (MySQL's binary_text): its UTF-8 text
        return value.decode("utf-8", "replace")
    number = float(value) if hasattr(value, "__float__") else None  # Decimal, numpy, float
    return number if number is not None and math.isfinite(number) else str(value)  # strict JSON: no NaN



def scrub(message: str, secrets: Iterable[str] = ()) -> str:
    """Error text without credentials: URLs lose their passwords, known secrets are masked."""
    text = re.sub(r"(://[^:/@\s]+:)[^@\s]+@", r"\1***@", message)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text.splitlines()[0][:500] if text else text



def masked(value: Any, secrets: Iterable[str]) -> Any:
    """A value a check shows (a sample, an observed text) with every known secret masked, inside
    lists and tuples too: a table that holds a password (a file server reading a settings file)
    shows `***` in its place."""
    if isinstance(value, str):
        for secret in secrets:
            if secret and secret in value:
                value = value.replace(secret, "***")
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(masked(v, secrets) for v in value)
    return value


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
OWN_MESSAGES: tuple[type[BaseException], ...] = (Unmeasurable, StatementTimeout, PartitionKeyError, NoFileMatches)



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



# A bound of the session the database stopped a statement at: (the driver's exception class, words
# of the database's own message naming the bound, what is said instead). Said in our words alone,
# so a rule that spills too much is told why even where the database's message is withheld.
SESSION_LIMITS: tuple[tuple[str, str, str], ...] = (
    ("OutOfMemoryException", "'max_temp_directory_size'",
     "the statement would spill more to disk than a check session may (DuckDB's max_temp_directory_size: the "
     "operator's DQ_CONTRACTS_<SERVER>_MAX_TEMP_DIRECTORY_SIZE, default 4GB), and was stopped"),
)


def session_limit(exc: BaseException) -> str | None:
    """What SESSION_LIMITS says of `exc`, or None."""
    orig = getattr(exc, "orig", None) or exc
    return next((said for cls, words, said in SESSION_LIMITS
                 if type(orig).__name__ == cls and words in str(orig)), None)


def error_of(exc: BaseException, clause: str, why: str | None, secrets: Iterable[str] = ()) -> str:
    """What a person may read of an error: no credential, and, where `why` says a classified value
    may be among what the database quotes, nothing of its message (`withheld`)."""
    if isinstance(exc, OWN_MESSAGES):
        return scrub(str(exc), secrets)
    limit = session_limit(exc)
    if limit is not None:
        return limit
    if why is not None:
        return withheld(exc, clause, why)
    return scrub(f"{type(exc).__name__}: {exc}", secrets)


def unevaluated(error: str) -> str:
    """A check that never reached a verdict; a refusal already says so."""
    return error if error.startswith("not run: ") else f"could not be evaluated: {error}"


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



def counted(result: CheckResult) -> int | None:
    count = result.details.get("count", result.observed)
    return int(count) if isinstance(count, (int, float)) and not isinstance(count, bool) else None
