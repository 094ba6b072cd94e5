"""Percentiles of a latency that mixes request classes with different queueing delays.

Each group of classes shares a set of independent waits (e.g. the prefill queue, and for
requests that cross the WAN also the wait for a connection); each class adds its own
deterministic delay. F(t) = sum over groups and classes of w_k P(W_group <= t - d_k);
quantiles by bracketing root-finding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.queueing.quantile_verdict import sign_verdict
from pdd_plan.model.queueing.queueing import WaitModel, sum_cdf, sum_survival_fn

# A nanosecond: far below any SLA, and tight enough that a percentile never appears to fall
# as the load rises merely because two root searches stopped at different points of a
# microsecond-wide bracket.
_QUANTILE_XTOL_S = 1e-9
_QUANTILE_RTOL = 1e-12


@dataclass(frozen=True)
class LatencyGroup:
    weights: np.ndarray
    delays_s: np.ndarray
    waits: tuple[WaitModel, ...] = ()


def mixture_cdf(groups: Sequence[LatencyGroup], t_s: float) -> float:
    total = sum(float(g.weights.sum()) for g in groups)
    mass = sum(float(np.dot(g.weights, sum_cdf(g.waits, t_s - g.delays_s))) for g in groups)
    return mass / total


class _FastMixtureCdf:
    """`mixture_cdf` of fixed groups at finite t, bit for bit: each group's survival built
    once, not per call, evaluated at its distinct delays only (classes that differ only in
    output length share one; about a tenth are distinct) and spread back to every class
    before the same dot product; each t evaluated once per quantile search (the bracket's
    ends are asked for by the doubling, the checks and brentq alike)."""

    def __init__(self, groups: Sequence[LatencyGroup]):
        self.groups = groups
        self.parts = [
            (g.weights, *np.unique(g.delays_s, return_inverse=True), sum_survival_fn(g.waits))
            for g in groups
        ]
        self.total = sum(float(g.weights.sum()) for g in groups)
        self.finite = all(np.isfinite(g.delays_s).all() for g in groups)
        self.seen: dict[float, float] = {}

    def __call__(self, t_s: float) -> float:
        got = self.seen.get(t_s)
        if got is None:
            got = self.seen[t_s] = self._cdf(t_s)
        return got

    def _cdf(self, t_s: float) -> float:
        if not (self.finite and math.isfinite(t_s)):  # NaN and infinities: the reference
            return mixture_cdf(self.groups, t_s)
        mass = 0  # summed as mixture_cdf sums: from int 0, group by group
        for weights, delays, at, survival in self.parts:
            x = t_s - delays
            inside = x >= 0  # every x is finite: P(W <= x) = 1 - P(W > x) there
            cdf = np.where(inside, 1.0 - survival(np.where(inside, x, 0.0)), 0.0)
            mass += float(np.dot(weights, cdf[at]))
        return mass / self.total


def grouped_quantiles_s(quantiles: Sequence[float], groups: Sequence[LatencyGroup]) -> list[float]:
    groups = _weighted(groups)
    if not groups:
        return [0.0 for _ in quantiles]
    cdf = _FastMixtureCdf(groups)
    return [_quantile_s(q, cdf, groups) for q in quantiles]


def grouped_quantile_at_most(q: float, limit_s: float, groups: Sequence[LatencyGroup]) -> bool:
    """`grouped_quantiles_s([q], groups)[0] <= limit_s`, the same verdict, mostly read from
    the CDF's sign beside the limit (model/queueing/quantile_verdict.py) without the root search."""
    groups = _weighted(groups)
    if not groups:
        return limit_s >= 0.0  # every percentile of no latency is 0
    cdf = _FastMixtureCdf(groups)
    if cdf.finite:  # (else the CDF is the reference's: searched in full)
        gap = lambda t: cdf(t) - q  # noqa: E731
        verdict = sign_verdict(gap, limit_s, _QUANTILE_XTOL_S, _QUANTILE_RTOL)
        if verdict is not None:
            return verdict
    return _quantile_s(q, cdf, groups) <= limit_s


def _weighted(groups: Sequence[LatencyGroup]) -> list[LatencyGroup]:
    return [g for g in groups if len(g.weights) and g.weights.sum() > 0]


def _quantile_s(q: float, cdf: _FastMixtureCdf, groups: list[LatencyGroup]) -> float:
    from scipy.optimize import brentq  # on first use: 0.17 s of start-up otherwise

    low = min(float(g.delays_s.min()) for g in groups)
    top = max(float(g.delays_s.max()) for g in groups) + 1.0
    while cdf(top) < q and top < 1e9:
        top = 2 * top + 1.0
    if cdf(top) < q:
        return float("inf")  # the tail never reaches q within 30 years
    if cdf(low) >= q:
        return low
    gap = lambda t: cdf(t) - q  # noqa: E731
    return float(brentq(gap, low, top, xtol=_QUANTILE_XTOL_S, rtol=_QUANTILE_RTOL))
