"""solve: the plan with the best objective whose SLA holds, proven best by a search that
checks plans with `evaluate` itself.

1. Seeds: the MILP (formulate.py), one per hit threshold (the handoff mode changes nothing
   it sees): linear capacities under a utilisation cap; min cost at a demand, max goodput
   within a budget, max BCR by Dinkelbach's iterations, each an exact MILP; with hit-rate
   alternatives, sized for the distribution that asks most of each candidate. Its plan is
   checked with the search's evaluator (and sized again at a lower cap if it misses). Its
   capacities are estimates (latency is not linear in the counts), so its plans only tell
   the search where it may stop; the winner's MILP is kept for the LP dump and explain.
2. The exact search (search.py, space.py, bounds.py): every plan the scenario allows, a
   routing policy (`_policies`), one candidate of `candidates.shapes` and a count per role,
   and lines per tier, within the GPU availability, each datacenter's budget and
   wan.max_lines, walked in increasing cost (evaluate's cost, power included when the
   scenario asks) and checked with `prepare` + `meets_sla` at `resolution` under the main
   hit-rate distribution and every `workload.prefix_hit_rate_alternatives` (robust plans).
   Objectives:
   - min_cost: the cheapest plan that meets the SLA at the demand;
   - max_bcr: the plan meeting the SLA at the offered rate with the highest
     min(goodput, BCR_HEADROOM x offered) / cost: goodput beyond the headroom earns
     nothing (else the best ratio could buy all the hardware on offer); the reported BCR
     (metrics) is goodput / cost, uncapped;
   - max_goodput: the most goodput (up to 10 x offered) within the budget.
   It skips only what is proven unable to win: candidates below bounds.py's fewest
   instances, plans above their rate ceiling, groups and rows whose corner misses the SLA,
   plans dearer than the best can be beaten at.

When the answer is exact: it is optimal over the plans in 2, under evaluate's model at
`resolution`, when (a) meeting the SLA is monotone in each role's instance count and in
the line capacity for a fixed policy, types and shapes (an instance or a line more never
breaks an SLA that held: tested in tests/property, not proven from the model), and in the
rate (which `goodput_rps` assumes too); and (b) the search finished: `SolveResult.proven`
(it stops at `time_limit_s` or search.MAX_EVALUATIONS, and then returns the best plan it
verified with `bound`, the best value any plan left could have). Ratios and goodputs are
exact to IMPROVE_REL_TOL + GOODPUT_REL_TOL (relative). Neither the MILP's capacities nor
its utilisation cap ever prune. tests/property/test_solve_exhaustive.py lists every plan of
small random scenarios and finds none better.

Mixed pools (`policy.mixed_pools`, on by default, formulate.py): the MILP may combine types in
the finishing decode role; its verified plan is a seed like any other, and wins when no
plan of the walk beats it (after mixed_trim.py has taken out the MILP's spare capacity).
The walk covers one type per role only, so a mixed answer is proven better than every
single-type plan, not best among mixes: its metrics say so (MIXED_NOTE).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from pdd_plan.errors import InfeasibleError, SaturatedError
from pdd_plan.model import routing as rt
from pdd_plan.model.cache_tier import buy_options
from pdd_plan.model.decode_cache import routed
from pdd_plan.model.deployment import (
    ARCHITECTURE_ROLES,
    Deployment,
    InstanceGroup,
    LineLease,
    RoutingPolicy,
)
from pdd_plan.model.evaluate import evaluate, goodput_rps, prepare
from pdd_plan.model.metrics import Metrics
from pdd_plan.model.mixed_pool import MIXABLE_ROLES
from pdd_plan.model.network import WanLink, wan_transfer
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload import DEFAULT_RESOLUTION, request_classes
from pdd_plan.plan import candidates as cd
from pdd_plan.plan import search as sr
from pdd_plan.plan.ceilings import ShortfallError, check_wan
from pdd_plan.plan.floors import sla_floors
from pdd_plan.plan.formulate import formulate, lp_text, solve_milp
from pdd_plan.plan.mixed_trim import is_mixed, trim
from pdd_plan.plan.space import COUNT_LIMITED, OutOfTime

THRESHOLDS = (0.8, 0.9, 0.95)
CAP_SHRINK = 0.85  # utilisation cap multiplier when a sized plan misses its SLA
MAX_RESIZES = 6
DINKELBACH_TOL = 1e-6
BCR_HEADROOM = sr.BCR_HEADROOM  # max_bcr sizes the MILP for at most this multiple of demand
SEARCH_RESOLUTION = (4, 6, 12)  # request classes of the MILP's capacities (288 classes)
BITS_PER_BYTE = 8
NOT_STARTED = "Not Started"  # a MILP the solve's deadline left no time for
MIXED_NOTE = (
    "{role} mixes GPU types ({groups}): the MILP's plan (policy.mixed_pools), trimmed and "
    "checked by evaluate; the search proved that no single-type plan beats it, not that no "
    "other mix does"
)


@dataclass(frozen=True)
class Attempt:
    policy: RoutingPolicy
    utilization_cap_frac: float
    outcome: str  # "verified", "sla missed", "infeasible", ...


@dataclass
class SolveResult:
    # optimal (proven) | feasible (a plan; the search stopped before its proof) |
    # infeasible (proven: the walk finished, or a ceiling refused it) | unproven (no plan
    # found, none proven impossible: the search stopped at `stopped_by` first)
    status: str
    architecture: str
    deployment: Deployment | None
    metrics: Metrics | None
    rate_rps: float  # min_cost: the demand; else what the plan carries (up to the cap)
    candidates: list[cd.Candidate]  # every candidate; `pruned`: why no plan can use it
    attempts: list[Attempt] = field(default_factory=list)
    wall_s: float = 0.0
    lp_text: str = ""
    proven: bool = True  # the search finished: no plan beats this one (see the module doc)
    bound: float = 0.0  # best objective value any plan could have (-cost for min_cost)
    evaluations: int = 0  # plans checked with evaluate by the search
    pruned: dict[str, str] = field(default_factory=dict)  # candidate -> why no plan uses it
    stopped_by: str = ""  # why the search stopped before its proof ("" when proven)
    # every plan cheaper than this was walked; with no plan found, any plan costs more
    walked_below_usd_per_hour: float = 0.0


def _policies(scenario: Scenario, arch: str) -> list[RoutingPolicy]:
    base = cd.default_policy(scenario)
    if arch != "pdd":
        return _with_caches(scenario, arch, [base])
    p = scenario.policy
    thresholds = THRESHOLDS if p.rld_hit_threshold is None else (p.rld_hit_threshold,)
    handoffs = ("catch_up", "one_shot") if p.handoff == "auto" else (p.handoff,)
    return _with_caches(
        scenario,
        arch,
        [
            dataclasses.replace(base, rld_hit_threshold=t, handoff=h)
            for t in thresholds
            for h in handoffs
        ],
    )


def _with_caches(scenario: Scenario, arch: str, policies: list) -> list[RoutingPolicy]:
    """Each policy with each decode-side cache option the scenario offers (a decision like
    the line tiers: `policy.decode_cache`), for the architectures with a main decode."""
    options = scenario.policy.decode_cache
    if options is None or arch not in ("pdd", "cdc_pd"):
        return policies
    buys = buy_options(options)
    return [dataclasses.replace(p, decode_cache=b) for p in policies for b in buys]


def _wan_needs(scenario, model, classes, routes, rate, cap) -> tuple[float, np.ndarray]:
    """WAN bits per request, and each class's transfer time on a line sized at the cap."""
    w = classes.weight
    bits = float(np.dot(w, routes.wan_payload_bytes)) * BITS_PER_BYTE
    if bits <= 0:
        return 0.0, np.zeros(len(classes))
    line = rate * bits / cap
    link = WanLink(
        line,
        scenario.wan.rtt_s,
        scenario.wan.per_connection_bits_per_s,
        scenario.wan.connection_pool_size,
        stripes_per_transfer=scenario.wan.stripes_per_transfer,
    )
    crossing = routes.wan_payload_bytes > 0
    try:
        result = wan_transfer(
            link, routes.wan_payload_bytes[crossing], w[crossing], rate * w[crossing].sum()
        )
        times = np.zeros(len(classes))
        times[crossing] = result.transfer_s + result.connection_wait.mean_s()
    except SaturatedError:  # the pool, not the line, binds: take the bytes at the cap
        times = routes.wan_payload_bytes * BITS_PER_BYTE / scenario.wan.per_connection_bits_per_s
    return bits, times


def _rld_tokens(scenario, classes, routes, wan_times) -> np.ndarray:
    """Eager tokens per class, taking RLD's step at the TPOT limit's 60 % (an estimate the
    verification corrects: a plan short of RLD capacity misses its SLA and is resized)."""
    tpot = min(scenario.sla.tpot_s.values(), default=0.05)
    eager = rt.eager_tokens(wan_times, 0.6 * tpot, classes.output_tokens)
    relay = routes.path == rt.RELAY
    local = routes.path == rt.LOCAL
    return np.where(local, classes.output_tokens, np.where(relay, eager, 0.0))


def _deployment(arch, form, usable, tiers, policy) -> Deployment:
    groups = tuple(
        InstanceGroup(
            c.role, c.datacenter, c.gpu, c.gpus_per_instance, round(form.instances[c.key].value())
        )
        for c in usable
        if (form.instances[c.key].value() or 0) > 0.5
    )
    lines = tuple(
        LineLease(t, tiers[t].capacity_bits_per_s, round(v.value()))
        for t, v in form.lines.items()
        if (v.value() or 0) > 0.5
    )
    return Deployment(arch, groups, lines, policy)


def _optimise(scenario, usable, demands, tiers, bits, time_limit_s, fixed=0.0):
    """One MILP (or a Dinkelbach sequence of them) for the scenario's objective; `fixed`:
    $/h every plan of the policy pays (its cache tier)."""
    obj = scenario.objective
    offered = scenario.workload.arrival_rate_per_s
    if obj.kind == "min_cost":
        form = formulate(
            scenario,
            usable,
            demands,
            tiers,
            bits,
            demand_rps=obj.demand_rps or offered,
            fixed_usd_per_hour=fixed,
        )
        return form, solve_milp(form, time_limit_s)
    if obj.kind == "max_goodput":
        form = formulate(
            scenario,
            usable,
            demands,
            tiers,
            bits,
            budget_usd_per_hour=obj.budget_usd_per_hour,
            rate_cap_rps=10 * offered,
            fixed_usd_per_hour=fixed,
        )
        return form, solve_milp(form, time_limit_s)
    q, best = 0.0, None  # Dinkelbach: maximise rate - q cost until the optimum is 0
    for _ in range(30):
        form = formulate(
            scenario,
            usable,
            demands,
            tiers,
            bits,
            rate_floor_rps=offered,
            rate_cap_rps=BCR_HEADROOM * offered,
            ratio_q=q,
            budget_usd_per_hour=obj.budget_usd_per_hour,
            fixed_usd_per_hour=fixed,
        )
        status = solve_milp(form, time_limit_s)
        if status != "Optimal":
            return (best, "Optimal") if best else (form, status)
        cost, rate = float(form.cost.value() or 0.0), float(form.rate.value() or 0.0)
        if cost <= 0 or rate - q * cost <= DINKELBACH_TOL * max(rate, 1.0):
            # no plan beats ratio q: the previous solution (which reached it) is optimal
            return (best, "Optimal") if best else (form, status)
        q, best = rate / cost, form
    return best, "Optimal"


def _milp_inputs(sized, model, catalog_gpus, arch, policy, all_classes, offered, cap):
    """Candidates and role demands for the MILP. With hit-rate alternatives, each candidate
    gets its capacity per unit of demand under the distribution that asks most of it (with
    one type per role, covering each distribution's demand is covering that one), and the
    WAN the most bytes of any."""
    inputs = []
    for classes in all_classes:
        # split by MD residency, as `prepare` does (this call once ignored MD's cache)
        classes, routes = routed(sized, arch, policy, classes, model)
        bits, wan_times = _wan_needs(sized, model, classes, routes, offered, cap)
        demands = cd.role_demands(
            arch, classes, routes, _rld_tokens(sized, classes, routes, wan_times)
        )
        cands = cd.candidates(sized, model, catalog_gpus, arch, classes, demands)
        inputs.append((bits, demands, cands))
    if len(inputs) == 1:
        return inputs[0]
    bits = max(b for b, _, _ in inputs)
    merged, demands = [], dict(inputs[0][1])
    for i, first in enumerate(inputs[0][2]):
        alike = [cands[i] for _, _, cands in inputs]
        pruned = next((c.pruned for c in alike if c.pruned), "")
        per_unit = [
            c.capacity_rps / d[c.role].share
            for c, (_, d, _) in zip(alike, inputs, strict=True)
            if d[c.role].share > 0
        ]
        if per_unit:
            demands[first.role] = dataclasses.replace(demands[first.role], share=1.0)
            first = dataclasses.replace(first, capacity_rps=min(per_unit))
        merged.append(dataclasses.replace(first, pruned=pruned))
    return bits, demands, merged


def _size_for_policy(
    scenario, arch, tiers, policy, milp, attempts, search, gated=True
) -> tuple[list, tuple | None]:
    """The MILP's plan for one policy, checked with the search's evaluator at the rate it
    was sized for, and offered to the search as a seed; a plan that misses is sized again
    at a lower utilisation cap. `gated`: a plan that could not beat the search's best is
    not checked. Returns (candidates, (plan, form) or None)."""
    cap = scenario.policy.utilization_cap_frac
    for _ in range(MAX_RESIZES):
        cands, usable, missing, form, status = milp(policy, cap)
        if missing:
            attempts.append(Attempt(policy, cap, f"no usable candidate for {', '.join(missing)}"))
            return cands, None
        if status != "Optimal":
            attempts.append(Attempt(policy, cap, milp_outcome(status)))
            return cands, None
        deployment = _deployment(arch, form, usable, tiers, policy)
        rate = float(form.rate.value() if hasattr(form.rate, "value") else form.rate)
        if gated and not search.could_win(deployment):
            attempts.append(Attempt(policy, cap, "not checked: cannot beat a verified plan"))
            return cands, None
        if rate > 0 and search.meets(deployment, rate):
            attempts.append(Attempt(policy, cap, "verified"))
            search.consider_seed(deployment)
            if is_mixed(deployment):  # the MILP's spare capacity, trimmed (mixed_trim.py)
                per_capacity = {c.key: c.price_usd_per_hour / c.capacity_rps for c in usable}
                search.consider_seed(trim(deployment, rate, search.meets, per_capacity))
            return cands, (deployment, form)
        attempts.append(Attempt(policy, cap, "SLA missed at the sized rate: resized"))
        cap *= CAP_SHRINK
    return cands, None


def milp_outcome(status: str) -> str:
    """An attempt's outcome for a MILP status other than Optimal: PuLP says "Not Solved"
    when HiGHS stopped at its time limit without a solution (or was never started here,
    the solve's deadline having passed): no proof of anything."""
    if status in ("Not Solved", NOT_STARTED):
        return "MILP stopped at the time limit (not proven infeasible)"
    return f"MILP {status.lower()}"


def _milp_estimate(scenario, arch, tiers, policy, milp) -> float:
    """How good the MILP thinks its plan for `policy` is (higher is better)."""
    _, usable, missing, form, status = milp(policy, scenario.policy.utilization_cap_frac)
    if missing or status != "Optimal":
        return -float("inf")
    cost = float(form.cost.value() or 0.0)
    rate = float(form.rate.value() if hasattr(form.rate, "value") else form.rate)
    kind = scenario.objective.kind
    return -cost if kind == "min_cost" else rate / cost if kind == "max_bcr" and cost else rate


def _milp_runner(scenario, model, gpus, tiers, arch, all_classes, deadline, plans=None):
    """policy, cap -> (candidates, usable, roles without one, form, status); the handoff
    mode changes nothing the MILP sees, so policies that differ only in it share one.
    Each MILP gets the time left to the solve's `deadline` (perf_counter); none starts
    after it (status NOT_STARTED)."""
    memo = {}
    offered = scenario.workload.arrival_rate_per_s

    def milp(policy, cap):
        key = (policy.rld_hit_threshold, policy.short_output_cutoff, policy.decode_cache, cap)
        left_s = deadline - time.perf_counter()
        if key not in memo and left_s <= 0:
            return [], [], [], None, NOT_STARTED
        if key not in memo:
            # the scenario as the search's space reads the policy (its cache's capacity)
            base = plans.scenario_for(policy) if plans is not None else scenario
            sized = dataclasses.replace(
                base, policy=dataclasses.replace(base.policy, utilization_cap_frac=cap)
            )
            bits, demands, cands = _milp_inputs(
                sized, model, gpus, arch, policy, all_classes, offered, cap
            )
            usable = [c for c in cands if not c.pruned and c.capacity_rps > 0]
            missing = [r for r in demands if not any(c.role == r for c in usable)]
            form, status = None, ""
            if not missing:
                fixed = policy.decode_cache.usd_per_hour if policy.decode_cache else 0.0
                form, status = _optimise(sized, usable, demands, tiers, bits, left_s, fixed)
            memo[key] = (cands, usable, missing, form, status)
        return memo[key]

    return milp


def _no_candidate(why: str, search) -> None:
    """InfeasibleError for a role no candidate can serve; with the SLA floor it misses, in
    figures, when that is the cause (floors.py)."""
    empty = [
        role
        for i, role in enumerate(search.roles)
        if all(not sp.choices[i] for sp in search.spaces)
    ]
    floors = sla_floors(search.plans, empty)
    if not floors:
        raise InfeasibleError(why)
    what = "; ".join(
        f"{f.limit}: needs {f.needs:.3g} {f.unit}, the limit is {f.has:.3g} {f.unit} "
        f"(relax: {f.relaxation})"
        for f in floors
    )
    raise ShortfallError(f"{why} ({what})", floors)


def _mix_may_serve(scenario: Scenario, search) -> bool:
    """With mixed pools, a role that no candidate can serve alone may be served by several
    together when at least two are short only of their count limit (availability or
    power): then the MILP is asked before refusing. Under some policy, every role left
    without a candidate must be such a role."""
    if not scenario.policy.mixed_pools:
        return False

    def count_limited(sp, role: str) -> int:
        return sum(
            1
            for key, why in sp.pruned.items()
            if key.startswith(role + "_") and why.startswith(COUNT_LIMITED)
        )

    return any(
        all(
            role in MIXABLE_ROLES and count_limited(sp, role) >= 2
            for role, choices in zip(search.roles, sp.choices, strict=True)
            if not choices
        )
        for sp in search.spaces
    )


def solve(
    scenario: Scenario,
    model,
    gpus: dict,
    tiers: dict,
    architecture: str = "pdd",
    resolution=DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    deadline: float | None = None,
) -> SolveResult:
    """`deadline` (time.perf_counter()): when the solve must stop, by default
    `time_limit_s` from this call; everything counts against it (candidates and their
    bounds, the MILPs, the walk), and a solve stopped by it without a plan is "unproven"."""
    start = time.perf_counter()
    deadline = start + time_limit_s if deadline is None else deadline
    if architecture not in ARCHITECTURE_ROLES:
        raise ValueError(f"unknown architecture {architecture!r}")
    policies = _policies(scenario, architecture)
    try:
        search = sr.Search(
            scenario, model, gpus, tiers, architecture, policies, tuple(resolution),
            deadline=deadline,
        )  # fmt: skip
    except OutOfTime:  # still bounding the candidates: nothing is proven
        return SolveResult(
            "unproven", architecture, None, None, 0.0, [], wall_s=time.perf_counter() - start,
            proven=False, bound=float("inf"), stopped_by=f"{sr.STOP_TIME} (bounding candidates)",
        )  # fmt: skip
    why = search.plans.no_candidate(search.spaces)
    if why and not _mix_may_serve(scenario, search):
        _no_candidate(why, search)
    # a WAN the KV cannot cross at the least rate asked: refused before any MILP or search
    check_wan(scenario, tiers, architecture, search.plans, policies, search.goal.floor_rps)
    # the MILP's capacities come from a coarse grid of request classes; its plans are
    # checked on the search's grid and seed it (and give the LP dump and explain's MILP)
    coarse = tuple(min(a, b) for a, b in zip(SEARCH_RESOLUTION, resolution, strict=True))
    w = scenario.workload
    all_classes = [
        request_classes(w.input_tokens, w.output_tokens, d, coarse) for d in search.dists
    ]
    milp = _milp_runner(
        scenario, model, gpus, tiers, architecture, all_classes, deadline, search.plans
    )
    attempts: list[Attempt] = []
    forms, all_candidates = {}, []

    def size(policy, gated=True):
        nonlocal all_candidates
        cands, found = _size_for_policy(
            scenario, architecture, tiers, policy, milp, attempts, search, gated
        )
        all_candidates = all_candidates or cands
        if found is not None:
            forms[policy] = found[1]

    ranked = sorted(policies, key=lambda p: -_milp_estimate(scenario, architecture, tiers, p, milp))
    for policy in ranked:
        size(policy)
    outcome = search.run()
    winner = outcome.deployment
    if winner is not None and winner.policy not in forms:
        size(winner.policy, gated=False)  # its MILP, checked: the LP dump and explain
    # pruned: what no policy's plan can use (the search's proofs, not the MILP's estimates)
    everywhere = set.intersection(*(set(sp.pruned) for sp in search.spaces))
    pruned = {k: v for k, v in search.spaces[0].pruned.items() if k in everywhere}
    cands = [dataclasses.replace(c, pruned=pruned.get(c.key, "")) for c in all_candidates]
    common = dict(
        attempts=attempts, proven=outcome.proven, bound=outcome.bound,
        evaluations=outcome.evaluations, pruned=pruned, stopped_by=outcome.stopped_by,
        walked_below_usd_per_hour=outcome.walked_below_usd_per_hour,
    )  # fmt: skip
    if outcome.deployment is None:
        wall = time.perf_counter() - start
        status = "infeasible" if outcome.proven else "unproven"
        return SolveResult(status, architecture, None, None, 0.0, cands, wall_s=wall, **common)
    deployment = outcome.deployment
    full = prepare(scenario, deployment, model, gpus, tiers, resolution)
    metrics, _ = evaluate(full, known=search.known(deployment, 0))
    if full.mixed:  # what the proof covers (the module's doc)
        groups = ", ".join(f"{p.group.count} x {p.group.gpus_per_instance} {p.group.gpu}"
                           for p in full.decode_groups)  # fmt: skip
        note = MIXED_NOTE.format(role=full.decode.group.role, groups=groups)
        metrics = dataclasses.replace(metrics, warnings=(*metrics.warnings, note))
    rate = outcome.rate_rps
    if scenario.objective.kind != "min_cost":
        # what the plan carries under every distribution, by evaluate's own bisection (the
        # search's depends on the order it met the plans in)
        carried = [metrics.goodput_rps] + [
            goodput_rps(
                prepare(scenario, deployment, model, gpus, tiers, resolution, h),
                known=search.known(deployment, i),
            )
            for i, h in enumerate(scenario.workload.hit_rate_alternatives.values(), start=1)
        ]
        rate = min(search.goal.cap_rps, *carried)
    form = forms.get(deployment.policy) or next(iter(forms.values()), None)
    return SolveResult(
        "optimal" if outcome.proven else "feasible",  # feasible: stopped before the proof
        architecture,
        deployment,
        metrics,
        rate,
        cands,
        wall_s=time.perf_counter() - start,
        lp_text=lp_text(form.problem) if form is not None else "",
        **common,
    )
