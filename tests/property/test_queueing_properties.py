"""Properties of the queueing model that hold for every load, server count and wait mix."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from pdd_plan.model.queueing.queueing import (
    WaitModel,
    erlang_b,
    erlang_c,
    ggc_wait,
    mixture_quantiles_s,
    sum_cdf,
)

SERVERS = st.integers(1, 300)
LOAD = st.floats(0.01, 0.98)  # utilisation ρ = a / c
CV2 = st.floats(0.0, 4.0)
RATES = st.floats(1e-3, 1e3)
PROBS = st.floats(0.0, 1.0)


@st.composite
def waits(draw) -> WaitModel:
    """Ordinary waits, plus the edge cases: no wait, certain wait, infinite rate."""
    kind = draw(st.sampled_from(["plain", "plain", "plain", "none", "certain", "infinite"]))
    if kind == "none":
        return WaitModel.none()
    if kind == "infinite":
        return WaitModel(draw(PROBS), math.inf)
    prob = 1.0 if kind == "certain" else draw(PROBS)
    return WaitModel(prob, draw(RATES))


WAIT_LISTS = st.lists(waits(), min_size=0, max_size=2)


def mean_wait_s(servers: int, load_frac: float, cv2_a: float = 1.0, cv2_s: float = 1.0) -> float:
    """Mean wait at utilisation ρ with unit mean service time (λ = ρ c)."""
    return ggc_wait(load_frac * servers, 1.0, servers, cv2_a, cv2_s).mean_s()


# ---------------------------------------------------------------------------- load and servers


@settings(max_examples=200, deadline=None)
@given(servers=SERVERS, a=LOAD, b=LOAD, cv2_a=CV2, cv2_s=CV2)
def test_wait_rises_with_load(servers, a, b, cv2_a, cv2_s):
    low, high = sorted((a, b))
    assert mean_wait_s(servers, low, cv2_a, cv2_s) <= mean_wait_s(servers, high, cv2_a, cv2_s) * (
        1 + 1e-9
    )


@settings(max_examples=100, deadline=None)
@given(servers=st.integers(1, 500))
def test_wait_diverges_towards_saturation(servers):
    near_full, half = mean_wait_s(servers, 0.999), mean_wait_s(servers, 0.5)
    assert near_full > 100 * half
    assert near_full > 0


@settings(max_examples=200, deadline=None)
@given(offered=st.floats(0.01, 200.0), extra=st.integers(1, 50), more=st.integers(1, 50))
def test_more_servers_at_the_same_offered_load_never_wait_longer(offered, extra, more):
    """Fixed λ and E[S]: adding servers only adds capacity."""
    few = math.floor(offered) + extra
    many = few + more
    assert ggc_wait(offered, 1.0, many).mean_s() <= ggc_wait(offered, 1.0, few).mean_s() * (
        1 + 1e-9
    )
    assert erlang_c(many, offered) <= erlang_c(few, offered) * (1 + 1e-9)


@settings(max_examples=200, deadline=None)
@given(load=LOAD, few=SERVERS, more=st.integers(1, 100))
def test_pooling_at_the_same_utilisation_never_waits_longer(load, few, more):
    """Economies of scale (Smith & Whitt, Bell Syst. Tech. J. 60(1), 1981): at equal ρ, one
    pooled M/M/c waits no longer than a smaller one."""
    assert mean_wait_s(few + more, load) <= mean_wait_s(few, load) * (1 + 1e-9)


@settings(max_examples=200, deadline=None)
@given(servers=st.integers(0, 3_000), offered=st.floats(0.001, 4_000.0))
def test_erlang_b_is_the_truncated_poisson_ratio(servers, offered):
    """B(c, a) = P(N = c | N <= c), N ~ Poisson(a): an independent formula, in log space."""
    log_pmf = stats.poisson.logpmf(np.arange(servers + 1), offered)
    expected = math.exp(log_pmf[-1] - special.logsumexp(log_pmf))
    assert math.isclose(erlang_b(servers, offered), expected, rel_tol=1e-8, abs_tol=1e-290)


# ---------------------------------------------------------------------------- sums of waits


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(ws=WAIT_LISTS, times=st.lists(st.floats(-1.0, 1e4), min_size=2, max_size=30))
def test_sum_cdf_is_a_cdf(ws, times):
    t = np.sort(np.array(times))
    f = sum_cdf(ws, t)
    assert np.all((f >= 0) & (f <= 1))
    assert np.all(np.diff(f) >= -1e-12)
    assert np.all(f[t < 0] == 0)


@settings(max_examples=100, deadline=None)
@given(w1=waits(), w2=waits(), t=st.one_of(st.just(0.0), st.floats(1e-6, 50.0)))
def test_sum_cdf_matches_numerical_convolution(w1, w2, t):
    """P(W1 + W2 <= t) = P(W1 = 0) F2(t) + ∫_0^t p1 r1 e^{-r1 s} F2(t - s) ds, by quadrature.
    W1 is the faster live wait, so the integrand varies no faster than W1's own density."""
    live = [w for w in (w1, w2) if not w.is_zero]
    assume(live)
    fast = max(live, key=lambda w: w.decay_rate_per_s)
    slow = w2 if fast is w1 else w1
    p1, r1 = fast.prob_wait, fast.decay_rate_per_s

    def density(s: float) -> float:
        return p1 * r1 * math.exp(-r1 * s) * slow.cdf(t - s)

    end = min(t, 40.0 / r1)  # beyond, W1's density is below e^-40 of its peak
    integral, _ = integrate.quad(density, 0.0, end, limit=200, epsabs=1e-12)
    expected = (1 - p1) * slow.cdf(t) + integral
    assert math.isclose(sum_cdf([w1, w2], t), expected, abs_tol=1e-7)
    assert math.isclose(sum_cdf([w1, w2], t), sum_cdf([w2, w1], t), abs_tol=1e-12)


@settings(max_examples=100, deadline=None)
@given(rate=RATES, prob1=PROBS, prob2=PROBS, nudge=st.floats(1e-12, 1e-6), t=st.floats(0, 100))
def test_nearly_equal_rates_approach_erlang2(rate, prob1, prob2, nudge, t):
    """The hypoexponential form must not cancel catastrophically as r2 -> r1."""
    equal = sum_cdf([WaitModel(prob1, rate), WaitModel(prob2, rate)], t)
    near = sum_cdf([WaitModel(prob1, rate), WaitModel(prob2, rate * (1 + nudge))], t)
    assert math.isclose(equal, near, abs_tol=1e-5)


# ---------------------------------------------------------------------------- mixtures


@st.composite
def mixtures(draw):
    n = draw(st.integers(1, 40))
    delays = draw(st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n))
    weights = draw(st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n))
    assume(sum(weights) > 0)
    return np.array(weights), np.array(delays), draw(WAIT_LISTS)


def mixture_cdf(t: float, weights, delays, ws) -> float:
    """F(t) straight from its definition, class by class."""
    w = weights / weights.sum()
    return float(sum(wk * sum_cdf(ws, t - dk) for wk, dk in zip(w, delays, strict=True)))


@settings(max_examples=200, deadline=None)
@given(mix=mixtures(), levels=st.lists(st.floats(0.0, 0.9999), min_size=2, max_size=6))
def test_mixture_quantiles_rise_with_q(mix, levels):
    weights, delays, ws = mix
    qs = np.sort(levels)
    got = mixture_quantiles_s(qs, weights, delays, ws)
    assert np.all(np.diff(got) >= -1e-9)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(mix=mixtures(), q=st.floats(0.001, 0.9999))
def test_mixture_quantile_is_the_smallest_t_reaching_q(mix, q):
    """x = Q(q) iff F(x) >= q and F(x - ε) < q (up to the root-finder's tolerance)."""
    weights, delays, ws = mix
    (x,) = mixture_quantiles_s([q], weights, delays, ws)
    assert mixture_cdf(x, weights, delays, ws) >= q - 1e-9
    assert mixture_cdf(x - 1e-6 * max(1.0, x), weights, delays, ws) < q + 1e-9
    assert x >= delays[weights > 0].min()


@settings(max_examples=100, deadline=None)
@given(w=waits(), delay=st.floats(0.0, 10.0), q=st.floats(0.0, 0.9999))
def test_one_class_one_wait_is_the_shifted_closed_form(w, delay, q):
    (x,) = mixture_quantiles_s([q], [1.0], [delay], [w])
    assert math.isclose(x, delay + w.quantile_s(q), rel_tol=1e-9, abs_tol=1e-9)


def test_two_thousand_classes_agree_with_the_definition():
    """The vectorised F on a realistic class count, against the class-by-class definition."""
    rng = np.random.default_rng(7)
    delays, weights = rng.lognormal(-1.0, 1.0, 2_000), rng.random(2_000)
    ws = [ggc_wait(40.0, 0.2, 10, 2.0, 0.5), WaitModel(0.3, 3.0)]
    qs = [0.5, 0.9, 0.99]
    for q, x in zip(qs, mixture_quantiles_s(qs, weights, delays, ws), strict=True):
        at, before = (mixture_cdf(t, weights, delays, ws) for t in (x, x - 1e-9))
        assert at >= q - 1e-9 and before <= q + 1e-9  # a root, or an atom straddling q
