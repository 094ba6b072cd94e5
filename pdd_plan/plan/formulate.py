"""The MILP: integer instances per candidate and lines per tier, linear capacities.

Variable and constraint names read as sentences in an LP dump, e.g.
`instances_of_prefill_dc_a_h100_sxm_x32`, `prefill_capacity_covers_its_demand`, and
stay within an LP file's limits whatever the ids (lp_names.py).

One GPU type and shape per role, except, with `policy.mixed_pools: true` (the default),
in the role that finishes requests (main decode, IDC-PD's decode: model/decode/mixed_pool.py),
where any candidates may add up: the router splits by capacity, so the linear capacity
sum is what the mixed role carries. A mixed plan only ever replaces a better single-type
one (solve.py), so mixing finds plans at least as good; on by default because the
exhaustive and property tests of the optimiser and the goldens pass unchanged with it and
the default solve is as fast (README). The exact search (search.py) still walks one type
per role: a mixed answer is the MILP's, trimmed and checked by evaluate, not proven best
among mixes (its warning says so). `mixed_pools: false` restores the full proof.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pulp

from pdd_plan.model.compute.hardware import LineTier
from pdd_plan.model.decode.mixed_pool import MIXABLE_ROLES
from pdd_plan.model.placement import ACROSS_ROLES, BESIDE_ROLES
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.plan import lp_names as nm
from pdd_plan.plan.candidates import Candidate, RoleDemand

MAX_INSTANCES = 10_000  # per candidate: a bound for the one-type-per-role link
MIP_GAP_REL = 1e-6  # HiGHS stops within this relative gap of the proven bound
# HiGHS's feasibility-jump heuristic (on by default since HiGHS 1.9) costs about 10 ms before
# branch and bound starts, 10x what our small MILPs (tens of integers) need in all; off, the
# solver still proves the same optimum within MIP_GAP_REL. A primal heuristic only speeds up
# finding a first incumbent, which presolve and the LP relaxation find at once here.
HIGHS_OPTIONS = {"mip_heuristic_run_feasibility_jump": False}


@dataclass
class Formulation:
    problem: pulp.LpProblem
    instances: dict[str, pulp.LpVariable]  # candidate key -> count
    chosen: dict[str, pulp.LpVariable]  # candidate key -> binary: this type serves its role
    lines: dict[str, pulp.LpVariable]  # tier id -> count
    rate: pulp.LpVariable | pulp.LpAffineExpression  # requests/s the plan must carry
    cost: pulp.LpAffineExpression  # USD per hour


def line_price_usd_per_hour(scenario: Scenario, tier: LineTier) -> float:
    monthly = scenario.wan.tier_price_usd_per_month.get(tier.id, tier.price_usd_per_month)
    return monthly / HOURS_PER_MONTH


def formulate(
    scenario: Scenario,
    usable: list[Candidate],
    demands: dict[str, RoleDemand],
    tiers: dict[str, LineTier],
    wan_bits_per_request: float,
    *,
    demand_rps: float | None = None,
    rate_cap_rps: float | None = None,
    rate_floor_rps: float = 0.0,
    budget_usd_per_hour: float | None = None,
    ratio_q: float | None = None,
    name: str = "pdd_plan",
    fixed_usd_per_hour: float = 0.0,
) -> Formulation:
    """`demand_rps` fixes the rate (min cost); otherwise the rate is a variable between
    `rate_floor_rps` and `rate_cap_rps`, maximised (`ratio_q` None) or traded against
    cost (Dinkelbach: maximise rate - q x cost)."""
    minimise = demand_rps is not None and ratio_q is None
    prob = pulp.LpProblem(name, pulp.LpMinimize if minimise else pulp.LpMaximize)
    n = {
        c.key: prob.add_variable(nm.instances_var(c), 0, MAX_INSTANCES, cat="Integer")
        for c in usable
    }
    y = {c.key: prob.add_variable(nm.chosen_var(c), cat="Binary") for c in usable}
    crossing = wan_bits_per_request > 0
    leases = {
        t: prob.add_variable(nm.lines_var(t), 0, scenario.wan.max_lines, cat="Integer")
        for t in (scenario.wan.tiers if crossing else ())
    }
    rate = (
        demand_rps
        if demand_rps is not None
        else prob.add_variable("served_requests_per_s", rate_floor_rps, rate_cap_rps)
    )
    cost = pulp.lpSum(c.price_usd_per_hour * n[c.key] for c in usable) + pulp.lpSum(
        line_price_usd_per_hour(scenario, tiers[t]) * leases[t] for t in leases
    )
    cost += fixed_usd_per_hour  # what the policy pays whatever the counts (its cache tier)
    for role, demand in demands.items():
        mine = [c for c in usable if c.role == role]
        if all(math.isfinite(c.capacity_rps) for c in mine):  # inf: the role gets no tokens
            prob += (
                pulp.lpSum(c.capacity_rps * n[c.key] for c in mine) >= demand.share * rate,
                nm.capacity_constraint(role),
            )
        one_type = not (scenario.policy.mixed_pools and role in MIXABLE_ROLES)
        if one_type:  # (else any candidates of the role may add up: the module's doc)
            # exactly one: at least one instance needs its type chosen (a valid equality
            # that keeps the LP relaxation from spreading the choice thin)
            prob += pulp.lpSum(y[c.key] for c in mine) == 1, f"one_gpu_type_and_shape_for_{role}"
        prob += pulp.lpSum(n[c.key] for c in mine) >= 1, f"at_least_one_{role}_instance"
        for c in mine if one_type else ():
            prob += n[c.key] <= MAX_INSTANCES * y[c.key], nm.only_chosen_constraint(c)
    if crossing:
        cap = scenario.policy.utilization_cap_frac
        prob += (
            pulp.lpSum(tiers[t].capacity_bits_per_s * cap * leases[t] for t in leases)
            >= wan_bits_per_request * rate,
            "line_capacity_covers_the_wan_bytes",
        )
        prob += (
            pulp.lpSum(leases.values()) <= scenario.wan.max_lines,
            "lines_within_the_allowed_count",
        )
    _inventory(prob, scenario, usable, n)
    _placement(prob, usable, n, y)
    if budget_usd_per_hour is not None:
        prob += cost <= budget_usd_per_hour, "cost_within_the_budget"
    if minimise:
        prob += cost
    elif ratio_q is None:
        prob += rate
    else:
        prob += rate - ratio_q * cost
    return Formulation(prob, n, y, leases, rate, cost)


def _inventory(prob, scenario: Scenario, usable: list[Candidate], n) -> None:
    for dc in scenario.datacenters:
        for offer in dc.gpus:
            mine = [c for c in usable if c.datacenter == dc.id and c.gpu == offer.gpu]
            if mine and offer.max_gpus is not None:
                prob += (
                    pulp.lpSum(c.gpus_per_instance * n[c.key] for c in mine) <= offer.max_gpus,
                    nm.availability_constraint(offer.gpu, dc.id),
                )
        here = [c for c in usable if c.datacenter == dc.id]
        if here and dc.power_budget_w is not None:
            prob += (
                pulp.lpSum(c.power_w / 1e3 * n[c.key] for c in here) <= dc.power_budget_w / 1e3,
                nm.power_constraint(dc.id),
            )
        if here and dc.budget_usd_per_hour is not None:
            prob += (
                pulp.lpSum(c.price_usd_per_hour * n[c.key] for c in here) <= dc.budget_usd_per_hour,
                nm.spending_constraint(dc.id),
            )


def _placement(prob, usable: list[Candidate], n, y) -> None:
    """Roles beside prefill only in its datacenter, main decode only in another
    (model/placement.py): prefill is one type, so its chosen binary names its datacenter."""
    prefill = [c for c in usable if c.role == "prefill"]
    if not prefill:
        return
    for c in usable:
        if c.role in BESIDE_ROLES:
            homes = [y[p.key] for p in prefill if p.datacenter == c.datacenter]
            name = nm.beside_prefill_constraint(c)
        elif c.role in ACROSS_ROLES:
            homes = [y[p.key] for p in prefill if p.datacenter != c.datacenter]
            name = nm.across_the_line_constraint(c)
        else:
            continue
        prob += n[c.key] <= MAX_INSTANCES * pulp.lpSum(homes), name


def solve_milp(form: Formulation, time_limit_s: float = 30.0) -> str:
    solver = pulp.HiGHS(msg=False, timeLimit=time_limit_s, gapRel=MIP_GAP_REL, **HIGHS_OPTIONS)
    form.problem.solve(solver)
    return pulp.LpStatus[form.problem.status]


def lp_text(problem: pulp.LpProblem) -> str:
    """The problem as an LP file's text (what `--dump-lp` writes)."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plan.lp")
        problem.writeLP(path)
        with open(path, encoding="utf-8") as handle:
            return handle.read()
