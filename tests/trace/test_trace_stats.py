"""Arrival rate, burstiness and the distributions written for a scenario."""

from __future__ import annotations

import numpy as np
import pytest
from trace_helpers import row, write_mooncake

from pdd_plan.loaders import trace_stats as stats
from pdd_plan.loaders.trace_analyze import analyze


def test_deterministic_arrivals_have_zero_burstiness():
    a = stats.arrivals(np.arange(11) * 0.5)  # one request every 0.5 s
    assert a.requests == 11 and a.span_s == 5.0
    assert a.rate_per_s == pytest.approx(2.0)
    assert a.cv2 == pytest.approx(0.0, abs=1e-12)


def test_poisson_arrivals_have_burstiness_near_one():
    rng = np.random.default_rng(7)
    times = np.cumsum(rng.exponential(1 / 4.0, size=40_000))  # 4 req/s
    a = stats.arrivals(rng.permutation(times))  # order in the file does not matter
    assert a.rate_per_s == pytest.approx(4.0, rel=0.02)
    assert a.cv2 == pytest.approx(1.0, abs=0.04)  # sd of the estimate ~0.014


def test_two_alternating_gaps_give_their_cv2():
    # gaps 1 s and 3 s alternating: mean 2, variance 1 -> cv2 0.25
    times = np.cumsum([0] + [1, 3] * 50)
    a = stats.arrivals(times)
    assert a.rate_per_s == pytest.approx(0.5)
    assert a.cv2 == pytest.approx(0.25)


def test_one_arrival_time_is_not_a_rate():
    with pytest.raises(ValueError):
        stats.arrivals(np.array([3.0, 3.0]))


def test_quantile_bins_cover_every_request_once():
    rng = np.random.default_rng(1)
    values = np.concatenate([np.zeros(300), rng.uniform(0, 1, 700)])  # 30 % exactly zero
    bins = stats.quantile_bins(values)
    assert sum(b.share for b in bins) == pytest.approx(1.0)
    zero = [b for b in bins if b.low == b.high == 0.0]
    assert len(zero) == 1 and zero[0].share == pytest.approx(0.3)
    for b in bins:
        if b.low < b.high:  # a bin's share is the fraction of values inside it
            inside = (values >= b.low) & (values <= b.high) & (values != 0)
            assert b.share == pytest.approx(inside.mean(), abs=2 / len(values))  # edge value
    assert stats.bins_mean(bins) == pytest.approx(values.mean(), rel=0.05)


def test_a_single_value_is_one_point_bin():
    bins = stats.quantile_bins(np.full(10, 42.0))
    assert [(b.low, b.high, b.share) for b in bins] == [(42.0, 42.0, 1.0)]


def test_empirical_strata_keep_the_mean():
    values = np.random.default_rng(2).lognormal(8, 1.2, 5_001)
    points, weights = stats.empirical_strata(values)
    assert len(points) == 32 and sum(weights) == pytest.approx(1.0)
    assert np.dot(points, weights) == pytest.approx(values.mean(), rel=1e-12)


def test_hit_rates_of_a_hand_worked_trace(tmp_path):
    path = write_mooncake(
        tmp_path / "t.jsonl",
        [
            row(0, 1200, [1, 2, 3]),  # nothing cached yet
            row(1000, 1100, [1, 2, 9]),  # two blocks: 1,024 of 1,100 tokens
            row(2000, 300, [1]),  # one block, capped at the 300-token prompt
            row(3000, 1536, [7, 2, 3]),  # first block misses: nothing, prefix semantics
        ],
    )
    a = analyze(path, capacities_blocks=(None, 2, 0))
    expected = [0.0, 1024 / 1100, 1.0, 0.0]
    np.testing.assert_allclose(a.unlimited.hit_frac, expected)
    assert a.unlimited.token_hit_frac(a.input_tokens) == pytest.approx(1324 / 4136)
    small, none = a.by_capacity[1], a.by_capacity[2]
    np.testing.assert_allclose(small.hit_frac, expected)  # 2 blocks keep the head [1, 2]
    np.testing.assert_allclose(none.hit_frac, 0.0)
    assert a.arrivals.rate_per_s == pytest.approx(1.0) and a.arrivals.cv2 == pytest.approx(0.0)


def test_one_long_idle_gap_is_left_out_of_the_trimmed_burstiness():
    gaps_s = np.array([1.0] * 999 + [1000.0])  # 1,000 gaps: the longest is the 0.1 %
    a = stats.arrivals(np.concatenate([[0.0], np.cumsum(gaps_s)]))
    mean_s = gaps_s.mean()
    assert a.cv2 == pytest.approx(((gaps_s - mean_s) ** 2).mean() / mean_s**2)
    assert a.cv2 > 200 and a.cv2_trimmed == pytest.approx(0.0, abs=1e-12)
