"""explain: why the plan is what it is, and what relaxing each limit would be worth.

`solve` picks the plan; this module then puts the plan's counts into the MILP milp_seeds.py
builds for the winning policy (by its functions, at the scenario's utilisation cap
and the rate the plan carries) and reports:
- every limit of the MILP with the plan's slack, and which bind (slack ~0); names as in
  the LP dump (`--dump-lp`);
- what relaxing each binding limit is worth, each by a full re-solve: one more GPU of a
  type whose availability binds (and, when one GPU changes nothing, one more instance's
  worth), one more line where the line count binds, the next line tier where the line
  capacity binds, a budget x 1.1 where a budget binds, and always a looser SLA (TTFT and
  TPOT limits x 1.2); each with the change in the objective (cost, BCR or goodput of the
  verified plans), in cost and in the plan;
- the pruned candidates and why;
- which role binds in evaluate's terms (the verified plan's utilisations).
An infeasible scenario raises InfeasibleError naming the limit that cannot be met, by how
much and a relaxation shown to suffice where one was found (why_none.py); a search stopped
before a plan or a proof, UnprovenError (exit 5, as `solve`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pdd_plan.errors import InfeasibleError, UnprovenError
from pdd_plan.model.deployment import Deployment
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.model.metrics import json_safe
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan import elastic as el
from pdd_plan.plan import lp_names as nm
from pdd_plan.plan import solve as sv
from pdd_plan.plan.cache_response import cache_response
from pdd_plan.plan.formulate import formulate
from pdd_plan.plan.mixed_split import decode_split
from pdd_plan.plan.why_none import infeasible_message

BIND_REL_TOL = 1e-6  # a slack below this share of the constraint's size binds
SLA_RELAX = 1.2
BUDGET_RELAX = 1.1
# objective -> the verified metric it ranks by, and +1 when more is better
OBJECTIVE_METRIC = {
    "min_cost": ("cost_usd_per_hour", -1),
    "max_bcr": ("bcr_rps_per_usd_hour", 1),
    "max_goodput": ("goodput_rps", 1),
}


@dataclass
class PlanInMilp:
    """The MILP of the winning policy with the plan's counts put in its variables."""

    form: object  # Formulation, at the rate the plan is verified for
    cap: float  # utilisation cap of its capacities
    rate_rps: float
    candidates: list
    demands: dict


def explain(
    scenario: Scenario,
    model,
    gpus: dict,
    tiers: dict,
    architecture: str = "pdd",
    resolution=DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved: sv.SolveResult | None = None,
) -> dict:
    """The binding limits of the best plan, what relaxing each is worth, the pruned
    candidates and the binding role; raises InfeasibleError (with the shortfall) when
    there is no plan. `solved`: this scenario's solve of `architecture` already made (the
    report's), not made again."""
    result = solved or sv.solve(scenario, model, gpus, tiers, architecture, resolution,
                                time_limit_s)  # fmt: skip
    if result.deployment is None:  # the limit and by how much (why_none.py), or unproven
        _no_plan(scenario, model, gpus, tiers, architecture, result, resolution, time_limit_s)
    at = plan_in_milp(scenario, model, gpus, tiers, architecture, result, resolution)
    metric, _ = OBJECTIVE_METRIC[scenario.objective.kind]
    limits = constraint_report(scenario, at)
    run = (model, gpus, tiers, architecture, resolution, time_limit_s)
    m = result.metrics
    return json_safe(
        {
            "scenario": scenario.name,
            "architecture": architecture,
            "status": result.status,
            "objective": {
                "kind": scenario.objective.kind,
                "metric": metric,
                "value": getattr(m, metric),
            },
            "plan": plan_json(result.deployment),
            "metrics": {
                "cost_usd_per_hour": m.cost_usd_per_hour,
                "goodput_rps": m.goodput_rps,
                "bcr_rps_per_usd_hour": m.bcr_rps_per_usd_hour,
                "sla_met": m.sla_met,
            },
            "milp": {
                "utilization_cap_frac": at.cap,
                "rate_rps": at.rate_rps,
                "policy": plan_json(result.deployment)["policy"],
            },
            "constraints": limits,
            "binding": [c["constraint"] for c in limits if c["binding"]],
            "relaxations": relaxations(scenario, result, limits, run),
            "pruned_candidates": pruned_candidates(result, at.candidates),
            # what the plan trades for a smaller decode-side cache (cache_response.py)
            "cache_response": cache_response(
                scenario, result, lambda s: sv.solve(s, *run), gpus, tiers
            ),
            "roles": {
                "utilization_frac": dict(m.role_utilization_frac),
                "binding_role": m.binding_role,
                # a mixed decode role: the router's split, group by group (absent if unmixed)
                **_split(scenario, model, gpus, tiers, result.deployment, resolution),
            },
        }
    )


def _no_plan(scenario, model, gpus, tiers, arch, result, resolution, time_limit_s) -> None:
    """InfeasibleError naming the limit (exit 3), or UnprovenError when the search stopped
    first (exit 5: nothing is proven, as `solve` says)."""
    if result.status == "unproven":
        raise UnprovenError(
            f"no {arch} plan found, not proven infeasible: the search stopped at its "
            f"{result.stopped_by or 'time limit'} after {result.evaluations:,} plan "
            "evaluations; try a longer --time-limit"
        )
    raise InfeasibleError(
        infeasible_message(
            scenario, model, gpus, tiers, arch, result.attempts, resolution, time_limit_s,
            solved=(result.reason, result.shortfalls),
        )
    )  # fmt: skip


def _split(scenario, model, gpus, tiers, deployment, resolution) -> dict:
    split = decode_split(scenario, model, gpus, tiers, deployment, resolution)
    return {"decode_split": split} if split else {}


def pruned_candidates(result, candidates) -> list[dict]:
    """Every candidate no plan can use, and why: the search's reasons (solve's
    `SolveResult.pruned`, when it gives them) and the MILP candidates' own."""
    why = dict(getattr(result, "pruned", None) or {})
    for c in candidates:
        if c.pruned:
            why.setdefault(c.key, c.pruned)
    by_key = {c.key: c for c in candidates}
    out = []
    for key, reason in why.items():
        c = by_key.get(key)
        fields = (c.role, c.datacenter, c.gpu, c.gpus_per_instance) if c else (None,) * 4
        out.append(
            dict(zip(("role", "datacenter", "gpu", "gpus_per_instance"), fields, strict=True))
            | {"candidate": key, "reason": reason}
        )
    return out


def plan_in_milp(scenario, model, gpus, tiers, arch, result, resolution) -> PlanInMilp:
    """The MILP milp_seeds.py builds for the winning policy (at the scenario's utilisation cap
    and the rate the plan carries), with the plan's instance and line counts put in its
    variables: its constraints' slacks are then the plan's, named as in the LP dump."""
    plan = result.deployment
    cap = scenario.policy.utilization_cap_frac
    sized, bits, demands, cands, usable = el.milp_inputs(
        scenario, model, gpus, arch, plan.policy, cap, resolution
    )
    counts = {
        f"{g.role}_{g.datacenter}_{g.gpu}_x{g.gpus_per_instance}": g.count for g in plan.instances
    }
    keys = {c.key for c in usable}
    used = usable + [c for c in cands if c.key in counts and c.key not in keys]
    obj = scenario.objective
    form = formulate(
        sized, used, demands, tiers, bits, demand_rps=result.rate_rps,
        budget_usd_per_hour=obj.budget_usd_per_hour, name="the_plan",
    )  # fmt: skip
    for key, v in form.instances.items():
        v.varValue = counts.get(key, 0)
        form.chosen[key].varValue = 1 if key in counts else 0
    leased = {line.tier: line.count for line in plan.lines}
    for tier, v in form.lines.items():
        v.varValue = leased.get(tier, 0)
    return PlanInMilp(form, cap, result.rate_rps, cands, demands)


def constraint_report(scenario: Scenario, at: PlanInMilp) -> list[dict]:
    """Every limit of the MILP (structural links left out) with the plan's slack; a
    capacity's slack is the MILP's linear estimate at the utilisation cap (negative: the
    plan carries more than that estimate, as evaluate verified)."""
    fams = el.families(scenario, at.demands)
    out = []
    for c in at.form.problem.constraints():
        fam = fams.get(c.name)
        if fam is None:
            continue
        slack = el.slack(c)
        out.append(
            {
                "constraint": c.name,
                "family": fam.family,
                "subject": fam.subject,
                "slack": slack / fam.scale + 0.0,  # + 0.0: a binding -0.0 reads "0"
                # the right-hand side: the demand a cover (>=) must carry, else the limit
                "limit": el.rhs(c) / fam.scale + 0.0,
                "cover": fam.cover,
                "unit": fam.unit,
                "binding": slack <= BIND_REL_TOL * el.magnitude(c),
            }
        )
    if scenario.objective.kind == "max_bcr":
        top = sv.BCR_HEADROOM * scenario.workload.arrival_rate_per_s
        room = top - at.rate_rps
        out.append(
            {
                "constraint": "served_requests_per_s_within_its_cap",
                "family": "rate",
                "subject": f"rate the objective counts (at most {top:.4g} req/s)",
                "slack": room,
                "limit": top,
                "cover": False,
                "unit": "req/s",
                "binding": room <= BIND_REL_TOL * top,
            }
        )
    return out


def relaxations(scenario, result, limits: list[dict], run) -> list[dict]:
    """Re-solve with each binding limit relaxed, and with a looser SLA."""
    binding = {c["constraint"] for c in limits if c["binding"]}
    fams = {c["constraint"]: c["family"] for c in limits}
    subjects = {c["constraint"]: c["subject"] for c in limits}
    out = []
    for dc in scenario.datacenters:
        for i, offer in enumerate(dc.gpus):
            name = nm.availability_constraint(offer.gpu, dc.id)
            if name not in binding:
                continue
            more = _try(scenario, result, name, f"one more {offer.gpu} in {dc.id}", run,
                        el.with_offer(scenario, dc.id, i, offer.max_gpus + 1))  # fmt: skip
            out.append(more)
            shape = min(
                (g.gpus_per_instance for g in result.deployment.instances
                 if g.gpu == offer.gpu and g.datacenter == dc.id),
                default=1,
            )  # fmt: skip
            if not more["plan_changes"] and shape > 1:
                out.append(
                    _try(scenario, result, name,
                         f"{shape} more {offer.gpu} in {dc.id} (one more instance)", run,
                         el.with_offer(scenario, dc.id, i, offer.max_gpus + shape))
                )  # fmt: skip
    wan = scenario.wan
    if "lines_within_the_allowed_count" in binding:
        relaxed = dataclasses.replace(
            scenario, wan=dataclasses.replace(wan, max_lines=wan.max_lines + 1)
        )
        out.append(_try(scenario, result, "lines_within_the_allowed_count",
                        f"one more line allowed ({wan.max_lines + 1})", run, relaxed))  # fmt: skip
    if "line_capacity_covers_the_wan_bytes" in binding:
        tier = _next_tier(scenario, result.deployment, run[2])
        if tier is not None:
            relaxed = dataclasses.replace(
                scenario, wan=dataclasses.replace(wan, tiers=(*wan.tiers, tier.id))
            )
            out.append(_try(scenario, result, "line_capacity_covers_the_wan_bytes",
                            f"the next line tier offered ({tier.id})", run, relaxed))  # fmt: skip
    for name in sorted(binding):
        if fams.get(name) == "budget":
            relaxed = _with_budget(scenario, name)
        elif fams.get(name) == "power":
            relaxed = _with_power(scenario, name)
        else:
            continue
        out.append(_try(scenario, result, name, f"{subjects[name]}: budget x{BUDGET_RELAX:g}",
                        run, relaxed))  # fmt: skip
    sla = scenario.sla
    looser = dataclasses.replace(
        scenario,
        sla=dataclasses.replace(
            sla,
            ttft_s={p: v * SLA_RELAX for p, v in sla.ttft_s.items()},
            tpot_s={p: v * SLA_RELAX for p, v in sla.tpot_s.items()},
        ),
    )
    out.append(_try(scenario, result, "sla", f"TTFT and TPOT limits x{SLA_RELAX:g}", run, looser))
    return out


def _with_budget(scenario: Scenario, name: str) -> Scenario:
    if name == "cost_within_the_budget":
        obj = scenario.objective
        budget = obj.budget_usd_per_hour * BUDGET_RELAX
        return dataclasses.replace(
            scenario, objective=dataclasses.replace(obj, budget_usd_per_hour=budget)
        )
    return _relaxed_dc_limit(scenario, name, "budget_usd_per_hour", nm.spending_constraint)


def _with_power(scenario: Scenario, name: str) -> Scenario:
    return _relaxed_dc_limit(scenario, name, "power_budget_w", nm.power_constraint)


def _relaxed_dc_limit(scenario: Scenario, name: str, field: str, constraint) -> Scenario:
    """The datacenter whose limit `constraint(its id)` (lp_names) is `name`, with that
    limit x BUDGET_RELAX."""
    dcs = tuple(
        dataclasses.replace(dc, **{field: getattr(dc, field) * BUDGET_RELAX})
        if name == constraint(dc.id)
        else dc
        for dc in scenario.datacenters
    )
    return dataclasses.replace(scenario, datacenters=dcs)


def _next_tier(scenario: Scenario, deployment: Deployment, tiers: dict):
    """The smallest catalog tier above every offered one, of the leased kind if any."""
    offered = [tiers[t] for t in scenario.wan.tiers if t in tiers]
    top = max((t.capacity_bits_per_s for t in offered), default=0.0)
    kinds = {tiers[line.tier].kind for line in deployment.lines if line.tier in tiers}
    above = [
        t
        for t in tiers.values()
        if t.capacity_bits_per_s > top and t.id not in scenario.wan.tiers
        and (not kinds or t.kind in kinds)
    ]  # fmt: skip
    return min(above, key=lambda t: (t.capacity_bits_per_s, t.price_usd_per_month), default=None)


def _try(scenario, result, constraint: str, what: str, run, relaxed: Scenario) -> dict:
    """Solve the relaxed scenario; the change in the objective and in the plan."""
    model, gpus, tiers, arch, resolution, time_limit_s = run
    metric, sign = OBJECTIVE_METRIC[scenario.objective.kind]
    before = getattr(result.metrics, metric)
    entry = {"constraint": constraint, "relaxation": what, "metric": metric, "before": before}
    try:
        again = sv.solve(relaxed, model, gpus, tiers, arch, resolution, time_limit_s)
    except InfeasibleError as exc:
        return {**entry, "status": "infeasible", "after": None, "change": None,
                "improvement": None, "cost_change_usd_per_hour": None,
                "plan_changes": [], "note": str(exc)}  # fmt: skip
    if again.status != "optimal":
        return {**entry, "status": again.status, "after": None, "change": None,
                "improvement": None, "cost_change_usd_per_hour": None,
                "plan_changes": []}  # fmt: skip
    after = getattr(again.metrics, metric)
    return {
        **entry,
        "status": again.status,
        "after": after,
        "change": after - before,
        "improvement": sign * (after - before),
        "cost_change_usd_per_hour": again.metrics.cost_usd_per_hour
        - result.metrics.cost_usd_per_hour,
        "plan_changes": plan_changes(result.deployment, again.deployment),
    }


def plan_changes(a: Deployment, b: Deployment) -> list[str]:
    """What differs between two plans, one line per item."""

    def items(d: Deployment) -> dict[str, int]:
        out = {f"{g.role} {g.datacenter} {g.gpu} x{g.gpus_per_instance}": g.count
               for g in d.instances}  # fmt: skip
        out.update({f"line {line.tier}": line.count for line in d.lines})
        return out

    x, y = items(a), items(b)
    lines = [f"{k}: {x.get(k, 0)} -> {y.get(k, 0)}" for k in dict.fromkeys([*x, *y])
             if x.get(k, 0) != y.get(k, 0)]  # fmt: skip
    if a.policy != b.policy:
        p, q = a.policy, b.policy
        lines.append(
            f"policy: threshold {p.rld_hit_threshold:g} {p.handoff} -> "
            f"threshold {q.rld_hit_threshold:g} {q.handoff}"
        )
    return lines
