"""Every Dagster name a contract's definitions take, made in one place.

The plans carry check and schedule names (a clause's identity, DESIGN.md), the folder's clash check
(load.py) judges every name the builder (dagster_defs) will make, and the builder calls the same
functions: the names checked are the names built. Pure string work, so it lives with the plans and
`dq-contracts validate` judges names without importing Dagster."""

from __future__ import annotations

import hashlib
import json
import keyword
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Iterable

from dq_contracts.odcs.paths import parts_of
from dq_contracts.odcs.visible import invisible  # never in a name, not even as `_`
from dq_contracts.odcs.plans import CheckPlan, ContractPlan, SchedulePlan


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

ALERT_SENSOR = "dq_contracts_alerts"  # tells a contract's support channels (dagster_defs/alerts.py)



PROBLEMS_CHECKS = "dq_contracts_contract_problems"  # an op (the multi-asset check) and a sensor

# the check a rejected contract's assets show (problem_defs), and its case in `check --format junit`
CONTRACT_VALID = "contract_valid"



# the names dq_contracts itself defines; each may take a `__<set name>` suffix (build_contract_defs'
# `name`), so a contract may take neither the name nor any name that starts with it and `__`
# the asset keys under which problem_defs shows a file that names no readable asset: no contract's
INVALID_ASSET_PREFIX = "dq_contracts_invalid"



FIXED_NAMES = ((NODE, ALL_CHECKS_JOB), (NODE, PROBLEMS_CHECKS), (INSTIGATOR, FRESHNESS_SENSOR),
               (INSTIGATOR, AUTOMATION_SENSOR), (INSTIGATOR, PROBLEMS_CHECKS), (INSTIGATOR, ALERT_SENSOR))



OBJECT_OPS = ("", "table", "relationships")  # the object's own clauses, table-wide ones, relationships



# Letters NFKD leaves alone that have a usual ASCII spelling (lower case; a capital is capitalised):
# Latin ones, Greek, and Cyrillic (as in ISO 9's common romanisation, its accents taken off by NFKD)
SPELLINGS = {
    **dict(zip("ßæœøđðþłıħŋĸſ", "ss ae oe o d d th l i h ng q s".split())),
    **dict(zip("αβγδεζηθικλμνξοπρσςτυφχψω", "a b g d e z e th i k l m n x o p r s s t y f ch ps o".split())),
    **dict(zip("абвгдежзиклмнопрстуфхцчшщыэюяєіґ",
               "a b v g d e zh z i k l m n o p r s t u f kh ts ch sh shch y e yu ya ye i g".split())),
    "ъ": "", "ь": "", "й": "i",
}


def ascii_name(text: str) -> str:
    """`text` in ASCII letters, digits and `_`, case kept: invisible characters dropped, accents taken
    off (NFKD: `café` → `cafe`, `ｆｕｌｌ` → `full`), `ß` → `ss`, Greek and Cyrillic romanised, a
    digit of any script as its value, and a letter of any other script as its code point, `_` between
    (`日付` → `u65e5_u4ed8`): readable, stable, and one letter never spelt as another's code."""
    out: list[str] = []
    apart = False  # the last piece was a code point: a letter after it starts a new piece
    for char in unicodedata.normalize("NFKD", text):
        lower = char.lower()
        if char.isascii():
            piece = char if char.isalnum() or char == "_" else "_"
        elif invisible(char) or unicodedata.combining(char):
            continue
        elif lower in SPELLINGS:
            piece = SPELLINGS[lower].capitalize() if char != lower else SPELLINGS[lower]
        elif unicodedata.decimal(char, None) is not None:
            piece = str(unicodedata.decimal(char))
        elif char.isalnum():
            piece = ("_" if out and out[-1][-1:].isalnum() else "") + f"u{ord(char):04x}"
            out.append(piece)
            apart = True
            continue
        else:
            piece = "_"
        if apart and piece[:1].isalnum():
            out.append("_")
        apart = False
        out.append(piece)
    return "".join(out)


def dagster_name(text: str) -> str:
    """A valid Dagster name ([a-z0-9_]) from any text (ascii_name); `__` separates parts, so runs of 3+ go."""
    name = ascii_name(text.strip()).lower()
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



def short_prefixes(plans: Iterable[ContractPlan], keepers: Iterable[str] = ()) -> dict[str, str]:
    """A short, readable, stable name per contract for its ops, jobs and schedules: its `name`, else
    the last part of its id, else (taken by a contract whose id sorts first) its whole id. The order
    is the contracts' (id, version, file), never the order files were read in. A short name that
    one of `keepers` (the files in the folder the server they use is bound to) and only contracts
    that are not could take is the keeper's."""
    plans = sorted(plans, key=lambda p: (p.id, p.version, p.file))
    keepers = set(keepers)
    candidates = {plan.file: _prefix_candidates(plan) for plan in plans}
    # a short name two contracts could take is neither's: a new contract never takes an older one's
    # names (and the UI state and history on them) by sorting first
    wanted = Counter(name for names in candidates.values() for name in dict.fromkeys(names[:-1]))
    kept = Counter(name for file, names in candidates.items() if file in keepers
                   for name in dict.fromkeys(names[:-1]))
    taken: set[str] = set()
    out: dict[str, str] = {}
    for plan in plans:
        names = candidates[plan.file]
        mine = (lambda n: kept[n] == 1) if plan.file in keepers else (lambda n: wanted[n] == 1)
        name = next((n for n in names[:-1] if mine(n) and n not in taken), None)
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



def contested_prefixes(plans: Iterable[ContractPlan], keepers: Iterable[str] = ()) -> dict[str, list[str]]:
    """Per contract file, the other files whose contract has the same `name`: none of them takes it
    (but the one of `keepers` among them, when there is one, which is then not listed)."""
    keepers = set(keepers)
    by_name: dict[str, list[str]] = {}
    for plan in plans:
        if plan.name:
            by_name.setdefault(dagster_name(str(plan.name)), []).append(plan.file)
    return {file: [f for f in files if f != file] for files in by_name.values() if len(files) > 1 for file in files
            if not (file in keepers and sum(f in keepers for f in files) == 1)}



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



ASSET_KEY_PROPERTIES = ("dagsterAssetKey", "dagster_asset_key", "assetKey")



def _key_spelling(physical_name: str, custom: dict[str, Any]) -> tuple[str, ...]:
    """The parts of an object's asset key as the contract writes them (a dagsterAssetKey, else its
    physicalName split at `.`)."""
    override = next((custom[k] for k in ASSET_KEY_PROPERTIES if k in custom), None)
    if isinstance(override, list):
        parts = [str(p) for p in override]
    elif isinstance(override, str):
        parts = override.split("/")
    else:
        parts = physical_name.split(".")
    return tuple(p.strip() for p in parts if p.strip())


def asset_key_for(physical_name: str, custom: dict[str, Any]) -> tuple[str, ...]:
    return tuple(ascii_name(p) or "x" for p in _key_spelling(physical_name, custom)) or ("x",)


def distinct_transliterated_keys(plans: list[ContractPlan]) -> list[ContractPlan]:
    """Every plan with an asset key that only transliteration makes another's (`péople` against
    `people`, `order-lines` against `order lines`) made distinct: a spelling that is its key as
    written keeps it, every other spelling of that key takes a hash of itself (`people_1a2b3c`).
    A name that differs from another's is another table, not a claim on its asset: no contract
    takes another's checks away by spelling a name of its own to transliterate alike. The same
    spelling twice is one table, and stays a claim (load.py)."""
    spellings: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for plan in plans:
        for obj in plan.objects:
            spellings.setdefault(obj.asset_key, set()).add(_key_spelling(obj.physical_name, obj.custom_properties))
    moved = {key for key, found in spellings.items() if len(found) > 1}
    if not moved:
        return plans

    def key_of(obj: Any) -> tuple[str, ...]:
        spelling = _key_spelling(obj.physical_name, obj.custom_properties)
        if obj.asset_key not in moved or spelling == obj.asset_key:
            return obj.asset_key
        digest = hashlib.sha1(json.dumps(spelling).encode()).hexdigest()[:6]
        return (*obj.asset_key[:-1], f"{obj.asset_key[-1]}_{digest}")

    out = []
    for plan in plans:
        objects = tuple(o if key_of(o) == o.asset_key else replace(o, asset_key=key_of(o)) for o in plan.objects)
        out.append(plan if objects == plan.objects else replace(plan, objects=objects))
    return out
