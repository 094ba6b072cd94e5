"""The error tree. The CLI maps each family to an exit code and prints one line."""

from __future__ import annotations

from dataclasses import dataclass


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
        where = f"{self.file}: {self.key_path}" if self.key_path else self.file
        text = f"{where}: found {self.found}; expected {self.expected}"
        return f"{text} ({self.hint})" if self.hint else text


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


class InfeasibleError(PddPlanError):
    """No plan can meet the SLA with what the scenario allows. Exit 3."""

    exit_code = 3


class SolverError(PddPlanError):
    """The MILP solver failed or timed out without a feasible plan. Exit 4."""

    exit_code = 4


class SaturatedError(InfeasibleError):
    """A queue is offered at least as much work as it can serve: no finite latency."""

    def __init__(self, what: str, offered: float, capacity: float, unit: str = ""):
        self.what, self.offered, self.capacity = what, offered, capacity
        unit = f" {unit}" if unit else ""
        load = f"offered load {offered:,.4g}{unit}"
        super().__init__(f"{what} is saturated: {load} >= capacity {capacity:,.4g}{unit}")
