"""Properties of solve's optimum on small random scenarios (small_scenarios.py), each a
consequence of the optimum being exact:
- more demand, or a tighter SLA, never gives a cheaper optimum (nor turns an infeasible
  scenario feasible);
- adding a GPU type to a datacenter, or a line tier to the WAN, never gives a dearer one;
- multiplying every price (GPU offers and line tiers) by k multiplies the optimal cost by
  k, and divides the best BCR by k;
- hit-rate alternatives: the robust plan meets the SLA under every distribution and costs
  no less than the plan for the main distribution alone.
tests/unit/test_solve.py checks the same on the default scenario (demand, price scaling,
one GPU type less).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from small_scenarios import GPUS, RESOLUTION, by_cost, catalog, meets, random_scenario, run_solve

from pdd_plan.model import scenario as sc
from pdd_plan.model.evaluate import meets_sla, prepare
from pdd_plan.model.workload import workload as wl

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

SEEDS = st.sampled_from(range(26))
COST_TOL = 1e-6
BCR_REL_TOL = 3e-3
FEW = settings(max_examples=8, deadline=None)


def optimum(s: sc.Scenario, arch: str) -> float | None:
    """solve's optimal cost ($/h), None when it finds no plan."""
    result = run_solve(s, arch)
    if result is None:
        return None
    assert result.proven
    return result.metrics.cost_usd_per_hour


def at_least(after: float | None, before: float | None) -> None:
    """`after` is no cheaper than `before` (an infeasible scenario counts as dearest)."""
    if after is not None:
        assert before is not None and after >= before - COST_TOL


@FEW
@given(seed=SEEDS, more=st.floats(1.05, 2.0))
def test_more_demand_never_gives_a_cheaper_optimum(seed, more):
    s, arch = random_scenario(seed, "min_cost")
    busier = dataclasses.replace(
        s,
        workload=dataclasses.replace(
            s.workload, arrival_rate_per_s=s.workload.arrival_rate_per_s * more
        ),
    )
    at_least(optimum(busier, arch), optimum(s, arch))


@FEW
@given(seed=SEEDS, ttft=st.floats(0.6, 1.0), tpot=st.floats(0.6, 1.0))
def test_a_tighter_sla_never_gives_a_cheaper_optimum(seed, ttft, tpot):
    assume(min(ttft, tpot) < 0.99)
    s, arch = random_scenario(seed, "min_cost")
    sla = sc.Sla(
        {p: v * ttft for p, v in s.sla.ttft_s.items()},
        {p: v * tpot for p, v in s.sla.tpot_s.items()},
    )
    at_least(optimum(dataclasses.replace(s, sla=sla), arch), optimum(s, arch))


@FEW
@given(seed=SEEDS, gpu=st.sampled_from(GPUS), where=st.integers(0, 1), price=st.floats(0.5, 1.5))
def test_adding_a_gpu_type_never_gives_a_dearer_optimum(seed, gpu, where, price):
    s, arch = random_scenario(seed, "min_cost")
    dc = s.datacenters[where % len(s.datacenters)]
    assume(all(o.gpu != gpu for o in dc.gpus))
    offer = sc.GpuOffer(gpu, round(catalog().gpus[gpu].rental_usd_per_gpu_hour * price, 2), 4, ())
    wider = dataclasses.replace(dc, gpus=(*dc.gpus, offer))
    more = tuple(wider if d is dc else d for d in s.datacenters)
    at_least(optimum(s, arch), optimum(dataclasses.replace(s, datacenters=more), arch))


@FEW
@given(
    seed=SEEDS,
    tier=st.sampled_from(("wave_1g", "wave_10g", "wave_100g", "wave_400g")),
    price=st.floats(0.3, 2.0),
)
def test_adding_a_line_tier_never_gives_a_dearer_optimum(seed, tier, price):
    s, arch = random_scenario(seed, "min_cost")
    assume(arch in ("pdd", "cdc_pd") and tier not in s.wan.tiers)
    prices = {**s.wan.tier_price_usd_per_month}
    prices[tier] = round(catalog().lines[tier].price_usd_per_month * price)
    wan = dataclasses.replace(s.wan, tiers=(*s.wan.tiers, tier), tier_price_usd_per_month=prices)
    at_least(optimum(s, arch), optimum(dataclasses.replace(s, wan=wan), arch))


def priced(s: sc.Scenario, k: float) -> sc.Scenario:
    dcs = tuple(
        dataclasses.replace(
            dc,
            gpus=tuple(
                dataclasses.replace(o, price_usd_per_gpu_hour=k * o.price_usd_per_gpu_hour)
                for o in dc.gpus
            ),
        )
        for dc in s.datacenters
    )
    cat = catalog()
    prices = {
        t: k * s.wan.tier_price_usd_per_month.get(t, cat.lines[t].price_usd_per_month)
        for t in s.wan.tiers
    }
    wan = dataclasses.replace(s.wan, tier_price_usd_per_month=prices)
    return dataclasses.replace(s, datacenters=dcs, wan=wan)


@FEW
@given(seed=SEEDS, k=st.floats(0.25, 4.0))
def test_scaling_every_price_scales_the_optimal_cost(seed, k):
    s, arch = random_scenario(seed, "min_cost")
    base, scaled = optimum(s, arch), optimum(priced(s, k), arch)
    assert (base is None) == (scaled is None)
    if base is not None:
        assert scaled == pytest.approx(k * base, rel=1e-9)


@settings(max_examples=3, deadline=None)
@given(seed=st.sampled_from(range(100, 112)), k=st.floats(0.25, 4.0))
def test_scaling_every_price_divides_the_best_bcr(seed, k):
    s, arch = random_scenario(seed, "max_bcr")
    base, scaled = run_solve(s, arch), run_solve(priced(s, k), arch)
    assert (base is None) == (scaled is None)
    if base is not None:
        assert scaled.bound * k == pytest.approx(base.bound, rel=BCR_REL_TOL)


NARROW = wl.Bins((0.3, 0.7), (0.7, 0.9), (0.5, 0.5))


@FEW
@given(seed=SEEDS)
def test_a_robust_plan_meets_every_distribution_and_costs_no_less(seed):
    s, arch = random_scenario(seed, "min_cost")
    work = dataclasses.replace(s.workload, hit_rate_alternatives={})
    plain = dataclasses.replace(s, workload=work)
    robust = dataclasses.replace(
        s, workload=dataclasses.replace(work, hit_rate_alternatives={"narrow": NARROW})
    )
    result = run_solve(robust, arch)
    at_least(result and result.metrics.cost_usd_per_hour, optimum(plain, arch))
    if result is not None:
        cat = catalog()
        model = cat.model(s.model)
        for hits in (None, NARROW):
            setup = prepare(robust, result.deployment, model, cat.gpus, cat.lines, RESOLUTION, hits)
            assert meets_sla(setup, s.workload.arrival_rate_per_s)
        assert meets(robust, result.deployment, s.workload.arrival_rate_per_s)


# seeds 11 and 14 left the list when the search began holding every GPU role under the
# utilisation cap, 13 and 27 when issue #22's models changed (tail strata, the decode step
# a request shares with itself): their main-distribution plans now meet the alternative
# too (the property holds; those scenarios no longer exercise it). One seed of each
# architecture among the first 60 where the alternative binds.
@pytest.mark.parametrize("seed", [5, 26, 40, 47])
def test_the_alternative_can_bind(seed):
    """Scenarios where the plan for the main distribution alone misses the SLA (or the
    cap) under the alternative: the robust plan costs more, and meets both."""
    s, arch = random_scenario(seed, "min_cost")
    work = dataclasses.replace(s.workload, hit_rate_alternatives={})
    plain = dataclasses.replace(s, workload=work)
    robust = dataclasses.replace(
        s, workload=dataclasses.replace(work, hit_rate_alternatives={"narrow": NARROW})
    )
    rate = s.workload.arrival_rate_per_s
    a, b = run_solve(plain, arch), run_solve(robust, arch)
    assert not meets(robust, a.deployment, rate) and meets(robust, b.deployment, rate)
    assert b.metrics.cost_usd_per_hour > a.metrics.cost_usd_per_hour


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, pick=st.integers(0, 10**6), where=st.integers(0, 3))
def test_an_instance_or_a_line_more_never_breaks_the_sla(seed, pick, where):
    """The assumption the search's exactness rests on (solve.py): for a fixed policy and
    fixed types and shapes, one more instance of a role, or one more line, keeps a plan
    that met the SLA meeting it; and so does a lower rate."""
    s, arch = random_scenario(seed, "min_cost")
    plans = by_cost(s, arch)
    assume(plans)
    _, plan = plans[len(plans) // 2 + pick % max(1, len(plans) - len(plans) // 2)]
    rate = s.workload.arrival_rate_per_s
    assume(meets(s, plan, rate))
    assert meets(s, plan, 0.8 * rate)
    groups = list(plan.instances)
    if where < len(groups):
        groups[where] = dataclasses.replace(groups[where], count=groups[where].count + 1)
        more = dataclasses.replace(plan, instances=tuple(groups))
    elif plan.lines:
        first = plan.lines[0]
        lines = (dataclasses.replace(first, count=first.count + 1), *plan.lines[1:])
        more = dataclasses.replace(plan, lines=lines)
    else:
        assume(False)  # nothing to add: not an example of the property
    assert meets(s, more, rate)
