"""Grouped mixture quantiles against Monte Carlo and hand cases."""

import numpy as np
import pytest

from pdd_plan.model.queueing.latency_mixture import LatencyGroup, grouped_quantiles_s
from pdd_plan.model.queueing.queueing import WaitModel


def test_no_waits_is_the_weighted_quantile():
    """Delays 1 s (30 %) and 5 s (70 %): the median is 5 s, the 0.2-quantile 1 s."""
    group = LatencyGroup(np.array([0.3, 0.7]), np.array([1.0, 5.0]))
    assert grouped_quantiles_s([0.2, 0.5], [group]) == pytest.approx([1.0, 5.0], abs=1e-5)


def test_two_groups_with_different_waits_match_monte_carlo():
    rng = np.random.default_rng(7)
    prefill = WaitModel(0.6, 2.0)  # waits with probability 0.6, mean 0.5 s when it does
    pool = WaitModel(0.3, 0.5)
    a = LatencyGroup(np.array([0.2, 0.3]), np.array([0.4, 2.0]), (prefill, pool))
    b = LatencyGroup(np.array([0.5]), np.array([0.1]), (prefill,))
    n = 400_000
    which = rng.choice(3, size=n, p=[0.2, 0.3, 0.5])
    delay = np.array([0.4, 2.0, 0.1])[which]

    def draw(w):
        return np.where(rng.random(n) < w.prob_wait, rng.exponential(1 / w.decay_rate_per_s, n), 0)

    total = delay + draw(prefill) + np.where(which < 2, draw(pool), 0.0)
    expected = np.quantile(total, [0.5, 0.9, 0.99])
    assert grouped_quantiles_s([0.5, 0.9, 0.99], [a, b]) == pytest.approx(expected, rel=0.02)
