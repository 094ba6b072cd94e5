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


def _counted_rps(choice: dict, c: dict) -> float:
    """The goodput the ranking counted for candidate `c` (its objective undone)."""
    if choice["objective"] == "max_bcr":
        return c["objective_value"] * c["cost_usd_per_hour"]
    return c["objective_value"]


def capped_note(choice: dict, offered_rps: float | None) -> str:
    """Where the ranking counted less goodput than a finalist serves (max_bcr and
    max_goodput count it only up to a multiple of the offered rate, choose.py), the ratio
    is not the one of the full figures the architectures table shows: say so, with the
    figures. Empty where nothing was capped."""
    if choice.get("objective") not in WHAT or not choice.get("runner_up") or not offered_rps:
        return ""
    finalists = (choice["winner"], choice["runner_up"])
    capped = []
    for c in choice.get("candidates") or []:
        if c["architecture"] not in finalists or c.get("objective_value") is None:
            continue
        counted = _counted_rps(choice, c)
        if counted < c["goodput_rps"] * (1 - 1e-9):
            name = ARCH_NAMES.get(c["architecture"], c["architecture"])
            capped.append((name, c["goodput_rps"], counted))
    if not capped:
        return ""
    cap = capped[0][2] / offered_rps
    each = " and ".join(f"{n}'s {g:.3g} req/s counts as {k:.3g}" for n, g, k in capped)
    return (f"as `solve` ranks: goodput counts up to {cap:.3g}x the offered {offered_rps:.3g} "
            f"req/s, so {each}; the table of architectures shows the full figures")  # fmt: skip
