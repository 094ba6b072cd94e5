"""The mechanisms the generated agreement campaign (issue #22, point 2) found missing from
the closed forms, each against an independent expectation: tail strata of the request
classes, per-class blocking of the relay's KV (the stochastic knapsack), the exact
time-average factor of TPOT's batch spread, and colocated serving's first token."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from pdd_plan.model.decode.tpot import time_average_factor
from pdd_plan.model.queueing.knapsack import knapsack_blocking
from pdd_plan.model.queueing.queueing import erlang_b
from pdd_plan.model.workload.workload import TruncatedLognormal, strata_edges
from pdd_plan.stages.agreement_campaign import draw


# ---- request classes: strata finer towards the tail the percentiles read ------------------
def test_upper_tail_strata_are_the_documented_edges():
    assert strata_edges(8, "upper") == pytest.approx(
        [0, 0.1875, 0.375, 0.5625, 0.75, 0.95, 0.99, 0.998, 1.0]
    )
    lower = strata_edges(8, "lower")
    assert lower == pytest.approx(1 - strata_edges(8, "upper")[::-1])
    assert strata_edges(8) == pytest.approx(np.linspace(0, 1, 9))  # no tail: equal


@pytest.mark.parametrize("n", [4, 6, 8, 10, 16, 24])
def test_strata_partition_the_probability(n):
    for tail in (None, "upper", "lower"):
        edges = strata_edges(n, tail)
        assert edges[0] == 0 and edges[-1] == pytest.approx(1) and len(edges) == n + 1
        assert (np.diff(edges) > 0).all()


def test_each_tail_stratum_is_represented_by_its_conditional_mean():
    """The [0.99, 0.998] stratum of a lognormal prompt (median 8,192, sigma 0.9) stands at
    its conditional mean, integrated here with scipy's lognormal, not the model's code."""
    dist = TruncatedLognormal(1, 1e9, median=8192.0, sigma=0.9)
    values, weights = dist.discretise(8, "upper")
    law = stats.lognorm(s=0.9, scale=8192.0)
    lo, hi = law.ppf(0.99), law.ppf(0.998)
    mean, _ = integrate.quad(lambda x: x * law.pdf(x), lo, hi)
    assert weights[6] == pytest.approx(0.008)
    assert values[6] == pytest.approx(mean / 0.008, rel=1e-3)
    assert np.dot(values, weights) == pytest.approx(law.mean(), rel=1e-3)  # mean kept


# ---- the relay's KV: a stochastic knapsack ----------------------------------------------------
@pytest.mark.parametrize("load", [0.5, 2.0, 6.0, 12.0])
def test_one_size_is_erlang_b(load):
    # eight requests of one size fill the capacity: Erlang-B over 8 servers
    assert knapsack_blocking(8.0, np.array([1.0]), np.array([load]))[0] == pytest.approx(
        erlang_b(8, load), rel=1e-9, abs=1e-14
    )


def test_two_sizes_match_the_enumerated_product_form():
    """Capacity 4 units, sizes 1 and 2, loads 1.5 and 0.8: the stationary law of the
    numbers (n1, n2) in the system is a1^n1/n1! a2^n2/n2! on n1 + 2 n2 <= 4."""
    a1, a2 = 1.5, 0.8
    states = [(i, j) for i, j in itertools.product(range(5), range(3)) if i + 2 * j <= 4]
    p = {s: a1 ** s[0] / math.factorial(s[0]) * a2 ** s[1] / math.factorial(s[1]) for s in states}
    total = sum(p.values())
    blocked = [sum(v for (i, j), v in p.items() if i + 2 * j + size > 4) / total for size in (1, 2)]
    got = knapsack_blocking(4.0, np.array([1.0, 2.0]), np.array([a1, a2]))
    assert got == pytest.approx(blocked, rel=1e-9)


def test_a_larger_request_is_blocked_more_and_one_past_the_capacity_always():
    got = knapsack_blocking(100.0, np.array([5.0, 20.0, 60.0, 101.0]), np.array([4.0, 1.0, 0.5, 1]))
    assert got[0] < got[1] < got[2] < 1.0 and got[3] == 1.0


def _kaufman_roberts_blocking(units: np.ndarray, loads: np.ndarray, capacity: int):
    """The textbook recursion j q(j) = sum_k a_k b_k q(j - b_k), step by step in floats
    (rescaled before they overflow), and the blocking of each size."""
    q = [1.0] + [0.0] * capacity
    for j in range(1, capacity + 1):
        q[j] = sum(a * b * q[j - b] for a, b in zip(loads, units, strict=True) if b <= j) / j
        if q[j] > 1e200:
            q = [v / q[j] for v in q]
    total = sum(q)
    return np.array([sum(q[capacity - b + 1 :]) / total for b in units])


@pytest.mark.parametrize("seed", range(6))
def test_the_fft_law_is_the_kaufman_roberts_recursion(seed):
    """Sizes of 1 to 300 units of 1,024, offered from 3 % to 40 x the capacity (the FFT
    tilts the law above the capacity): the blocking of every size as the recursion has it."""
    rng = np.random.default_rng(seed)
    units = np.sort(rng.choice(np.arange(1, 300), rng.integers(2, 30), replace=False))
    loads = rng.uniform(0, 1, len(units))
    loads *= [0.03, 0.5, 1.0, 2.0, 10.0, 40.0][seed] * 1024 / float(loads @ units)
    got = knapsack_blocking(1024.0, units.astype(float), loads)
    want = _kaufman_roberts_blocking(units, loads, 1024)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-14)


# ---- TPOT: the time-average factor of M/G/inf occupancy, exactly ------------------------
def test_time_average_factor_equals_its_integral():
    """g(T) = (2/T²) int_0^T (T - u) r(u) du, r(u) = int_u^inf P(S > s) ds / E[S]: numeric
    quadrature over two holds (1 s and 4 s, equally likely) at several windows."""
    holds, w = np.array([1.0, 4.0]), np.array([0.5, 0.5])

    def r(u):
        return (0.5 * max(1.0 - u, 0) + 0.5 * max(4.0 - u, 0)) / 2.5

    for window in (0.5, 1.0, 2.5, 10.0):
        inner, _ = integrate.quad(lambda u, t=window: (t - u) * r(u), 0, window, points=[1, 4])
        expected = 2 / window**2 * inner
        assert time_average_factor(np.array([window]), holds, w)[0] == pytest.approx(expected)


# ---- the campaign draws from its seed alone ------------------------------------------------
def test_a_case_is_drawn_from_its_seed_alone():
    assert draw(7) == draw(7) and draw(7) != draw(8)
    archs = {draw(s)["architectures"][0] for s in range(60)}
    assert archs == {"pdd", "cdc_pd", "idc_pd", "colocated"}
