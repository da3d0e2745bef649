"""What the compiler produces: frozen, Dagster-free descriptions of checks, policies and schedules."""

from __future__ import annotations

import math
import operator
from decimal import Decimal, localcontext
from fractions import Fraction
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from dq_contracts.odcs.closed_sets import StrEnum
from typing import Any, Callable

from dq_contracts.odcs.check_kinds import CHECK_KINDS, reach_of
from dq_contracts.odcs.params import Params
from dq_contracts.odcs.partitions import PartitionPlan
from dq_contracts.odcs.paths import clause_location
from dq_contracts.odcs.servers import servers_handling
from dq_contracts.odcs.visible import visible_all


class Severity(StrEnum):
    """A clause's severity, as Dagster names it: an ERROR clause broken blocks downstream assets."""

    ERROR = "ERROR"
    WARN = "WARN"


# The operator table. `mustBeBetween` is inclusive at both ends (lo ≤ x ≤ hi), as most engines
# and users read "between"; `mustNotBeBetween` is its exact negation (x < lo or x > hi).
OPERATOR_TABLE: dict[str, Callable[[Any, Any], bool]] = {
    "mustBe": operator.eq,
    "mustNotBe": operator.ne,
    "mustBeGreaterThan": operator.gt,
    "mustBeGreaterOrEqualTo": operator.ge,
    "mustBeLessThan": operator.lt,
    "mustBeLessOrEqualTo": operator.le,
    "mustBeBetween": lambda x, bounds: bounds[0] <= x <= bounds[1],
    "mustNotBeBetween": lambda x, bounds: not (bounds[0] <= x <= bounds[1]),
}


def percent_of(count: float, rows: int) -> float:
    """`unit: percent` is 100 × count / all rows of the table (NULLs included); 0 rows → 0%."""
    return 0.0 if rows == 0 else 100.0 * float(count) / rows


@dataclass(frozen=True, slots=True)
class Condition:
    """One ODCS operator and its value; a check passes when every condition holds."""

    operator: str  # mustBe, mustNotBe, mustBeGreaterThan, … (ODCS names)
    value: Any

    def holds(self, observed: Any) -> bool:
        """False for a NULL (None) observation: a value that could not be measured never passes."""
        if observed is None or (isinstance(observed, float) and math.isnan(observed)):
            return False  # NaN is no measurement either
        try:
            return bool(OPERATOR_TABLE[self.operator](observed, self.value))
        except TypeError:
            return False

    def describe(self) -> str:
        if self.operator == "mustBeBetween":
            return f"between {self.value[0]} and {self.value[1]} (inclusive)"
        if self.operator == "mustNotBeBetween":
            return f"not between {self.value[0]} and {self.value[1]}"
        return f"{_SYMBOLS.get(self.operator, self.operator)} {self.value}"


_SYMBOLS = {
    "mustBe": "=", "mustNotBe": "≠", "mustBeGreaterThan": ">", "mustBeGreaterOrEqualTo": "≥",
    "mustBeLessThan": "<", "mustBeLessOrEqualTo": "≤",
}


class Level(StrEnum):
    """The level a measurement reached on a clause with a warn level beside its fail level."""

    PASS = "pass"
    WARN = "warn"  # the warn level reached, the fail level not
    FAIL = "fail"


def warn_level_error(warn: tuple[Condition, ...], fail: tuple[Condition, ...], unit: str = "",
                     clean: int | None = None) -> str | None:
    """Why `warn` cannot be a warn level beside the fail level `fail` (None when it can): its values
    finite numbers, it must be reached first (every value that fails `fail` breaks `warn` too) and
    before `fail` somewhere, and not by the measure of clean data (`clean`: 0 NULLs), which would warn
    on every run; where there is no such value (a row count), a `mustBe` warn level only beside a fail
    level bounded both ways (it warns on every value but one). Decided exactly (as fractions: 2**53 + 1 is not 2**53) on the numbers where either
    level changes, the points between them and beyond them: between two of those points neither level
    changes."""
    said = lambda conditions: " and ".join(c.describe() + unit for c in conditions)  # noqa: E731
    if not fail or not all(_finite(c.value) for c in fail):
        return "warnThreshold needs the rule's own operators to compare numbers, finite ones (its fail level)"
    if not all(_finite(c.value) for c in warn):
        return f"warnThreshold {said(warn)}: a warn level's values are finite numbers (no infinity, no NaN)"
    bounds = sorted({Fraction(b) for c in (*warn, *fail) for b in _numbers(c.value)})
    points = [bounds[0] - 1, *bounds, *((a + b) / 2 for a, b in zip(bounds, bounds[1:])), bounds[-1] + 1]
    warns = False
    for point in sorted(points):
        fails, warned = not all(c.holds(point) for c in fail), not all(c.holds(point) for c in warn)
        if fails and not warned:
            return (f"warnThreshold {said(warn)} is not reached before the rule's fail level {said(fail)}: "
                    f"{_number_text(point)}{unit} fails the rule and not the warn level (a warn level is reached "
                    "first, e.g. mustBeLessThan: 1 beside the rule's mustBeLessThan: 5)")
        warns = warns or (warned and not fails)
    if not warns:
        return f"warnThreshold {said(warn)} is never reached before the rule's fail level {said(fail)}: it would never warn"
    if clean is not None and all(c.holds(clean) for c in fail) and not all(c.holds(clean) for c in warn):
        return (f"warnThreshold {said(warn)} is broken by clean data ({clean}{unit}, no offending row): it warns on "
                "every run")
    # with a clean value, the check above leaves a mustBe only at it (warn on any NULL, fail at 5 %)
    if clean is None and any(c.operator == "mustBe" for c in warn) and not _bounded_both_ways(fail):
        return (f"warnThreshold {said(warn)} passes one value only, and the fail level {said(fail)} is open on one "
                "side: it warns on nearly every run (a mustBe warn level goes beside a mustBeBetween fail level)")
    return None


def _numbers(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _finite(value: Any) -> bool:
    # an int is finite however long (math.isfinite would convert it to a float, and overflow)
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and (isinstance(v, int) or math.isfinite(v))
               for v in _numbers(value))


def _bounded_both_ways(conditions: tuple[Condition, ...]) -> bool:
    below = {"mustBeLessThan", "mustBeLessOrEqualTo", "mustBe", "mustBeBetween"}
    above = {"mustBeGreaterThan", "mustBeGreaterOrEqualTo", "mustBe", "mustBeBetween"}
    return any(c.operator in below for c in conditions) and any(c.operator in above for c in conditions)


def _number_text(point: Fraction) -> str:
    """A point exactly as it is: an integer, a float that is the point, else its decimal digits."""
    if point.denominator == 1:
        return str(point.numerator)
    try:
        near = float(point)
    except OverflowError:  # beyond any float: its digits
        near = None
    if near is not None and Fraction(near) == point:
        return f"{near:g}" if Fraction(float(f"{near:g}")) == point else repr(near)
    with localcontext() as exact:
        exact.prec = 60
        return format((Decimal(point.numerator) / Decimal(point.denominator)).normalize(), "f")


def params_for(kind: str, given: Mapping[str, Any]) -> Params:
    """The typed parameters of a kind (its row's class); an undeclared key raises TypeError (a compiler bug)."""
    return CHECK_KINDS[kind].params(**given)


@dataclass(frozen=True, slots=True)
class ClauseAt:
    """One clause a check answers: its pointer, and where a person finds it (line, named path)."""

    pointer: str
    line: int | None = None
    where: str = ""

    def location(self, file: str) -> str:
        """`contracts/orders.odcs.yaml:42 schema.orders.properties…`; the pointer alone without a file."""
        return clause_location(file, self.line, self.where or self.pointer) if file else self.pointer


@dataclass(frozen=True)
class CheckPlan:
    """One Dagster asset check: one ODCS clause (or, for a compound key or a merged v3.0 rewrite,
    every clause it answers: `answers`)."""

    name: str
    kind: str  # not_null, unique, primary_key, range, length, pattern, accepted_values, …
    clause: str  # JSON Pointer of the clause in the document as written
    object: str  # the schema object's name
    property: str | None
    severity: Severity
    description: str
    conditions: tuple[Condition, ...] = ()
    unit: str = "rows"  # rows or percent (of all rows)
    dimension: str | None = None
    params: Params = field(default_factory=Params)  # what the engine needs for this kind (a dict is typed here, by its row)
    rule_name: str | None = None
    line: int | None = None  # the clause's line in its file
    where: str = ""  # the clause's dotted path (schema.orders.properties.order_total.…), as people read it
    # every clause this check answers, the first being `clause` (at `line`, `where`); by default that one
    answers: tuple[ClauseAt, ...] = ()
    # the warn level beside the fail level `conditions` (clauses/levels.py); () when the clause has none
    warn_conditions: tuple[Condition, ...] = ()

    def __post_init__(self) -> None:
        if not self.answers:
            object.__setattr__(self, "answers", (ClauseAt(self.clause, self.line, self.where),))
        if not isinstance(self.params, CHECK_KINDS[self.kind].params):
            object.__setattr__(self, "params", params_for(self.kind, self.params or {}))
        for text in ("description", "where"):  # for people: what hides or reorders text shows escaped
            object.__setattr__(self, text, visible_all(getattr(self, text)))

    @property
    def clauses(self) -> tuple[str, ...]:
        """Every clause pointer this check answers (starts with `clause`)."""
        return tuple(a.pointer for a in self.answers)

    def locations(self, file: str) -> list[str]:
        """Where a person finds each clause it answers, first the one it is named for."""
        return [a.location(file) for a in self.answers]

    @property
    def blocking(self) -> bool:
        return self.severity == Severity.ERROR

    def passes(self, observed: Any) -> bool:
        return bool(self.conditions) and all(c.holds(observed) for c in self.conditions)

    def level(self, observed: Any) -> Level:
        """Fail when the fail level is broken; warn when only the warn level is."""
        if not self.passes(observed):
            return Level.FAIL
        return Level.WARN if self.warn_conditions and not all(c.holds(observed) for c in self.warn_conditions) \
            else Level.PASS

    def threshold_text(self) -> str:
        """The fail level, as people read it (`< 5%`)."""
        return self._text(self.conditions)

    def warn_threshold_text(self) -> str | None:
        """The warn level (`< 1%`), or None when the clause has none."""
        return self._text(self.warn_conditions) if self.warn_conditions else None

    def _text(self, conditions: tuple[Condition, ...]) -> str:
        unit = "%" if self.unit == "percent" else ""
        return " and ".join(c.describe() + unit for c in conditions)


@dataclass(frozen=True, slots=True)
class NotEnforced:
    clause: str
    code: str  # a Reason (clauses/vocabulary.py: the closed set)
    reason: str
    object: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", visible_all(self.reason))


@dataclass(frozen=True, slots=True)
class FreshnessPlan:
    clause: str
    object: str
    element: str  # the timestamp column measured
    fail_window_seconds: float
    check_name: str


@dataclass(frozen=True, slots=True)
class SchedulePlan:
    name: str
    cron: str
    clause: str
    checks: tuple[tuple[str, str], ...]  # (object name, check name)


@dataclass(frozen=True)
class ColumnPlan:
    name: str
    physical_name: str
    logical_type: str | None
    physical_type: str | None
    required: bool
    unique: bool
    primary_key: bool
    classification: str | None
    description: str | None
    classified_by: str | None = None  # the file that classifies it when this one does not (share_classification)
    classified_below: str | None = None  # `ssn: pii`: a field or item below it that is classified (nested.py)

    @property
    def classified(self) -> bool:
        """Its own classification, another contract's of its table, or one of a field or item below it:
        the column's value holds the classified one, so its values never leave the database."""
        return ((self.classification or "").strip().lower() in CLASSIFIED or self.classified_by is not None
                or self.classified_below is not None)

    @property
    def classification_shared(self) -> str:
        """What another contract of the table is told: `pii`, or `pii (at person.ssn)` for a field's."""
        if (self.classification or "").strip().lower() in CLASSIFIED or self.classified_by is not None \
                or self.classified_below is None:
            return str(self.classification)
        step, _, word = str(self.classified_below).rpartition(": ")
        return f"{word} (at {self.physical_name}{'' if step.startswith('[]') else '.'}{step})"

    @property
    def classification_text(self) -> str:
        """`pii`, `pii (at person.ssn)`, or `pii (from contracts/b.odcs.yaml)` when another contract of
        the table says so."""
        own = self.classification_shared
        return f"{own} (from {self.classified_by})" if self.classified_by else own


# the words known to classify a column, and the only words that leave it unclassified: any other
# word classifies it too (fail safe: `highly confidential`, `PHI`, a misspelling), and validate warns
CLASSIFYING = ("confidential", "restricted", "pii", "sensitive", "secret")
NOT_CLASSIFYING = ("public", "internal", "unclassified", "none")


class _Classifying:
    """`word in CLASSIFIED`, for a classification in lower case without its spaces around: every
    word but the empty one and NOT_CLASSIFYING's."""

    def __contains__(self, word: object) -> bool:
        return bool(word) and word not in NOT_CLASSIFYING


CLASSIFIED = _Classifying()


@dataclass(frozen=True)
class ObjectPlan:
    """One schema object: one table, one Dagster asset."""

    name: str
    pointer: str
    physical_name: str
    asset_key: tuple[str, ...]
    description: str | None
    columns: tuple[ColumnPlan, ...]
    checks: tuple[CheckPlan, ...]
    tags: tuple[str, ...] = ()
    custom_properties: dict[str, Any] = field(default_factory=dict)
    authoritative_definitions: tuple[dict[str, Any], ...] = ()
    line: int | None = None  # the schema object's line in its file
    partitioning: PartitionPlan | None = None  # how its table is partitioned for Dagster (customProperties)
    partition_columns: tuple[str, ...] = ()  # ODCS `partitioned: true` columns, by partitionKeyPosition

    def partition_reach(self, check: CheckPlan) -> tuple[str, str] | None:
        """What a check of a partitioned object reads, ("partition" or "table", why); None when unpartitioned."""
        if self.partitioning is None:
            return None
        return reach_of(check.kind, check.params.get("query"))

    def column(self, name: str) -> ColumnPlan | None:
        """The property of a physical column (checks name physical columns): an exact physicalName
        first, so that one property's `name` can never stand for another's column."""
        for match in (lambda c: c.physical_name == name, lambda c: c.physical_name.lower() == name.lower(),
                      lambda c: c.name.lower() == name.lower()):
            found = next((c for c in self.columns if match(c)), None)
            if found is not None:
                return found
        return None

    @property
    def has_classified(self) -> bool:
        return any(c.classified for c in self.columns)


@dataclass(frozen=True)
class ContractPlan:
    file: str
    folder: str  # absolute folder of the contract file: a relative DuckDB path is read from here
    id: str
    version: str
    api_version: str
    name: str | None
    status: str | None
    domain: str | None
    description: dict[str, Any] | None
    tags: tuple[str, ...]
    owners: tuple[str, ...]
    dropped_owners: tuple[str, ...]
    servers: tuple[dict[str, Any], ...]
    objects: tuple[ObjectPlan, ...]
    freshness: tuple[FreshnessPlan, ...]
    schedules: tuple[SchedulePlan, ...]
    not_enforced: tuple[NotEnforced, ...]
    rewrites: tuple[Any, ...] = ()
    authoritative_definitions: tuple[dict[str, Any], ...] = ()
    root: str | None = None  # the default root of its servers: the folder holding the folder loaded
    support: tuple[dict[str, Any], ...] = ()  # the ODCS support channels, as written (odcs/support.py)
    # what every contract loaded with it classifies, by table (`classification._table_key`): ((table,
    # ((column in lower case, classification, file), ...)), ...); the engine looks up the tables an
    # object reads under another name (a partition, a view) in it when it connects
    classified_tables: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = ()
    # and by files: ((globs an object reads, with the files they match now), its classified columns as
    # above), for a lake table whose files only its catalog names (an Iceberg table's location)
    classified_files: tuple[tuple[tuple[tuple[str, frozenset[str]], ...], tuple[tuple[str, str, str], ...]], ...] = ()

    def object(self, name: str) -> ObjectPlan | None:
        return next((o for o in self.objects if o.name == name), None)

    def to_json(self) -> dict[str, Any]:
        by_object = {o.name: o for o in self.objects}
        return {
            "file": self.file,
            "id": self.id,
            "version": self.version,
            "apiVersion": self.api_version,
            "name": self.name,
            "owners": list(self.owners),
            # each server's handling (run, emulated, compiled, untested, not enforced) and the one used
            "servers": servers_handling(self.servers),
            "checks": [
                {
                    "asset_key": list(o.asset_key),
                    "object": o.name,
                    "name": c.name,
                    "clause": c.clause,
                    "clauses": list(c.clauses),
                    "locations": c.locations(self.file),
                    "kind": c.kind,
                    "property": c.property,
                    "severity": c.severity,
                    "blocking": c.blocking,
                    "threshold": c.threshold_text(),
                    "warn_threshold": c.warn_threshold_text(),  # None: no warn level
                    "unit": c.unit,
                    "dimension": c.dimension,
                    "description": c.description,
                    "will_fail": c.params.get("refusal"),
                    # the JSON keys keep their published names (README, `plan --json`)
                    **({"partition_scope": o.partition_reach(c)[0], "partition_scope_reason": o.partition_reach(c)[1]}
                       if o.partitioning is not None else {}),
                }
                for o in self.objects
                for c in o.checks
            ],
            "freshness": [
                {
                    "asset_key": list(by_object[f.object].asset_key),
                    "clause": f.clause,
                    "element": f.element,
                    "fail_window_seconds": f.fail_window_seconds,
                    "check": f.check_name,
                }
                for f in self.freshness
            ],
            "schedules": [
                {"name": s.name, "cron": s.cron, "clause": s.clause,
                 "checks": [n for _, n in s.checks],
                 "check_keys": [{"asset_key": list(by_object[o].asset_key), "name": n} for o, n in s.checks]}
                for s in self.schedules
            ],
            "not_enforced": [asdict(n) for n in self.not_enforced],
            "rewrites": [r.to_json() for r in self.rewrites],
        }


# --- building plans quickly -----------------------------------------------------------------------

def _store_directly(cls: type) -> None:
    """Give a frozen dataclass an `__init__` that puts its fields in the instance's `__dict__`, where
    the generated one makes an `object.__setattr__` call for each field: that is most of the cost of
    a plan, made thousands of times a load. Same signature, defaults, factories and `__post_init__`
    (and the same dictionary layout, keys in field order); a class with a field this does not handle
    (keyword-only, init=False, ClassVar or InitVar, a name the new __init__ uses) keeps the generated
    one."""
    init_fields = list(fields(cls))
    if any(not f.init or f.kw_only or f.name in _INIT_NAMES or f.name.startswith(("_default_", "_factory_"))
           for f in init_fields) or len(init_fields) != len(cls.__dataclass_fields__):
        return
    scope: dict[str, Any] = {"_FACTORY": _FACTORY}
    parameters, lines = [], ["    _instance_dict_ = self.__dict__"]
    for f in init_fields:
        if f.default is not MISSING:
            scope[f"_default_{f.name}"] = f.default
            parameters.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            parameters.append(f"{f.name}=_FACTORY")
            lines.append(f"    if {f.name} is _FACTORY:\n        {f.name} = _factory_{f.name}()")
        else:
            parameters.append(f.name)
    lines += [f"    _instance_dict_[{f.name!r}] = {f.name}" for f in init_fields]
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    exec(f"def __init__(self, {', '.join(parameters)}):\n" + "\n".join(lines) + "\n", scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"  # as the generated signature shows a field with a default factory


_FACTORY = _Factory()
_INIT_NAMES = {"self", "_instance_dict_", "_FACTORY"}  # the names the __init__ uses besides the fields'

for _made_often in dict.fromkeys((CheckPlan, ColumnPlan, Params, *(k.params for k in CHECK_KINDS.values()))):
    _store_directly(_made_often)
