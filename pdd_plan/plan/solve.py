"""solve: the plan with the best objective whose SLA holds, proven best by a search that
checks plans with `evaluate` itself.

1. Seeds (milp_seeds.py): the MILP (formulate.py), one per hit threshold (the handoff
   mode changes nothing it sees): linear capacities under a utilisation cap; min cost at a
   demand, max goodput within a budget, max BCR by Dinkelbach's iterations, each an exact
   MILP; with hit-rate
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
exact to IMPROVE_REL_TOL + GOODPUT_REL_TOL (relative). The MILP's capacities never prune;
`policy.utilization_cap_frac` does, as a rule and not as an estimate: a plan is acceptable
only if, at the rate every plan must carry, its line and every GPU role run within the cap
as evaluate reports them (search.py), whatever the MILP's linear capacities said.
tests/property/test_solve_exhaustive.py lists every plan of small random scenarios, applies
the same rule, and finds none better.

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

from pdd_plan.model.caches.cache_tier import buy_options
from pdd_plan.model.decode.mixed_pool import MIXABLE_ROLES
from pdd_plan.model.deployment import ARCHITECTURE_ROLES, Deployment, RoutingPolicy
from pdd_plan.model.evaluate import evaluate, goodput_rps, prepare
from pdd_plan.model.metrics import Metrics
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION, request_classes
from pdd_plan.plan import candidates as cd
from pdd_plan.plan import milp_seeds as ms
from pdd_plan.plan import search as sr
from pdd_plan.plan.ceilings import ShortfallError, check_wan
from pdd_plan.plan.figures import up_3g
from pdd_plan.plan.floors import sla_floors
from pdd_plan.plan.formulate import lp_text
from pdd_plan.plan.milp_seeds import Attempt
from pdd_plan.plan.nearest import closest_misses
from pdd_plan.plan.no_candidate import refuse
from pdd_plan.plan.space import COUNT_LIMITED, OutOfTime

THRESHOLDS = (0.8, 0.9, 0.95)
BCR_HEADROOM = sr.BCR_HEADROOM  # max_bcr sizes the MILP for at most this multiple of demand
SEARCH_RESOLUTION = (4, 6, 12)  # request classes of the MILP's capacities (288 classes)
MIXED_NOTE = (
    "{role} mixes GPU types ({groups}): the MILP's plan (policy.mixed_pools), trimmed and "
    "checked by evaluate; the search proved that no single-type plan beats it, not that no "
    "other mix does"
)


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
    # infeasible: the limit the plans come closest to and by how much (nearest.py), as a
    # line and as `solve --format json` shortfalls
    reason: str = ""
    shortfalls: list[dict] = field(default_factory=list)


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
        refuse(why, search, empty)  # the figures of each way its candidates fail
    _raise_floors(why, floors)


def _raise_floors(why: str, floors) -> None:
    what = "; ".join(
        f"{f.limit}: needs {up_3g(f.needs)} {f.unit}, the limit is {f.has:.3g} {f.unit} "
        f"(relax: {f.relaxation})"
        for f in floors
    )
    raise ShortfallError(f"{why} ({what})", floors)


def _floors_missed(search, cands) -> None:
    """A walk that proved no plan meets the SLA, where some role has no candidate with
    capacity (PDD keeps its decode roles' candidates in the walk): ShortfallError naming
    the SLA floors those roles miss, in figures (floors.py), so the answer says which
    limit and by how much; nothing when no floor is missed."""
    unserved = [
        role
        for role in search.roles
        if not any(c.role == role and not c.pruned and c.capacity_rps > 0 for c in cands)
    ]
    floors = sla_floors(search.plans, unserved)
    if floors:
        _raise_floors(f"no {search.arch} plan meets the SLA", floors)


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
            deadline=deadline, refuse_beyond_ceiling=True,
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
    milp = ms.milp_runner(
        scenario, model, gpus, tiers, architecture, all_classes, deadline, search.plans
    )
    attempts: list[Attempt] = []
    forms, all_candidates = {}, []

    def size(policy, gated=True):
        nonlocal all_candidates
        cands, found = ms.size_for_policy(
            scenario, architecture, tiers, policy, milp, attempts, search, gated
        )
        all_candidates = all_candidates or cands
        if found is not None:
            forms[policy] = found[1]

    ranked = sorted(
        policies, key=lambda p: -ms.milp_estimate(scenario, architecture, tiers, p, milp)
    )
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
        why, misses = "", []
        if outcome.proven:
            _floors_missed(search, cands)
            why, misses = closest_misses(search)
        wall = time.perf_counter() - start
        status = "infeasible" if outcome.proven else "unproven"
        return SolveResult(status, architecture, None, None, 0.0, cands, wall_s=wall, **common,
                           reason=why, shortfalls=[m.to_json() for m in misses])  # fmt: skip
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
