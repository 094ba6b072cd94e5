"""Infeasibility in words and as data: the elastic MILP's shortfalls (elastic.py) with
the scenario key that lifts each, and solve's attempts summarised by outcome."""

from __future__ import annotations

import math

from pdd_plan.plan.figures import up_fixed


def tried_summary(attempts) -> str:
    """The attempts grouped by outcome, one clause each (not one per policy and cap)."""
    if not attempts:
        return "the MILP fits every limit; evaluate finds the SLA missed"
    groups: dict[str, list] = {}
    for a in attempts:
        groups.setdefault(a.outcome, []).append(a)
    parts = []
    for outcome, group in groups.items():
        thresholds = "/".join(f"{t:g}" for t in sorted({a.policy.rld_hit_threshold for a in group}))
        handoffs = "/".join(sorted({a.policy.handoff for a in group}))
        caps = [a.utilization_cap_frac for a in group]
        cap = f"cap {max(caps):.2f}"
        if min(caps) < max(caps):
            cap += f" down to {min(caps):.2f}"
        times = f"{len(group)} attempts" if len(group) > 1 else "1 attempt"
        parts.append(f"{outcome}: {times}, threshold {thresholds} {handoffs}, utilisation {cap}")
    return "; ".join(parts)


def shortfall_json(s) -> dict:
    """One shortfall as `solve --format json` shows it: the limit, what is needed, what
    the scenario has, the unit and the change that lifts it."""
    f = s.family
    return {
        "limit": f.subject,
        "kind": f.family,
        "needs": s.needs,
        "has": s.limit,
        "unit": f.unit,
        "relaxation": relaxation(s),
    }


def relaxation(s) -> str:
    """The scenario key to change, and to what, for one shortfall."""
    f, needs = s.family, s.needs
    if f.family == "availability":
        dc, gpu = f.where
        return f"datacenters[{dc}].gpus[{gpu}].max_gpus at least {math.ceil(needs - 1e-9)}"
    if f.family == "power":
        return f"datacenters[{f.where[0]}].power_budget_kw at least {up_fixed(needs, 1)}"
    if f.family == "budget":
        key = f"datacenters[{f.where[0]}]." if f.where else "objective."
        return f"{key}budget_usd_per_hour at least {up_fixed(needs, 2)}"
    if f.subject == "WAN lines":
        return f"wan.max_lines at least {math.ceil(needs - 1e-9)}"
    if f.family == "line":
        return "a larger tier in wan.tiers, or more wan.max_lines"
    return f"more {f.subject}: more GPUs or larger instance shapes where it may run"
