"""The clause context: what one clause's function sees of its contract, object and property."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from dq_contracts.odcs.check_kinds import CHECK_KINDS
from dq_contracts.odcs.clauses.nested import any_classified
from dq_contracts.odcs.clauses.nested import classified as path_classified
from dq_contracts.odcs.clauses.nested import label, name_base, step_of, steps
from dq_contracts.odcs.clauses.vocabulary import Reason, severity_of
from dq_contracts.odcs.names import dagster_name
from dq_contracts.odcs.plans import CheckPlan, Condition, NotEnforced, Severity
from dq_contracts.odcs.folder import FolderIndex
from dq_contracts.odcs.loader import line_at
from dq_contracts.odcs.paths import named_step, pointer_step
from dq_contracts.odcs.plans import CLASSIFIED
from dq_contracts.odcs.problems import Problem, Reach
from dq_contracts.odcs.servers import server_type as server_type_of
from dq_contracts.odcs.servers import checkable, engine_type, server_handling, server_identity, sqlglot_dialect
from dq_contracts.odcs.validate import ValidatedContract


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
    # a nested property's (step, property) from its column down (clauses/nested.py); () at the top
    path: tuple = ()
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
        if self.path:  # a nested property: its column is the top one, its name the path
            self.column = step_of(self.path[0][1])
            self.property_name = label(self.path)

    def check(self, kind: str, suffix: str, description: str, *, rule: dict | None = None,
              conditions: tuple[Condition, ...] = (Condition("mustBe", 0),),
              params: dict | None = None, severity: str | None = None, unit: str = "rows",
              warn: tuple[Condition, ...] = ()) -> CheckPlan:
        rule = rule or {}
        if warn and not CHECK_KINDS[kind].warn_level:  # a compiler bug: the kind's row says no
            raise ValueError(f"check kind {kind!r} takes no warn level")
        base = name_base(self.path, self.contract.dagster_name) if self.path else \
            self.contract.dagster_name(self.property_name) if self.prop is not None else None
        default = f"{base}__{suffix}" if base is not None else suffix
        explicit = rule.get("id") or rule.get("name")
        return CheckPlan(
            name=dagster_name(str(explicit)) if explicit else default,
            kind=kind,
            clause=self.pointer,
            object=self.object_name,
            property=self.property_name,
            severity=severity or (severity_of(rule) if rule else Severity.ERROR),
            description=description,
            conditions=conditions,
            unit=unit,
            dimension=rule.get("dimension", CHECK_KINDS[kind].dimension),  # else the kind's own
            params={"column": self.column, **(self._nested_params() if self.path else {}), **(params or {})},
            rule_name=str(explicit) if explicit else None,
            line=self._place[1],
            where=self._place[3],
            warn_conditions=warn,
        )

    def _nested_params(self) -> dict[str, Any]:
        """What the engine needs of a nested property: its steps, its leaf's types, whether any
        property on the path is classified (its values are then never sampled)."""
        leaf = self.prop or {}
        return {"path": steps(self.path), "leaf_type": [leaf.get("logicalType"), leaf.get("physicalType")],
                "path_classified": path_classified(self.path, CLASSIFIED),
                "column_type": self.path[0][1].get("physicalType")}

    def fails(self, kind: str, suffix: str, description: str, reason: str, parts: list | None = None,
              severity: str = "error", **kwargs: Any) -> CheckPlan:
        """A clause that cannot run as written: a problem for `validate`, and a check that fails with
        the reason, so the rest of the contract still runs and nothing passes without having looked.
        `severity="warning"` where the official schema accepts the document (so `validate` agrees)."""
        self.contract.problem(parts or self.parts, reason, severity, reach=Reach.CLAUSE)
        check = self.check(kind, suffix, f"{description} (cannot run: it will fail)", **kwargs)
        return replace(check, params={**check.params, "refusal": reason})

    def skip(self, code: Reason | str, detail: str = "") -> NotEnforced:
        reason = Reason(code)  # a code outside the closed set is a bug here, not a clause it skips
        return NotEnforced(self.pointer, reason, reason.text + (f": {detail}" if detail else ""), self.object_name)

    def where(self) -> str:
        return f"{self.object_name}.{self.property_name}" if self.prop is not None else self.object_name



Outcome = CheckPlan | NotEnforced


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
        # why, per server ("kafka: a stream, not a table"): the detail of each clause it leaves unchecked
        self.no_sql_server_why = "; ".join(server_handling(s)[1] for s in servers) if self.no_sql_server else ""
        server_type = engine_type(sql_servers[0]) if sql_servers else None
        first = server_type_of(str(sql_servers[0].get("type"))) if sql_servers else None
        # what decides whether a nested property's values can be addressed (clauses/nested.refusal)
        self.nested_engine: tuple[str | None, str | None] = (
            None if first is None else "duckdb" if first.files else first.dialect,
            (str(sql_servers[0].get("format") or "").lower() or None) if sql_servers else None)
        self.server = (server_identity(sql_servers[0], os.path.dirname(os.path.abspath(validated.file)))
                       if sql_servers else None)
        self.dialect = sqlglot_dialect(server_type)
        self._dagster_names: dict[str, str] = {}
        self._rule_tables: dict[str, dict[str, bool]] | None = None
        self._places: dict[tuple, tuple[str, int | None, int | None, str, Any]] = {}

    def problem(self, parts: list, message: str, severity: str = "error", reach: Reach = Reach.CONTRACT) -> None:
        self.problems.append(Problem(self.validated.file, message, self.named_path(parts), self.line_of(parts),
                                     severity, reach))

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
                    str(p.get("physicalName") or p.get("name")): any_classified(p, CLASSIFIED)
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
