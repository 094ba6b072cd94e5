"""Workload distributions and scenario loading, against hand values."""

import numpy as np
import pytest
from scipy import integrate, stats

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.workload import workload as wl


def test_bins_mean_by_hand():
    """Uniform within bins: 0.3 x 50 + 0.7 x 300 = 225."""
    d = wl.Bins((0, 100), (100, 500), (0.3, 0.7))
    assert d.mean() == pytest.approx(225)
    values, weights = d.discretise(40)
    assert weights.sum() == pytest.approx(1) and np.dot(values, weights) == pytest.approx(225)


def test_beta_on_a_range_mean():
    """Mean of Beta(a, b) on [lo, hi] is lo + (hi - lo) a / (a + b)."""
    d = wl.BetaRange(0.5, 1.0, alpha=8, beta=2)
    assert d.mean() == pytest.approx(0.5 + 0.5 * 0.8, rel=1e-3)


def test_truncated_lognormal_mean_matches_integration():
    d = wl.TruncatedLognormal(100, 5000, median=800, sigma=1.0)
    dist = stats.lognorm(s=1.0, scale=800)
    mass = dist.cdf(5000) - dist.cdf(100)
    mean = integrate.quad(lambda x: x * dist.pdf(x), 100, 5000)[0] / mass
    assert d.mean() == pytest.approx(mean, rel=2e-3)
    values, _ = d.discretise(64)
    assert values.min() >= 100 and values.max() <= 5000


def test_empirical_merges_into_equal_weight_strata():
    d = wl.Empirical(tuple(range(1, 101)), tuple([0.01] * 100))
    values, weights = d.discretise(10)
    assert len(values) == 10 and weights == pytest.approx([0.1] * 10)
    assert np.dot(values, weights) == pytest.approx(50.5)


def test_default_scenario_loads_with_catalog_prices(catalog):
    s = load_scenario(resolve_scenario_path(None), catalog)
    assert s.name == "default" and s.model == "deepseek_v4_pro"
    h100 = s.datacenters[0].gpus[0]
    assert h100.price_usd_per_gpu_hour == catalog.gpus["h100_sxm"].rental_usd_per_gpu_hour
    assert s.sla.ttft_s == {90.0: 10.0} and s.sla.tpot_s == {90.0: 0.05}
    assert 0.85 < s.workload.prefix_hit_rate.mean() < 0.95  # a skewed mix with mean ~0.9
    assert set(s.architectures) == {"pdd", "cdc_pd", "idc_pd", "colocated"}


def test_template_units_are_converted(catalog):
    s = load_scenario(resolve_scenario_path("template"), catalog)
    assert s.wan.rtt_s == pytest.approx(0.030)
    assert s.wan.per_connection_bits_per_s == pytest.approx(1e9)
    assert s.wan.tier_price_usd_per_month == {"wave_10g": 5000}
    assert s.datacenters[0].power_budget_w == pytest.approx(1.2e6)
    assert s.datacenters[0].gpus[0].gpus_per_instance == (16, 32)
    assert "narrow" in s.workload.hit_rate_alternatives
    assert s.policy.rld_hit_threshold is None and s.policy.handoff == "auto"
