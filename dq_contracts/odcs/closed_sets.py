"""`StrEnum` for the closed sets (severity, status, reasons, problem reach): members are their
strings, so comparisons, f-strings and JSON stay byte-identical. Python 3.10 has no StrEnum."""

from __future__ import annotations

import enum

if hasattr(enum, "StrEnum"):
    StrEnum = enum.StrEnum
else:  # pragma: no cover - Python 3.10
    class StrEnum(str, enum.Enum):  # type: ignore[no-redef]
        __str__ = str.__str__
        __format__ = str.__format__
