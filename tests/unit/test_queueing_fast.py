"""Fast paths of the latency and TPOT percentiles (#15 Build 1) equal their reference paths
bit for bit: the reference here is the plain code (every CDF evaluated from scratch,
every t asked again), written out in this file, so a fast path that drifts by one
rounding fails."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import ndtr

from pdd_plan.model import tpot_rows
from pdd_plan.model.decode import tpot
from pdd_plan.model.queueing import latency_mixture as lm
from pdd_plan.model.queueing import queueing
from pdd_plan.model.queueing.latency_mixture import LatencyGroup, grouped_quantiles_s, mixture_cdf
from pdd_plan.model.queueing.queueing import WaitModel


def _wait(r: random.Random) -> WaitModel:
    kind = r.random()
    if kind < 0.2:
        return WaitModel.none()
    return WaitModel(r.uniform(0.01, 0.99), r.choice((r.uniform(0.5, 50.0), 7.0)))


def _groups(seed: int) -> list[LatencyGroup]:
    """1-3 groups of 1-40 classes, each with 0-2 waits (two equal rates included: the
    Erlang-2 limit of the two-wait survival)."""
    r = random.Random(seed)
    out = []
    for _ in range(r.randint(1, 3)):
        n = r.randint(1, 40)
        weights = np.array([r.choice((0.0, r.uniform(0.0, 2.0))) for _ in range(n)])
        weights[0] = r.uniform(0.1, 1.0)  # never all zero
        shared = [0.0] + [r.uniform(0.0, 3.0) for _ in range(4)]  # classes share delays
        delays = np.array([r.choice((*shared, r.uniform(0.0, 3.0))) for _ in range(n)])
        out.append(LatencyGroup(weights, delays, tuple(_wait(r) for _ in range(r.randint(0, 2)))))
    return out


def _reference_quantiles_s(quantiles, groups) -> list[float]:
    """grouped_quantiles_s as it was before the fast path: `mixture_cdf` at every ask."""
    groups = [g for g in groups if len(g.weights) and g.weights.sum() > 0]
    low = min(float(g.delays_s.min()) for g in groups)
    high = max(float(g.delays_s.max()) for g in groups) + 1.0
    out = []
    for q in quantiles:
        top = high
        while mixture_cdf(groups, top) < q and top < 1e9:
            top = 2 * top + 1.0
        if mixture_cdf(groups, top) < q:
            out.append(float("inf"))
        elif mixture_cdf(groups, low) >= q:
            out.append(low)
        else:
            gap = lambda t, q=q: mixture_cdf(groups, t) - q  # noqa: E731
            out.append(float(brentq(gap, low, top, xtol=1e-9, rtol=1e-12)))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_fast_mixture_cdf_is_mixture_cdf_bit_for_bit(seed):
    groups = _groups(seed)
    fast = lm._FastMixtureCdf(groups)
    r = random.Random(100 + seed)
    ts = [0.0, -1.0, 1e-12, 3.0, 1e9, float("inf")] + [r.uniform(-0.5, 5.0) for _ in range(40)]
    for t in ts:
        assert fast(t) == mixture_cdf(groups, t), t
        assert fast(t) == mixture_cdf(groups, t), t  # asked again: from the memo, the same


def test_infinite_delays_take_the_reference_path():
    groups = _groups(5)
    groups[0] = LatencyGroup(groups[0].weights, np.where(groups[0].delays_s > 1, np.inf, 0.5),
                             groups[0].waits)  # fmt: skip
    fast = lm._FastMixtureCdf(groups)
    for t in (0.0, 0.7, 2.0, 1e9):
        assert fast(t) == mixture_cdf(groups, t)


@pytest.mark.parametrize("seed", range(12))
def test_grouped_quantiles_equal_the_reference_search(seed):
    groups = _groups(seed)
    qs = [0.0, 0.05, 0.5, 0.9, 0.99, 0.999, 1.0]
    assert grouped_quantiles_s(qs, groups) == _reference_quantiles_s(qs, groups)


def test_the_memo_evaluates_each_t_once_and_belongs_to_its_groups(monkeypatch):
    groups = _groups(3)
    asked: list[float] = []
    compute = lm._FastMixtureCdf._cdf

    def counting(self, t_s):
        asked.append(t_s)
        return compute(self, t_s)

    monkeypatch.setattr(lm._FastMixtureCdf, "_cdf", counting)
    grouped_quantiles_s([0.5, 0.9, 0.99], groups)
    assert len(asked) == len(set(asked))  # every t computed once
    # other groups, the same t: computed afresh, never another mixture's value
    other = [LatencyGroup(g.weights, g.delays_s + 0.25, g.waits) for g in groups]
    first, second = lm._FastMixtureCdf(groups), lm._FastMixtureCdf(other)
    assert first(1.0) == mixture_cdf(groups, 1.0)
    assert second(1.0) == mixture_cdf(other, 1.0) != first(1.0)


# ---------------------------------------------------------------------------- TPOT


def _rows(seed: int, interruptions: bool) -> tpot.TpotRows:
    r = np.random.default_rng(seed)
    n = int(r.integers(1, 30))
    sd = r.uniform(0.0, 0.004, n) * (r.random(n) < 0.8)  # some rows without spread
    k = int(r.integers(1, 6)) if interruptions else 0
    return tpot.TpotRows(
        weights=r.uniform(0.01, 1.0, n),
        mean_s=r.uniform(0.01, 0.08, n),
        sd_s=sd,
        interrupts=r.uniform(0.0, 3.0, n) * interruptions,
        gaps=r.integers(1, 900, n).astype(float),
        step_s=r.uniform(0.01, 0.08, n),
        fixed_gap_s=r.uniform(0.0, 0.3, n) * (r.random(n) < 0.3),
        sizes_s=r.uniform(0.05, 0.6, k),
        size_weights=r.uniform(0.1, 1.0, k),
    )


def _reference_tpot_cdf(rows: tpot.TpotRows, t: float) -> float:
    """TPOT's CDF as the model defines it, its t-free parts recomputed at every t: no
    interruption (a normal about the mean), exactly one (its size from the sizes'
    distribution, spread over the gaps) or two and more (a normal with the compound sum's
    conditional moments given two or more)."""

    def normal(mean, sd):
        safe = np.where(sd > 0, sd, 1.0)
        return np.where(sd > 0, ndtr((t - mean) / safe), (t >= mean).astype(float))

    m, g = rows.interrupts, rows.gaps
    none, one = np.exp(-m), m * np.exp(-m)
    e1, e2 = rows._moments()
    more = np.maximum(1.0 - none - one, 0.0)
    safe = np.maximum(more, 1e-300)
    mean2 = (m * e1 - one * e1) / safe / g
    var2 = np.maximum((m * e2 + m * m * e1 * e1 - one * e2) / safe / g**2 - mean2**2, 0.0)
    cdf0 = normal(rows.mean_s, rows.sd_s)
    cdf2 = normal(rows.mean_s + mean2, np.sqrt(rows.sd_s**2 + var2))
    cdf1 = np.zeros(len(m))
    if len(rows.sizes_s):
        p = rows.size_weights / rows.size_weights.sum()
        room = ((t - rows.mean_s) * g)[:, None]
        cdf1 = (p[None, :] * (rows.sizes_s[None, :] <= room)).sum(axis=1)
    mass = none * cdf0 + one * cdf1 + more * cdf2
    return float(np.dot(rows.weights, mass) / rows.weights.sum())


def _reference_gap_cdf(rows: tpot.TpotRows, g: float) -> float:
    above = (g >= rows.step_s) & (g >= rows.fixed_gap_s)
    beyond = np.zeros(len(rows.step_s))
    if len(rows.sizes_s):
        order = np.argsort(rows.sizes_s)
        sizes = rows.sizes_s[order]
        cum = np.concatenate(([0.0], np.cumsum(rows.size_weights[order])))
        cum /= cum[-1]
        beyond = 1.0 - cum[np.searchsorted(sizes, g - rows.step_s, side="right")]
    mass = np.where(above, np.exp(-rows.interrupts * beyond), 0.0)
    return float(np.dot(rows.weights, mass) / rows.weights.sum())


def _reference_cdf_quantiles(cdf, qs, low_s, high_s):
    out = []
    for q in qs:
        top = max(high_s, 1e-6) * 2
        while cdf(top) < q and top < 1e6:
            top *= 2
        out.append(float(brentq(lambda x, q=q: cdf(x) - q, low_s, top, xtol=1e-7)))
    return out


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("interruptions", [False, True])
def test_tpot_and_gap_cdfs_equal_the_reference(seed, interruptions):
    rows = _rows(seed, interruptions)
    ts = np.random.default_rng(50 + seed).uniform(0.0, 1.0, 30).tolist() + [0.0, 0.04, 2.0]
    for t in ts:
        assert rows.tpot_cdf(t) == pytest.approx(_reference_tpot_cdf(rows, t), abs=1e-12)
        assert rows.gap_cdf(t) == _reference_gap_cdf(rows, t)


@pytest.mark.parametrize("seed", range(10))
def test_tpot_quantiles_equal_the_reference_search(seed):
    rows = _rows(seed, interruptions=seed % 2 == 0)
    qs = [0.5, 0.9, 0.99]
    low = float(min(rows.mean_s.min(), rows.step_s.min())) * 0.5
    high = float(max(rows.mean_s.max(), rows.step_s.max(), rows.fixed_gap_s.max()))
    for cdf, ref in ((rows.tpot_cdf, _reference_tpot_cdf), (rows.gap_cdf, _reference_gap_cdf)):
        expected = _reference_cdf_quantiles(lambda t, ref=ref: ref(rows, t), qs, low, high)
        assert rows.quantiles(cdf, qs) == pytest.approx(expected, rel=1e-6, abs=1e-7)


# ---------------------------------------------------------------------------- TPOT rows


def test_merged_rows_are_rounded_row_by_row_bit_for_bit():
    """Each column rounded once per distinct value equals every row rounded on its own,
    to the bit (a zero keeps its sign, as formatting row by row kept it)."""
    rng = np.random.default_rng(7)
    base = rng.random((30, 6)) * 10.0 ** rng.integers(-6, 3, (30, 6))
    base[rng.random(base.shape) < 0.15] = 0.0
    base[rng.random(base.shape) < 0.05] = -0.0
    values = base[rng.integers(0, 30, 500)]
    values = values + (rng.random(values.shape) < 0.1) * 1e-13 * values
    weights = rng.uniform(0.1, 1.0, 500)
    keys = np.array([[float(f"{v:.9g}") for v in row] for row in values])
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    want = np.bincount(inverse.ravel(), weights=weights, minlength=len(unique))
    got_w, got_rows = tpot_rows._merge_equal_rows(weights, values)
    assert got_rows.tobytes() == unique.tobytes()
    assert got_w.tobytes() == want.tobytes()


# ---------------------------------------------------------------------------- Erlang B


def _erlang_b_by_hand(servers: int, a: float) -> float:
    b = 1.0
    for c in range(1, servers + 1):
        b = a * b / (c + a * b)
    return b


def test_erlang_b_memo_misses_when_either_key_part_changes():
    queueing._erlang_b.cache_clear()
    assert queueing.erlang_b(40, 30.0) == _erlang_b_by_hand(40, 30.0)
    assert queueing.erlang_b(40, 30.0) == _erlang_b_by_hand(40, 30.0)  # a hit
    assert queueing._erlang_b.cache_info().hits == 1
    for servers, load in ((41, 30.0), (40, 30.000001), (40, np.float64(31.0))):
        assert queueing.erlang_b(servers, load) == _erlang_b_by_hand(servers, float(load))
    assert queueing._erlang_b.cache_info().misses == 4
    # by hand, B(1, a) = a / (1 + a) and B(2, 1) = (1/2) / (2 + 1/2) = 0.2
    assert queueing.erlang_b(1, 3.0) == 0.75 and queueing.erlang_b(2, 1.0) == 0.2


def test_erlang_b_stops_where_it_underflows_with_the_full_recursions_value():
    """The recursion ends once B is 0.0 (every later step keeps it): the same double as
    running every step, on pools where it underflows early, late, at the end, or never."""
    queueing._erlang_b.cache_clear()
    cases = ((8325, 700.0), (8325, 7000.0), (2000, 1.5), (800, 400.0), (300, 299.9),
             (50, 0.01), (5000, 4999.0), (3, 2.0), (1, 0.0))  # fmt: skip
    for servers, load in cases:
        assert queueing.erlang_b(servers, load) == _erlang_b_by_hand(servers, load)
    assert queueing.erlang_b(8325, 700.0) == 0.0  # the case the early stop serves


def test_erlang_b_checks_its_arguments_before_the_memo():
    queueing.erlang_b(3, 2.0)
    with pytest.raises(TypeError):
        queueing.erlang_b(3.0, 2.0)  # a float that happens to be whole: never the memo's int
    with pytest.raises(ValueError):
        queueing.erlang_b(3, -1.0)


# ---------------------------------------------------------------------------- batch spread


class _Engine:
    """A decode step convex in the batch, so the slope depends on where it is taken."""

    def decode_step_s(self, batch, context):
        b = np.asarray(batch, float)
        return 0.01 + 2e-5 * b + 3e-8 * b * b + 1e-9 * context


def _reference_sd_s(instance, batch, instances, context, window_s, holds_s, hold_weights):
    """batch_sd_s and time_average_factor as they were: one call per window set."""
    if batch <= 0 or instances < 1:
        return np.zeros(np.shape(window_s))
    low, high = max(batch - 1.0, 1.0), batch + 1.0
    steps = np.asarray(instance.decode_step_s(np.array([low, high]), context), float)
    slope = float(steps[1] - steps[0]) / (high - low)
    s = np.asarray(holds_s, float)[None, :]
    w = np.asarray(hold_weights, float)[None, :]
    t = np.maximum(np.asarray(window_s, float), 1e-12)[:, None]
    inner = np.where(s >= t, t * t * s / 2 - t**3 / 6, t * s * s / 2 - s**3 / 6)
    mean_hold = float((w * s).sum()) / float(w.sum())
    if mean_hold <= 0:
        return slope * np.sqrt(batch / instances * np.zeros(np.shape(window_s)))
    g = (2.0 / t[:, 0] ** 2) * (w * inner).sum(axis=1) / float(w.sum()) / mean_hold
    return slope * np.sqrt(batch / instances * g)


@pytest.mark.parametrize("seed", range(8))
def test_life_spread_equals_the_reference_for_every_window_set(seed):
    r = np.random.default_rng(seed)
    n = int(r.integers(1, 60))
    holds = r.choice(r.uniform(0.0, 40.0, 6), n) * (r.random(n) > 0.1 * (seed % 3 == 0))
    holds = holds * (seed != 7)  # seed 7: every hold 0, the factor's own zero
    weights = r.uniform(0.0, 1.0, n)
    batch = [0.0, 0.5, 1.0, 37.3, 400.0][seed % 5]
    instances = int(r.integers(0, 5)) if seed % 4 == 0 else int(r.integers(1, 9))
    spread = tpot.LifeSpread(_Engine(), batch, instances, 3000.0, holds, weights)
    for _ in range(3):  # several window sets from the one spread
        windows = r.choice(r.uniform(0.0, 60.0, 8), n)
        got = spread.sd_s(windows)
        want = _reference_sd_s(_Engine(), batch, instances, 3000.0, windows, holds, weights)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-15)
