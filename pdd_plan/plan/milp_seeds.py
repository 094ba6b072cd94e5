"""The MILP's seeds for the search (solve.py's step 1): one MILP (or Dinkelbach sequence)
per routing policy, on linear capacities under a utilisation cap; its plan checked with
the search's evaluator, sized again at a lower cap when it misses, and offered to the
search as a seed. The MILP never prunes: its plans only tell the search where it may stop.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.model import routing as rt
from pdd_plan.model.decode.relay import eager_tokens
from pdd_plan.model.decode_cache import routed
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease, RoutingPolicy
from pdd_plan.model.network.network import WanLink, wan_transfer
from pdd_plan.plan import candidates as cd
from pdd_plan.plan import search as sr
from pdd_plan.plan.formulate import formulate, solve_milp
from pdd_plan.plan.mixed_trim import is_mixed, trim

CAP_SHRINK = 0.85  # utilisation cap multiplier when a sized plan misses its SLA
MAX_RESIZES = 6
DINKELBACH_TOL = 1e-6
BCR_HEADROOM = sr.BCR_HEADROOM  # max_bcr sizes the MILP for at most this multiple of demand
BITS_PER_BYTE = 8
NOT_STARTED = "Not Started"  # a MILP the solve's deadline left no time for


@dataclass(frozen=True)
class Attempt:
    policy: RoutingPolicy
    utilization_cap_frac: float
    outcome: str  # "verified", "sla missed", "infeasible", ...


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
    eager = eager_tokens(wan_times, 0.6 * tpot, classes.output_tokens)
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
    # the same candidates, demands, line bytes and fixed cost; each objective its own terms
    milp = functools.partial(formulate, scenario, usable, demands, tiers, bits,
                             fixed_usd_per_hour=fixed)  # fmt: skip
    if obj.kind == "min_cost":
        form = milp(demand_rps=obj.demand_rps or offered)
        return form, solve_milp(form, time_limit_s)
    if obj.kind == "max_goodput":
        form = milp(budget_usd_per_hour=obj.budget_usd_per_hour, rate_cap_rps=10 * offered)
        return form, solve_milp(form, time_limit_s)
    q, best = 0.0, None  # Dinkelbach: maximise rate - q cost until the optimum is 0
    for _ in range(30):
        form = milp(rate_floor_rps=offered, rate_cap_rps=BCR_HEADROOM * offered, ratio_q=q,
                    budget_usd_per_hour=obj.budget_usd_per_hour)  # fmt: skip
        status = solve_milp(form, time_limit_s)
        if status != "Optimal":
            return (best, "Optimal") if best else (form, status)
        cost, rate = float(form.cost.value() or 0.0), float(form.rate.value() or 0.0)
        if cost <= 0 or rate - q * cost <= DINKELBACH_TOL * max(rate, 1.0):
            # no plan beats ratio q: the previous solution (which reached it) is optimal
            return (best, "Optimal") if best else (form, status)
        q, best = rate / cost, form
    return best, "Optimal"


def milp_inputs(sized, model, catalog_gpus, arch, policy, all_classes, offered, cap):
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


def size_for_policy(
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
        missed = "SLA or utilisation cap missed at the sized rate: resized"  # search.meets
        attempts.append(Attempt(policy, cap, missed))
        cap *= CAP_SHRINK
    return cands, None


def milp_outcome(status: str) -> str:
    """An attempt's outcome for a MILP status other than Optimal: PuLP says "Not Solved"
    when HiGHS stopped at its time limit without a solution (or was never started here,
    the solve's deadline having passed): no proof of anything."""
    if status in ("Not Solved", NOT_STARTED):
        return "MILP stopped at the time limit (not proven infeasible)"
    return f"MILP {status.lower()}"


def milp_estimate(scenario, arch, tiers, policy, milp) -> float:
    """How good the MILP thinks its plan for `policy` is (higher is better)."""
    _, usable, missing, form, status = milp(policy, scenario.policy.utilization_cap_frac)
    if missing or status != "Optimal":
        return -float("inf")
    cost = float(form.cost.value() or 0.0)
    rate = float(form.rate.value() if hasattr(form.rate, "value") else form.rate)
    kind = scenario.objective.kind
    return -cost if kind == "min_cost" else rate / cost if kind == "max_bcr" and cost else rate


def milp_runner(scenario, model, gpus, tiers, arch, all_classes, deadline, plans=None):
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
            bits, demands, cands = milp_inputs(
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
