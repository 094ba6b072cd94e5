"""`solve`'s answer when no plan exists: one line of reason and the shortfalls as data.

For a forced architecture, the reason is the one solve raised (a ceiling, an SLA floor or
no candidate, refused before the search), or for a walk that found no plan the elastic
MILP's diagnosis, else the solve's own (how close its plans came: plan/nearest.py). Each
answer's figures are then solved again (plan/relax.py): a relaxation reads "set KEY to X
(enough: ...)" only where it was shown to suffice. When solve chose among architectures,
each one's reason is given, the shortfalls of all.
"""

from __future__ import annotations

import dataclasses

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.scenario import Scenario
from pdd_plan.report.md_format import ARCH_NAMES


def answer(
    s: Scenario,
    architecture: str | None,
    solved: dict,
    solved_each: tuple[dict, ...],
    catalog: Catalog,
    resolution,
    time_limit_s: float,
) -> dict:
    """{"scenario", "status": "infeasible", "plan": None, "metrics": None, "reason",
    "shortfalls": [{"architecture", "limit", "needs", "has", "unit", "relaxation"}]}."""
    if architecture is not None or not solved_each:
        arch = architecture or (s.architectures[0] if s.architectures else "pdd")
        entries = [{**solved, "architecture": arch}]
    else:
        entries = list(solved_each)
    reasons, shortfalls = [], []
    for entry in entries:
        reason, found = _why(s, entry, catalog, resolution, time_limit_s)
        reasons.append((entry["architecture"], reason))
        shortfalls += [{"architecture": entry["architecture"], **f} for f in found]
    if len(reasons) == 1:
        text = reasons[0][1]
    else:
        each = "; ".join(f"{ARCH_NAMES.get(a, a)}: {r}" for a, r in reasons)
        text = f"no architecture the scenario allows has a plan: {each}"
    return no_plan_answer(s.name, "infeasible", text, solved, shortfalls=shortfalls)


def no_plan_answer(scenario_name: str, status: str, reason: str, solved: dict, **why) -> dict:
    """The JSON answer when no plan is given (infeasible or unproven): status, reason, the
    figures behind it (`why`) and the architecture choice the solve made, if any."""
    out = {"scenario": scenario_name, "status": status, "plan": None, "metrics": None,
           "reason": reason, **why}  # fmt: skip
    if "architecture_choice" in solved:
        out["architecture_choice"] = solved["architecture_choice"]
    return out


def _why(s: Scenario, entry: dict, catalog, resolution, time_limit_s) -> tuple[str, list]:
    """One architecture's reason and shortfalls, each relaxation checked (plan/relax.py)."""
    from pdd_plan.plan.candidates import default_policy
    from pdd_plan.plan.relax import checked
    from pdd_plan.plan.solve import Attempt
    from pdd_plan.plan.why_none import infeasible_answer, with_relaxations

    run = (s, catalog.model_for(s), catalog.gpus, catalog.lines, entry["architecture"])
    error = entry.get("error")
    if error is not None or "solver" not in entry:  # raised by solve before its search
        reason = str(error) if error is not None else entry.get("reason", "no plan")
        found = list(getattr(error, "shortfalls", entry.get("shortfalls", ())))
        if not found:  # no candidate for a role: the elastic MILP has the figures
            found = infeasible_answer(*run, [], resolution, time_limit_s)[1]
            if found:
                reason += " (" + "; ".join(map(_figures, found)) + ")"
        found = checked(run[0], found, (*run[1:], resolution, time_limit_s))
        return with_relaxations(reason, found), found
    base = default_policy(s)
    attempts = [
        Attempt(
            dataclasses.replace(
                base, rld_hit_threshold=a["rld_hit_threshold"], handoff=a["handoff"]
            ),
            a["utilization_cap_frac"],
            a["outcome"],
        )
        for a in entry["solver"]["policies_tried"]
    ]
    solved = (entry.get("reason", ""), entry.get("shortfalls", []))
    return infeasible_answer(*run, attempts, resolution, time_limit_s, solved)


def _figures(shortfall: dict) -> str:
    f = shortfall
    return (
        f"{f['limit']}: needs {f['needs']:,.4g} {f['unit']}, has {f['has']:,.4g}; "
        f"relax: {f['relaxation']}"
    )
