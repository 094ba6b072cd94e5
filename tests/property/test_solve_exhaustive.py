"""solve is the best plan there is, on small random scenarios checked plan by plan.

small_scenarios.py makes the scenarios (2-3 GPU types, a few GPUs each, a small model, a
demand that makes the SLA bind) and lists every plan each allows, checked with the same
model and request-class resolution solve uses. The test then asserts:
- min_cost: solve's plan meets the SLA at the demand, and no listed plan that costs less
  (by more than 1e-6 $/h) does;
- max_bcr: solve's plan meets the SLA at the offered rate, and no listed plan has a BCR
  (goodput counted up to BCR_HEADROOM x offered, per $/h) higher than solve's by more than
  BCR_REL_TOL (0.3 %: the bisection tolerances of the two goodputs, with room);
- infeasible: when solve finds nothing, no listed plan meets the SLA.
Plans are checked in order of cost and only as far as one could beat solve's, which is
what makes checking every plan affordable.
"""

from __future__ import annotations

import functools

import pytest
from small_scenarios import (
    RESOLUTION,
    by_cost,
    capped_goodput,
    catalog,
    meets,
    random_scenario,
    run_solve,
)

from pdd_plan.model import scenario as sc
from pdd_plan.model.deployment import Deployment
from pdd_plan.plan import solve as sv
from pdd_plan.plan.search import BCR_HEADROOM, Search

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

COST_TOL = 1e-6  # $/h
BCR_REL_TOL = 3e-3
MIN_COST_SEEDS = tuple(range(26))
MAX_BCR_SEEDS = tuple(range(100, 112))


@functools.cache
def check_min_cost(seed: int) -> dict:
    """solve against every cheaper plan; what the case covered."""
    s, arch = random_scenario(seed, "min_cost")
    demand = s.workload.arrival_rate_per_s
    result = run_solve(s, arch)
    plans = by_cost(s, arch)
    if result is None:
        beaten = [d for _, d in plans if meets(s, d, demand)][:1]
        return {"feasible": False, "beaten_by": beaten, "checked": len(plans), "binding": True}
    cost = result.metrics.cost_usd_per_hour
    assert result.proven
    assert meets(s, result.deployment, demand), "solve's plan misses the SLA"
    cheaper = [d for c, d in plans if c < cost - COST_TOL]
    beaten = next((d for d in cheaper if meets(s, d, demand)), None)
    return {
        "feasible": True,
        "beaten_by": [beaten] if beaten else [],
        "checked": len(cheaper),
        "binding": bool(plans) and plans[0][0] < cost - COST_TOL,
        "cost": cost,
    }


@pytest.mark.parametrize("seed", MIN_COST_SEEDS)
def test_no_plan_costs_less_than_solves(seed):
    got = check_min_cost(seed)
    assert not got["beaten_by"], f"{got['beaten_by'][0]} meets the SLA and costs less"


def test_the_min_cost_cases_are_feasible_and_binding():
    """At least 20 cases where the SLA binds (the cheapest plan misses it) and solve finds
    a plan: the exhaustive check is then about something."""
    cases = [check_min_cost(seed) for seed in MIN_COST_SEEDS]
    assert sum(c["feasible"] and c["binding"] for c in cases) >= 20
    assert any(c["feasible"] and c["checked"] >= 50 for c in cases)


@pytest.mark.parametrize("seed", MAX_BCR_SEEDS)
def test_no_plan_has_a_higher_bcr_than_solves(seed):
    s, arch = random_scenario(seed, "max_bcr")
    offered = s.workload.arrival_rate_per_s
    result = run_solve(s, arch)
    if result is None:
        assert not any(meets(s, d, offered) for _, d in by_cost(s, arch))
        return
    assert result.proven
    assert meets(s, result.deployment, offered)
    cost = result.metrics.cost_usd_per_hour
    value = capped_goodput(s, result.deployment) / cost
    cap = BCR_HEADROOM * offered
    for c, d in by_cost(s, arch):
        need = max(offered, value * c * (1 + BCR_REL_TOL))
        if need > cap:
            break  # it cannot beat solve even serving the whole capped rate
        assert not meets(s, d, need), f"{d} carries {need:.4g} req/s at ${c:.4g}/h"


def search_alone(s: sc.Scenario, arch: str, seed_plan: Deployment | None):
    cat = catalog()
    search = Search(
        s, cat.model_for(s), cat.gpus, cat.lines, arch, sv._policies(s, arch), RESOLUTION
    )
    if seed_plan is not None:
        search.consider_seed(seed_plan)
    return search.run()


@pytest.mark.parametrize("seed", MIN_COST_SEEDS[:12] + MAX_BCR_SEEDS[:6])
def test_the_answer_does_not_depend_on_the_seeds(seed):
    """The search from no seed, and from the worst one (the dearest plan that meets the
    SLA), proves the same optimum as solve (whose seeds are the MILP's plans)."""
    kind = "min_cost" if seed in MIN_COST_SEEDS else "max_bcr"
    s, arch = random_scenario(seed, kind)
    result = run_solve(s, arch)
    dearest = next(
        (d for _, d in reversed(by_cost(s, arch)) if meets(s, d, s.workload.arrival_rate_per_s)),
        None,
    )
    for seed_plan in (None, dearest):
        out = search_alone(s, arch, seed_plan)
        assert out.proven
        if result is None:
            assert out.deployment is None
        elif kind == "min_cost":
            assert out.cost_usd_per_hour == pytest.approx(result.metrics.cost_usd_per_hour)
        else:
            assert out.value == pytest.approx(result.bound, rel=BCR_REL_TOL)
