"""Problems found in contracts: what is wrong, in which file, at which line and document path.

Every stage (load, validate, compile) returns problems instead of raising, so that one run of
`dq-contracts validate` reports every problem of a whole folder at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    message: str
    path: str = ""  # the path inside the document, written with names: schema.orders.properties.id
    line: int | None = None
    severity: str = "error"  # "error" or "warning"
    # "contract": the contract cannot be used as written; "clause": one clause cannot run as written
    # and becomes a failed check, while the rest of the contract still runs
    scope: str = "contract"

    def render(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        label = "" if self.severity == "error" else "warning: "
        path = f"{self.path}: " if self.path else ""
        return f"{where}: {label}{path}{self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
            "scope": self.scope,
        }


class ContractError(Exception):
    """Raised by the Dagster layer when contracts cannot be turned into definitions."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        errors = [p for p in self.problems if p.severity == "error"]
        lines = "\n".join(f"  {p.render()}" for p in errors[:50])
        more = f"\n  … and {len(errors) - 50} more" if len(errors) > 50 else ""
        super().__init__(f"{len(errors)} problem(s) in data contracts:\n{lines}{more}")


def errors_of(problems: Sequence[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def contract_errors_of(problems: Sequence[Problem]) -> list[Problem]:
    """The errors that keep a contract from running at all (not those confined to one clause)."""
    return [p for p in problems if p.severity == "error" and p.scope == "contract"]
