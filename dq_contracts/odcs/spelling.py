"""What a misspelt word of a contract was meant to be: the "did you mean" of its errors and warnings."""

from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: object, candidates: Iterable[object]) -> str:
    """` (did you mean 'x'?)` for the closest of `candidates` to a misspelt word, or "" when none is close."""
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""
