"""The recommendation of `solve` as one sentence (the table's first line, the report's
first screen): which architecture, over which, by how much, and why."""

from __future__ import annotations

from pdd_plan.report.md_format import ARCH_NAMES

WHAT = {"max_bcr": "the BCR", "max_goodput": "the goodput"}


def recommendation(choice: dict) -> str:
    """`architecture_choice` (api.solve_choosing) as a sentence."""
    winner = ARCH_NAMES.get(choice["winner"], choice["winner"])
    runner_up, ratio = choice.get("runner_up"), choice.get("ratio")
    if not runner_up or ratio is None:
        return f"recommended: {winner} ({choice['reason']})"
    other = ARCH_NAMES.get(runner_up, runner_up)
    if choice["objective"] == "min_cost":
        by = f"the runner-up, {other}, costs {ratio:.3g}x as much"
    else:
        by = f"{ratio:.3g}x {WHAT[choice['objective']]} of the runner-up, {other}"
    return f"recommended: {winner}, {by}. Why: {choice['reason']}"
