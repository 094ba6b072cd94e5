"""The most requests/s the scenario's GPUs could carry in a role, checked before the search.

For each role, every candidate (datacenter, GPU, shape) at the most instances its
availability and power budget allow (space.py's `max_count`, which every plan, walked or
mixed by the MILP, stays within), each at the rate at which bounds.py proves its queue
saturates:
- prefill: n x `capacity_rps` (batched: full steps) or n / E[prefill time]: at or above it
  the G/G/c queue never empties (PrefillBound.ok refuses it before any percentile);
- decode roles: `max_rate(n)`, n x the most tokens/s an instance decodes at the pool's
  least mean context and TPOT limit / the tokens per request (DecodeBound, and PDD's first
  pass, FirstPassBound): linear in n;
- relay decode: no bound (inf), as in bounds.py.
A plan's role carries at most the sum over the candidates it uses of count x that rate,
so at most `ceiling` = the sum over every candidate at its most: a mixed decode role gives
each group a share of the same requests (model/decode/mixed_pool.py), so the groups' ceilings
add. A role's ceiling is taken as the most over the routing policies solve may pick and
the least over the hit-rate distributions every plan must meet; below the rate the
objective asks every plan to carry (Goal.floor_rps), with a relative margin, no plan
exists and the solve is refused at once, naming the role and the figures (issue #22:
1e7 req/s took 14 s to refuse, in bounds.py's queue for 1e5-instance counts).

It is a proof resting on bounds.py's, never a heuristic: it refuses only what every
candidate's own bound refuses, and tests/property/test_capacity_ceiling.py checks that
no scenario it refuses has a plan the search would find.
"""

from __future__ import annotations

import math

from pdd_plan.errors import InfeasibleError
from pdd_plan.plan import bounds as bd
from pdd_plan.plan.candidates import shapes
from pdd_plan.plan.ceilings import Shortfall
from pdd_plan.plan.figures import up_3g
from pdd_plan.plan.goal import Goal
from pdd_plan.plan.space import Spaces

# a float summed in another order must never refuse a plan bounds.py lets through
CEILING_REL_SLACK = 1e-6


def per_instance_rps(bound: bd.RoleBound) -> float:
    """The rate at which one instance of a candidate saturates (bounds.py's proof)."""
    if isinstance(bound, bd.BatchedPrefillBound):
        return bound.capacity_rps
    if isinstance(bound, bd.PrefillBound):
        return math.inf if bound.mean <= 0 else 1.0 / bound.mean
    return bound.max_rate(1)


def role_ceilings(plans: Spaces, policies) -> dict:
    """role -> the most requests/s any plan's role can carry (module doc). Shares its
    instances and bounds with the search's `plans`, and stops (OutOfTime) at its
    deadline, as bounding the candidates does."""
    ceilings = dict.fromkeys(plans.roles, 0.0)
    for policy in policies:
        per_dist = [plans._classes_routes(policy, c) for c in plans.classes]
        for role in plans.roles:
            each = [_role_rps(plans, role, policy, i, c, r) for i, (c, r) in enumerate(per_dist)]
            ceilings[role] = max(ceilings[role], min(each))
    return ceilings


def _role_rps(plans: Spaces, role: str, policy, dist: int, c, routes) -> float:
    """Sum over the role's candidates of (most instances) x (per-instance saturation)."""
    total = 0.0
    for dc in (d for d in plans.scenario.datacenters if role in d.roles):
        for offer in dc.gpus:
            gpu = plans.gpus[offer.gpu]
            for n in shapes(gpu.gpus_per_node, offer.gpus_per_instance):
                if offer.max_gpus is not None and n > offer.max_gpus:
                    continue
                plans.check_time()
                inst = plans._instance(gpu.id, n)
                if not inst.fits():
                    continue
                bound = plans._role_bound(role, inst, policy, dist, c, routes)
                most, _ = plans._most_instances(dc, offer, n)
                total += most * per_instance_rps(bound)
    return total


class CapacityError(InfeasibleError):
    """No plan: a role's ceiling is below the rate. Its figures are in the message and in
    `ceilings` (Shortfall); no `shortfalls` attribute, so the answer (infeasible.py) still
    asks the elastic MILP what availability, power or budget would change."""

    def __init__(self, message: str, ceilings: list[Shortfall]):
        super().__init__(message)
        self.ceilings = [c.to_json() for c in ceilings]


def refuse_beyond_capacity(plans: Spaces, policies, goal: Goal) -> None:
    """CapacityError when some role's ceiling is below the rate every plan must carry
    (`goal.floor_rps`). A role no candidate can serve at all (ceiling 0: the weights do
    not fit, or the SLA is missed at any count) is left to the search, whose answer says
    why."""
    scenario, arch = plans.scenario, plans.arch
    ceilings = role_ceilings(plans, policies)
    floor = goal.floor_rps
    short = {r: c for r, c in ceilings.items() if c > 0 and floor > c * (1 + CEILING_REL_SLACK)}
    if not short:
        return
    rate_key = "objective.demand_rps" if goal.kind == "min_cost" else "workload.arrival_rate_per_s"
    rate = floor if goal.kind == "min_cost" else scenario.workload.arrival_rate_per_s
    found = [
        Shortfall(
            f"{role} saturation",
            floor,
            most,
            "req/s",
            f"at least {up_3g(floor / most)}x the GPUs where {role} may run (max_gpus, "
            f"power_budget_kw) or other instance shapes; no {rate_key} at or above "
            f"{up_3g(rate * most / floor)} can be served",
        )
        for role, most in short.items()
    ]
    what = "; ".join(
        f"{s.limit}: needs {s.needs:,.3g} req/s, every candidate at its most instances "
        f"saturates at {s.has:,.3g} req/s together (relax: {s.relaxation})"
        for s in found
    )
    raise CapacityError(
        f"no {arch} plan can carry {floor:,.3g} req/s on the GPUs the scenario allows "
        f"(a bound, before any search): {what}",
        found,
    )
