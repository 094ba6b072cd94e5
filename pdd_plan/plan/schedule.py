"""The plan over a load curve (issue #26): one committed structure, its counts period by
period, and each role's reserved base with its on-demand and spot top-ups, so the SLA
holds in every period at least expected cost over the curve's cycle.

The problem. A structure (curve_sizing.Structure: architecture, policy, one candidate per
role, the lines) needs n_{r,t} instances of role r in period t: its cheapest counts at
that period's workload (curve_sizing.PeriodSizer.needs, the single-rate search's own
check). Its cost over the cycle is the committed part (lines, decode-side cache) every
hour plus, per role, the cheapest class split of its needs (class_split.py, exact). The
answer is the structure of least cost.

Exact over the structures, by branch and bound. Each structure's cost is bounded from
below by the split of each period's fewest possible counts (the search's bounds and the
utilisation cap, PeriodSizer.least_counts): a split's cost never falls when a need rises
(class_split.least_cost_usd), and the needs are at least those counts. Structures are
taken in increasing bound; each one's needs are found period by period, the busiest
first, its bound tightened with each, and it is dropped as soon as the bound reaches the
best cost found. When the next bound reaches the best cost, no structure left can beat
it: the answer is optimal, under the same conditions as a single-rate solve's (the
monotonicity of meeting the SLA in each role's count and in the rate; the walk's
candidates: one GPU type per role, no mixed pools). Stopped by the time limit first, it is
feasible, with the least bound of what was left as a bound on the optimum.

A structure's needs are the cheapest counts at on-demand prices in each period; where two
count vectors both meet a period's SLA (more prefill or more decode), the split of the
other might be cheaper. Exactness is over the structures for these needs.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import time
from dataclasses import dataclass, field

from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease
from pdd_plan.model.placement import placement_problem
from pdd_plan.model.scenario import Objective, Scenario
from pdd_plan.model.setup import power_usd_per_gpu_hour
from pdd_plan.model.workload.load_curve import LoadCurve, period_workload
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.class_split import Prices, Split, least_cost_usd, split
from pdd_plan.plan.curve_sizing import (
    STOPPED,
    PeriodSizer,
    Structure,
    committed_usd_per_hour,
    common_choices,
)
from pdd_plan.plan.search import Search
from pdd_plan.plan.solve import _policies
from pdd_plan.plan.space import OutOfTime

COST_REL_TOL = 1e-9
STOP_TIME = "time limit"
STOP_WALK = "a count walk's step cap"


@dataclass(frozen=True)
class RolePlan:
    role: str
    datacenter: str
    gpu: str
    gpus_per_instance: int
    prices: Prices  # one instance-hour in each class
    needs: tuple[int, ...]  # per period: the instances that carry it
    split: Split


@dataclass
class ScheduleResult:
    # optimal | feasible | infeasible | unproven, as a single-rate solve's (module doc)
    status: str
    curve: LoadCurve
    structure: Structure | None = None
    needs: tuple[tuple[int, ...], ...] = ()  # per period, per role: the instances needed
    deployments: tuple[Deployment, ...] = ()  # per period, at its needs
    roles: tuple[RolePlan, ...] = ()
    committed_usd_per_hour: float = 0.0  # lines and decode-side cache
    cost_usd: float = math.inf  # over one cycle of the curve
    bound_usd: float = 0.0  # no plan costs less (== cost_usd when optimal)
    structures: int = 0  # structures whose bound was computed
    checked: int = 0  # structures whose needs were sized
    stopped_by: str = ""
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def period_scenario(scenario: Scenario, period) -> Scenario:
    """The single-rate scenario of one period: its workload, min cost at its rate."""
    workload = period_workload(scenario.workload, period)
    objective = Objective("min_cost", workload.arrival_rate_per_s)
    return dataclasses.replace(scenario, workload=workload, objective=objective)


@dataclass
class _Base:
    """A structure without its line: (architecture, policy, candidates), its sizers per
    period, its roles' prices and least-count split cost, and its lines by cost."""

    architecture: str
    policy_index: int
    combo: tuple
    sizers: list[PeriodSizer]
    prices: tuple[Prices, ...]
    least: list[tuple[int, ...]]  # per period
    roles_usd: float
    lines: list[tuple[int, ...]]
    line_usd: list[float]  # committed $/h of each line option (cache included)


def plan_schedule(
    scenario: Scenario,
    model,
    gpus: dict,
    tiers: dict,
    architectures: tuple[str, ...] | None = None,
    resolution=DEFAULT_RESOLUTION,
    time_limit_s: float = 60.0,
) -> ScheduleResult:
    start = time.perf_counter()
    deadline = start + time_limit_s
    curve = scenario.workload.load_curve
    hours = tuple(p.hours for p in curve.periods)
    result = ScheduleResult("unproven", curve)
    try:
        bases = [
            b
            for arch in architectures or scenario.architectures
            for b in _bases(scenario, model, gpus, tiers, arch, resolution, deadline, hours)
        ]
    except OutOfTime:
        result.stopped_by, result.bound_usd = f"{STOP_TIME} (bounding candidates)", 0.0
        result.wall_s = time.perf_counter() - start
        return result
    _branch_and_bound(bases, hours, deadline, result)
    if result.structure is not None:
        _fill(result, bases, scenario, tiers, hours)
    result.wall_s = time.perf_counter() - start
    return result


def _bases(scenario, model, gpus, tiers, arch, resolution, deadline, hours) -> list[_Base]:
    """Every (policy, candidates) of `arch` that each period can place, with its bound."""
    curve = scenario.workload.load_curve
    policies = _policies(scenario, arch)
    by_key: dict = {}
    for p in curve.periods:
        if p.workload_key() not in by_key:
            s = period_scenario(scenario, p)
            search = Search(s, model, gpus, tiers, arch, policies, tuple(resolution),
                            deadline=deadline)  # fmt: skip
            by_key[p.workload_key()] = PeriodSizer(search, s.workload.arrival_rate_per_s)
    sizers = [by_key[p.workload_key()] for p in curve.periods]
    distinct = list(by_key.values())
    out = []
    for pi in range(len(distinct[0].search.spaces)):
        per_role, lines = common_choices(distinct, pi)
        line_keys = sorted(lines, key=lambda k: lines[k].cost_usd_per_hour)
        for combo in itertools.product(*(sorted(r) for r in per_role)):
            picks = [per_role[i][key] for i, key in enumerate(combo)]
            if placement_problem(arch, picks) or not line_keys:
                continue
            st = Structure(arch, pi, combo, line_keys[0])
            least = [s.least_counts(st) for s in sizers]
            if None in least:
                continue
            prices = tuple(_prices(ch, scenario, gpus) for ch in picks)
            base = _Base(arch, pi, combo, sizers, prices, least, 0.0, line_keys,
                         [committed_usd_per_hour(distinct[0], dataclasses.replace(
                             st, line_counts=k)) for k in line_keys])  # fmt: skip
            base.roles_usd = _roles_usd(least, hours, prices)
            out.append(base)
    return out


def _prices(choice, scenario: Scenario, gpus: dict) -> Prices:
    """One instance-hour in each class: the class's fraction of the rental, plus the
    power at its full price where the scenario counts power (a reserved or spot GPU draws
    the same watts)."""
    offer = scenario.costs.capacity_classes.offer(choice.datacenter, choice.gpu)
    power = 0.0
    if scenario.costs.include_power:
        power = choice.gpus_per_instance * power_usd_per_gpu_hour(
            scenario, gpus[choice.gpu], choice.datacenter
        )
    rental = choice.price_usd_per_hour - power
    spot = offer.spot
    if spot is not None and power:  # spot's price_frac of the rental, the power on top
        spot = dataclasses.replace(
            spot, price_frac=(spot.price_frac * rental + power) / choice.price_usd_per_hour
        )
    return Prices(choice.price_usd_per_hour, offer.reserved_price_frac * rental + power, spot)


def _roles_usd(counts: list[tuple[int, ...]], hours, prices) -> float:
    """The roles' split cost over the cycle of per-period counts (period-major)."""
    return sum(
        least_cost_usd(tuple(c[r] for c in counts), hours, prices[r]) for r in range(len(prices))
    )


def _branch_and_bound(bases: list[_Base], hours, deadline: float, result) -> None:
    """Structures in increasing bound: each (base, line) pushed with the next line."""
    horizon_h = sum(hours)
    heap, tie = [], itertools.count()
    for b in bases:
        heapq.heappush(heap, (b.roles_usd + horizon_h * b.line_usd[0], next(tie), b, 0))
    result.structures = len(bases)
    open_bounds = []  # structures left unsized by a walk's step cap
    while heap:
        bound, _, b, li = heapq.heappop(heap)
        if bound >= result.cost_usd * (1 - COST_REL_TOL):
            heap.clear()
            break
        if time.perf_counter() > deadline:
            result.stopped_by = STOP_TIME
            open_bounds.append(bound)
            break
        if li + 1 < len(b.lines):
            nxt = b.roles_usd + horizon_h * b.line_usd[li + 1]
            heapq.heappush(heap, (nxt, next(tie), b, li + 1))
        st = Structure(b.architecture, b.policy_index, b.combo, b.lines[li])
        result.checked += 1
        needs = _needs(st, b, hours, horizon_h * b.line_usd[li], result.cost_usd, deadline)
        if needs is STOPPED:
            result.stopped_by = result.stopped_by or STOP_WALK
            open_bounds.append(bound)
            continue
        if needs is None:
            continue
        cost = _roles_usd(needs, hours, b.prices) + horizon_h * b.line_usd[li]
        if cost < result.cost_usd * (1 - COST_REL_TOL):
            result.cost_usd, result.structure, result.needs = cost, st, tuple(needs)
    found = result.structure is not None
    proven = not open_bounds or min(open_bounds) >= result.cost_usd * (1 - COST_REL_TOL)
    result.bound_usd = result.cost_usd if proven else min(open_bounds)
    if found:
        result.status = "optimal" if proven else "feasible"
    else:
        result.status = "infeasible" if proven else "unproven"


def _needs(st: Structure, b: _Base, hours, committed_usd: float, best_usd: float,
           deadline: float):  # fmt: skip
    """Per period, the structure's counts; None when a period has none (or the bound
    reaches `best_usd` on the way); STOPPED when a walk was cut."""
    counts = list(b.least)
    order = sorted(range(len(hours)), key=lambda t: -b.sizers[t].rate)
    done: dict = {}
    for t in order:
        sizer = b.sizers[t]
        if id(sizer) not in done:
            done[id(sizer)] = sizer.needs(st, deadline)
        found = done[id(sizer)]
        if found is None or found is STOPPED:
            return found
        counts[t] = found
        if _roles_usd(counts, hours, b.prices) + committed_usd >= best_usd * (1 - COST_REL_TOL):
            return None
    return counts


def _fill(result: ScheduleResult, bases, scenario, tiers, hours) -> None:
    """The answer's roles (their splits), and each period's deployment at its needs."""
    st = result.structure
    b = next(x for x in bases if (x.architecture, x.policy_index, x.combo) ==
             (st.architecture, st.policy_index, st.roles))  # fmt: skip
    needs = result.needs
    roles = []
    for r, (role, dc, gpu, n) in enumerate(st.roles):
        per_period = tuple(c[r] for c in needs)
        roles.append(RolePlan(role, dc, gpu, n, b.prices[r], per_period,
                              split(per_period, hours, b.prices[r])))  # fmt: skip
    result.roles = tuple(roles)
    result.committed_usd_per_hour = b.line_usd[b.lines.index(st.line_counts)]
    policy = b.sizers[0].search.spaces[st.policy_index].policy
    leases = tuple(
        LineLease(t, tiers[t].capacity_bits_per_s, k)
        for t, k in zip(scenario.wan.tiers, st.line_counts, strict=False)
        if k
    )
    result.deployments = tuple(
        Deployment(st.architecture,
                   tuple(InstanceGroup(*key, c[r]) for r, key in enumerate(st.roles)),
                   leases, policy)
        for c in needs
    )  # fmt: skip
