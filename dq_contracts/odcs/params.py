"""What each check kind needs from its clause: typed parameters, one class per family of kinds
(each kind's row in `check_kinds.CHECK_KINDS` names its class)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Params(Mapping):
    """A check's parameters, typed per kind and read like a mapping (`params["column"]`); a key the
    kind does not declare is an error where the plan is built, not a crash where it runs."""

    column: str | None = None
    refusal: str | None = None  # set when the clause cannot run as written: the check fails with it
    # a nested property (clauses/nested.py): the steps below `column` (a field's name, or `[]` into an
    # array's items), its leaf's [logicalType, physicalType], whether any property on the way is
    # classified (its values are then never sampled)
    path: list[str] | None = None
    leaf_type: list[Any] | None = None
    path_classified: bool = False
    column_type: str | None = None  # the column's physicalType: a JSON column's members are read as JSON

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class KeyParams(Params):  # unique, primary_key, duplicate_values
    columns: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RangeParams(Params):
    bound: Any = None
    lower: bool = True
    strict: bool = False
    logical_type: str | None = None


@dataclass(frozen=True)
class LengthParams(Params):
    bound: int = 0
    lower: bool = True


@dataclass(frozen=True)
class PatternParams(Params):
    pattern: str = ""
    format: str | None = None


@dataclass(frozen=True)
class ValuesParams(Params):  # accepted_values, missing_values
    values: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class InvalidParams(Params):
    valid_values: list[Any] | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class MultipleParams(Params):
    divisor: float = 1


@dataclass(frozen=True)
class FreshnessParams(Params):
    max_age_seconds: float = 0
    logical_type: str | None = None


@dataclass(frozen=True)
class RelationshipParams(Params):
    columns: list[str] = field(default_factory=list)
    target_object: str = ""
    target_table: str = ""
    target_columns: list[str] = field(default_factory=list)
    target_contract: str | None = None  # the target's contract id when it is another contract of the folder
    target_classified: bool = False  # the target object holds a classified column


@dataclass(frozen=True)
class SqlParams(Params):
    query: str = ""
    # what the rule may read: the contract's objects on its server, {physical table: {column: classified}}
    tables: dict[str, dict[str, bool]] = field(default_factory=dict)


@dataclass(frozen=True)
class SchemaParams(Params):
    columns: list[dict[str, Any]] = field(default_factory=list)  # name, physical_type, logical_type, required
