"""Validate contracts against the official ODCS JSON Schema, judged by each file's own apiVersion.

The schema is loaded at run time from the `open-data-contract-standard` package, which ships the
v3.2.0 schema, and compiled once with `jsonschema-rs` (about 400x faster than `jsonschema` here).
Two things make one schema answer for every v3 version:

* In-memory repair of bitol-io/open-data-contract-standard#322: the `map` branch of a property
  lacks `required: [logicalType]`, so every property without a `logicalType` was rejected. We add
  the guard exactly as upstream's fix (PR #324) does.
* `VERSION_GATES`: what each version added. A v3.0/v3.1 document that uses a later feature is
  refused, except that v3.0-labelled documents written in v3.1 vocabulary are accepted with a
  warning (they are common in the wild). v3.0 documents are normalised before validation.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Iterator

import jsonschema_rs

from dq_contracts.odcs.spelling import did_you_mean
from dq_contracts.odcs.loader import LoadedDocument
from dq_contracts.odcs.normalise import OPERATORS, Rewrite, all_properties, normalise, quality_items
from dq_contracts.odcs.paths import Parts, named_path
from dq_contracts.odcs.problems import Problem
from dq_contracts.odcs.servers import FORMAT_EXTENSIONS
from dq_contracts.odcs.visible import visible_all

SCHEMA_PACKAGE = "open_data_contract_standard"
KNOWN_MINORS = {0: "v3.0.2", 1: "v3.1.0", 2: "v3.2.0"}
NEWEST_MINOR = max(KNOWN_MINORS)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+.].*)?$")
_EXACT = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
KNOWN_PATCHES = {0: (0, 1, 2), 1: (0,), 2: (0,)}  # the v3 entries of the official schemas' apiVersion enum


@dataclass
class ValidatedContract:
    """A document that passed validation, in v3.1+ vocabulary, with what was rewritten."""

    source: LoadedDocument
    api_version: str
    minor: int
    document: dict[str, Any]  # normalised copy: compile this
    rewrites: list[Rewrite] = field(default_factory=list)

    @property
    def file(self) -> str:
        return self.source.file


@lru_cache(maxsize=1)
def official_schema() -> dict[str, Any]:
    text = resources.files(SCHEMA_PACKAGE).joinpath("schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    _repair_map_guard(schema)
    return schema


def _repair_map_guard(schema: dict[str, Any]) -> None:
    """bitol-io/open-data-contract-standard#322: `if logicalType == map` must require logicalType."""
    for branch in schema.get("$defs", {}).get("SchemaBaseProperty", {}).get("allOf", []):
        condition = branch.get("if") if isinstance(branch, dict) else None
        logical = (condition or {}).get("properties", {}).get("logicalType", {})
        if logical.get("const") == "map" and "required" in branch.get("then", {}):
            condition.setdefault("required", ["logicalType"])


@lru_cache(maxsize=1)
def _validator() -> Any:
    return jsonschema_rs.Draft201909Validator(official_schema())


def parse_api_version(value: Any) -> tuple[int, int] | None:
    match = _VERSION.match(value) if isinstance(value, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


# --- what each version added -------------------------------------------------------------------

class _Searched:
    """A document as the version gates search it: its objects and properties listed once."""

    def __init__(self, document: dict):
        self.document = document
        self._objects: list[tuple[list[str | int], dict]] | None = None
        self._properties: list[tuple[list[str | int], dict]] | None = None

    @property
    def objects(self) -> list[tuple[list[str | int], dict]]:
        if self._objects is None:
            schema = self.document.get("schema")
            self._objects = [(["schema", oi], obj) for oi, obj in enumerate(schema if isinstance(schema, list) else [])
                             if isinstance(obj, dict)]
        return self._objects

    @property
    def properties(self) -> list[tuple[list[str | int], dict]]:
        if self._properties is None:
            self._properties = list(all_properties(self.document))
        return self._properties


@dataclass(frozen=True, slots=True)
class Gate:
    since: tuple[int, int, int]  # the first version that allows the feature
    describe: str
    find: Callable[[_Searched], Iterator[Parts]]


def _property_key(key: str) -> Callable[[_Searched], Iterator[Parts]]:
    return lambda doc: ([*p, key] for p, prop in doc.properties if key in prop)


def _object_key(key: str) -> Callable[[_Searched], Iterator[Parts]]:
    return lambda doc: ([*p, key] for p, obj in doc.objects if key in obj)


def _logical_type(*names: str) -> Callable[[_Searched], Iterator[Parts]]:
    return lambda doc: ([*p, "logicalType"] for p, prop in doc.properties if prop.get("logicalType") in names)


def _top_key(key: str) -> Callable[[_Searched], Iterator[Parts]]:
    return lambda doc: iter([[key]] if key in doc.document else [])


def _missing_status(doc: _Searched) -> Iterator[Parts]:
    return iter([] if "status" in doc.document else [["status"]])


def _team_object(doc: _Searched) -> Iterator[Parts]:
    return iter([["team"]] if isinstance(doc.document.get("team"), dict) else [])


def _quality_key(*keys: str) -> Callable[[_Searched], Iterator[Parts]]:
    return lambda doc: ([*p, k] for p, rule in quality_items(doc.document) for k in keys if k in rule)


def _bound_values(doc: _Searched) -> Iterator[Parts]:
    for p, prop in doc.properties:
        options = prop.get("logicalTypeOptions")
        if isinstance(options, dict):
            for key in ("exclusiveMinimum", "exclusiveMaximum"):
                if key in options and not isinstance(options[key], bool):
                    yield [*p, "logicalTypeOptions", key]


def _sla_key(*keys: str) -> Callable[[_Searched], Iterator[Parts]]:
    def find(doc: _Searched) -> Iterator[Parts]:
        for i, sla in enumerate(doc.document.get("slaProperties") or []):
            if isinstance(sla, dict):
                yield from ([ "slaProperties", i, k] for k in keys if k in sla)
    return find


VERSION_GATES: tuple[Gate, ...] = (
    Gate((3, 0, 1), "top-level authoritativeDefinitions", _top_key("authoritativeDefinitions")),
    Gate((3, 0, 2), "property physicalName", _property_key("physicalName")),
    Gate((3, 1, 0), "quality metric (v3.0 says rule)", _quality_key("metric", "arguments")),
    Gate((3, 1, 0), "team as an object", _team_object),
    Gate((3, 1, 0), "relationships", lambda d: (*_property_key("relationships")(d), *_object_key("relationships")(d))),
    Gate((3, 1, 0), "logicalType timestamp/time", _logical_type("timestamp", "time")),
    Gate((3, 1, 0), "exclusiveMinimum/exclusiveMaximum as a bound value", _bound_values),
    Gate((3, 1, 0), "SLA schedule, scheduler, description", _sla_key("schedule", "scheduler", "description")),
    Gate((3, 2, 0), "property enum", _property_key("enum")),
    Gate((3, 2, 0), "logicalType map/vector", _logical_type("map", "vector")),
    Gate((3, 2, 0), "semanticType", _property_key("semanticType")),
    Gate((3, 2, 0), "synonyms", _object_key("synonyms")),
    Gate((3, 2, 0), "context", lambda d: (*_top_key("context")(d), *_object_key("context")(d))),
    Gate((3, 2, 0), "a missing status (required before v3.2)", _missing_status),
)


# --- messages -----------------------------------------------------------------------------------

_UNEXPECTED = re.compile(r"\((.*) (?:was|were) unexpected\)")
_QUOTED = re.compile(r"'([^']*)'")
UNEXPECTED = "unexpected key: not part of the ODCS schema here"


@lru_cache(maxsize=1)
def vocabulary() -> frozenset[str]:
    """Every key the official schema names anywhere, and the quality operators: what a near-miss is
    measured against ("did you mean")."""
    found: set[str] = set(OPERATORS)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            found.update(k for k in node.get("properties", {}) if isinstance(node.get("properties"), dict))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(official_schema())
    return frozenset(found)




# a server `type: csv`: files are a `local` server of that format
_FILES_TYPE = " (did you mean `type: local` with `format: {format}` and a `path`?)"


def _plain(error: Any) -> list[tuple[list[str | int], str]]:
    """(extra path parts, plain message) for one jsonschema-rs error."""
    kind = type(error.kind).__name__
    message = error.message
    if kind in ("AdditionalProperties", "UnevaluatedProperties"):
        found = _UNEXPECTED.search(message)
        keys = _QUOTED.findall(found.group(1)) if found else []
        if keys:
            return [([key], UNEXPECTED + ("" if key in vocabulary() else did_you_mean(key, vocabulary())))
                    for key in keys]
    if kind == "Enum":  # every valid value, not "… or 42 other candidates", and the closest of them
        options = [o for o in (getattr(error.kind, "options", None) or []) if isinstance(o, (str, int, float))]
        if options:
            return [([], f"{json.dumps(error.instance)} is not one of {', '.join(map(str, options))}"
                     + (_FILES_TYPE.format(format=str(error.instance).lower())
                        if "local" in options and str(error.instance).lower() in FORMAT_EXTENSIONS
                        else did_you_mean(error.instance, options)))]
    if kind == "Required":
        key = re.findall(r'"([^"]*)"', message) or [message]
        return [([], f"missing required key '{key[0]}'")]
    if kind == "OneOf" or kind.startswith("OneOf"):
        present = [op for op in OPERATORS if isinstance(error.instance, dict) and op in error.instance]
        if len(present) > 1:
            return [([], f"give exactly one operator, found {len(present)}: {', '.join(present)}")]
        if isinstance(error.instance, dict) and not present and (
            "metric" in error.instance or error.instance.get("type") in ("library", "sql")
        ):
            return [([], f"a library or sql rule needs exactly one operator ({', '.join(OPERATORS)})")]
    if "is not valid under any of the schemas" in message:
        return [([], "does not match any of the forms the ODCS schema allows here")]
    if len(message) > 300:
        message = message[:300] + "…"
    return [([], message)]


def _dedupe_unevaluated(errors: list[tuple[list, str, str]]) -> list[tuple[list, str, str]]:
    """One error per real mistake. "unexpected key" is noise when the same key already has a precise
    error (e.g. a bad metric), and a key the schema knows is only "unexpected" because a sibling
    mistake (a typo'd operator or server type) left no form of the schema to evaluate it: it is
    dropped when its object holds another error. A near-miss key ("did you mean") is the cause of its
    object's "matches none of the forms" too, so that one goes."""
    precise = {tuple(p) for p, m, k in errors if k != "unexpected"}
    parent_of = {tuple(p): tuple(p[:-1]) for p, m, k in errors if k == "unexpected"}
    near_miss = {parent_of[tuple(p)] for p, m, k in errors if k == "unexpected" and "did you mean" in m}
    # objects with an error of their own or below them, other than a known key's "unexpected"
    troubled = {tuple(p[:i]) for p, m, k in errors if not (k == "unexpected" and p and p[-1] in vocabulary())
                for i in range(len(p) + 1)}
    seen: set[tuple] = set()
    out = []
    for parts, message, kind in errors:
        key = (tuple(parts), message)
        known_sibling = kind == "unexpected" and parts[-1] in vocabulary() and tuple(parts[:-1]) in troubled
        if key in seen or (kind == "unexpected" and tuple(parts) in precise) or known_sibling \
                or (kind != "unexpected" and tuple(parts) in near_miss):
            continue
        seen.add(key)
        out.append((parts, message, kind))
    return out


# --- entry point --------------------------------------------------------------------------------

def validate_document(source: LoadedDocument) -> tuple[ValidatedContract | None, list[Problem]]:
    data = source.data
    problems: list[Problem] = []

    def problem(parts: Parts, message: str, severity: str = "error") -> Problem:
        return Problem(source.file, message, named_path(data, parts), source.line_of(parts), severity)

    raw_version = data.get("apiVersion")
    version = parse_api_version(raw_version)
    if raw_version is None:
        return None, [problem([], "missing required key 'apiVersion' (e.g. apiVersion: v3.1.0)")]
    if version is None:
        return None, [problem(["apiVersion"], f"'{raw_version}' is not a version like v3.1.0")]
    major, minor = version
    exact = _EXACT.match(raw_version)
    if major == 3 and (exact is None or (minor in KNOWN_PATCHES and int(exact.group(3)) not in KNOWN_PATCHES[minor])):
        # judged as the official enum judges it: v, major, minor and patch, nothing more or less
        known = ", ".join(f"v3.{m}.{p}" for m, patches in KNOWN_PATCHES.items() for p in patches)
        return None, [problem(["apiVersion"], f"'{raw_version}' is not an ODCS apiVersion; write one of {known}")]
    if major == 2:
        return None, [problem(["apiVersion"], f"{raw_version} is ODCS v2, which this tool does not read; "
                             "migrate the contract to v3 (see Bitol's v2 → v3 migration notes in the "
                             "ODCS documentation) and set apiVersion: v3.1.0")]
    if major != 3:
        return None, [problem(["apiVersion"], f"{raw_version} is not supported: this tool reads ODCS v3.0 "
                             f"to v3.{NEWEST_MINOR}; a newer major version needs a newer dq-contracts")]
    if minor > NEWEST_MINOR:
        problems.append(problem(["apiVersion"], f"{raw_version} is newer than the newest version known "
                                f"here ({KNOWN_MINORS[NEWEST_MINOR]}); validated as {KNOWN_MINORS[NEWEST_MINOR]}",
                                "warning"))
    patch_match = _VERSION.match(raw_version)
    patch = int(patch_match.group(3) or 0) if patch_match else 0
    written = (3, minor, patch)

    document, rewrites = normalise(data) if minor == 0 else (data, [])
    view = copy.deepcopy(document) if minor == 0 else document
    ignored: list[tuple] = []
    open_prefixes: list[tuple] = []
    if minor == 0:
        ignored, open_prefixes = _relax_v30(view)
    view = dict(view)
    view["apiVersion"] = KNOWN_MINORS[min(minor, NEWEST_MINOR)]

    # version gates: features newer than the document's own version
    searched = _Searched(data)
    for gate in VERSION_GATES:
        if written >= gate.since:
            continue
        for parts in gate.find(searched):
            if minor == 0 and gate.since[:2] == (3, 1):
                problems.append(problem(parts, f"{gate.describe} is v3.1 vocabulary in a {raw_version} "
                                        "contract; accepted, but set apiVersion: v3.1.0", "warning"))
            else:
                since = "v%d.%d.%d" % gate.since
                problems.append(problem(parts, f"{gate.describe} is not allowed before {since}; "
                                        f"this contract says {raw_version}"))

    errors: list[tuple[list, str, str]] = []
    validator = _validator()
    try:
        found = [] if validator.is_valid(view) else list(validator.iter_errors(view))
    except UnicodeEncodeError:  # a lone surrogate (JSON may hold one), which the Rust validator cannot take
        view = visible_all(view)  # judged as it is shown: `\ud800`
        found = [] if validator.is_valid(view) else list(validator.iter_errors(view))
    for error in found:
        parts = list(error.instance_path)
        if any(tuple(parts[: len(prefix)]) == prefix for prefix in ignored):
            continue
        for extra, message in _plain(error):
            kind = "unexpected" if message.startswith("unexpected key") else "other"
            if kind == "unexpected" and any(tuple(parts[: len(p)]) == p for p in open_prefixes):
                continue  # v3.0 leaves these objects open
            if "operator" in message and tuple(parts) in open_prefixes:
                continue  # v3.0 allows a rule without an operator
            errors.append(([*parts, *extra], message, kind))
    for parts, message, _ in _dedupe_unevaluated(errors):
        problems.append(problem(parts, message))

    if any(p.severity == "error" for p in problems):
        return None, problems
    return ValidatedContract(source, str(raw_version), minor, document, rewrites), problems


def _relax_v30(view: dict) -> tuple[list[tuple], list[tuple]]:
    """v3.0 leaves quality rules, SLA items and servers open; relax the v3.1+ schema to match.

    Returns the prefixes whose schema errors do not apply to v3.0 at all (rules whose free-text
    v3.0 `rule` has no v3.1 metric), and the prefixes of objects that v3.0 leaves open to extra
    keys. Extra operators are trimmed from this validation copy only: v3.0 allows several.
    """
    ignored: list[tuple] = []
    open_prefixes: list[tuple] = []
    for parts, rule in quality_items(view):
        open_prefixes.append(tuple(parts))
        present = [op for op in OPERATORS if op in rule]
        for op in present[1:]:
            del rule[op]
        if "rule" in rule and "metric" not in rule:
            ignored.append(tuple(parts))
    for key in ("slaProperties", "servers", "roles"):  # v3.0 leaves these open; v3.1 closed them
        items = view.get(key)
        for i, _ in enumerate(items if isinstance(items, list) else []):
            open_prefixes.append((key, i))
    team = view.get("team")
    if isinstance(team, list):  # v3.0 team members are open and need no username
        for member in team:
            if isinstance(member, dict):
                for extra in [k for k in member if k not in _TEAM_MEMBER_KEYS]:
                    del member[extra]
                member.setdefault("username", "")
    return ignored, open_prefixes


_TEAM_MEMBER_KEYS = {"id", "username", "name", "description", "role", "dateIn", "dateOut",
                     "replacedByUsername", "tags", "customProperties", "authoritativeDefinitions"}
