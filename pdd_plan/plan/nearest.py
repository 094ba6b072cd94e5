"""How close the plans come when the walk proves that none meets the SLA under the
utilisation cap and no SLA floor (floors.py) or WAN ceiling (ceilings.py) said why.

Each candidate mix (a routing policy and one candidate per role) has a corner: every role
at the most instances the scenario lets it have (availability and power, each role taking
what the others' fewest leave: Spaces.within_availability) on the line mix of most
capacity. By the monotonicity the search rests on (solve.py: an instance or a line more
never breaks an SLA that held; role_cap.py: a role's load falls as its instances grow),
no plan of a mix has a lower TTFT or TPOT percentile, or a lower utilisation, than its
corner. So when every mix's corner is evaluated and each misses a limit, the least figure
any reaches is a floor of what every allowed plan reaches ("at least" that is needed);
the corner closest to meeting every limit (the least worst ratio of figure to limit) is
the plan shown, and its figures are the ones to try (relax.py). Corners are evaluated at
the rate every plan must carry (Goal.floor_rps), under every hit-rate distribution (the
worst of them). When the closest corner is a plan the scenario allows, within the cap,
its SLA figures suffice as they are: it meets them.

When the closest corner meets the SLA and the cap, what stops it is a limit it breaks
(GPUs of a pool two roles share, power, a budget): those are named with what the corner
uses, a figure that suffices (the corner then fits) though rarely the least.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass, field

from pdd_plan.errors import SaturatedError
from pdd_plan.model.evaluate import deployment_cost_usd_per_hour, prepare, snapshot
from pdd_plan.plan.figures import down_3g, up_3g
from pdd_plan.plan.limits_used import limits_broken
from pdd_plan.plan.no_candidate import role_misses
from pdd_plan.plan.role_cap import LINE_ROLES
from pdd_plan.plan.shortfalls import RELAX, Miss, enough

# mixes whose corner is evaluated, at most (about 10 ms each on a small PDD scenario): a
# count, not a time, so the answer does not depend on the machine's speed; past it, the
# figures are the closest of those corners', and no floor is claimed
MAX_CORNERS = 48


@dataclass
class Corner:
    deployment: object
    sla: dict = field(default_factory=dict)  # (metric, percentile) -> worst value
    util: dict = field(default_factory=dict)  # role -> worst utilisation
    saturated: SaturatedError | None = None

    def score(self, scenario) -> float:
        """The worst ratio of a figure to its limit (> 1: missed); inf when saturated."""
        if self.saturated is not None:
            return math.inf
        cap = scenario.policy.utilization_cap_frac
        ratios = [v / _limit(scenario, key) for key, v in self.sla.items()]
        ratios += [u / cap for role, u in self.util.items() if role not in LINE_ROLES]
        return max(ratios, default=0.0)


def _limit(scenario, key) -> float:
    metric, p = key
    return (scenario.sla.ttft_s if metric == "ttft" else scenario.sla.tpot_s)[p]


def corner(search, sp, picks, counts) -> Corner:
    """The mix's richest plan evaluated at the floor rate (the module doc)."""
    return evaluated(search, search.deployment(sp, picks, counts, sp.lines[-1]))


def evaluated(search, d) -> Corner:
    """Plan `d`'s SLA percentiles and loads at the floor rate, the worst under every
    hit-rate distribution."""
    s, rate = search.scenario, search.goal.floor_rps
    out = Corner(d)
    for h in search.dists:
        setup = prepare(s, d, search.model, search.gpus, search.tiers, search.resolution, h)
        try:
            snap = snapshot(setup, rate)
        except SaturatedError as exc:
            out.saturated = exc
            return out
        for p in s.sla.ttft_s:
            _worst(out.sla, ("ttft", p), snap.ttft_quantile_s(p / 100))
        for p in s.sla.tpot_s:
            _worst(out.sla, ("tpot", p), snap.tpot_quantile_s(p / 100))
        for role, u in snap.utilization_frac.items():
            _worst(out.util, role, float(u))
    return out


def _worst(figures: dict, key, value: float) -> None:
    figures[key] = max(figures.get(key, -math.inf), value)


def corners(search) -> tuple[list[Corner], int]:
    """The corners of the richest mixes (most GPUs at their corner first; at most
    MAX_CORNERS, none started past the solve's deadline), and how many mixes there are."""
    mixes = []
    for sp in search.spaces:
        if not (all(sp.choices) and sp.lines):
            continue
        for picks in itertools.product(*sp.choices):
            counts = search.plans.within_availability(picks, [ch.max_count for ch in picks])
            gpus = sum(ch.gpus_per_instance * n for ch, n in zip(picks, counts, strict=True))
            mixes.append((-gpus, len(mixes), sp, picks, counts))
    mixes.sort(key=lambda m: m[:2])
    out = []
    for _, _, sp, picks, counts in mixes[:MAX_CORNERS]:
        if out and time.perf_counter() > search.deadline:
            break
        out.append(corner(search, sp, picks, counts))
    return out, len(mixes)


def closest_misses(search) -> tuple[str, list[Miss]]:
    """One line and the shortfalls of the closest corner (the module doc); ("", []) when
    no mix has a corner (a role without a candidate: solve names it otherwise)."""
    found, mixes = corners(search)
    every = len(found) == mixes
    if not found:  # a role without a candidate under every policy that has the others
        roles = [r for i, r in enumerate(search.roles)
                 if any(not sp.choices[i] for sp in search.spaces)]  # fmt: skip
        misses = role_misses(search, roles)
        what = "; ".join(f"{m.line()} (relax: {m.relaxation})" for m in misses)
        return (f"no {search.arch} plan: no candidate serves {', '.join(roles)} alone ({what})"
                if misses else "", misses)  # fmt: skip
    s = search.scenario
    best = min(found, key=lambda c: c.score(s))
    where = _plan_text(best.deployment)
    if best.saturated is not None:
        return _saturated(search, found, where)
    cost = deployment_cost_usd_per_hour(s, best.deployment, search.gpus, search.tiers)
    broken = limits_broken(search.plans, best.deployment, cost)
    sla, cap = _sla_misses(s, found, best, every), _cap_misses(search, found, best, every)
    if sla or cap:
        if not (cap or broken):  # the closest plan is allowed: its figures let it in
            sla = _enough_for(sla)
        elif sla and not cap:  # the closest plan scaled into the scenario's limits
            sla = _enough_when_fitted(search, sla, best.deployment)
        head = f"no {search.arch} plan meets the SLA under the utilisation cap"
        claim = (
            "the richest plan of every candidate mix evaluated"
            if every
            else f"the richest plans of {len(found)} of {mixes} candidate mixes evaluated"
        )
        what = "; ".join(m.line() for m in sla + cap)
        busy = _busiest(best)
        text = f"{head}: {what} ({claim}; the closest: {where}{busy})"
        return _with_enough(text, sla + cap), sla + cap
    what = "; ".join(m.line() for m in broken)
    text = (f"no {search.arch} plan that meets the SLA fits the scenario's limits: {what} "
            f"(the closest plan that meets it: {where})")  # fmt: skip
    return _with_enough(text, broken), broken


def _with_enough(text: str, misses: list[Miss]) -> str:
    """The line with the relaxation shown to suffice, when there is one."""
    shown = dict.fromkeys(m.relaxation for m in misses if m.sufficient)
    return f"{text}{RELAX}{'; '.join(shown)}" if shown else text


def _enough_when_fitted(search, misses: list[Miss], d) -> list[Miss]:
    """The closest plan breaks a limit (a pool of GPUs its roles share, each at the most
    the others' fewest leave): with every such pool scaled down to its availability, a
    plan the scenario allows and within the cap lets in its own figures, which then
    suffice (each percentile it misses, including any the closest plan met). Unchanged
    where the scaled plan still breaks a limit, or runs above the cap."""
    fitted = _fitted(search, d)
    if fitted is None:
        return misses
    c = evaluated(search, fitted)
    s = search.scenario
    cap = s.policy.utilization_cap_frac
    if c.saturated is not None or any(u > cap for r, u in c.util.items() if r not in LINE_ROLES):
        return misses
    found = {m.settings[0][0]: m for m in misses}
    out = []
    for key, value in c.sla.items():
        limit = _limit(s, key)
        if value <= limit:
            continue
        name, unit, scale, skey = _named(key)
        figure = ((skey, float(up_3g(value * scale))),)
        mine = found.get(skey)
        if mine is None:
            mine = Miss(f"{name} (the closest plan allowed)", value * scale, limit * scale,
                        unit, f"{skey} above {down_3g(limit * scale)}", "sla")  # fmt: skip
        out.append(dataclasses.replace(mine, settings=figure))
    if not out:  # it meets the SLA: the search found no plan at its resolution
        return misses
    figures = dict(m.settings[0] for m in out)
    them = "it" if len(figures) == 1 else "them"
    text = enough(figures, f"the closest plan allowed meets {them} then")
    return [dataclasses.replace(m, relaxation=text, sufficient=True) for m in out]


def _fitted(search, d):
    """`d` with each pool of GPUs it uses beyond the availability scaled down to fit
    (each group keeping one instance at least); None where it still breaks a limit."""
    groups = list(d.instances)
    for dc in search.scenario.datacenters:
        for offer in (o for o in dc.gpus if o.max_gpus is not None):
            mine = [i for i, g in enumerate(groups) if (g.datacenter, g.gpu) == (dc.id, offer.gpu)]
            used = sum(groups[i].gpus for i in mine)
            for i in mine if used > offer.max_gpus else ():
                count = max(1, math.floor(groups[i].count * offer.max_gpus / used))
                groups[i] = dataclasses.replace(groups[i], count=count)
    fitted = dataclasses.replace(d, instances=tuple(groups))
    cost = deployment_cost_usd_per_hour(search.scenario, fitted, search.gpus, search.tiers)
    return None if limits_broken(search.plans, fitted, cost) else fitted


def _enough_for(misses: list[Miss]) -> list[Miss]:
    """SLA misses of a closest plan the scenario allows, within the cap: with every
    limit it misses set to its figure (rounded up), that plan meets the SLA, so the
    figures suffice together without a solve."""
    figures = {key: value for m in misses for key, value in m.settings}
    why = "the closest plan meets it then" if len(figures) == 1 else (
        "together, the closest plan meets them then")  # fmt: skip
    text = enough(figures, why)
    return [dataclasses.replace(m, relaxation=text, sufficient=True) for m in misses]


def _figure(closest: float, least: float, limit: float, every: bool) -> tuple[float, bool]:
    """What a miss shows: the least any corner reaches, a floor of every plan allowed,
    when every mix was evaluated and each misses the limit; else the closest corner's."""
    if every and least > limit:
        return least, True
    return closest, False


def _named(key) -> tuple[str, str, float, str]:
    """An SLA percentile's name, unit, scale from seconds and scenario key."""
    metric, p = key
    if metric == "ttft":
        return f"TTFT P{p:g}", "s", 1.0, f"sla.ttft_p{p:g}_s"
    return f"TPOT P{p:g}", "ms", 1e3, f"sla.tpot_p{p:g}_ms"


def _sla_misses(s, found, best, every: bool) -> list[Miss]:
    """Each SLA percentile the closest corner misses: the floor (or the closest corner's
    figure, _figure) and, to try, the closest corner's figure rounded up."""
    out = []
    fine = [c for c in found if c.saturated is None]
    for key, value in best.sla.items():
        limit = _limit(s, key)
        if value <= limit:
            continue
        needs, floor = _figure(value, min(c.sla[key] for c in fine), limit, every)
        name, unit, scale, skey = _named(key)
        relax = (f"{skey} at least {up_3g(needs * scale)}" if floor
                 else f"{skey} above {down_3g(limit * scale)}")  # fmt: skip
        label = f"{name} ({'the least any plan allowed reaches' if floor else 'the closest plan'})"
        out.append(Miss(label, needs * scale, limit * scale, unit, relax, "sla",
                        ((skey, float(up_3g(value * scale))),)))  # fmt: skip
    return out


def _cap_misses(search, found, best, every: bool) -> list[Miss]:
    """Each GPU role the closest corner runs above the cap at the floor rate, as
    _sla_misses; the cap to try: the closest corner's busiest role's (when at most 1)."""
    s, rate = search.scenario, search.goal.floor_rps
    cap = s.policy.utilization_cap_frac
    fine = [c for c in found if c.saturated is None]
    over = {r: u for r, u in best.util.items() if r not in LINE_ROLES and u > cap}
    if not over:
        return []
    to_try = float(up_3g(max(over.values())))
    settings = (("policy.utilization_cap_frac", to_try),) if to_try <= 1 else ()
    out = []
    for role, value in over.items():
        least = min(c.util.get(role, math.inf) for c in fine)
        needs, floor = _figure(value, least, cap, every)
        key = "policy.utilization_cap_frac"
        relax = f"{key} at least {up_3g(needs)}" if floor else f"{key} above {down_3g(cap)}"
        if float(up_3g(needs)) > 1:  # no cap the scenario may set (at most 1) is enough
            relax = f"{key} above 1 would be needed"
        relax += f", or more GPUs for {role} (max_gpus, power_budget_kw)"
        where = "the least at the most instances allowed" if floor else "the closest plan"
        out.append(Miss(f"{role} utilisation at {rate:.3g} req/s ({where})", needs, cap, "",
                        relax, "cap", settings))  # fmt: skip
    return out


def _saturated(search, found, where: str) -> tuple[str, list[Miss]]:
    """Every corner saturates: the queue that does at the closest, with its load."""
    exc = min(
        (c.saturated for c in found),
        key=lambda e: e.offered / e.capacity if e.capacity else math.inf,
    )
    rate = search.goal.floor_rps
    below = rate * exc.capacity / exc.offered if exc.offered else rate
    miss = Miss(
        f"{exc.what} at the most instances allowed",
        exc.offered, exc.capacity, "",
        "more instances than the scenario allows (max_gpus, power_budget_kw), or "
        f"workload.arrival_rate_per_s below {down_3g(below)}",
        "saturation",
    )  # fmt: skip
    return (
        f"no {search.arch} plan keeps up at {rate:.3g} req/s: {exc} (the richest: {where})",
        [miss],
    )


def _busiest(c: Corner) -> str:
    if not c.util:
        return ""
    role, u = max(c.util.items(), key=lambda kv: kv[1])
    return f"; busiest: {role.replace('_', ' ')} at {u:.0%}"


def _plan_text(d) -> str:
    parts = [f"{g.role} {g.count} x {g.gpus_per_instance} {g.gpu} in {g.datacenter}"
             for g in d.instances]  # fmt: skip
    parts += [f"{ln.count} x {ln.tier}" for ln in d.lines]
    return ", ".join(parts)
