"""The SLA check's percentile verdicts from the CDF's sign (model/queueing/quantile_verdict.py,
issue #15 speed) equal comparing the root search's percentile with the limit: for TTFT
mixtures and TPOT tables drawn at random, at limits far from the percentile (where the
sign answers) and at the percentile itself and within the search's tolerance of it
(where only the search can answer, and must be asked)."""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.model.decode import tpot as tp
from pdd_plan.model.decode.tpot import TpotRows
from pdd_plan.model.queueing import latency_mixture as lm
from pdd_plan.model.queueing.quantile_verdict import sign_verdict
from pdd_plan.model.queueing.queueing import WaitModel

QS = (0.5, 0.9, 0.99)
# offsets from the percentile r, relative to 1 + r: inside the searches' tolerances (TTFT
# 1e-9 s, TPOT 1e-7 s), at them, and beyond
NEAR = (0.0, 1e-13, -1e-13, 1e-10, -1e-10, 1e-9, -1e-9, 3e-9, -3e-9, 1e-7, -1e-7, 3e-7,
        -3e-7, 1e-5, -1e-5, 1e-2, -1e-2, 0.5, -0.5)  # fmt: skip


def _groups(rng) -> list[lm.LatencyGroup]:
    out = []
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(1, 60))
        waits = tuple(
            WaitModel(float(rng.uniform(0.0, 1.0)), float(10 ** rng.uniform(-1, 3)))
            for _ in range(int(rng.integers(0, 3)))
        )
        delays = rng.uniform(0.0, 2.0, n).round(int(rng.integers(2, 9)))  # shared delays
        out.append(lm.LatencyGroup(rng.uniform(0.0, 1.0, n), delays, waits))
    return out


def _limits(r: float, rng) -> list[float]:
    return [r + d * (1 + abs(r)) for d in NEAR] + list(rng.uniform(0.0, 3.0, 5)) + [0.0, -1.0]


@pytest.mark.parametrize("seed", range(3))
def test_ttft_verdict_equals_the_searched_percentile(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    searched = []
    real = lm._quantile_s
    monkeypatch.setattr(lm, "_quantile_s", lambda *a: searched.append(1) or real(*a))
    asked = 0
    for _ in range(25):
        groups = _groups(rng)
        for q in QS:
            r = real(q, lm._FastMixtureCdf(lm._weighted(groups)), lm._weighted(groups))
            assert lm.grouped_quantiles_s([q], groups)[0] == r
            for limit in _limits(r, rng):
                asked += 1
                assert lm.grouped_quantile_at_most(q, limit, groups) == (r <= limit), (q, limit)
    searched_by_verdicts = len(searched) - 2 * 25 * len(QS)
    assert 0 < searched_by_verdicts < asked / 2  # the sign answered most, the search the rest


def _rows(rng) -> TpotRows:
    n = int(rng.integers(1, 80))
    mean = rng.uniform(0.005, 0.08, n).round(5)
    sd = rng.uniform(0.0, 0.01, n) * (rng.random(n) > 0.2)  # some rows a step at the mean
    sizes = rng.uniform(0.0, 0.5, int(rng.integers(0, 5)))
    return TpotRows(
        weights=rng.uniform(0.01, 1.0, n),
        mean_s=mean,
        sd_s=sd,
        interrupts=rng.uniform(0.0, 3.0, n) * (len(sizes) > 0),
        gaps=rng.integers(1, 2000, n).astype(float),
        step_s=mean * rng.uniform(0.8, 1.0, n),
        fixed_gap_s=rng.uniform(0.0, 0.3, n) * (rng.random(n) > 0.5),
        sizes_s=sizes,
        size_weights=rng.uniform(0.1, 1.0, len(sizes)),
    )


@pytest.mark.parametrize("seed", range(3))
def test_tpot_verdict_equals_the_searched_percentile(seed, monkeypatch):
    rng = np.random.default_rng(10 + seed)
    searched = []
    real = tp._quantile_s
    monkeypatch.setattr(tp, "_quantile_s", lambda *a: searched.append(1) or real(*a))
    asked = 0
    for _ in range(12):
        rows = _rows(rng)
        for cdf in (rows.tpot_cdf, rows.gap_cdf):
            for q in QS:
                r = rows.quantiles(cdf, [q])[0]
                for limit in _limits(r, rng):
                    asked += 1
                    assert rows.quantile_at_most(cdf, q, limit) == (r <= limit), (q, limit)
    searched_by_verdicts = len(searched) - 2 * 12 * len(QS)
    assert 0 < searched_by_verdicts < asked / 2


def test_a_bracket_brentq_refuses_is_refused_alike():
    """Where the bracket's ends do not straddle q the search raises (or returns an end);
    the verdict does what it does, never answering from the sign."""
    rows = TpotRows(*(np.array([x]) for x in (1.0, 0.01, 0.0, 0.0, 10.0, 0.01, 0.0)),
                    np.zeros(0), np.zeros(0))  # fmt: skip
    wide = lambda t: 1.0  # noqa: E731  (a CDF already at 1 below the bracket's low end)
    with pytest.raises(ValueError):
        rows.quantiles(wide, [0.5])
    with pytest.raises(ValueError):
        rows.quantile_at_most(wide, 0.5, 1.0)


def test_sign_verdict_reads_only_a_clear_sign():
    calls = []

    def gap(t: float) -> float:  # a CDF crossing q at 1.0 s, slope 1 / s
        calls.append(t)
        return t - 1.0

    assert sign_verdict(gap, 2.0, 1e-9, 1e-12) is True and len(calls) == 1
    assert sign_verdict(gap, 0.5, 1e-9, 1e-12) is False and len(calls) == 3
    assert sign_verdict(gap, 1.0, 1e-9, 1e-12) is None  # the search's tolerance decides
    assert sign_verdict(gap, 1.0 + 1e-9, 1e-9, 1e-12) is None
    assert sign_verdict(gap, 1.0 + 1e-8, 1e-9, 1e-12) is True  # beyond 2 x (xtol + rtol)
    assert sign_verdict(gap, float("inf"), 1e-9, 1e-12) is None
    assert sign_verdict(gap, 1e9, 1e-9, 1e-12) is None  # beyond the searches' brackets
