"""Why a scenario has no plan: an elastic copy of the MILP.

The MILP milp_seeds.py sizes (same candidates, demands and WAN bytes, from its own
`_milp_inputs`) is copied with a penalised, non-negative slack on each constraint of five
families: capacity per role, the line (capacity and count), GPU availability, power, budget.
Minimising the penalty finds the least violation that would make the scenario feasible;
the non-zero slacks name the limits that cannot be met and by how much. Covering the
demand is penalised far above the limits, so a shortfall is blamed on a limit (GPUs,
lines, money) before the demand itself. The figures are the MILP's sizing (linear
capacities at the utilisation cap): the plans evaluate verifies may need less or more, so
relax.py sets them and solves again before an answer says they suffice (why_none.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pulp

from pdd_plan.model.deployment import RoutingPolicy
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import GBIT_BITS
from pdd_plan.model.workload.workload import request_classes
from pdd_plan.plan import lp_names as nm
from pdd_plan.plan import milp_seeds as ms
from pdd_plan.plan import solve as sv
from pdd_plan.plan.formulate import HIGHS_OPTIONS, Formulation, formulate
from pdd_plan.plan.shortfalls import limit_line

# penalty per unit of relative violation (slack / the constraint's size): covering the
# demand (role capacity, the line's capacity for the WAN bytes) over any limit
COVER_PENALTY = 1e3
LIMIT_PENALTY = 1.0
SLACK_TOL = 1e-6  # relative: a smaller slack is zero
# Attempt outcomes (milp_seeds.py: f"MILP {status.lower()}") whose MILP had no solution
INFEASIBLE_OUTCOMES = ("MILP infeasible", "MILP undefined")


@dataclass(frozen=True)
class Family:
    """What a named constraint of the MILP limits, to read its slack back."""

    family: str  # capacity | line | availability | power | budget | structure
    subject: str  # e.g. "h100_sxm in dc_a", "prefill capacity", "WAN lines"
    unit: str  # of the slack
    scale: float = 1.0  # slack (in the MILP's units) / scale = slack in `unit`
    cover: bool = False  # covers the demand (>=), rather than a limit (<=)
    where: tuple[str, ...] = ()  # (datacenter, gpu) of an availability; (datacenter,)


def families(scenario: Scenario, demands) -> dict[str, Family]:
    """Constraint name (as formulate.py writes it) -> its family."""
    out = {
        nm.capacity_constraint(role): Family("capacity", f"{role} capacity", "req/s", cover=True)
        for role in demands
    }
    out["line_capacity_covers_the_wan_bytes"] = Family(
        "line", "WAN line capacity", "Gbit/s", GBIT_BITS, cover=True
    )
    out["lines_within_the_allowed_count"] = Family("line", "WAN lines", "lines")
    out["cost_within_the_budget"] = Family("budget", "cost", "$/h")
    for dc in scenario.datacenters:
        out[nm.spending_constraint(dc.id)] = Family(
            "budget", f"spending in {dc.id}", "$/h", where=(dc.id,)
        )
        out[nm.power_constraint(dc.id)] = Family("power", f"power in {dc.id}", "kW", where=(dc.id,))
        for offer in dc.gpus:
            out[nm.availability_constraint(offer.gpu, dc.id)] = Family(
                "availability", f"{offer.gpu} in {dc.id}", "GPUs", where=(dc.id, offer.gpu)
            )
    return out


def activity(constraint: pulp.LpConstraint) -> float:
    """The left-hand side's value (variables only)."""
    return sum(a * (v.value() or 0.0) for v, a in constraint.items())


def rhs(constraint: pulp.LpConstraint) -> float:
    return -constraint.constant


def slack(constraint: pulp.LpConstraint) -> float:
    """How far the constraint is from binding (>= 0 when met), in the MILP's units."""
    gap = rhs(constraint) - activity(constraint)
    return gap if constraint.sense == pulp.LpConstraintLE else -gap


def magnitude(constraint: pulp.LpConstraint) -> float:
    """A size to judge a slack against: the largest term or the right-hand side."""
    terms = [abs(a * (v.value() or 0.0)) for v, a in constraint.items()]
    return max([1.0, abs(rhs(constraint)), *terms])


@dataclass(frozen=True)
class Shortfall:
    constraint: str
    family: Family
    needs: float  # in the family's unit
    limit: float

    def line(self) -> str:
        f = self.family
        return limit_line(f.family, f.subject, self.needs, self.limit, f.unit, "possible")


@dataclass(frozen=True)
class Diagnosis:
    policy: RoutingPolicy
    utilization_cap_frac: float
    penalty: float
    shortfalls: tuple[Shortfall, ...]


def milp_inputs(scenario: Scenario, model, gpus: dict, arch: str, policy, cap: float, resolution):
    """What milp_seeds.py's MILP is given for one policy and utilisation cap (its own
    `_milp_inputs`, on its coarse grid of request classes, every hit-rate distribution):
    the scenario at that cap, WAN bits per request, role demands, all and usable
    candidates."""
    sized = dataclasses.replace(
        scenario, policy=dataclasses.replace(scenario.policy, utilization_cap_frac=cap)
    )
    w = scenario.workload
    coarse = tuple(min(a, b) for a, b in zip(sv.SEARCH_RESOLUTION, resolution, strict=True))
    all_classes = [
        request_classes(w.input_tokens, w.output_tokens, d, coarse)
        for d in (w.prefix_hit_rate, *w.hit_rate_alternatives.values())
    ]
    offered = w.arrival_rate_per_s
    bits, demands, cands = ms.milp_inputs(
        sized, model, gpus, arch, policy, all_classes, offered, cap
    )
    usable = [c for c in cands if not c.pruned and c.capacity_rps > 0]
    return sized, bits, demands, cands, usable


def elastic_copy(form: Formulation, fams: dict[str, Family]) -> tuple[pulp.LpProblem, dict]:
    """The MILP with a penalised slack on every constraint of the four families."""
    prob = pulp.LpProblem(f"{form.problem.name}_elastic", pulp.LpMinimize)
    for v in form.lines.values():
        v.upBound = None  # the count is a constraint of the line family, elastic below
    slacks, penalty = {}, []
    for c in form.problem.constraints():
        lhs = pulp.LpAffineExpression(list(c.items()))
        fam = fams.get(c.name)
        if fam is None or c.sense == pulp.LpConstraintEQ:
            prob += pulp.LpConstraint(lhs, c.sense, c.name, rhs(c))
            continue
        # the slack in the family's unit (Gbit/s, not bit/s) keeps coefficients in range
        s = prob.add_variable(nm.shortfall_var(c.name), 0)
        slacks[c.name] = s
        weight = COVER_PENALTY if fam.cover else LIMIT_PENALTY
        penalty.append(weight / max(abs(rhs(c)) / fam.scale, 1.0) * s)
        step = fam.scale * s
        relaxed = lhs + step if c.sense == pulp.LpConstraintGE else lhs - step
        prob += pulp.LpConstraint(relaxed, c.sense, c.name, rhs(c))
    prob += pulp.lpSum(penalty)
    return prob, slacks


def diagnose(
    scenario, model, gpus, tiers, arch, policy, cap, resolution, time_limit_s=30.0
) -> Diagnosis | None:
    """The elastic re-solve of one (policy, cap) at the demand the objective must serve."""
    sized, bits, demands, _, usable = milp_inputs(
        scenario, model, gpus, arch, policy, cap, resolution
    )
    if not usable:
        return None
    obj = scenario.objective
    demand = obj.demand_rps or scenario.workload.arrival_rate_per_s
    form = formulate(
        sized,
        usable,
        demands,
        tiers,
        bits,
        demand_rps=demand,
        budget_usd_per_hour=obj.budget_usd_per_hour,
        name="why_infeasible",
    )
    fams = families(scenario, demands)
    prob, slacks = elastic_copy(form, fams)
    prob.solve(pulp.HiGHS(msg=False, timeLimit=time_limit_s, **HIGHS_OPTIONS))
    if pulp.LpStatus[prob.status] != "Optimal":
        return None
    original = {c.name: c for c in form.problem.constraints()}  # shares the variables
    found = []
    for name, s in slacks.items():
        c = original[name]
        if (s.value() or 0.0) <= SLACK_TOL * max(abs(rhs(c)) / fams[name].scale, 1.0):
            continue
        used = activity(c)  # at the elastic solution, without the slack
        # a limit (<=): the plan needs `used` of it; a cover (>=): it needs the rhs
        needs, limit = (used, rhs(c)) if c.sense == pulp.LpConstraintLE else (rhs(c), used)
        fam = fams[name]
        # amounts are never below zero: max() turns the -0.0 of a zero right-hand side
        # (and solver noise) into 0 ("-0 allowed" otherwise)
        needs, limit = max(0.0, needs / fam.scale), max(0.0, limit / fam.scale)
        found.append(Shortfall(name, fam, needs, limit))
    penalty = float(pulp.value(prob.objective) or 0.0)
    return Diagnosis(policy, cap, penalty, tuple(found))


def why_infeasible(
    scenario: Scenario, model, gpus, tiers, arch: str, attempts, resolution, time_limit_s=30.0
) -> Diagnosis | None:
    """The least violation over every routing policy at the scenario's
    utilisation cap and at each cap an attempt of solve found its MILP infeasible at; None
    when the MILP fits every limit (the SLA, not a limit, is what fails)."""
    cap = scenario.policy.utilization_cap_frac
    cases = {(p, cap): None for p in sv._policies(scenario, arch)}
    for a in attempts:
        if a.outcome in INFEASIBLE_OUTCOMES:
            cases[(a.policy, a.utilization_cap_frac)] = None
    best = None
    for policy, at in cases:
        d = diagnose(scenario, model, gpus, tiers, arch, policy, at, resolution, time_limit_s)
        if d is not None and d.shortfalls and (best is None or d.penalty < best.penalty):
            best = d
    return best


def with_offer(scenario: Scenario, dc_id: str, index: int, max_gpus: int) -> Scenario:
    dcs = []
    for dc in scenario.datacenters:
        if dc.id == dc_id:
            gpus = list(dc.gpus)
            gpus[index] = dataclasses.replace(gpus[index], max_gpus=max_gpus)
            dc = dataclasses.replace(dc, gpus=tuple(gpus))
        dcs.append(dc)
    return dataclasses.replace(scenario, datacenters=tuple(dcs))
