"""Percentiles of a latency that mixes request classes with different queueing delays.

Each group of classes shares a set of independent waits (e.g. the prefill queue, and for
requests that cross the WAN also the wait for a connection); each class adds its own
deterministic delay. F(t) = sum over groups and classes of w_k P(W_group <= t - d_k);
quantiles by bracketing root-finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.queueing import WaitModel, sum_cdf

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


def grouped_quantiles_s(quantiles: Sequence[float], groups: Sequence[LatencyGroup]) -> list[float]:
    from scipy.optimize import brentq  # on first use: 0.17 s of start-up otherwise

    groups = [g for g in groups if len(g.weights) and g.weights.sum() > 0]
    if not groups:
        return [0.0 for _ in quantiles]
    low = min(float(g.delays_s.min()) for g in groups)
    high = max(float(g.delays_s.max()) for g in groups) + 1.0
    out = []
    for q in quantiles:
        top = high
        while mixture_cdf(groups, top) < q and top < 1e9:
            top = 2 * top + 1.0
        if mixture_cdf(groups, top) < q:
            out.append(float("inf"))  # the tail never reaches q within 30 years
        elif mixture_cdf(groups, low) >= q:
            out.append(low)
        else:
            gap = lambda t, q=q: mixture_cdf(groups, t) - q  # noqa: E731
            out.append(float(brentq(gap, low, top, xtol=_QUANTILE_XTOL_S, rtol=_QUANTILE_RTOL)))
    return out
