"""Did-you-mean hints for ids, keys and choices a user mistyped.

Ids are compared as a user means them (case and separators aside), then by prefix, then by
spelling; a hint is only ever a hint: the input is still refused.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

_SEPARATORS = re.compile(r"[-. ]")
_MAX_LISTED = 5  # prefix matches named in one hint


def normalised(word: Any) -> str:
    """An id as a user might have meant it: lower case, `-`, `.` and spaces as `_`."""
    return _SEPARATORS.sub("_", str(word).strip().lower())


def suggestions(word: Any, choices) -> list[str]:
    """The choices `word` most likely meant, best first: the same id up to case and
    separators; else every choice it is a prefix of (`h20` -> `h20_96g`); else the
    closest spelling. Empty when nothing is close: a far name gets no guess."""
    options = sorted({str(c) for c in choices})
    key = normalised(word)
    if not key:
        return []
    same = [c for c in options if normalised(c) == key]
    if same:
        return same
    # a whole leading part (`h20` of `h20_96g`) before any prefix (`h20` of `h200_sxm`);
    # a single character is a prefix of too much to be a guess
    for head in (key + "_", key):
        starts = [c for c in options if len(key) >= 2 and normalised(c).startswith(head)]
        if starts:
            return starts
    by_norm = {normalised(c): c for c in options}
    close = difflib.get_close_matches(key, list(by_norm), n=1, cutoff=0.6)
    return [by_norm[c] for c in close]


def did_you_mean(word: Any, choices) -> str:
    """A hint naming what `word` probably meant, or "" (never a silent correction:
    the caller still reports the problem)."""
    found = suggestions(word, choices)
    if not found:
        return ""
    if len(found) == 1:
        return f"did you mean {found[0]!r}?"
    listed = ", ".join(repr(c) for c in found[:_MAX_LISTED])
    more = f" (and {len(found) - _MAX_LISTED} more)" if len(found) > _MAX_LISTED else ""
    return f"did you mean one of {listed}{more}?"
