"""`solve` without `--architecture`: the architecture is a decision, not a default.

Each architecture the scenario allows is optimised alone (the same path as `compare`),
and the winner is the plan with the best objective; the runner-up, the ratio between the
two and the cost or limit that decides are reported beside it.

The objective compared is the one each solve optimised (search.py's `Goal`):
- max_bcr: min(goodput, BCR_HEADROOM x offered) / cost: goodput beyond the headroom earns
  nothing, so a plan does not win by carrying load nobody asked for;
- min_cost: cost per hour at the demand (lower wins);
- max_goodput: goodput within the budget, capped at GOODPUT_HEADROOM x offered.
Ties (values within TIE_REL_TOL) go to the cheaper plan, then to the architecture listed
first in the scenario's `architectures`.
"""

from __future__ import annotations

from pdd_plan.errors import InfeasibleError
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease
from pdd_plan.model.evaluate import deployment_cost_usd_per_hour
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import GBIT_BITS
from pdd_plan.plan.search import BCR_HEADROOM, GOODPUT_HEADROOM, IMPROVE_REL_TOL
from pdd_plan.report.md_format import ARCH_NAMES

TIE_REL_TOL = IMPROVE_REL_TOL  # the search does not tell closer values apart either
BASIS = {
    "max_bcr": "min(goodput, 1.5 x offered) / cost per hour, req/s per $/h (higher wins)",
    "min_cost": "cost per hour at the demand, $/h (lower wins)",
    "max_goodput": "goodput within the budget, up to 10 x offered, req/s (higher wins)",
}
TIE_RULE = "ties within 0.1 % go to the cheaper plan, then to the scenario's order"


def objective_value(s: Scenario, metrics: dict) -> float:
    """The value solve maximised for this plan (min_cost: minus the cost)."""
    kind, offered = s.objective.kind, s.workload.arrival_rate_per_s
    cost = metrics["cost_usd_per_hour"]
    if kind == "min_cost":
        return -cost
    if kind == "max_bcr":
        return min(metrics["goodput_rps"], BCR_HEADROOM * offered) / cost if cost > 0 else 0.0
    return min(metrics["goodput_rps"], GOODPUT_HEADROOM * offered)


def shown_value(s: Scenario, value: float) -> float:
    """The objective as a user reads it: a cost is positive."""
    return -value if s.objective.kind == "min_cost" else value


def rank(s: Scenario, results: list[dict]) -> list[dict]:
    """The results with a plan, best first (the module's tie rule)."""
    order = {a: i for i, a in enumerate(s.architectures)}
    with_plan = [r for r in results if r.get("metrics") and r.get("plan")]
    best_first = sorted(
        with_plan,
        key=lambda r: (
            -objective_value(s, r["metrics"]),
            r["metrics"]["cost_usd_per_hour"],
            order.get(r["architecture"], len(order)),
        ),
    )
    # values within the tolerance of the best are a tie: the cheaper, then the listed first
    if len(best_first) > 1:
        top = objective_value(s, best_first[0]["metrics"])
        tied = [r for r in best_first if _close(objective_value(s, r["metrics"]), top)]
        rest = [r for r in best_first if r not in tied]
        tied.sort(
            key=lambda r: (
                r["metrics"]["cost_usd_per_hour"],
                order.get(r["architecture"], len(order)),
            )
        )
        best_first = tied + rest
    return best_first


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TIE_REL_TOL * max(abs(a), abs(b))


def ratio(s: Scenario, winner: dict, runner_up: dict | None) -> float | None:
    """How many times better the winner is (>= 1): the runner-up's cost over the winner's
    for min_cost, the winner's value over the runner-up's otherwise."""
    if runner_up is None:
        return None
    w = objective_value(s, winner["metrics"])
    r = objective_value(s, runner_up["metrics"])
    if s.objective.kind == "min_cost":
        return -r / -w if w else None
    return w / r if r > 0 else None


def candidates(s: Scenario, results: list[dict]) -> list[dict]:
    out = []
    for r in results:
        m = r.get("metrics")
        out.append(
            {
                "architecture": r["architecture"],
                "status": r["status"],
                "objective_value": shown_value(s, objective_value(s, m)) if m else None,
                "cost_usd_per_hour": m["cost_usd_per_hour"] if m else None,
                "goodput_rps": m["goodput_rps"] if m else None,
                **({"reason": r["reason"]} if r.get("reason") else {}),
            }
        )
    return out


def choice(s: Scenario, results: list[dict], catalog) -> dict:
    """`architecture_choice`: winner, runner-up, the ratio, why, and every candidate."""
    ranked = rank(s, results)
    winner = ranked[0]
    runner_up = ranked[1] if len(ranked) > 1 else None
    return {
        "winner": winner["architecture"],
        "runner_up": runner_up["architecture"] if runner_up else None,
        "objective": s.objective.kind,
        "objective_basis": BASIS[s.objective.kind],
        "ratio": ratio(s, winner, runner_up),
        "reason": reason(s, winner, runner_up, results, catalog),
        "tie_rule": TIE_RULE,
        "candidates": candidates(s, results),
    }


# --- why the winner wins ---------------------------------------------------------------


def _deployment(plan: dict) -> Deployment:
    groups = tuple(
        InstanceGroup(g["role"], g["datacenter"], g["gpu"], g["gpus_per_instance"], g["count"])
        for g in plan["instances"]
    )
    lines = tuple(
        LineLease(ln["tier"], ln["capacity_gbit_per_s"] * GBIT_BITS, ln["count"])
        for ln in plan["lines"]
    )
    return Deployment(plan["architecture"], groups, lines)


PART_OF_ROLE = {"main_decode": "decode"}  # the same job under two architectures' names


def cost_by_part(s: Scenario, plan: dict, catalog) -> dict[str, float]:
    """$/h per part (a role, main decode counted as decode, and the line), with the
    answer's own cost formula."""
    d = _deployment(plan)
    parts: dict[str, float] = {}
    for g in d.instances:
        alone = Deployment(d.architecture, (g,))
        cost = deployment_cost_usd_per_hour(s, alone, catalog.gpus, catalog.lines)
        part = PART_OF_ROLE.get(g.role, g.role)
        parts[part] = parts.get(part, 0.0) + cost
    if d.lines:
        line_only = Deployment(d.architecture, (), d.lines)
        parts["line"] = deployment_cost_usd_per_hour(s, line_only, catalog.gpus, catalog.lines)
    return parts


def _what(result: dict, part: str) -> tuple[str, float]:
    """The part as a reader counts it ("24 h100_sxm GPUs", "1 x wave_10g") and its
    utilisation in the result."""
    plan, util = result["plan"], result["metrics"]["role_utilization_frac"]
    if part == "line":
        lines = " + ".join(f"{ln['count']} x {ln['tier']}" for ln in plan["lines"])
        return lines, util.get("wan_line", 0.0)
    mine = [g for g in plan["instances"] if PART_OF_ROLE.get(g["role"], g["role"]) == part]
    n = sum(g["gpus_per_instance"] * g["count"] for g in mine)
    types = "/".join(sorted({g["gpu"] for g in mine}))
    return f"{n} {types} GPUs", max((util.get(g["role"], 0.0) for g in mine), default=0.0)


def reason(s: Scenario, winner: dict, runner_up: dict | None, results, catalog) -> str:
    """One sentence: what decides between the winner and the runner-up."""
    w_name = ARCH_NAMES[winner["architecture"]]
    if runner_up is None:
        failed = [r for r in results if r is not winner]
        if not failed:
            return f"{w_name} is the only architecture the scenario allows"
        others = "; ".join(
            f"{ARCH_NAMES[r['architecture']]}: {r.get('reason') or 'no plan'}" for r in failed
        )
        return f"{w_name} is the only architecture with a plan ({others})"
    r_name = ARCH_NAMES[runner_up["architecture"]]
    wm, rm = winner["metrics"], runner_up["metrics"]
    if s.objective.kind != "min_cost":
        served = (min(wm["goodput_rps"], _cap(s)), min(rm["goodput_rps"], _cap(s)))
        if served[0] > served[1] * (1 + TIE_REL_TOL):
            limit = rm.get("binding_role") or "its SLA"
            return (
                f"{w_name} serves {wm['goodput_rps']:.3g} req/s against {r_name}'s "
                f"{rm['goodput_rps']:.3g}, which its {limit} limits ($"
                f"{wm['cost_usd_per_hour']:,.2f}/h against ${rm['cost_usd_per_hour']:,.2f}/h)"
            )
    return _cost_reason(s, winner, runner_up, catalog)


def _cap(s: Scenario) -> float:
    offered = s.workload.arrival_rate_per_s
    return (BCR_HEADROOM if s.objective.kind == "max_bcr" else GOODPUT_HEADROOM) * offered


def _cost_reason(s: Scenario, winner: dict, runner_up: dict, catalog) -> str:
    """The part (role or line) the runner-up spends most more on than the winner, with its
    share of the runner-up's cost and its utilisation there."""
    w_name, r_name = (ARCH_NAMES[x["architecture"]] for x in (winner, runner_up))
    w_cost = winner["metrics"]["cost_usd_per_hour"]
    r_cost = runner_up["metrics"]["cost_usd_per_hour"]
    head = f"{w_name} costs ${w_cost:,.2f}/h against {r_name}'s ${r_cost:,.2f}/h"
    if w_cost >= r_cost:  # better by what it serves, at no lower cost
        gp = (winner["metrics"]["goodput_rps"], runner_up["metrics"]["goodput_rps"])
        return f"{head} and serves {gp[0]:.3g} req/s against {gp[1]:.3g}"
    w_parts = cost_by_part(s, winner["plan"], catalog)
    r_parts = cost_by_part(s, runner_up["plan"], catalog)
    diffs = {p: r_parts.get(p, 0.0) - w_parts.get(p, 0.0) for p in {*w_parts, *r_parts}}
    part = max(sorted(diffs), key=diffs.get)
    label = "line" if part == "line" else f"{part} instances"
    what, util = _what(runner_up, part)
    cost = r_parts.get(part, 0.0)
    share = cost / r_cost if r_cost > 0 else 0.0
    text = (
        f"{head}: {r_name}'s {label} are {what} (${cost:,.2f}/h, {share:.0%} of its cost) "
        f"at {_pct(util)} {'load' if part == 'line' else 'utilisation'}"
    )
    if part not in w_parts:
        return f"{text}; {w_name} needs no {label}"
    mine, _ = _what(winner, part)
    return f"{text}, against {w_name}'s {mine} (${w_parts[part]:,.2f}/h)"


def _pct(frac: float) -> str:
    """A share with the digits that show it (0.2 %, not 0 %)."""
    return f"{frac:.0%}" if frac >= 0.1 or frac == 0 else f"{frac:.1%}"


# --- solving each ----------------------------------------------------------------------


def infeasible_entry(s: Scenario, arch: str, exc: InfeasibleError) -> dict:
    return {
        "scenario": s.name,
        "status": "infeasible",
        "plan": None,
        "metrics": None,
        "architecture": arch,
        "reason": str(exc),
        "shortfalls": list(getattr(exc, "shortfalls", ())),
    }
