"""The error tree. The CLI maps each family to an exit code and prints one line."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# C0 and C1 controls (ESC, CR, LF, the 8-bit CSI ...), DEL, the Unicode line and
# paragraph separators and the bidirectional overrides: characters that move a terminal's
# cursor, start an escape sequence, split a line or reorder what the reader sees
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """User text for one line of a terminal or log: every control character shown as its
    escape (ESC as `\\x1b`, a newline as `\\n`), so that a name can neither forge a
    second `error:` line nor move the cursor. Idempotent; other text is unchanged."""
    return _CONTROL.sub(_escape, str(text))


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    named = {9: "\\t", 10: "\\n", 13: "\\r"}
    return named.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


class PddPlanError(Exception):
    """Base of every expected error; `exit_code` is what the CLI returns."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where, what was found, what was expected."""

    file: str
    key_path: str
    found: str
    expected: str
    hint: str = ""

    def line(self) -> str:
        """One line whatever the user text holds (`visible`)."""
        where = f"{self.file}: {self.key_path}" if self.key_path else self.file
        text = f"{where}: found {self.found}; expected {self.expected}"
        return visible(f"{text} ({self.hint})" if self.hint else text)


class InputError(PddPlanError):
    """Bad input: one or more problems, each printed on its own line. Exit 2."""

    exit_code = 2

    def __init__(self, problems: list[Problem]):
        if not problems:
            raise ValueError("InputError needs at least one problem")
        self.problems = list(problems)
        super().__init__("\n".join(p.line() for p in self.problems))

    @classmethod
    def single(cls, file: str, key_path: str, found: str, expected: str, hint: str = ""):
        return cls([Problem(file, key_path, found, expected, hint)])


@contextmanager
def naming_file(placeholder: str, file: str) -> Iterator[None]:
    """Problems raised as `placeholder` (the model's checks of a plan cannot know its path
    and say `plan`) name `file` instead, so every line names the file to fix."""
    try:
        yield
    except InputError as exc:
        if not any(p.file == placeholder for p in exc.problems):
            raise
        problems = [dataclasses.replace(p, file=file) if p.file == placeholder else p
                    for p in exc.problems]  # fmt: skip
        raise InputError(problems) from None


class InfeasibleError(PddPlanError):
    """No plan can meet the SLA with what the scenario allows. Exit 3."""

    exit_code = 3


class SolverError(PddPlanError):
    """The MILP solver failed or timed out without a feasible plan. Exit 4."""

    exit_code = 4


class UnprovenError(PddPlanError):
    """No plan found, and none proven impossible: the search stopped at its time limit
    (or its evaluation cap) first. Exit 5 (3 means proven infeasible)."""

    exit_code = 5


class SaturatedError(InfeasibleError):
    """A queue is offered at least as much work as it can serve: no finite latency."""

    def __init__(self, what: str, offered: float, capacity: float, unit: str = ""):
        self.what, self.offered, self.capacity = what, offered, capacity
        unit = f" {unit}" if unit else ""
        load = f"offered load {offered:,.4g}{unit}"
        super().__init__(f"{what} is saturated: {load} >= capacity {capacity:,.4g}{unit}")
