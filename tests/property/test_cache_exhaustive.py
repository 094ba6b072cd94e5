"""solve is the best plan there is when the decode-side cache is a decision: small random
PDD and CDC-PD scenarios (small_scenarios.py) offered no cache, or a DRAM tier of 1x or 4x
the capacity that keeps half the prefixes resident under the default reuse curve
(rate x E[input] x 300 s of tokens), checked against every plan they allow, the cache
options included (the listing takes solve's own policies), each costed by the one cost
formula with the cache's price."""

from __future__ import annotations

import dataclasses
import functools

import pytest
from small_scenarios import by_cost, catalog, meets, random_scenario, run_solve

from pdd_plan.model.caches.cache_tier import CacheOptions, kv_bytes_per_token

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

COST_TOL = 1e-6  # $/h
SEEDS = (1, 3, 9, 11)  # min_cost scenarios that cross (pdd, pdd, cdc_pd, cdc_pd)
REUSE_MEDIAN_S = 300.0  # the default curve's median reuse interval (decode_cache.py)


def with_cache_options(s, usd_per_tb_month: float):
    model = catalog().model_for(s)
    w = s.workload
    half_tb = w.arrival_rate_per_s * w.input_tokens.mean() * REUSE_MEDIAN_S
    half_tb *= kv_bytes_per_token(s, model) / 1e12
    sizes = (0.0, round(half_tb, 3), round(4 * half_tb, 3))
    options = CacheOptions(("dram",), sizes, (usd_per_tb_month,))
    return dataclasses.replace(s, policy=dataclasses.replace(s.policy, decode_cache=options))


@functools.cache
def check(seed: int, usd_per_tb_month: float) -> dict:
    """solve against every cheaper plan; what the case covered."""
    s, arch = random_scenario(seed, "min_cost")
    assert arch in ("pdd", "cdc_pd")
    s = with_cache_options(s, usd_per_tb_month)
    demand = s.workload.arrival_rate_per_s
    result = run_solve(s, arch)
    plans = by_cost(s, arch)
    if result is None:
        return {"bought": None, "beaten_by": [d for _, d in plans if meets(s, d, demand)][:1]}
    assert result.proven and result.deployment.decode_cache is not None
    assert meets(s, result.deployment, demand)
    cost = result.metrics.cost_usd_per_hour
    cheaper = (d for c, d in plans if c < cost - COST_TOL)
    beaten = next((d for d in cheaper if meets(s, d, demand)), None)
    return {"bought": result.deployment.decode_cache.tb, "beaten_by": [beaten] if beaten else []}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("usd_per_tb_month", (486.0, 48_600.0))
def test_no_plan_with_or_without_a_cache_costs_less(seed, usd_per_tb_month):
    got = check(seed, usd_per_tb_month)
    assert not got["beaten_by"], f"{got['beaten_by'][0]} meets the SLA and costs less"


def test_the_cases_both_buy_a_cache_and_do_without():
    """The check is about something: some cases' best plan buys a cache, some buy none."""
    bought = [check(seed, p)["bought"] for seed in SEEDS for p in (486.0, 48_600.0)]
    assert any(b for b in bought) and any(b == 0 for b in bought)
