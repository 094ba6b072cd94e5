"""`solve`'s answer when the search stopped before it found a plan or proved there is none.

Infeasible (exit 3) is a proof: a ceiling refused the scenario, or the walk of every plan
in cost order finished without one meeting the SLA. When the walk stops first (at the
time limit, which set-up counts against, or at search.MAX_EVALUATIONS), nothing is
proven: the answer says so, with its own status ("unproven") and exit code (5), what
stopped it, and the one figure the walk did establish: every plan cheaper than the cost
it had reached was checked, so any plan that meets the SLA costs at least that much.
"""

from __future__ import annotations

import math

from pdd_plan.plan.search import STOP_EVALUATIONS
from pdd_plan.stages.solving.infeasible import no_plan_answer

STATUS = "unproven"


def stop_json(result, time_limit_s: float) -> dict:
    """`solver.stopped` of an unproven or merely feasible SolveResult."""
    floor = result.walked_below_usd_per_hour
    if result.deployment is not None:
        floor = 0.0  # a plan was found: the bound says nothing about what is needed
    return {
        "proven": False,
        "stopped_by": result.stopped_by,
        "time_limit_s": time_limit_s,
        "evaluations": result.evaluations,
        # any plan that meets the SLA costs at least this (the walk checked every cheaper)
        "cost_at_least_usd_per_hour": floor if floor and math.isfinite(floor) else None,
    }


def reason(result: dict) -> str:
    """One line: not proven, what stopped the search, the lower bound, what to try."""
    stop = result.get("solver", {}).get("stopped", {})
    by = stop.get("stopped_by") or "a limit"
    text = f"no plan found, not proven infeasible: the search stopped at its {by}"
    if stop.get("time_limit_s") is not None and by.startswith("time limit"):
        text += f" ({stop['time_limit_s']:g} s)"
    text += f" after {stop.get('evaluations', 0):,} plan evaluations"
    floor = stop.get("cost_at_least_usd_per_hour")
    if floor:
        text += f"; every plan below ${floor:,.2f}/h was ruled out"
    if by == STOP_EVALUATIONS:
        return text + "; a longer --time-limit does not lift the evaluation cap"
    return text + "; try a longer --time-limit"


def answer(scenario_name: str, solved: dict, solved_each: tuple[dict, ...]) -> dict:
    """{"scenario", "status": "unproven", "plan": None, "metrics": None, "reason",
    "stopped": [{"architecture", "status", "reason", ...solver.stopped}]}: each
    architecture's outcome (the proven infeasible ones with their reasons too)."""
    entries = list(solved_each) or [solved]
    stopped, reasons = [], []
    for e in entries:
        arch = e.get("architecture", "")
        why = e.get("reason") or (reason(e) if e.get("status") == STATUS else "")
        stopped.append({"architecture": arch, "status": e.get("status"), "reason": why,
                        **e.get("solver", {}).get("stopped", {})})  # fmt: skip
        reasons.append(f"{arch}: {why}" if len(entries) > 1 else why)
    text = "; ".join(reasons)
    if len(entries) > 1:
        text = f"no plan found, not proven infeasible: {text}"
    return no_plan_answer(scenario_name, STATUS, text, solved, stopped=stopped)
