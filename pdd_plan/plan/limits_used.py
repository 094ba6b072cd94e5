"""What a plan uses of each limit of the scenario (GPU availability, power, each budget,
wan.max_lines), and the limits it breaks, each with the figure that lets it fit: set to
those figures together, the scenario allows the plan."""

from __future__ import annotations

import math
from dataclasses import replace

from pdd_plan.plan.figures import up_fixed
from pdd_plan.plan.shortfalls import Miss, enough
from pdd_plan.plan.space import _cache_spend

OVER_REL = 1e-12  # as Spaces.allowed and Goal.limit: a plan at a limit is within it


def _money(x: float) -> float:
    return float(up_fixed(x, 2).replace(",", ""))


def _kw(watts: float) -> float:
    return float(up_fixed(watts / 1e3, 1).replace(",", ""))


def uses(plans, d, cost_usd_per_hour: float) -> list[tuple[str, str, float, float | None]]:
    """(kind, scenario key, what `d` uses in the key's unit, the key's limit or None)
    for every limit of the scenario: GPUs per offer, kW and $/h per datacenter, the
    objective's $/h (the plan's cost) and lines."""
    s = plans.scenario
    out = []
    for dc in s.datacenters:
        mine = [g for g in d.instances if g.datacenter == dc.id]
        at = f"datacenters[{dc.id}]"
        for offer in dc.gpus:
            gpus = sum(g.gpus for g in mine if g.gpu == offer.gpu)
            out.append(("availability", f"{at}.gpus[{offer.gpu}].max_gpus", gpus, offer.max_gpus))
        watts = sum(g.gpus * plans.power_w(g.gpu) for g in mine)
        limit = None if dc.power_budget_w is None else dc.power_budget_w / 1e3
        out.append(("power", f"{at}.power_budget_kw", watts / 1e3, limit))
        prices = {o.gpu: plans.per_gpu_hour(o, dc.id) for o in dc.gpus}
        spent = sum(g.gpus * prices[g.gpu] for g in mine) + _cache_spend(mine, d.policy, dc.id)
        out.append(("budget", f"{at}.budget_usd_per_hour", spent, dc.budget_usd_per_hour))
    budget = s.objective.budget_usd_per_hour
    out.append(("budget", "objective.budget_usd_per_hour", cost_usd_per_hour, budget))
    out.append(("line", "wan.max_lines", sum(ln.count for ln in d.lines), s.wan.max_lines))
    return out


def limits_broken(plans, d, cost_usd_per_hour: float, what: str = "the plan named") -> list[Miss]:
    """Each limit `d` breaks, with what it uses as the figure (rounded up), enough
    together for `d` (`what`, in the relaxation's words) to fit."""
    out = []
    for kind, key, amount, limit in uses(plans, d, cost_usd_per_hour):
        if limit is None or amount <= limit * (1 + OVER_REL):
            continue
        figure = figure_for(kind, amount)
        out.append(Miss(_subject(key), amount, limit, _UNIT[kind], "", kind, ((key, figure),)))
    settings = {key: value for m in out for key, value in m.settings}
    text = enough(settings, f"{what} fits then" if len(out) == 1 else
                  f"together, {what} fits then")  # fmt: skip
    return [replace(m, relaxation=text, sufficient=True) for m in out]


_UNIT = {"availability": "GPUs", "power": "kW", "budget": "$/h", "line": "lines"}


def figure_for(kind: str, amount: float) -> float:
    """What a limit of this kind must be set to for `amount` to fit: rounded up as shown."""
    if kind == "power":
        return _kw(amount * 1e3)
    if kind == "budget":
        return _money(amount)
    return float(math.ceil(amount - 1e-9))


def _subject(key: str) -> str:
    """A limit's name in the reason line, from its scenario key."""
    if key.startswith("objective."):
        return "cost"
    if key == "wan.max_lines":
        return "WAN lines"
    dc = key.split("[", 1)[1].split("]", 1)[0]
    if ".gpus[" in key:
        return f"{key.split('.gpus[', 1)[1].split(']', 1)[0]} in {dc}"
    return f"power in {dc}" if key.endswith("power_budget_kw") else f"spending in {dc}"
