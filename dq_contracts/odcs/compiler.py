"""Compile a validated contract into a plan: checks, freshness policies, schedules, not-enforced.

The clause table `CLAUSES` maps each kind of ODCS clause to one small function returning a
`CheckPlan` or a `NotEnforced`. `compile_contract` only finds clauses and dispatches; it has no
knowledge of what any clause means.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import keyword
import os
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from croniter import croniter

from dq_contracts.odcs.normalise import OPERATORS
from dq_contracts.odcs.loader import line_at
from dq_contracts.odcs.partitions import DECLARATION, partition_columns, read_declaration
from dq_contracts.odcs.paths import named_step, parts_of, pointer, pointer_step
from dq_contracts.odcs.plans import (
    CLASSIFIED,
    ERROR,
    WARN,
    CheckPlan,
    ColumnPlan,
    Condition,
    ContractPlan,
    FreshnessPlan,
    NotEnforced,
    ObjectPlan,
    SchedulePlan,
)
from dq_contracts.odcs.problems import Problem
from dq_contracts.odcs.sqlrules import judge_sql_rule, sqlglot_dialect
from dq_contracts.odcs.validate import ValidatedContract

# --- closed sets ----------------------------------------------------------------------------------

REASONS = {
    "not_data_quality": "describes the service, not the data",
    "prose": "a text rule is prose for people; nothing to execute",
    "custom_engine": "a custom rule runs in another engine",
    "unknown_v30_rule": "a v3.0 rule name with no v3.1 metric equivalent",
    "unsupported_option": "this logicalTypeOptions key has no check",
    "unknown_format": "a format this tool has no pattern for",
    "nested_property": "checks on nested properties are not supported",
    "no_sql_server": "none of the contract's servers is a SQL database or files DuckDB can read "
                     "(local, s3, gcs, azure with format csv, parquet or json and a path)",
    "no_columns": "the object declares no columns",
    "needs_property": "the metric needs a property (column)",
    "target_elsewhere": "the referenced table is neither in this contract nor in another contract of the "
                        "folder on the same server",
    "target_other_server": "the referenced table is in another contract of the folder, on another server",
    "target_ambiguous": "several other contracts of the folder on the same server declare the referenced table",
    "unknown_element": "the SLA element names no declared column",
    "unknown_unit": "the unit is not a time unit this tool knows",
    "ambiguous_unit": "the unit is ambiguous",
    "sql_not_read_only": "the SQL rule is not one read-only SELECT",
    "unsupported_unit": "the rule's unit is neither rows nor percent",
    "not_comparable": "the operator's value cannot be compared with a number",
    "v30_modifier": "a v3.0 exclusive flag with no bound to modify",
    "invalid_pattern": "the pattern is not a valid regular expression",
    "duplicate_object": "another schema object of the contract has the same name",
}

SQL_SERVER_TYPES = {
    "duckdb", "postgres", "postgresql", "mysql", "snowflake", "sqlserver", "redshift", "bigquery",
    "databricks", "trino", "presto", "oracle", "clickhouse", "vertica", "db2", "athena", "synapse",
    "cloudsql", "hive", "impala", "sqlite", "exasol", "teradata", "hana", "denodo", "dremio",
}

# Files that DuckDB reads as tables: ODCS server types and the formats with a reader
FILE_SERVER_TYPES = {"local", "s3", "gcs", "azure"}
FILE_FORMATS = {"csv", "parquet", "json"}


def is_file_server(server: dict) -> bool:
    return (str(server.get("type", "")).lower() in FILE_SERVER_TYPES
            and str(server.get("format", "")).lower() in FILE_FORMATS and bool(server.get("path")))


def checkable(server: dict) -> bool:
    """A server the checks can run against: a SQL database, or files DuckDB reads."""
    return str(server.get("type", "")).lower() in SQL_SERVER_TYPES or is_file_server(server)


def engine_type(server: dict) -> str:
    """The SQL engine of a server: its type, or DuckDB for files."""
    return "duckdb" if is_file_server(server) else str(server.get("type")).lower()


# Time units for SLA latency, in seconds. A bare `m` is refused: it means minutes in some tools
# and months in others.
TIME_UNITS = {
    **dict.fromkeys(["ms", "millisecond", "milliseconds"], 0.001),
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], 1),
    **dict.fromkeys(["min", "mins", "minute", "minutes"], 60),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], 3600),
    **dict.fromkeys(["d", "day", "days"], 86400),
    **dict.fromkeys(["w", "wk", "week", "weeks"], 7 * 86400),
    **dict.fromkeys(["mo", "month", "months"], 30 * 86400),
    **dict.fromkeys(["y", "yr", "yrs", "year", "years"], 365 * 86400),
}
AMBIGUOUS_UNITS = {"m": "minutes or months? write `min` or `mo`"}

LATENCY_PROPERTIES = {"latency", "ly", "freshness"}
SLA_REASONS = {
    "frequency": "a cadence of updates is not a ceiling on staleness; use latency for freshness",
    "fy": "a cadence of updates is not a ceiling on staleness; use latency for freshness",
    "retention": "a retention period governs deletion, not data quality",
    "re": "a retention period governs deletion, not data quality",
    "availability": "a platform availability target, not a property of the data",
    "throughput": "a platform throughput target, not a property of the data",
    "errorrate": "a platform error rate, not a property of the data",
    "generalavailability": "a lifecycle date, not a data check",
    "endofsupport": "a lifecycle date, not a data check",
    "endoflife": "a lifecycle date, not a data check",
    "timeofavailability": "a time of day for delivery, not a staleness ceiling",
    "timetodetect": "an incident-response target, not a data check",
    "timetonotify": "an incident-response target, not a data check",
    "timetorepair": "an incident-response target, not a data check",
}

# Patterns for well-known string formats, written for both POSIX (PostgreSQL) and RE2 (DuckDB).
FORMAT_PATTERNS = {
    "email": r"^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "ipv4": r"^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$",
    "hostname": r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
    "uri": r"^[A-Za-z][A-Za-z0-9+.-]*:[^[:space:]]+$",
}

PLACEHOLDERS = {"object", "table", "model", "property", "column", "field"}


def severity_of(rule: dict[str, Any]) -> str:
    """ODCS `severity` → Dagster severity: info/warning(s) → WARN; anything else → ERROR."""
    value = str(rule.get("severity") or "").strip().lower()
    return WARN if value in ("info", "warning", "warn", "warnings", "information") else ERROR


# --- Dagster names --------------------------------------------------------------------------------
# Every name a contract's Dagster definitions take is made here, by the functions below, and the
# builder (definitions.py) calls the same functions: the names checked for clashes at load are the
# names built. Dagster keeps two namespaces that matter: ops and jobs ("node": one graph name space),
# and schedules and sensors ("instigator").

NODE, INSTIGATOR = "node", "instigator"
NAME_PATTERN = re.compile(r"[A-Za-z0-9_]+")  # Dagster's VALID_NAME_REGEX
MAX_NAME_LENGTH = 255  # Dagster's run storage indexes the first 255 characters of a job's name
# Dagster's DISALLOWED_NAMES (dagster._core.definitions.utils), which the pure core cannot import;
# a test checks the two are equal
DAGSTER_RESERVED = frozenset(["context", "conf", "config", "meta", "arg_dict", "dict", "input_arg_dict",
                              "output_arg_dict", "int", "str", "float", "bool", "input", "output", "type",
                              *keyword.kwlist])
ALL_CHECKS_JOB = "dq_contracts_checks"
FRESHNESS_SENSOR = "dq_contracts_freshness"
AUTOMATION_SENSOR = "dq_contracts_automation"
PROBLEMS_CHECKS = "dq_contracts_contract_problems"  # an op (the multi-asset check) and a sensor
# the names dq_contracts itself defines; each may take a `__<set name>` suffix (build_contract_defs'
# `name`), so a contract may take neither the name nor any name that starts with it and `__`
# the asset keys under which problem_defs shows a file that names no readable asset: no contract's
INVALID_ASSET_PREFIX = "dq_contracts_invalid"

FIXED_NAMES = ((NODE, ALL_CHECKS_JOB), (NODE, PROBLEMS_CHECKS), (INSTIGATOR, FRESHNESS_SENSOR),
               (INSTIGATOR, AUTOMATION_SENSOR), (INSTIGATOR, PROBLEMS_CHECKS))
OBJECT_OPS = ("", "table", "relationships")  # the object's own clauses, table-wide ones, relationships


def dagster_name(text: str) -> str:
    """A valid Dagster name ([a-z0-9_]) from any text; `__` separates parts, so runs of 3+ go."""
    name = re.sub(r"[^a-z0-9_]", "_", text.strip().lower())
    name = re.sub(r"_{3,}", "__", name).strip("_")
    return name or "x"


def object_op_name(prefix: str, object_name: str, part: str = "") -> str:
    """An op that runs checks of one object (part: see OBJECT_OPS)."""
    return f"{prefix}__{dagster_name(object_name)}" + (f"__{part}" if part else "")


def partitions_job_name(prefix: str, object_name: str) -> str:
    return f"{prefix}__{dagster_name(object_name)}__partitions"


def partitions_schedule_name(prefix: str, object_name: str) -> str:
    return f"{partitions_job_name(prefix, object_name)}_schedule"


def checks_job_name(prefix: str) -> str:
    return f"{prefix}__checks"


def short_prefixes(plans: Iterable[ContractPlan]) -> dict[str, str]:
    """A short, readable, stable name per contract for its ops, jobs and schedules: its `name`, else
    the last part of its id, else (taken by a contract whose id sorts first) its whole id. The order
    is the contracts' (id, version, file), never the order files were read in."""
    plans = sorted(plans, key=lambda p: (p.id, p.version, p.file))
    candidates = {plan.file: _prefix_candidates(plan) for plan in plans}
    # a short name two contracts could take is neither's: a new contract never takes an older one's
    # names (and the UI state and history on them) by sorting first
    wanted = Counter(name for names in candidates.values() for name in dict.fromkeys(names[:-1]))
    taken: set[str] = set()
    out: dict[str, str] = {}
    for plan in plans:
        names = candidates[plan.file]
        name = next((n for n in names[:-1] if wanted[n] == 1 and n not in taken), None)
        if name is None:
            name = names[-1]
            while name in taken:  # the same id and version twice (a problem of both): any distinct name
                name += "_"
        taken.add(name)
        out[plan.file] = name
    return out


def _prefix_candidates(plan: ContractPlan) -> list[str]:
    """The names a contract's prefix may be, shortest first: its `name`, the last part of its id,
    its id, and last its id and version (unique per loadable contract)."""
    last = re.split(r"[:/]", plan.id.rstrip(":/"))[-1]
    found = [dagster_name(str(c)) for c in (plan.name, last, plan.id) if c]
    return [*dict.fromkeys(n for n in found if n), dagster_name(f"{plan.id}__{plan.version}")]


def contested_prefixes(plans: Iterable[ContractPlan]) -> dict[str, list[str]]:
    """Per contract file, the other files whose contract has the same `name`: none of them takes it."""
    by_name: dict[str, list[str]] = {}
    for plan in plans:
        if plan.name:
            by_name.setdefault(dagster_name(str(plan.name)), []).append(plan.file)
    return {file: [f for f in files if f != file] for files in by_name.values() if len(files) > 1 for file in files}


def schedule_name(plan: ContractPlan, schedule: SchedulePlan, prefix: str) -> str:
    """The Dagster name of a contract cron's schedule: the contract's short prefix for its id."""
    full = dagster_name(plan.id)
    return prefix + schedule.name[len(full):] if schedule.name.startswith(full) else schedule.name


def schedule_job_name(name: str) -> str:
    return f"{name}__job"


@dataclass(frozen=True)
class DefinitionName:
    namespace: str  # NODE or INSTIGATOR
    name: str
    what: str  # what takes it, in ODCS words
    parts: tuple[str | int, ...]  # where in the document it comes from


def definition_names(plan: ContractPlan, prefix: str) -> list[DefinitionName]:
    """Every op, job, schedule name the contract's definitions may take, whatever the options
    (`contract_jobs`, `partition_jobs`, partitioned or not): a contract accepted in one way of
    building is accepted in every other."""
    out: list[DefinitionName] = []
    for oi, obj in enumerate(plan.objects):
        parts = tuple(parts_of(obj.pointer)) if obj.pointer else ("schema", oi)
        label = f"object {obj.name!r}"
        out += [DefinitionName(NODE, object_op_name(prefix, obj.name, part), f"the checks op of {label}", parts)
                for part in OBJECT_OPS]
        out.append(DefinitionName(NODE, partitions_job_name(prefix, obj.name), f"the partitions job of {label}", parts))
        out.append(DefinitionName(INSTIGATOR, partitions_schedule_name(prefix, obj.name),
                                  f"the partitions schedule of {label}", parts))
    out.append(DefinitionName(NODE, checks_job_name(prefix), "its checks job", ("id",)))
    for schedule in plan.schedules:
        name, parts = schedule_name(plan, schedule, prefix), tuple(parts_of(schedule.clause))
        out.append(DefinitionName(INSTIGATOR, name, f"the schedule of {schedule.clause}", parts))
        out.append(DefinitionName(NODE, schedule_job_name(name), f"the job of {schedule.clause}", parts))
    return out


def name_refusal(name: str) -> str | None:
    """Why Dagster would refuse a name, or None."""
    if not NAME_PATTERN.fullmatch(name):
        return f"{name!r} is not a Dagster name (letters, digits and _ only)"
    if name in DAGSTER_RESERVED:
        return f"{name!r} is a name Dagster reserves"
    if len(name) > MAX_NAME_LENGTH:
        return f"Dagster name {name[:40]!r}… is {len(name)} characters long (at most {MAX_NAME_LENGTH})"
    return None


def fixed_name_taken(namespace: str, name: str) -> str | None:
    """The name of dq_contracts' own that `name` would take, or None."""
    return next((fixed for space, fixed in FIXED_NAMES
                 if space == namespace and (name == fixed or name.startswith(fixed + "__"))), None)


def snake(text: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", text).lower()


# --- the clause context ---------------------------------------------------------------------------

@dataclass
class Clause:
    """One clause found in the document, with everything a clause function needs."""

    kind: str
    parts: list[str | int]
    value: Any
    obj: dict[str, Any]
    object_name: str
    prop: dict[str, Any] | None
    contract: "_Compiling"
    # worked out once, when the clause is found: every clause needs its pointer, a check its line and
    # named path, and its property's names several times
    pointer: str = field(init=False, repr=False)
    column: str | None = field(init=False, repr=False)
    property_name: str | None = field(init=False, repr=False)
    _place: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._place = self.contract.place(self.parts)
        self.pointer = self._place[0]
        prop = self.prop
        self.column = None if prop is None else str(prop.get("physicalName") or prop.get("name"))
        self.property_name = None if prop is None else str(prop.get("name"))

    def check(self, kind: str, suffix: str, description: str, *, rule: dict | None = None,
              conditions: tuple[Condition, ...] = (Condition("mustBe", 0),),
              params: dict | None = None, severity: str | None = None, unit: str = "rows") -> CheckPlan:
        rule = rule or {}
        default = f"{self.contract.dagster_name(self.property_name)}__{suffix}" if self.prop is not None else suffix
        explicit = rule.get("id") or rule.get("name")
        return CheckPlan(
            name=dagster_name(str(explicit)) if explicit else default,
            kind=kind,
            clause=self.pointer,
            clauses=(self.pointer,),
            object=self.object_name,
            property=self.property_name,
            severity=severity or (severity_of(rule) if rule else ERROR),
            description=description,
            conditions=conditions,
            unit=unit,
            dimension=rule.get("dimension"),
            params={"column": self.column, **(params or {})},
            rule_name=str(explicit) if explicit else None,
            line=self._place[1],
            where=self._place[3],
        )

    def fails(self, kind: str, suffix: str, description: str, reason: str, parts: list | None = None,
              severity: str = "error", **kwargs: Any) -> CheckPlan:
        """A clause that cannot run as written: a problem for `validate`, and a check that fails with
        the reason, so the rest of the contract still runs and nothing passes without having looked.
        `severity="warning"` where the official schema accepts the document (so `validate` agrees)."""
        self.contract.problem(parts or self.parts, reason, severity, scope="clause")
        check = self.check(kind, suffix, f"{description} (cannot run: it will fail)", **kwargs)
        return replace(check, params={**check.params, "refusal": reason})

    def skip(self, code: str, detail: str = "") -> NotEnforced:
        reason = REASONS[code] + (f": {detail}" if detail else "")
        return NotEnforced(self.pointer, code, reason, self.object_name)

    def where(self) -> str:
        return f"{self.object_name}.{self.property_name}" if self.prop is not None else self.object_name


Outcome = CheckPlan | NotEnforced


# --- property clauses -----------------------------------------------------------------------------

def _required(c: Clause) -> Outcome:
    return c.check("not_null", "not_null", f"{c.where()} required: no NULL values")


def _unique(c: Clause) -> Outcome:
    return c.check("unique", "unique", f"{c.where()} unique: no duplicate non-NULL values",
                   params={"columns": [c.column]})


def _bound(key: str) -> Callable[[Clause], Outcome]:
    lower = key in ("minimum", "exclusiveMinimum")
    strict = key.startswith("exclusive")
    suffix = snake(key)

    def compile_bound(c: Clause) -> Outcome:
        logical = c.prop.get("logicalType") if c.prop else None
        if logical in ("integer", "number") and (isinstance(c.value, bool) or not isinstance(c.value, (int, float))):
            return c.skip("not_comparable", f"{key}: {c.value!r}")
        sign = (">" if strict else "≥") if lower else ("<" if strict else "≤")
        return c.check("range", suffix, f"{c.where()} {key}: every value {sign} {c.value}",
                       params={"bound": c.value, "lower": lower, "strict": strict, "logical_type": logical})

    return compile_bound


def _length(key: str) -> Callable[[Clause], Outcome]:
    suffix = snake(key)

    def compile_length(c: Clause) -> Outcome:
        lower = key == "minLength"
        sign = "≥" if lower else "≤"
        return c.check("length", suffix, f"{c.where()} {key}: every value's length {sign} {c.value}",
                       params={"bound": int(c.value), "lower": lower})
    return compile_length


def _bad_regex(c: Clause, pattern: str, parts: list) -> NotEnforced | None:
    """A pattern no regex engine accepts would fail the table's whole aggregate query: refuse it here.
    Python's `re` stands in for the warehouses' dialects; it catches the broken ones."""
    try:
        re.compile(pattern)
    except re.error as exc:
        c.contract.problem(parts, f"pattern is not a valid regular expression: {exc}")
        return c.skip("invalid_pattern", str(exc))
    return None


def _pattern(c: Clause) -> Outcome:
    bad = _bad_regex(c, str(c.value), c.parts)
    if bad:
        return bad
    return c.check("pattern", "pattern", f"{c.where()} pattern: every non-NULL value matches {c.value}",
                   params={"pattern": str(c.value)})


def _format(c: Clause) -> Outcome:
    logical = c.prop.get("logicalType") if c.prop else None
    pattern = FORMAT_PATTERNS.get(str(c.value).lower()) if logical in (None, "string") else None
    if pattern is None:
        return c.skip("unknown_format", f"{c.value!r} ({logical or 'untyped'})")
    return c.check("pattern", "format", f"{c.where()} format {c.value}: every non-NULL value is one",
                   params={"pattern": pattern, "format": str(c.value)})


def _multiple_of(c: Clause) -> Outcome:
    if isinstance(c.value, bool) or not isinstance(c.value, (int, float)) or c.value <= 0:
        return c.skip("not_comparable", f"multipleOf: {c.value!r}")
    if c.value < 1e-10 or c.value >= 1e27:  # the engine computes remainders exactly in DECIMAL(38, 10)
        return c.skip("not_comparable", f"multipleOf: {c.value!r} is beyond the 10 decimal places (and 28 "
                      "integer digits) checked exactly")
    return c.check("multiple_of", "multiple_of", f"{c.where()} multipleOf {c.value}",
                   params={"divisor": c.value})


def _other_option(c: Clause) -> Outcome:
    return c.skip("unsupported_option", str(c.parts[-1]))


def _enum(c: Clause) -> Outcome:
    values = [e.get("value") if isinstance(e, dict) else e for e in c.value]
    return c.check("accepted_values", "accepted_values",
                   f"{c.where()} enum: every non-NULL value is one of {len(values)} values",
                   params={"values": values})


def _relationship(c: Clause) -> Outcome:
    rel = c.value
    sources = rel.get("from") if c.prop is None else c.column
    targets = rel.get("to")
    if isinstance(targets, str):
        targets = [targets]
    if isinstance(sources, str) or sources is None:
        sources = [sources] if sources else []
    resolved_sources = []
    for source in sources:
        found = c.contract.resolve_column(str(source)) if c.prop is None else (c.object_name, c.column)
        if found is None:
            return c.skip("target_elsewhere", f"source {source!r} is not a declared column")
        resolved_sources.append(found[1])
    resolved = [c.contract.resolve_column(str(t)) for t in targets or []]
    if resolved and all(r is None for r in resolved) and all("." in str(t) for t in targets):
        return _relationship_elsewhere(c, rel, [str(t) for t in targets], resolved_sources)
    if not resolved or any(r is None for r in resolved) or len({r[0] for r in resolved}) != 1:
        return c.skip("target_elsewhere", f"{rel.get('to')!r}")
    missing = [str(t) for t, r in zip(targets, resolved) if not r[1]]
    if missing or not all(resolved_sources):
        what = ", ".join(repr(m) for m in missing) if missing else "its source column"
        failing = c.fails("relationship", "references_" + dagster_name(resolved[0][0]),
                       f"{c.object_name} references {resolved[0][0]}",
                       f"relationship to {what}: {resolved[0][0]!r} declares no such column; this check "
                       "will fail", [*c.parts, "to"], "warning")
        if c.prop is None and all(resolved_sources):  # named as it would be if it could run
            failing = replace(failing, name=dagster_name("__".join(resolved_sources)) + "__" + failing.name)
        return failing
    target_object = c.contract.object_by_name[resolved[0][0]]
    if len(resolved_sources) != len(resolved):
        return c.skip("target_elsewhere", "from and to have different lengths")
    label = ", ".join(resolved_sources)
    suffix = "references_" + dagster_name(resolved[0][0])
    plan = c.check("relationship", suffix,
                   f"{c.object_name}({label}) references {resolved[0][0]}({', '.join(r[1] for r in resolved)})",
                   params={"columns": resolved_sources, "target_object": resolved[0][0],
                           "target_table": str(target_object.get("physicalName") or target_object.get("name")),
                           "target_columns": [r[1] for r in resolved]})
    if c.prop is None:
        plan = replace(plan, name=dagster_name("__".join(resolved_sources)) + "__" + suffix)
    return plan


def _relationship_elsewhere(c: Clause, rel: dict, targets: list[str], sources: list[str]) -> Outcome:
    """A relationship to a table another contract of the folder declares, on the same server."""
    object_refs = {t.rsplit(".", 1)[0] for t in targets}
    if len(object_refs) != 1:
        return c.skip("target_elsewhere", f"{rel.get('to')!r}")
    found, code = c.contract.folder.find(object_refs.pop(), str(c.contract.document.get("id")), c.contract.server)
    if found is None:
        return c.skip(code, f"{rel.get('to')!r}")
    columns = [found.columns.get(t.rsplit(".", 1)[1], "") for t in targets]
    suffix = "references_" + dagster_name(found.name)
    if not all(columns) or not all(sources) or len(sources) != len(columns):
        missing = ", ".join(repr(t) for t, col in zip(targets, columns) if not col) or "its source column"
        return c.fails("relationship", suffix, f"{c.object_name} references {found.name}",
                       f"relationship to {missing}: {found.name!r} of contract {found.contract_id!r} declares no "
                       "such column; this check will fail", [*c.parts, "to"], "warning")
    plan = c.check("relationship", suffix,
                   f"{c.object_name}({', '.join(sources)}) references {found.name}({', '.join(columns)}) "
                   f"of contract {found.contract_id}",
                   params={"columns": sources, "target_object": found.name, "target_table": found.physical_name,
                           "target_columns": columns, "target_contract": found.contract_id,
                           "target_classified": found.classified})
    if c.prop is None:
        plan = replace(plan, name=dagster_name("__".join(sources)) + "__" + suffix)
    return plan


# --- quality rules --------------------------------------------------------------------------------

def _conditions(rule: dict[str, Any], *, numbers_only: bool = False) -> tuple[Condition, ...] | str:
    """The rule's operators; a metric counts, so with numbers_only every value must be a number."""
    out = []
    for op in OPERATORS:
        if op not in rule:
            continue
        value = rule[op]
        if op in ("mustBeBetween", "mustNotBeBetween"):
            if not (isinstance(value, list) and len(value) == 2
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
                return f"{op} needs two numbers, got {value!r}"
            value = (min(value), max(value))
        elif (numbers_only or op not in ("mustBe", "mustNotBe")) and (
                isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"{op} needs a number, got {value!r}"
        out.append(Condition(op, value))
    return tuple(out)


def _unit(rule: dict[str, Any]) -> str | None:
    unit = str(rule.get("unit") or "rows").strip().lower()
    return _UNITS.get(unit)


_UNITS = {"rows": "rows", "row": "rows", "percent": "percent", "%": "percent", "percentage": "percent"}


def _metric(kind: str, suffix: str, needs_column: bool, what: str) -> Callable[[Clause], Outcome]:
    def compile_metric(c: Clause) -> Outcome:
        rule = c.value
        conditions = _conditions(rule, numbers_only=True)
        if isinstance(conditions, str):
            return c.skip("not_comparable", conditions)
        unit = _unit(rule)
        if unit is None:
            return c.skip("unsupported_unit", repr(rule.get("unit")))
        if kind == "row_count" and unit == "percent":  # a percent of all rows would always be 100
            return c.skip("unsupported_unit", "rowCount counts rows; it has no percent")
        arguments = rule.get("arguments") if isinstance(rule.get("arguments"), dict) else {}
        params: dict[str, Any] = {}
        column = c.column
        if kind == "duplicate_values":
            names = arguments.get("properties") or ([c.property_name] if c.prop is not None else None)
            if not names:
                return c.skip("needs_property", "duplicateValues on an object needs arguments.properties")
            columns = []
            for name in names:
                found = c.contract.resolve_column(str(name), default_object=c.object_name)
                if found is None or not found[1]:
                    return c.fails("duplicate_values", "duplicate_values", f"{c.where()} duplicate values",
                                   f"duplicateValues names {name!r}, which is not a declared column of "
                                   f"{c.object_name!r}; this check will fail", [*c.parts, "arguments", "properties"],
                                   "warning", rule=rule, params={"columns": []})
                columns.append(found[1])
            params["columns"] = columns
        elif needs_column and column is None:
            return c.skip("needs_property", f"{rule.get('metric')} on an object")
        if kind == "missing_values":
            params["values"] = list(arguments.get("missingValues") or [None])
        if kind == "invalid_values":
            params["valid_values"] = arguments.get("validValues")
            params["pattern"] = arguments.get("pattern")
            if params["valid_values"] is None and params["pattern"] is None:
                return c.skip("needs_property", "invalidValues needs arguments.validValues or arguments.pattern")
            if params["pattern"] is not None:
                bad = _bad_regex(c, str(params["pattern"]), c.parts + ["arguments", "pattern"])
                if bad:
                    return bad
        default_suffix = suffix if c.prop is not None or kind != "duplicate_values" else (
            "__".join(dagster_name(p) for p in params["columns"]) + "__duplicate_values")
        threshold = " and ".join(x.describe() for x in conditions) + ("%" if unit == "percent" else "")
        return c.check(kind, default_suffix, f"{c.where()} {what} {threshold}", rule=rule,
                       conditions=conditions, params=params, unit=unit)
    return compile_metric


def _sql(c: Clause) -> Outcome:
    rule = c.value
    conditions = _conditions(rule)
    if isinstance(conditions, str):
        return c.skip("not_comparable", conditions)
    if not conditions:
        return c.skip("not_comparable", "a SQL rule needs an operator")
    tables = c.contract.rule_tables()
    verdict = judge_sql_rule(str(rule.get("query") or ""), dialect=c.contract.dialect,
                             own=str(c.obj.get("physicalName") or c.obj.get("name")), column=c.column, tables=tables)
    threshold = " and ".join(x.describe() for x in conditions)
    refusal = None
    if verdict.unresolved:
        refusal = (f"unresolved placeholder(s) {', '.join(verdict.unresolved)}: use {{object}} or "
                   "{property}")
    elif verdict.refusal:
        refusal = f"SQL rule refused: {verdict.refusal}"
    if refusal:
        # a table or column the contract does not declare: a warning, as for the other clauses that cannot
        # run as written in a document the official schema accepts; the check fails all the same
        return c.fails("sql", "sql", f"{c.where()} SQL rule result {threshold}", refusal, c.parts + ["query"],
                       "warning" if verdict.undeclared else "error", rule=rule, conditions=conditions,
                       params={"query": rule.get("query"), "tables": tables})
    return c.check("sql", "sql", f"{c.where()} SQL rule result {threshold}", rule=rule,
                   conditions=conditions, params={"query": rule.get("query"), "tables": tables})


def _text(c: Clause) -> Outcome:
    return c.skip("prose")


def _custom(c: Clause) -> Outcome:
    return c.skip("custom_engine", str(c.value.get("engine") or "unknown engine"))


def _v30_rule(c: Clause) -> Outcome:
    return c.skip("unknown_v30_rule", repr(c.value.get("rule")))


# --- object clauses -------------------------------------------------------------------------------

def _schema(c: Clause) -> Outcome:
    columns = [p for p in c.obj.get("properties") or [] if isinstance(p, dict)]
    if not columns:
        return c.skip("no_columns")
    return c.check("schema", "schema", f"{c.object_name} schema: {len(columns)} declared columns present, "
                   "declared physical types match",
                   params={"columns": [{"name": str(p.get("physicalName") or p.get("name")),
                                        "physical_type": p.get("physicalType"),
                                        "logical_type": p.get("logicalType"),
                                        "required": p.get("required") is True} for p in columns]})


# --- SLA ------------------------------------------------------------------------------------------

def _latency(c: Clause) -> Outcome:
    sla = c.value
    unit_text = str(sla.get("unit") or "").strip()
    unit = unit_text.lower()
    if unit in AMBIGUOUS_UNITS:
        c.contract.problem(c.parts + ["unit"], f"unit {unit_text!r} is ambiguous ({AMBIGUOUS_UNITS[unit]}); "
                           "this latency is not enforced", "warning")
        return c.skip("ambiguous_unit", f"{unit_text!r}: {AMBIGUOUS_UNITS[unit]}")
    if unit not in TIME_UNITS:
        return c.skip("unknown_unit", repr(unit_text))
    value = sla.get("value")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return c.skip("not_comparable", f"value {sla.get('value')!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return c.skip("not_comparable", f"value {sla.get('value')!r}")
    if c.prop is None:
        return c.skip("unknown_element", repr(sla.get("element")))
    seconds = float(value) * TIME_UNITS[unit]
    description = f"{c.where()} latency: newest value at most {value} {unit_text} old"
    arguments = dict(rule={"id": sla.get("id")} if sla.get("id") else None,
                     conditions=(Condition("mustBeLessOrEqualTo", seconds),),
                     params={"max_age_seconds": seconds, "logical_type": c.prop.get("logicalType")})
    declared = _not_temporal(c.prop)
    if declared:
        plan = c.fails("freshness", "freshness", description, f"the SLA element {c.column} is declared {declared}: "
                       "freshness needs a date or timestamp column; this check will fail", [*c.parts, "element"],
                       "warning", **arguments)
    else:
        plan = c.check("freshness", "freshness", description, **arguments)
    return replace(plan, dimension="timeliness")


NOT_TEMPORAL = {"integer", "number", "boolean", "object", "array", "time", "map", "vector"}


def _not_temporal(prop: dict) -> str | None:
    """How a column is declared, when that declaration rules out a date or timestamp; else None
    (undeclared, or a string whose physical type may still hold a timestamp: judged at run time)."""
    logical = str(prop.get("logicalType") or "").strip().lower()
    physical = str(prop.get("physicalType") or "").strip().lower()
    if logical in NOT_TEMPORAL:
        return f"logicalType {logical}"
    if logical == "string" and physical and not re.search(r"date|time", physical):
        return f"logicalType string, physicalType {physical}"
    return None


def _sla_other(c: Clause) -> Outcome:
    prop = str(c.value.get("property") or "").strip()
    reason = SLA_REASONS.get(prop.lower(), "not a data-quality clause")
    return NotEnforced(c.pointer, "not_data_quality", f"SLA {prop}: {reason}", c.object_name or None)


# --- the clause table -----------------------------------------------------------------------------

CLAUSES: dict[str, Callable[[Clause], Outcome]] = {
    "schema": _schema,
    "required": _required,
    "unique": _unique,
    "option:minimum": _bound("minimum"),
    "option:maximum": _bound("maximum"),
    "option:exclusiveMinimum": _bound("exclusiveMinimum"),
    "option:exclusiveMaximum": _bound("exclusiveMaximum"),
    "option:minLength": _length("minLength"),
    "option:maxLength": _length("maxLength"),
    "option:pattern": _pattern,
    "option:format": _format,
    "option:multipleOf": _multiple_of,
    "option:*": _other_option,
    "enum": _enum,
    "relationship": _relationship,
    "metric:nullValues": _metric("null_values", "null_values", True, "NULL values"),
    "metric:missingValues": _metric("missing_values", "missing_values", True, "missing values"),
    "metric:invalidValues": _metric("invalid_values", "invalid_values", True, "invalid values"),
    "metric:duplicateValues": _metric("duplicate_values", "duplicate_values", False, "duplicate values"),
    "metric:rowCount": _metric("row_count", "row_count", False, "row count"),
    "quality:sql": _sql,
    "quality:text": _text,
    "quality:custom": _custom,
    "quality:v30_rule": _v30_rule,
    "sla:latency": _latency,
    "sla:*": _sla_other,
}


def quality_kind(rule: dict[str, Any]) -> str:
    kind = str(rule.get("type") or "library")
    if kind == "library":
        if "metric" in rule:
            return f"metric:{rule['metric']}"
        return "quality:v30_rule" if "rule" in rule else "quality:text"
    return f"quality:{kind}"


# --- the folder: objects other contracts may reference ---------------------------------------------

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # md:, s3://, … (as connections reads a DuckDB database)


def server_identity(server: dict, folder: str) -> tuple:
    """What makes two contracts' servers one database: engine, host, port, database (a relative
    DuckDB file resolved from the contract's folder), schema, and a file server's path and format."""
    kind = engine_type(server)
    database = server.get("database")
    if kind == "duckdb" and isinstance(database, str) and database not in ("", ":memory:") \
            and not _URI.match(database):
        database = os.path.normpath(os.path.join(folder, os.path.expanduser(database)))
    return (kind, *(str(server.get(k) or "").lower() if k in ("host",) else server.get(k)
                    for k in ("host", "port")), database, server.get("schema"), server.get("path"),
            server.get("format"))


@dataclass(frozen=True)
class IndexedObject:
    """A schema object of some contract of the folder, as a relationship elsewhere sees it."""

    contract_id: str
    server: tuple | None
    name: str
    physical_name: str
    columns: dict[str, str]  # property name and physicalName -> the column's physical name
    classified: bool


class FolderIndex:
    """Every schema object of the contracts loaded together, by name and by physicalName, so that a
    relationship may reference a table that another contract on the same server declares."""

    def __init__(self, contracts: Iterable[ValidatedContract] = ()):
        self._by_name: dict[str, list[IndexedObject]] = {}
        for validated in contracts:
            doc = validated.document
            folder = os.path.dirname(os.path.abspath(validated.file))
            servers = [s for s in doc.get("servers") or [] if isinstance(s, dict) and checkable(s)]
            server = server_identity(servers[0], folder) if servers else None
            for obj in doc.get("schema") or []:
                if not isinstance(obj, dict) or not obj.get("name"):
                    continue
                props = [p for p in obj.get("properties") or [] if isinstance(p, dict) and p.get("name")]
                columns: dict[str, str] = {}
                for prop in props:
                    physical = str(prop.get("physicalName") or prop.get("name"))
                    columns.setdefault(str(prop["name"]), physical)
                    columns.setdefault(physical, physical)
                entry = IndexedObject(str(doc.get("id")), server, str(obj["name"]),
                                      str(obj.get("physicalName") or obj["name"]), columns,
                                      any(str(p.get("classification") or "").strip().lower() in CLASSIFIED
                                          for p in props))
                for key in {entry.name, entry.physical_name}:
                    self._by_name.setdefault(key, []).append(entry)

    def find(self, object_ref: str, contract_id: str, server: tuple | None) -> tuple[IndexedObject | None, str]:
        """The object another contract declares under that name on the same server, or why not."""
        others = [o for o in self._by_name.get(object_ref, []) if o.contract_id != contract_id]
        same = [o for o in others if server is not None and o.server == server]
        if len(same) == 1:
            return same[0], ""
        if same:
            return None, "target_ambiguous"
        return None, "target_other_server" if others else "target_elsewhere"


# --- classification belongs to the table, not to one document ------------------------------------

# Engines that tell "Orders" from "orders": every name is quoted as written (sql.quoted), so on
# PostgreSQL a name is exactly what it says; the others (DuckDB and files first) ignore case even
# quoted, and an engine not listed is taken to ignore it too, which can only classify more.
CASE_SENSITIVE_NAMES = {"postgres", "postgresql", "cloudsql"}
# the schema a bare table name means, where the server declares none
DEFAULT_SCHEMA = {"duckdb": "main", "postgres": "public", "postgresql": "public", "cloudsql": "public"}


def _table_key(server: tuple[tuple, str | None, Callable[[str], str]], physical_name: str) -> str:
    """A physical table, as far as classification goes: its table name in lower case, whatever the
    server, schema or catalog. That classifies more than the one table on its endpoint (the same name
    on another server shares it), and in exchange no spelling of an endpoint can tell two contracts
    of one table apart: another case, a catalog or schema written out, a port written as text, a
    host's alias, the operator's URL standing for what the contract wrote."""
    return physical_name.split(".")[-1].lower()


_ANY_SERVER = ((), None, str.lower)


def share_classification(plans: list[ContractPlan]) -> list[ContractPlan]:
    """Every plan with each column classified that any plan of `plans` classifies on the same
    physical table (a table of that name, in any case, on any server: `_table_key`): a second
    contract cannot declassify a column by leaving `classification` out. A column classified only
    by another file says which (`ColumnPlan.classified_by`). The union is over the contracts loaded
    together: a file checked alone knows only its own classifications."""
    servers = {id(plan): [_ANY_SERVER] for plan in plans}
    by_table: dict[tuple, dict[str, tuple[str, str]]] = {}  # table -> folded column -> (classification, file)
    for plan in plans:
        for server in servers[id(plan)]:
            for obj in plan.objects:
                found = by_table.setdefault(_table_key(server, obj.physical_name), {})
                for column in obj.columns:
                    if column.classified and not column.classified_by:
                        found.setdefault(server[2](column.physical_name), (str(column.classification), plan.file))
    if not any(by_table.values()):
        return plans
    out = []
    for plan in plans:
        def union(physical_name: str) -> dict[str, tuple[str, str]]:
            merged: dict[str, tuple[str, str]] = {}
            for server in servers[id(plan)]:
                for column, source in by_table.get(_table_key(server, physical_name), {}).items():
                    merged.setdefault(column, source)
            return merged

        fold = servers[id(plan)][0][2] if servers[id(plan)] else str.lower
        shared_tables: dict[int, dict] = {}  # a contract's SQL rules share one tables map: shared once

        def classify(obj: ObjectPlan) -> ObjectPlan:
            merged = union(obj.physical_name)
            columns = tuple(replace(c, classification=merged[fold(c.physical_name)][0],
                                    classified_by=merged[fold(c.physical_name)][1])
                            if not c.classified and fold(c.physical_name) in merged else c for c in obj.columns)
            checks = tuple(_shared_check(c, union, fold, shared_tables) for c in obj.checks)
            return obj if (columns, checks) == (obj.columns, obj.checks) else replace(obj, columns=columns,
                                                                                      checks=checks)

        objects = tuple(classify(o) for o in plan.objects)
        out.append(plan if objects == plan.objects else replace(plan, objects=objects))
    return out


def _shared_check(check: CheckPlan, union, fold, shared_tables: dict[int, dict]) -> CheckPlan:
    """A check that reads another table of the contract, told which of its columns are classified
    by any contract of that table: a relationship's target, the tables a SQL rule may read (whose
    judge, where the rule runs, then refuses a classified column used as anything but a count)."""
    if check.kind == "relationship" and not check.params.get("target_classified") \
            and union(str(check.params["target_table"])):
        return replace(check, params=replace(check.params, target_classified=True))
    if check.kind == "sql" and check.params.get("tables"):
        original = check.params["tables"]
        if id(original) not in shared_tables:
            shared = {table: {column: classified or fold(column) in union(table) for column, classified in
                              columns.items()} for table, columns in original.items()}
            shared_tables[id(original)] = original if shared == original else shared
        tables = shared_tables[id(original)]
        if tables is not original:
            return replace(check, params=replace(check.params, tables=tables))
    return check


# --- compiling one contract -----------------------------------------------------------------------

class _Compiling:
    def __init__(self, validated: ValidatedContract, folder: FolderIndex | None = None):
        self.validated = validated
        self.document = validated.document
        self.folder = folder or FolderIndex()
        self.problems: list[Problem] = []
        objects = [o for o in self.document.get("schema") or [] if isinstance(o, dict)]
        self.object_by_name = {str(o.get("name")): o for o in objects}
        servers = [s for s in self.document.get("servers") or [] if isinstance(s, dict)]
        sql_servers = [s for s in servers if checkable(s)]
        self.no_sql_server = bool(servers) and not sql_servers
        server_type = engine_type(sql_servers[0]) if sql_servers else None
        self.server = (server_identity(sql_servers[0], os.path.dirname(os.path.abspath(validated.file)))
                       if sql_servers else None)
        self.dialect = sqlglot_dialect(server_type)
        self._dagster_names: dict[str, str] = {}
        self._rule_tables: dict[str, dict[str, bool]] | None = None
        self._places: dict[tuple, tuple[str, int | None, int | None, str, Any]] = {}

    def problem(self, parts: list, message: str, severity: str = "error", scope: str = "contract") -> None:
        self.problems.append(Problem(self.validated.file, message, self.named_path(parts), self.line_of(parts),
                                     severity, scope))

    def line_of(self, parts: list) -> int | None:
        """`LoadedDocument.line_of`: the line of `parts` in the contract file as written."""
        return self.place(parts)[1]

    def named_path(self, parts: list) -> str:
        """`paths.named_path`: `parts` as a person reads them (`schema.orders.properties.id.required`)."""
        return self.place(parts)[3]

    def place(self, parts: list) -> tuple[str, int | None, int | None, str, Any]:
        """(pointer, line, place of the line, named path, node of the source) of `parts`, each prefix
        worked out once: the clauses of a property share all but their last parts."""
        key = tuple(parts)
        known = self._places.get(key)
        if known is None:
            known = self._place(key)
        return known

    def _place(self, key: tuple) -> tuple[str, int | None, int | None, str, Any]:
        if not key:
            source = self.validated.source
            place = source.root_place()
            known = ("", None if place is None else line_at(place), place, "", source.data)
        else:
            text, line, place, named, node = self._places.get(key[:-1]) or self._place(key[:-1])
            part = key[-1]
            if place is not None:  # line_of stops at the first part that is not there
                place = self.validated.source.place_in(place, part)
                if place is not None:
                    line = line_at(place)
            named, node = named_step(named, node, key[-2] if len(key) > 1 else None, part)
            known = (text + pointer_step(part), line, place, named, node)
        self._places[key] = known
        return known

    def dagster_name(self, text: str) -> str:
        """`dagster_name`, once per text of the contract (every check of a property is named after it)."""
        name = self._dagster_names.get(text)
        if name is None:
            name = self._dagster_names[text] = dagster_name(text)
        return name

    def rule_tables(self) -> dict[str, dict[str, bool]]:
        """What a SQL rule of this contract may read: its objects (by physical name) with their declared
        physical columns, each marked classified or not."""
        if self._rule_tables is None:
            self._rule_tables = {
                str(obj.get("physicalName") or name): {
                    str(p.get("physicalName") or p.get("name")):
                        str(p.get("classification") or "").strip().lower() in CLASSIFIED
                    for p in obj.get("properties") or []
                    if isinstance(p, dict) and (p.get("physicalName") or p.get("name"))}
                for name, obj in self.object_by_name.items()}
        return self._rule_tables

    def resolve_column(self, ref: str, default_object: str | None = None) -> tuple[str, str] | None:
        """`object.column`, or `column` of `default_object`, or `schema/<id>/properties/<id>`."""
        ref = ref.strip()
        if ref.startswith("schema/"):
            parts = ref.split("/")
            if len(parts) == 4 and parts[2] == "properties":
                for name, obj in self.object_by_name.items():
                    if obj.get("id") == parts[1] or name == parts[1]:
                        for prop in obj.get("properties") or []:
                            if isinstance(prop, dict) and (prop.get("id") == parts[3] or prop.get("name") == parts[3]):
                                return name, str(prop.get("physicalName") or prop.get("name"))
            return None
        if "." in ref:
            object_ref, column_ref = ref.rsplit(".", 1)
        elif default_object is not None:
            object_ref, column_ref = default_object, ref
        elif len(self.object_by_name) == 1:
            object_ref, column_ref = next(iter(self.object_by_name)), ref
        else:
            return None
        for name, obj in self.object_by_name.items():
            if object_ref in (name, obj.get("physicalName")):
                for prop in obj.get("properties") or []:
                    if isinstance(prop, dict) and column_ref in (prop.get("name"), prop.get("physicalName")):
                        return name, str(prop.get("physicalName") or prop.get("name"))
                return name, ""  # the object exists, the column does not
        return None


def _property_clauses(props: Any, base: list, obj: dict, object_name: str, ctx: _Compiling,
                      nested: bool) -> Iterable[Clause]:
    for pi, prop in enumerate(props if isinstance(props, list) else []):
        if not isinstance(prop, dict):
            continue
        here = [*base, "properties", pi]

        def clause(kind: str, parts: list, value: Any) -> Clause:
            return Clause("nested" if nested else kind, parts, value, obj, object_name, prop, ctx)

        if nested and prop.get("primaryKey") is True:  # top-level keys are gathered by _with_primary_key
            yield clause("primaryKey", [*here, "primaryKey"], True)
        if prop.get("required") is True:
            yield clause("required", [*here, "required"], True)
        if prop.get("unique") is True:
            yield clause("unique", [*here, "unique"], True)
        options = prop.get("logicalTypeOptions")
        for key, value in (options.items() if isinstance(options, dict) else []):
            kind = f"option:{key}"
            if kind not in CLAUSES:
                kind = "option:*"
            yield clause(kind, [*here, "logicalTypeOptions", key], value)
        if isinstance(prop.get("enum"), list):
            yield clause("enum", [*here, "enum"], prop["enum"])
        for ri, rel in enumerate(prop.get("relationships") or []):
            if isinstance(rel, dict):
                yield clause("relationship", [*here, "relationships", ri], rel)
        for qi, rule in enumerate(prop.get("quality") or []):
            if isinstance(rule, dict):
                yield clause(quality_kind(rule), [*here, "quality", qi], rule)
        if prop.get("properties"):
            yield from _property_clauses(prop["properties"], here, obj, object_name, ctx, True)


def compile_contract(validated: ValidatedContract, folder: FolderIndex | None = None
                     ) -> tuple[ContractPlan, list[Problem]]:
    """`folder`: the objects of the contracts loaded with this one, which relationships may reference."""
    ctx = _Compiling(validated, folder)
    doc = ctx.document
    not_enforced: list[NotEnforced] = []
    objects: list[ObjectPlan] = []
    check_index: dict[str, list[CheckPlan]] = {}
    schedules: list[SchedulePlan] = []
    rule_schedules: list[tuple[str, str, dict]] = []  # (object, check pointer, rule)

    named: set[str] = set()
    for oi, obj in enumerate(doc.get("schema") or []):
        if not isinstance(obj, dict):
            continue
        object_name = str(obj.get("name"))
        base = ["schema", oi]
        duplicate = object_name in named  # checks, SLA elements and relationships address objects by name
        if duplicate:
            ctx.problem([*base, "name"], f"another schema object is already named {object_name!r}; "
                                         "object names must be unique in a contract")
        named.add(object_name)
        clauses = [Clause("schema", base, None, obj, object_name, None, ctx)]
        clauses += list(_property_clauses(obj.get("properties"), base, obj, object_name, ctx, False))
        for ri, rel in enumerate(obj.get("relationships") or []):
            if isinstance(rel, dict):
                clauses.append(Clause("relationship", [*base, "relationships", ri], rel, obj, object_name, None, ctx))
        for qi, rule in enumerate(obj.get("quality") or []):
            if isinstance(rule, dict):
                clauses.append(Clause(quality_kind(rule), [*base, "quality", qi], rule, obj, object_name, None, ctx))

        # physicalType (table, view, file, parquet, …) is free text: it never decides on its own that
        # nothing is checked; the server does
        blanket = "duplicate_object" if duplicate else ("no_sql_server" if ctx.no_sql_server else None)
        checks: list[CheckPlan] = []
        for clause in clauses:
            if blanket:
                not_enforced.append(clause.skip(blanket))
                continue
            if clause.kind == "nested":
                not_enforced.append(clause.skip("nested_property"))
                continue
            outcome = CLAUSES[clause.kind](clause)
            if isinstance(outcome, NotEnforced):
                not_enforced.append(outcome)
            else:
                checks.append(outcome)
                rule = clause.value if isinstance(clause.value, dict) else {}
                if str(rule.get("scheduler") or "").lower() == "cron" and rule.get("schedule"):
                    rule_schedules.append((object_name, clause.pointer, {**rule, "_parts": clause.parts}))
        if not blanket:
            checks = _with_primary_key(obj, object_name, base, ctx, checks)
        else:
            for pi, prop in enumerate(obj.get("properties") or []):
                if isinstance(prop, dict) and prop.get("primaryKey") is True:
                    key = Clause("primaryKey", [*base, "properties", pi, "primaryKey"], True, obj, object_name,
                                 prop, ctx)
                    not_enforced.append(key.skip(blanket))
        if duplicate:
            continue  # the first object of that name keeps it
        check_index[object_name] = checks  # names are made unique once, at the end
        objects.append(replace(_object_plan(obj, object_name, base, checks, ctx.line_of(base)),
                               partitioning=_partitioning(obj, base, ctx),
                               partition_columns=tuple(partition_columns(obj.get("properties")))))

    # SLA properties
    freshness: list[FreshnessPlan] = []
    for si, sla in enumerate(doc.get("slaProperties") or []):
        if not isinstance(sla, dict):
            continue
        parts = ["slaProperties", si]
        prop_name = str(sla.get("property") or "").strip().lower()
        target = _sla_element(sla, parts, ctx)
        produced: CheckPlan | None = None
        if prop_name in LATENCY_PROPERTIES:
            obj_name, prop = target if target else (None, None)
            obj = ctx.object_by_name.get(obj_name) if obj_name else None
            clause = Clause("sla:latency", parts, sla, obj or {}, obj_name or "", prop, ctx)
            if ctx.no_sql_server and obj is not None:
                outcome = clause.skip("no_sql_server")
            else:
                outcome = CLAUSES["sla:latency"](clause)
            if isinstance(outcome, CheckPlan):
                check_index.setdefault(obj_name, []).append(outcome)
                produced = outcome
                # checks are referred to by their clause until their names are final
                freshness.append(FreshnessPlan(pointer(parts), obj_name, str(clause.column),
                                               produced.conditions[0].value, produced.clause))
            elif not _sla_schedule(sla):
                not_enforced.append(outcome)
        scheduled = _sla_schedule(sla)
        if scheduled:
            cron = _valid_cron(scheduled, [*parts, "schedule"], ctx)
            if cron:
                if produced is not None:
                    selection = [(produced.object, produced.clause)]
                elif target and target[0] in check_index:
                    selection = [(target[0], c.clause) for c in check_index[target[0]]]
                else:
                    selection = [(o, c.clause) for o, cs in check_index.items() for c in cs]
                if selection:
                    label = sla.get("id") or f"sla_{prop_name}_{si}"
                    schedules.append(SchedulePlan(dagster_name(f"{doc.get('id')}__{label}"), cron,
                                                  pointer(parts), tuple(selection)))
                    continue
            if produced is None:
                not_enforced.append(CLAUSES["sla:*"](Clause("sla:*", parts, sla, {}, "", None, ctx)))
        elif produced is None and prop_name not in LATENCY_PROPERTIES:
            not_enforced.append(CLAUSES["sla:*"](Clause("sla:*", parts, sla, {}, "", None, ctx)))

    # rule-level schedules; each found by its clause in one index (a scan per rule is quadratic)
    by_clause: dict[tuple[str, str], CheckPlan] = {}
    for object_name in dict.fromkeys(o for o, _, _ in rule_schedules):
        for c in reversed(check_index[object_name]):  # the first check of a clause wins, as a scan found it
            by_clause.update(dict.fromkeys(((object_name, p) for p in c.clauses), c))
    for object_name, clause_pointer, rule in rule_schedules:
        cron = _valid_cron(str(rule["schedule"]), [*rule["_parts"], "schedule"], ctx)
        check = by_clause.get((object_name, clause_pointer))
        if cron and check:
            schedules.append(SchedulePlan(f"{doc.get('id')}__{object_name}__", cron, clause_pointer,
                                          ((object_name, check.clause),)))

    # v3.0 rewrites that merged two clauses into one: the check answers for both
    for rewrite in validated.rewrites:
        if not rewrite.merged:
            continue
        for name, checks in check_index.items():
            for i, check in enumerate(checks):
                if rewrite.pointer in check.clauses:
                    checks[i] = replace(check, clauses=(*check.clauses, rewrite.merged))
                    break
            else:
                continue
            break
        else:
            not_enforced.append(NotEnforced(rewrite.merged, "v30_modifier", REASONS["v30_modifier"]))
    # names made unique once, now that every check is known; references by clause become names
    final = {name: _unique_names(checks) for name, checks in check_index.items()}
    name_of = {(o, c.clause): c.name for o, checks in final.items() for c in checks}
    objects = [replace(o, checks=tuple(final.get(o.name, o.checks))) for o in objects]
    freshness = [replace(f, check_name=name_of[(f.object, f.check_name)]) for f in freshness]
    # a rule's own schedule is named after its check (its name ends in `__` until the check's is known)
    schedules = [replace(s, name=dagster_name(s.name + name_of[s.checks[0]]) if s.name.endswith("__") else s.name,
                         checks=tuple((o, name_of[(o, c)]) for o, c in s.checks)) for s in schedules]
    owners, dropped = _owners(doc.get("team"))
    description = doc.get("description") if isinstance(doc.get("description"), dict) else None
    plan = ContractPlan(
        file=validated.file,
        folder=os.path.dirname(os.path.abspath(validated.file)),
        id=str(doc.get("id")),
        version=str(doc.get("version")),
        api_version=validated.api_version,
        name=doc.get("name"),
        status=doc.get("status"),
        domain=doc.get("domain"),
        description=description,
        tags=tuple(str(t) for t in doc.get("tags") or []),
        owners=owners,
        dropped_owners=dropped,
        servers=tuple(s for s in doc.get("servers") or [] if isinstance(s, dict)),
        objects=tuple(objects),
        freshness=tuple(freshness),
        schedules=tuple(_unique_schedule_names(schedules)),
        not_enforced=tuple(not_enforced),
        rewrites=tuple(validated.rewrites),
        authoritative_definitions=tuple(d for d in doc.get("authoritativeDefinitions") or [] if isinstance(d, dict)),
    )
    return plan, ctx.problems


def _partitioning(obj: dict, base: list, ctx: _Compiling):
    """The object's `dagsterPartitions` declaration (partitions.py), its problems reported where they are."""
    for ci, entry in enumerate(obj.get("customProperties") or []):
        if isinstance(entry, dict) and entry.get("property") == DECLARATION:
            plan, problems = read_declaration(entry.get("value"), obj.get("properties"))
            for parts, message in problems:
                ctx.problem([*base, "customProperties", ci, "value", *parts], message)
            return replace(plan, clause=pointer([*base, "customProperties", ci])) if plan else None
    return None


def _sla_schedule(sla: dict) -> str | None:
    if str(sla.get("scheduler") or "").strip().lower() == "cron" and sla.get("schedule"):
        return str(sla["schedule"])
    return None


_CRON_FROM = datetime.datetime(2026, 1, 1)  # any fixed start: a cron that can fire does within years of it


def _valid_cron(expression: str, parts: list, ctx: _Compiling) -> str | None:
    if not croniter.is_valid(expression):
        ctx.problem(parts, f"invalid cron expression {expression!r}")
        return None
    try:  # one that never fires (31 April) would make Dagster's automation fail for every contract
        croniter(expression, _CRON_FROM).get_next(datetime.datetime)
    except Exception:
        ctx.problem(parts, f"cron {expression!r}: it never fires (a day no month has)")
        return None
    return expression


def _sla_element(sla: dict, parts: list, ctx: _Compiling) -> tuple[str, dict] | None:
    """(object name, property) of the SLA element's first column, or None."""
    element = sla.get("element")
    if not isinstance(element, str) or not element.strip():
        return None
    first = element.split(",")[0].strip()
    found = ctx.resolve_column(first)
    if found is None:
        return None
    object_name, column = found
    if not column:
        if "." in first:
            ctx.problem([*parts, "element"], f"SLA element {first!r}: object {object_name!r} declares no column "
                        f"{first.rsplit('.', 1)[1]!r}")
        return None
    obj = ctx.object_by_name[object_name]
    prop = next(p for p in obj.get("properties") or []
                if isinstance(p, dict) and column in (p.get("physicalName"), p.get("name")))
    return object_name, prop


def _with_primary_key(obj: dict, object_name: str, base: list, ctx: _Compiling,
                      checks: list[CheckPlan]) -> list[CheckPlan]:
    keyed = [(pi, p) for pi, p in enumerate(obj.get("properties") or [])
             if isinstance(p, dict) and p.get("primaryKey") is True]
    if not keyed:
        return checks
    keyed.sort(key=lambda item: (item[1].get("primaryKeyPosition", -1) in (-1, None),
                                 item[1].get("primaryKeyPosition") or 0, item[0]))
    first = [*base, "properties", keyed[0][0], "primaryKey"]
    pointers = tuple(pointer([*base, "properties", pi, "primaryKey"]) for pi, _ in keyed)
    columns = [str(p.get("physicalName") or p.get("name")) for _, p in keyed]
    names = [str(p.get("name")) for _, p in keyed]
    single = len(keyed) == 1
    return [*checks, CheckPlan(
        name=f"{dagster_name(names[0])}__primary_key" if single else "primary_key",
        kind="primary_key",
        clause=pointers[0],
        clauses=pointers,
        object=object_name,
        property=names[0] if single else None,
        severity=ERROR,
        description=f"{object_name} primary key ({', '.join(names)}): no NULLs, no duplicate "
                    + ("values" if single else "tuples"),
        conditions=(Condition("mustBe", 0),),
        params={"columns": columns, "column": columns[0] if single else None},
        line=ctx.line_of(first),
        where=ctx.named_path(first),
    )]


class UniqueNames:
    """Names made unique in one pass: a name already taken gets the first free `_<n>`, n counted on
    per name, so N copies of one name cost about 2N probes, not N²/2 (`probes` counts them)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.next: dict[str, int] = {}
        self.probes = 0

    def take(self, name: str) -> str:
        base, n = name, self.next.get(name, 2)
        self.probes += 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
            self.probes += 1
        self.next[base] = n
        self.taken.add(name)
        return name


def _unique_names(checks: list[CheckPlan], names: UniqueNames | None = None) -> list[CheckPlan]:
    """Unique per asset, and stable under reordering: colliding names get a hash of their clause."""
    counts: dict[str, int] = {}
    for check in checks:
        counts[check.name] = counts.get(check.name, 0) + 1
    out: list[CheckPlan] = []
    names = names or UniqueNames()
    for check in checks:
        name = check.name
        if counts[name] > 1:
            digest = hashlib.sha1(json.dumps(
                # not a SQL rule's `tables`: a name must not change when another object joins the contract
                [check.kind, check.property, {k: v for k, v in check.params.items() if k != "tables"},
                 [(c.operator, c.value) for c in check.conditions]],
                sort_keys=True, default=str).encode()).hexdigest()[:6]
            name = f"{name}_{digest}"
        name = names.take(name)
        out.append(check if name == check.name else replace(check, name=name))
    return out


def _unique_schedule_names(schedules: list[SchedulePlan], names: UniqueNames | None = None) -> list[SchedulePlan]:
    names = names or UniqueNames()
    out = []
    for schedule in schedules:
        name = names.take(schedule.name)
        out.append(schedule if name == schedule.name else replace(schedule, name=name))
    return out


def _object_plan(obj: dict, object_name: str, base: list, checks: list[CheckPlan], line: int | None = None
                 ) -> ObjectPlan:
    columns = tuple(
        ColumnPlan(
            name=str(p.get("name")),
            physical_name=str(p.get("physicalName") or p.get("name")),
            logical_type=p.get("logicalType"),
            physical_type=p.get("physicalType"),
            required=p.get("required") is True,
            unique=p.get("unique") is True,
            primary_key=p.get("primaryKey") is True,
            classification=p.get("classification"),
            description=p.get("description"),
        )
        for p in obj.get("properties") or []
        if isinstance(p, dict)
    )
    custom = {str(c.get("property")): c.get("value") for c in obj.get("customProperties") or []
              if isinstance(c, dict) and c.get("property")}
    physical = str(obj.get("physicalName") or object_name)
    return ObjectPlan(
        name=object_name,
        pointer=pointer(base),
        physical_name=physical,
        asset_key=asset_key_for(physical, custom),
        description=obj.get("description"),
        columns=columns,
        checks=tuple(checks),
        tags=tuple(str(t) for t in obj.get("tags") or []),
        custom_properties=custom,
        authoritative_definitions=tuple(d for d in obj.get("authoritativeDefinitions") or [] if isinstance(d, dict)),
        line=line,
    )


ASSET_KEY_PROPERTIES = ("dagsterAssetKey", "dagster_asset_key", "assetKey")


def asset_key_for(physical_name: str, custom: dict[str, Any]) -> tuple[str, ...]:
    override = next((custom[k] for k in ASSET_KEY_PROPERTIES if k in custom), None)
    if isinstance(override, list):
        parts = [str(p) for p in override]
    elif isinstance(override, str):
        parts = override.split("/")
    else:
        parts = physical_name.split(".")
    return tuple(re.sub(r"[^A-Za-z0-9_]", "_", p.strip()) or "x" for p in parts if p.strip()) or ("x",)


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _owners(team: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Dagster owners are emails or `team:name`; everything else is dropped (and listed)."""
    owners: list[str] = []
    dropped: list[str] = []
    members = team if isinstance(team, list) else (team.get("members") if isinstance(team, dict) else None)
    if isinstance(team, dict) and team.get("name"):
        owners.append("team:" + re.sub(r"[^A-Za-z0-9_]", "_", str(team["name"])))
    for member in members or []:
        if not isinstance(member, dict) or member.get("dateOut"):
            continue
        username = str(member.get("username") or "")
        if _EMAIL.match(username):
            owners.append(username)
        elif username:
            dropped.append(username)
    return tuple(dict.fromkeys(owners)), tuple(dropped)


def outline_contract(data: Any, file: str) -> ContractPlan | None:
    """What can be read of a document that does not validate: its id, version and schema objects
    (with their asset keys), so that its problems can be shown on the assets it names. None when
    it names no object."""
    if not isinstance(data, dict):
        return None
    objects = []
    try:
        for oi, obj in enumerate(data.get("schema") if isinstance(data.get("schema"), list) else []):
            if isinstance(obj, dict) and isinstance(obj.get("name") or obj.get("physicalName"), (str, int)):
                name = str(obj.get("name") or obj.get("physicalName"))
                plan = _object_plan({k: v for k, v in obj.items() if k != "properties"}, name, ["schema", oi], [])
                objects.append(replace(plan, description=plan.description if isinstance(plan.description, str)
                                       else None))
    except Exception:  # a malformed document: whatever could be read before it stays
        pass
    if not objects:
        return None
    text = lambda key: str(data[key]) if isinstance(data.get(key), (str, int, float)) else "?"  # noqa: E731
    return ContractPlan(
        file=file, folder=os.path.dirname(os.path.abspath(file)), id=text("id"), version=text("version"),
        api_version=text("apiVersion"), name=None, status=None,
        domain=data["domain"] if isinstance(data.get("domain"), str) else None, description=None, tags=(),
        owners=(), dropped_owners=(), servers=(), objects=tuple(objects), freshness=(), schedules=(),
        not_enforced=())
