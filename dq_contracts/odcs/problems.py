"""Problems found in contracts: what is wrong, in which file, at which line and document path.

Every stage (load, validate, compile) returns problems instead of raising, so that one run of
`dq-contracts validate` reports every problem of a whole folder at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from dq_contracts.odcs.closed_sets import StrEnum
from typing import Any, Sequence

from dq_contracts.odcs.visible import one_line, visible_all


class ProblemSeverity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Reach(StrEnum):
    """How much of its contract a problem keeps from running."""

    CONTRACT = "contract"  # the contract cannot be used as written
    CLAUSE = "clause"  # one clause cannot run as written and becomes a failed check; the rest still runs


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    message: str
    path: str = ""  # the path inside the document, written with names: schema.orders.properties.id
    line: int | None = None
    severity: ProblemSeverity = ProblemSeverity.ERROR
    reach: Reach = Reach.CONTRACT

    def __post_init__(self) -> None:  # closed sets: a severity or reach spelled otherwise is refused here
        object.__setattr__(self, "severity", ProblemSeverity(self.severity))
        object.__setattr__(self, "reach", Reach(self.reach))
        object.__setattr__(self, "message", visible_all(self.message))  # for people: nothing hidden or reordered
        object.__setattr__(self, "path", visible_all(self.path))

    def render(self) -> str:
        where = visible_all(self.file if self.line is None else f"{self.file}:{self.line}")
        label = "" if self.severity == ProblemSeverity.ERROR else "warning: "
        path = f"{self.path}: " if self.path else ""
        return f"{where}: {label}{path}{self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
            "scope": self.reach,  # the key as it was first published
        }


class ContractError(Exception):
    """Raised by the Dagster layer when contracts cannot be turned into definitions."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        errors = errors_of(self.problems)
        lines = "\n".join(f"  {one_line(p.render())}" for p in errors[:50])
        more = f"\n  … and {len(errors) - 50} more" if len(errors) > 50 else ""
        super().__init__(f"{len(errors)} problem(s) in data contracts:\n{lines}{more}")


def errors_of(problems: Sequence[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == ProblemSeverity.ERROR]


def contract_errors_of(problems: Sequence[Problem]) -> list[Problem]:
    """The errors that keep a contract from running at all (not those confined to one clause)."""
    return [p for p in problems if p.severity == ProblemSeverity.ERROR and p.reach == Reach.CONTRACT]
