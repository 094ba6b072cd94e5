"""The gate's fast paths (model/queueing/prefill_gate.py): the remembered gap law and discount
weights equal a fresh computation and the integrals written out here; each memo misses
when any part of its key changes; a step law's P0 is remembered per rate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammaincc

from pdd_plan.model.queueing import prefill_gate as gate

# (mean step s, variance s², pool size): CV² from 0.001 to 20, one to ten instances
LAWS = [(0.05, 2.5e-6, 2), (0.27, 0.01, 3), (1.3, 0.4, 5), (0.8, 12.8, 10), (0.2, 8e-4, 2)]
RATES = [0.0, 0.5, 4.0, 60.0]  # requests per second


def _trapezoid(f, step):
    return float(np.sum(f[1:] + f[:-1]) / 2.0 * step)


@pytest.mark.parametrize(("mean_s", "var_s2", "servers"), LAWS)
def test_the_remembered_gap_law_is_a_fresh_one(mean_s, var_s2, servers):
    x, tail, step = gate._gap_tail(mean_s, var_s2, servers)
    fresh = gate._gap_tail_at.__wrapped__(mean_s, var_s2, servers)  # no memo
    assert np.array_equal(x, fresh[0]) and np.array_equal(tail, fresh[1]) and step == fresh[2]
    assert gate._gap_tail(mean_s, var_s2, servers)[1] is tail  # asked again: remembered
    with pytest.raises(ValueError):
        tail[0] = 0.5  # shared: read-only
    # E[G] = E[L] / c (the Palm interval of c superposed renewal processes), by hand
    first = _trapezoid(x * tail, step) + x[0]
    assert first == pytest.approx(mean_s / servers, rel=1e-3)
    # each key part changed: another law
    for other in [(1.01 * mean_s, var_s2, servers), (mean_s, 2.0 * var_s2, servers),
                  (mean_s, var_s2, servers + 1)]:  # fmt: skip
        assert not np.array_equal(gate._gap_tail(*other)[1], tail)


@pytest.mark.parametrize(("mean_s", "var_s2", "servers"), LAWS)
def test_the_fast_integrals_are_the_written_out_ones(mean_s, var_s2, servers):
    """P0 = 1 - λ ∫ e^(-λx) P(G > x) dx and Var(β G + r e^(-λG)) from E[φ(G)] = φ(0) +
    ∫ φ'(x) P(G > x) dx, on the same grid (∫ dx = ∫ x d(ln x), trapezoid)."""
    x, tail, step = gate._gap_tail(mean_s, var_s2, servers)
    beta, restart_s = 1.7, 0.4 * mean_s
    for lam in RATES[1:]:
        once, twice, slope = gate._discounts(mean_s, lam, servers)
        assert np.array_equal(once, np.exp(-lam * x))
        assert np.array_equal(twice, np.exp(-2.0 * lam * x))
        assert np.array_equal(slope, (1.0 - lam * x) * np.exp(-lam * x))

        p0 = 1.0 - lam * (_trapezoid(np.exp(-lam * x) * tail * x, step) + x[0])
        got = gate.empty_take_prob(mean_s, var_s2, servers, lam)
        assert got == pytest.approx(min(max(p0, 0.0), 1.0), rel=1e-12, abs=1e-15)
        # below the grid P(G > x) = 1: ∫_0^x0 φ'(x) dx added as such
        g1 = _trapezoid(x * tail, step) + x[0]
        g2 = _trapezoid(2.0 * x * x * tail, step) + x[0] ** 2
        e1 = 1.0 - lam * (_trapezoid(np.exp(-lam * x) * x * tail, step) + x[0])
        e2 = 1.0 - 2.0 * lam * (_trapezoid(np.exp(-2.0 * lam * x) * x * tail, step) + x[0])
        ge = _trapezoid((1.0 - lam * x) * np.exp(-lam * x) * x * tail, step) + x[0]
        var = (beta**2 * (g2 - g1**2) + restart_s**2 * (e2 - e1**2)
               + 2.0 * beta * restart_s * (ge - g1 * e1))  # fmt: skip
        got = gate.gap_driven_var(mean_s, var_s2, servers, lam, beta, restart_s)
        assert got == pytest.approx(max(var, 0.0), rel=1e-9, abs=1e-15 * mean_s**2)


def test_the_discounts_miss_on_each_key_part():
    base = gate._discounts(0.3, 5.0, 3)[0]
    assert gate._discounts(0.3, 5.0, 3)[0] is base  # remembered
    for other in [(0.31, 5.0, 3), (0.3, 5.5, 3), (0.3, 5.0, 4)]:
        assert not np.array_equal(gate._discounts(*other)[0], base)


def test_a_step_law_remembers_p0_per_rate():
    law = gate.StepLaw(0.27, 0.004, 0.6, 0.05, 0.5, servers=3, rate_per_s=12.0, restart_s=0.02)
    for rate in RATES * 2:  # each twice: the second from the memo
        want = gate.empty_take_prob(law.mean_s, law.variance_s2(), law.servers, rate)
        assert law.empty_take_prob(rate) == want and rate in law._p0_memo
    values = [law.empty_take_prob(r) for r in RATES]
    assert values[0] == 1.0 and all(b < a for a, b in zip(values, values[1:], strict=False))
    for r in np.linspace(0.1, 50.0, 3 * gate._P0_MEMO):  # bounded
        law.empty_take_prob(float(r))
        assert len(law._p0_memo) <= gate._P0_MEMO


@pytest.mark.parametrize("servers", [2, 3, 10])
def test_rows_built_alone_are_the_whole_tables(servers):
    """The table's rows, built one at a time when asked, equal the whole table built at
    once (gamma steps: P(G > x) = Q(k, t) (Q(k + 1, t) - (t / k) Q(k, t))^(c - 1), t =
    y k), bit for bit; a row asked again is the same array."""
    y, log_k, _, _ = gate._tail_grid(servers)
    k = np.exp(log_k)[:, None]
    t = y[None, :] * k
    survival = gammaincc(k, t)
    whole = survival * np.clip(gammaincc(k + 1.0, t) - (t / k) * survival, 0.0, 1.0) ** (
        servers - 1
    )
    for row in (0, 1, 80, len(log_k) - 1):
        assert np.array_equal(gate._tail_row(servers, row), whole[row])
        assert gate._tail_row(servers, row) is gate._tail_row(servers, row)
    assert np.array_equal(gate._tail_table(servers)[2], whole)
    assert not np.array_equal(gate._tail_row(servers, 80), gate._tail_row(servers + 1, 80))
