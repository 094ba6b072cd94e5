"""Queueing formulas against textbook values, each derived here independently of the code.

References:
- [K75] L. Kleinrock, Queueing Systems, Vol. 1 (1975): ch. 3 (M/M/1, M/M/c, Erlang's
  formulas), ch. 5 (M/G/1, Pollaczek-Khinchine, the M/M/1 waiting-time and sojourn
  distributions: W = 0 w.p. 1 - ρ else Exp(μ - λ); T ~ Exp(μ - λ)). Vol. 2 (1976) ch. 4:
  processor sharing.
- [R] S. Ross, Introduction to Probability Models, ch. 5: the hypoexponential distribution.
- [GH] Gross, Shortle, Thompson & Harris, Fundamentals of Queueing Theory, 4th ed. (2008):
  M/M/c with the explicit factorial form of Erlang-C (§2.3), M/M/2 Lq = 2ρ³/(1 - ρ²).
- [AC] A. O. Allen, Probability, Statistics and Queueing Theory (1990): the Allen-Cunneen
  G/G/c approximation Wq ≈ Wq(M/M/c) (c_a² + c_s²)/2, exact for M/G/1.
- [DS] Zhong et al., DistServe (OSDI 2024) §3: prefill as M/D/1, mean TTFT D + λD²/(2(1-λD)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pdd_plan.errors import InfeasibleError, SaturatedError
from pdd_plan.model.queueing.queueing import (
    WaitModel,
    erlang_b,
    erlang_c,
    ggc_wait,
    md1_mean_sojourn_s,
    mixture_quantiles_s,
    mmc_mean_wait_s,
    ps_mean_sojourn_s,
    sum_cdf,
)


def erlang_c_factorial(c: int, a: float) -> float:
    """[GH] §2.3: C = (a^c/c! · c/(c-a)) / (Σ_{k<c} a^k/k! + a^c/c! · c/(c-a)), small c only."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def erlang_b_factorial(c: int, a: float) -> float:
    """[K75] Erlang's loss formula B = (a^c/c!) / Σ_{k<=c} a^k/k!."""
    return (a**c / math.factorial(c)) / sum(a**k / math.factorial(k) for k in range(c + 1))


# ---------------------------------------------------------------------------- M/M/1


LAM, MU = 0.8, 1.0
RHO = LAM / MU


def test_mm1_mean_wait_is_rho_over_mu_minus_lambda():
    """[K75] ch. 3: Wq = ρ / (μ - λ) = 0.8 / 0.2 = 4.0."""
    assert ggc_wait(LAM, 1 / MU, 1).mean_s() == pytest.approx(4.0, rel=1e-12)
    assert mmc_mean_wait_s(LAM, MU, 1) == pytest.approx(4.0, rel=1e-12)


def test_mm1_wait_tail_is_rho_exp():
    """[K75] ch. 5: P(W > t) = ρ e^{-(μ - λ) t} for t >= 0, and P(W > t) = 1 for t < 0."""
    t = np.array([0.0, 0.5, 3.0, 10.0, 40.0])
    wait = ggc_wait(LAM, 1 / MU, 1)
    np.testing.assert_allclose(wait.tail(t), RHO * np.exp(-(MU - LAM) * t), rtol=1e-12)
    np.testing.assert_allclose(wait.cdf(t), 1 - RHO * np.exp(-(MU - LAM) * t), rtol=1e-12)
    assert wait.tail(-1.0) == 1.0
    assert wait.prob_wait == pytest.approx(RHO)  # P(wait) = ρ for M/M/1


def test_mm1_wait_quantile_closed_form():
    """Invert 1 - ρ e^{-(μ-λ)t} = q: t = ln(ρ / (1 - q)) / (μ - λ); 0 when q <= 1 - ρ."""
    wait = ggc_wait(LAM, 1 / MU, 1)
    assert wait.quantile_s(0.9) == pytest.approx(math.log(0.8 / 0.1) / 0.2, rel=1e-12)
    assert wait.quantile_s(0.2) == 0.0  # the atom at zero holds 1 - ρ = 0.2
    assert wait.quantile_s(0.1) == 0.0
    assert wait.quantile_s(1.0) == math.inf


def test_mm1_sojourn_quantiles_from_the_sum_of_wait_and_service():
    """[K75] ch. 5: the M/M/1 FCFS sojourn T = W + S is Exp(μ - λ), W and S independent.
    So P(T <= t) = 1 - e^{-(μ-λ)t} and the q-quantile is -ln(1 - q) / (μ - λ)."""
    wait, service = ggc_wait(LAM, 1 / MU, 1), WaitModel(1.0, MU)
    t = np.linspace(0, 30, 31)
    np.testing.assert_allclose(sum_cdf([wait, service], t), -np.expm1(-(MU - LAM) * t), atol=1e-14)
    qs = [0.5, 0.9, 0.99]
    expected = [-math.log(1 - q) / (MU - LAM) for q in qs]
    got = mixture_quantiles_s(qs, [1.0], [0.0], [wait, service])
    np.testing.assert_allclose(got, expected, rtol=1e-9)


# ---------------------------------------------------------------------------- M/M/c


def test_erlang_c_two_servers_one_erlang_is_one_third():
    """[GH] M/M/2 with a = 1 (ρ = 1/2): C = 2ρ²/(1 + ρ) = 1/3; Lq = 2ρ³/(1 - ρ²) = 1/3,
    so Wq = Lq/λ = 1/3 s at λ = 1, μ = 1."""
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3, rel=1e-12)
    assert mmc_mean_wait_s(1.0, 1.0, 2) == pytest.approx(1 / 3, rel=1e-12)


@pytest.mark.parametrize(("c", "a"), [(10, 8.0), (3, 2.5), (1, 0.3), (25, 20.0), (60, 59.0)])
def test_erlang_c_matches_the_factorial_formula(c, a):
    assert erlang_c(c, a) == pytest.approx(erlang_c_factorial(c, a), rel=1e-10)


def test_erlang_c_ten_servers_eight_erlangs():
    """The classic table value: C(10, 8) ≈ 0.409."""
    assert erlang_c(10, 8.0) == pytest.approx(0.409, abs=5e-4)


def test_erlang_b_five_servers_three_erlangs():
    """Erlang-B tables: B(5, 3) = 2.025 / 18.4 ≈ 0.1101."""
    assert erlang_b(5, 3.0) == pytest.approx(0.1101, abs=5e-5)
    assert erlang_b(5, 3.0) == pytest.approx(erlang_b_factorial(5, 3.0), rel=1e-12)


def test_erlang_b_edges():
    """B(0, a) = 1 (no server: all blocked); B(c, 0) = 0."""
    assert erlang_b(0, 2.0) == 1.0
    assert erlang_b(4, 0.0) == 0.0
    assert erlang_c(4, 0.0) == 0.0


@pytest.mark.parametrize(("c", "a"), [(5_000, 4_900.0), (100_000, 99_000.0), (100_000, 10.0)])
def test_large_server_counts_do_not_overflow(c, a):
    """Far beyond factorial range (170! overflows a double). Reference: B is a truncated
    Poisson ratio, B = pmf(c; a) / cdf(c; a), computed in log space by scipy."""
    b = erlang_b(c, a)
    reference = math.exp(stats.poisson.logpmf(c, a) - stats.poisson.logcdf(c, a))
    assert b == pytest.approx(reference, rel=1e-8, abs=1e-300)
    prob = erlang_c(c, a)
    assert math.isfinite(prob) and 0.0 <= prob < 1.0
    if a > 0.9 * c:
        assert prob > 0.0  # heavy load on many servers: waiting is rare but possible


def test_mmc_mean_wait_formula():
    """[GH] §2.3: Wq = C / (cμ - λ) with C from the factorial form."""
    lam, mu, c = 7.0, 0.9, 10
    expected = erlang_c_factorial(c, lam / mu) / (c * mu - lam)
    assert mmc_mean_wait_s(lam, mu, c) == pytest.approx(expected, rel=1e-10)
    assert ggc_wait(lam, 1 / mu, c).mean_s() == pytest.approx(expected, rel=1e-10)


# ---------------------------------------------------------------------------- M/D/1, G/G/c


def test_md1_pollaczek_khinchine():
    """[K75] P-K: M/D/1 Wq = ρ / (2μ(1 - ρ)); [DS]: sojourn = D + λD²/(2(1 - λD))."""
    lam, d = 3.0, 0.25
    rho, mu = lam * d, 1 / d
    wq = rho / (2 * mu * (1 - rho))
    assert wq == pytest.approx(0.375)  # 0.75 / (2 · 4 · 0.25)
    assert md1_mean_sojourn_s(lam, d) == pytest.approx(d + wq, rel=1e-12)


def test_allen_cunneen_is_exact_for_md1():
    """[AC]: with c = 1, c_a² = 1 (Poisson) and c_s² = 0 (deterministic) the factor is 1/2
    and Erlang-C(1, ρ) = ρ, so the approximation reproduces P-K exactly."""
    for lam, d in [(3.0, 0.25), (0.1, 2.0), (9.9, 0.1)]:
        rho, mu = lam * d, 1 / d
        wait = ggc_wait(lam, d, 1, cv2_arrival=1.0, cv2_service=0.0)
        assert wait.mean_s() == pytest.approx(rho / (2 * mu * (1 - rho)), rel=1e-12)
        assert wait.prob_wait == pytest.approx(rho, rel=1e-12)


def test_allen_cunneen_scales_mean_and_tail_rate_inversely():
    """Factor f = (c_a² + c_s²)/2 = 2: mean wait doubles, decay rate halves, P(wait) kept."""
    base, bursty = ggc_wait(40.0, 0.2, 10), ggc_wait(40.0, 0.2, 10, 2.5, 1.5)
    assert bursty.mean_s() == pytest.approx(2 * base.mean_s(), rel=1e-12)
    assert bursty.decay_rate_per_s == pytest.approx(base.decay_rate_per_s / 2, rel=1e-12)
    assert bursty.prob_wait == base.prob_wait


def test_deterministic_arrivals_and_service_never_wait():
    """D/D/c below capacity: arrivals are evenly spaced, so nobody waits."""
    wait = ggc_wait(9.0, 1.0, 10, cv2_arrival=0.0, cv2_service=0.0)
    assert wait.mean_s() == 0.0
    assert wait.quantile_s(0.99) == 0.0
    assert wait.tail(0.0) == 0.0
    np.testing.assert_array_equal(sum_cdf([wait], np.array([0.0, 1.0])), [1.0, 1.0])


def test_processor_sharing_sojourn():
    """[K75] Vol. 2 ch. 4: M/G/1-PS mean sojourn of a job of size x is x / (C (1 - ρ)).
    1e9 bits on a 1e10 bit/s line at 60 % load: 0.1 s / 0.4 = 0.25 s."""
    assert ps_mean_sojourn_s(1e9, 1e10, 0.6) == pytest.approx(0.25, rel=1e-12)
    np.testing.assert_allclose(ps_mean_sojourn_s(np.array([1e9, 2e9]), 1e10, 0.6), [0.25, 0.5])


# ---------------------------------------------------------------------------- mixtures


def test_mixture_without_waits_is_the_weighted_quantile():
    """Two classes, delays 1 s and 3 s, weights 3:1 (normalised 0.75/0.25): the CDF is 0.75
    on [1, 3) and 1 from 3, so q <= 0.75 gives 1 s and q > 0.75 gives 3 s."""
    got = mixture_quantiles_s([0.1, 0.5, 0.75, 0.76, 0.99, 1.0], [3.0, 1.0], [1.0, 3.0])
    np.testing.assert_array_equal(got, [1.0, 1.0, 1.0, 3.0, 3.0, 3.0])


def test_mixture_one_class_is_the_shifted_wait_quantile():
    """d + W with W = 0 w.p. 0.4, Exp(2) w.p. 0.6: q-quantile d + ln(0.6/(1-q))/2 above the
    atom, exactly d inside it (q <= 0.4)."""
    wait = WaitModel(0.6, 2.0)
    got = mixture_quantiles_s([0.3, 0.4, 0.5, 0.9, 0.999], [1.0], [0.7], [wait])
    expected = [0.7, 0.7] + [0.7 + math.log(0.6 / (1 - q)) / 2 for q in (0.5, 0.9, 0.999)]
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_mixture_hand_case_with_atoms_and_continuous_parts():
    """Delays 0 and 1 s, weights 1/2 each, W = 0 w.p. 1/2 else Exp(1).
    On [0, 1): F = ½(1 - ½e^{-t}); F(1-) = ½(1 - ½e^{-1}) ≈ 0.408; the atom at 1 adds ¼.
    q = 0.3: e^{-t} = 0.8, t = ln 1.25.  q = 0.5 lies in the atom: t = 1.
    q = 0.9 (> 1 s): 1 - ¼e^{-t}(1 + e) = 0.9, t = ln((1 + e)/0.4)."""
    wait = WaitModel(0.5, 1.0)
    got = mixture_quantiles_s([0.3, 0.5, 0.9], [0.5, 0.5], [0.0, 1.0], [wait])
    expected = [math.log(1.25), 1.0, math.log((1 + math.e) / 0.4)]
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_mixture_quantiles_against_monte_carlo():
    """200k seeded samples of d_K + W1 + W2: P50/P90/P99 within 2 %."""
    rng = np.random.default_rng(20240611)
    delays = np.array([0.05, 0.2, 0.6, 1.5])
    weights = np.array([0.4, 0.3, 0.2, 0.1])
    waits = [ggc_wait(30.0, 0.3, 10, 1.5, 0.8), WaitModel(0.35, 4.0)]
    n = 200_000
    t = delays[rng.choice(delays.size, size=n, p=weights)]
    for w in waits:
        t = t + np.where(rng.random(n) < w.prob_wait, rng.exponential(1 / w.decay_rate_per_s, n), 0)
    qs = [0.5, 0.9, 0.99]
    expected = np.quantile(t, qs, method="inverted_cdf")
    np.testing.assert_allclose(mixture_quantiles_s(qs, weights, delays, waits), expected, rtol=0.02)


def test_hypoexponential_and_erlang2_cdf():
    """[R]: for rates r1 ≠ r2, P(X1 + X2 <= t) = 1 - (r2 e^{-r1 t} - r1 e^{-r2 t})/(r2 - r1);
    for r1 = r2 = r (Erlang-2), 1 - e^{-rt}(1 + rt)."""
    t = np.array([0.0, 0.1, 1.0, 5.0])
    hypo = 1 - (3 * np.exp(-1 * t) - 1 * np.exp(-3 * t)) / (3 - 1)
    np.testing.assert_allclose(sum_cdf([WaitModel(1, 1.0), WaitModel(1, 3.0)], t), hypo, atol=1e-15)
    erlang2 = 1 - np.exp(-2 * t) * (1 + 2 * t)
    np.testing.assert_allclose(
        sum_cdf([WaitModel(1, 2.0), WaitModel(1, 2.0)], t), erlang2, atol=1e-15
    )
    assert sum_cdf([], 0.0) == 1.0 and sum_cdf([], -1e-9) == 0.0


# ---------------------------------------------------------------------------- saturation


@pytest.mark.parametrize(
    ("call", "offered", "capacity"),
    [
        (lambda: erlang_c(10, 12.5), "12.5", "10"),
        (lambda: ggc_wait(30.0, 0.5, 10, what="prefill pool"), "15", "10"),
        (lambda: mmc_mean_wait_s(7.0, 0.5, 12), "14", "12"),
        (lambda: md1_mean_sojourn_s(5.0, 0.25), "1.25", "1"),
        (
            lambda: ps_mean_sojourn_s(1e9, 2e10, 1.1, what="wan line", unit="bit/s"),
            "2.2e+10",
            "2e+10",
        ),
    ],
)
def test_saturation_names_offered_load_and_capacity(call, offered, capacity):
    with pytest.raises(SaturatedError) as info:
        call()
    message = str(info.value)
    assert f"offered load {offered}" in message and f"capacity {capacity}" in message
    assert isinstance(info.value, InfeasibleError)


def test_saturation_names_the_queue_and_holds_at_exactly_full_load():
    with pytest.raises(SaturatedError, match="prefill pool"):
        ggc_wait(20.0, 0.5, 10, what="prefill pool")  # λE[S] = 10 = c: no finite wait
