"""Relaxations that suffice: an infeasible answer's figures set in the scenario and solved
again, until a plan exists or the rounds or the time (CHECK_SHARE of the time limit) run
out.

A shortfall may carry `set` (scenario key -> figure): what nearest.py, no_candidate.py,
floors.py or the elastic MILP (shortfalls.shortfall_json) found the limit needs. All of an
answer's figures are set at once and the scenario solved again (the answer's
architecture):
- a plan: the figures suffice together; where there are several shortfalls, each is also
  tried alone, and one that suffices alone says so (the others are then alternatives and
  keep their bound). A limit's figure (GPUs, power, money, lines) is lowered to what the
  plan found uses of it, which still admits that plan, and a limit it keeps within is
  not needed and left out. The relaxation reads "set KEY to FIGURE (enough: ...)";
- no plan: each figure the new answer names higher is raised (a key it adds, added) and
  the scenario solved again, MAX_ROUNDS times at most. Figures that are all limits are
  then tried once more with those limits lifted (the cheapest plan at the rate every plan
  must carry): what it uses of each limit it breaks suffices by construction.
Where none of this finds a plan, the figures stay as the answer gave them: "at least" a
floor (nearest.py, floors.py, no_candidate.py, ceilings.py), or "above" the limit the
scenario has, for the MILP's linear estimate. SLA figures nearest.py has already shown to
suffice (its closest plan is allowed) are not solved again.
"""

from __future__ import annotations

import dataclasses
import re
import time

from pdd_plan.errors import InfeasibleError
from pdd_plan.model.scenario import MAX_LINES
from pdd_plan.plan import solve as sv
from pdd_plan.plan.goal import Goal
from pdd_plan.plan.limits_used import OVER_REL, figure_for, limits_broken, uses
from pdd_plan.plan.shortfalls import enough
from pdd_plan.plan.space import Spaces

MAX_ROUNDS = 4
CHECK_SHARE = 1 / 3  # of the time limit, for every check of one answer together
LIMIT_KINDS = ("availability", "power", "budget", "line")
SOLVED = "solved with it"
SOLVED_ALL = "solved with them together"
_DC_KEY = re.compile(r"datacenters\[([^\]]+)\]\.(?:gpus\[([^\]]+)\]\.)?(\w+)$")
_SLA_KEY = re.compile(r"sla\.(ttft|tpot)_p([0-9.]+)_(s|ms)$")


def with_setting(scenario, key: str, value: float):
    """The scenario with one key of the relaxation grammar set (ValueError if unknown)."""
    rep = dataclasses.replace
    sla = _SLA_KEY.match(key)
    if sla:
        metric, p, unit = sla.groups()
        seconds = value / 1e3 if unit == "ms" else value
        field = "ttft_s" if metric == "ttft" else "tpot_s"
        limits = {**getattr(scenario.sla, field), float(p): seconds}
        return rep(scenario, sla=rep(scenario.sla, **{field: limits}))
    if key == "policy.utilization_cap_frac":
        return rep(scenario, policy=rep(scenario.policy, utilization_cap_frac=value))
    if key == "objective.budget_usd_per_hour":
        return rep(scenario, objective=rep(scenario.objective, budget_usd_per_hour=value))
    if key == "wan.max_lines":
        return rep(scenario, wan=rep(scenario.wan, max_lines=int(value)))
    dc_key = _DC_KEY.match(key)
    if not dc_key:
        raise ValueError(f"no relaxation key {key!r}")
    dc_id, gpu, name = dc_key.groups()
    return rep(scenario, datacenters=tuple(
        _dc_with(dc, gpu, name, value) if dc.id == dc_id else dc for dc in scenario.datacenters
    ))  # fmt: skip


def _dc_with(dc, gpu, name: str, value: float):
    rep = dataclasses.replace
    if gpu is not None:
        offers = tuple(rep(o, max_gpus=int(value)) if o.gpu == gpu else o for o in dc.gpus)
        return rep(dc, gpus=offers)
    if name == "power_budget_kw":
        return rep(dc, power_budget_w=value * 1e3)
    return rep(dc, budget_usd_per_hour=value)


def _settings(shortfalls) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in shortfalls:
        for key, value in (s.get("set") or {}).items():
            out[key] = max(value, out.get(key, value))
    return out


def checked(scenario, shortfalls: list[dict], run) -> list[dict]:
    """The shortfalls with `sufficient` and, where their figures were shown to suffice,
    the relaxation that says so (module doc). `run`: model, gpus, tiers, architecture,
    resolution, time limit."""
    settings = _settings(shortfalls)
    plain = [{**s, "sufficient": s.get("sufficient", False)} for s in shortfalls]
    keyed = [s for s in plain if s.get("set")]
    if not keyed or all(s["sufficient"] and s.get("kind") not in LIMIT_KINDS for s in keyed):
        return plain  # nothing to try, or SLA figures shown to suffice (nearest.py)
    deadline = time.perf_counter() + CHECK_SHARE * run[5]
    entries = list(shortfalls)
    for _ in range(MAX_ROUNDS):
        plan, found = _solve(scenario, settings, run, deadline)
        if plan is not None:
            return _explained(scenario, entries, len(shortfalls), settings, plan, run, deadline)
        raised = {k: max(v, settings.get(k, v)) for k, v in _settings(found).items()}
        if not raised or all(settings.get(k) == v for k, v in raised.items()):
            break
        entries += [s for s in found if set(s.get("set") or {}) - set(settings)]
        settings = {**settings, **raised}
    if all(s.get("kind") in LIMIT_KINDS for s in entries if s.get("set")):
        lifted = _without_limits(scenario, settings, run, deadline)
        if lifted is not None:
            return lifted
    return plain


def _explained(scenario, entries, first: int, settings: dict, plan, run, deadline) -> list:
    """With every figure set there is a plan. Where there are several shortfalls, each is
    tried alone: those whose own figures suffice say so, and the answer's others keep
    their bound (alternatives not shown to suffice); when none suffices alone, each says
    what suffices together. Limits are lowered to what the plan found uses; a limit it
    keeps within is not needed and left out, as is a shortfall a later round added
    (entries from `first` on) that is not needed."""
    keyed = [s for s in entries if s.get("set")]
    alone = {}
    if len(keyed) > 1:
        for s in keyed:
            mine = {k: settings[k] for k in s["set"]}
            solo, _ = _solve(scenario, mine, run, deadline)
            if solo is not None:
                alone[id(s)] = _tightened(scenario, mine, solo, run)
    together = _tightened(scenario, settings, plan, run)
    joint = enough(together, SOLVED if len(together) == 1 else SOLVED_ALL)
    out = []
    for i, s in enumerate(entries):
        mine = {k: together[k] for k in s.get("set") or {} if k in together}
        if id(s) in alone:
            out.append(_sufficient(s, alone[id(s)], enough(alone[id(s)], SOLVED)))
        elif mine and not alone:
            out.append(_sufficient(s, mine, joint))
        elif i < first and (alone or not s.get("set")):
            out.append({**s, "sufficient": s.get("sufficient", False)})
    return out


def _sufficient(s: dict, figures: dict, text: str) -> dict:
    """The shortfall with its figures shown to suffice (a limit's `needs`: the figure
    that suffices, what the plan found uses rounded up)."""
    out = {**s, "set": figures, "relaxation": text, "sufficient": True}
    if s.get("kind") in LIMIT_KINDS and len(figures) == 1:
        (out["needs"],) = figures.values()
    return out


def _tightened(scenario, settings: dict, result, run) -> dict:
    """The figures, each limit's lowered to what `result`'s plan uses of it (rounded up
    as limits_used rounds: the plan still fits); a limit the plan keeps within is left
    out (not needed, with the others)."""
    model, gpus, tiers, arch = run[:4]
    plans = Spaces(scenario, model, gpus, tiers, arch, [], 0.0)
    cost = result.metrics.cost_usd_per_hour
    used = {key: (kind, amount, limit)
            for kind, key, amount, limit in uses(plans, result.deployment, cost)}  # fmt: skip
    out = {}
    for key, value in settings.items():
        kind, amount, limit = used.get(key, (None, None, None))
        if limit is None:
            out[key] = value
        elif amount > limit * (1 + OVER_REL):
            out[key] = min(value, figure_for(kind, amount))
    return out or dict(settings)


def _solve(scenario, settings: dict, run, deadline: float):
    """(the plan's SolveResult, []) or (None, the new answer's shortfalls)."""
    relaxed = scenario
    for key, value in settings.items():
        relaxed = with_setting(relaxed, key, value)
    return _solved(relaxed, run, deadline)


def _solved(scenario, run, deadline: float):
    model, gpus, tiers, arch, resolution, _ = run
    left = deadline - time.perf_counter()
    if left <= 0:
        return None, []
    try:
        result = sv.solve(scenario, model, gpus, tiers, arch, resolution, left)
    except InfeasibleError as exc:
        return None, list(getattr(exc, "shortfalls", ()))
    if result.deployment is not None:
        return result, []
    return None, list(result.shortfalls)


def _without_limits(scenario, settings: dict, run, deadline: float) -> list[dict] | None:
    """The cheapest plan at the floor rate with the limits of the kinds named lifted:
    each limit it breaks, with what it uses (module doc); None without a plan."""
    model, gpus, tiers, arch = run[:4]
    floor = Goal.of(scenario).floor_rps
    named = " ".join(settings)  # a budget named lifts every budget, as _lifted does
    budget = None if "budget_usd_per_hour" in named else scenario.objective.budget_usd_per_hour
    objective = dataclasses.replace(scenario.objective, kind="min_cost", demand_rps=floor,
                                    budget_usd_per_hour=budget)  # fmt: skip
    free = _lifted(dataclasses.replace(scenario, objective=objective), settings)
    result, _ = _solved(free, run, deadline)
    if result is None:
        return None
    plans = Spaces(scenario, model, gpus, tiers, arch, [], 0.0)
    cost = result.metrics.cost_usd_per_hour
    broken = limits_broken(plans, result.deployment, cost, "the cheapest plan without them")
    return [m.to_json() for m in broken] or None


def _lifted(scenario, settings: dict):
    """No limit of the kinds `settings` names: GPU availability, power, budgets, lines."""
    rep = dataclasses.replace
    keys = " ".join(settings)
    dcs = []
    for dc in scenario.datacenters:
        if ".max_gpus" in keys:
            dc = rep(dc, gpus=tuple(rep(o, max_gpus=None) for o in dc.gpus))
        if "power_budget_kw" in keys:
            dc = rep(dc, power_budget_w=None)
        if "budget_usd_per_hour" in keys:
            dc = rep(dc, budget_usd_per_hour=None)
        dcs.append(dc)
    wan = scenario.wan
    if "wan.max_lines" in keys:  # a count the scenario may set (MAX_LINES)
        wan = rep(wan, max_lines=MAX_LINES)
    return rep(scenario, datacenters=tuple(dcs), wan=wan)
