"""The answer when an architecture has no plan: the limit it cannot meet, by how much,
and a relaxation that suffices (or, where none was found, a bound).

1. the elastic MILP (elastic.py): where even its linear capacities cannot fit the
   scenario's limits (GPUs, power, budgets, lines), the limits to break and by how much;
2. else the solve's own figures (SolveResult.reason and .shortfalls: nearest.py, how close
   the plans come to the SLA and the utilisation cap, or what the closest plan that
   meets them breaks);
3. else (neither has a figure) what was tried, summarised.
Every figure an answer offers is then set in the scenario and solved again (relax.py).
"""

from __future__ import annotations

from pdd_plan.plan import elastic as el
from pdd_plan.plan import relax
from pdd_plan.plan.shortfalls import RELAX, line_of, shortfall_json, tried_summary


def infeasible_answer(
    scenario, model, gpus, tiers, architecture, attempts, resolution, time_limit_s=30.0,
    solved: tuple[str, list[dict]] = ("", []),
) -> tuple[str, list[dict]]:  # fmt: skip
    """One line and the shortfalls as data (the module doc). `solved`: the solve's own
    reason and shortfalls (SolveResult.reason, .shortfalls)."""
    found = el.why_infeasible(
        scenario, model, gpus, tiers, architecture, attempts, resolution, time_limit_s
    )
    run = (model, gpus, tiers, architecture, resolution, time_limit_s)
    if found:
        checked = relax.checked(scenario, [shortfall_json(s) for s in found.shortfalls], run)
        p = found.policy
        how = (
            "solved again with the figures shown"
            if any(s["sufficient"] for s in checked)
            else f"elastic MILP at utilisation cap {found.utilization_cap_frac:.2f}"
        )
        what = "; ".join(map(line_of, checked))
        text = (f"no {architecture} plan fits the scenario's limits: {what} ({how}; threshold "
                f"{p.rld_hit_threshold:g} {p.handoff})")  # fmt: skip
        return with_relaxations(text, checked), checked
    reason, shortfalls = solved
    if shortfalls:
        checked = relax.checked(scenario, shortfalls, run)
        # the solve's line says what suffices as the solve saw it; the check may say less
        return with_relaxations(reason.split(RELAX)[0], checked), checked
    return (
        f"no {architecture} plan within the scenario's limits meets the SLA "
        f"({tried_summary(attempts)})",
        [],
    )


def infeasible_message(*args, **kwargs) -> str:
    """`infeasible_answer`'s line."""
    return infeasible_answer(*args, **kwargs)[0]


def with_relaxations(text: str, shortfalls: list[dict]) -> str:
    """The reason with the relaxations that suffice (each once), when there are any."""
    enough = dict.fromkeys(
        s["relaxation"] for s in shortfalls if s.get("sufficient") and s["relaxation"] not in text
    )
    return f"{text}{RELAX}{'; '.join(enough)}" if enough else text
