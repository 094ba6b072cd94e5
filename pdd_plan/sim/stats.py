"""Percentiles of a simulated run with confidence intervals.

Requests in a queue are correlated, so a plain order-statistic interval is too narrow;
the interval here is the wider of two 95 % intervals:
- batch means: the run (in arrival order) cut into consecutive batches, the percentile of
  each, a Student-t interval on their mean (correlation between batches is small when each
  batch is long next to the queue's memory);
- order statistics: ranks n q -/+ 1.96 sqrt(n q (1 - q)) (distribution-free, independent
  samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

BATCHES = 20
# a batch's own P99 is more than its largest value only from 100 requests on, so the
# batch-means interval of a P99 needs 20 x 100 measured requests: fewer are refused
PER_BATCH_MIN = 100
MIN_MEASURED_REQUESTS = BATCHES * PER_BATCH_MIN
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float

    def to_json(self) -> dict:
        return {"value": self.value, "ci95_low": self.low, "ci95_high": self.high}


def _t_quantile_975(dof: int) -> float:
    # Student-t inverse CDF from the regularised incomplete beta function
    x = special.betaincinv(dof / 2, 0.5, 0.05)
    return math.sqrt(dof * (1 - x) / x)


def percentile(values: np.ndarray, q: float, batches: int = BATCHES) -> Estimate:
    """The q-quantile (0 < q < 1) of `values` (in arrival order) with its 95 % interval."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan)
    point = float(np.quantile(v, q))
    ordered = np.sort(v)
    spread = Z_95 * math.sqrt(n * q * (1 - q))
    low = float(ordered[max(int(math.floor(n * q - spread)), 0)])
    high = float(ordered[min(int(math.ceil(n * q + spread)), n - 1)])
    b = min(batches, n // 10)
    if b >= 2:
        per_batch = np.array([np.quantile(chunk, q) for chunk in np.array_split(v, b)])
        half = _t_quantile_975(b - 1) * per_batch.std(ddof=1) / math.sqrt(b)
        low, high = float(min(low, point - half)), float(max(high, point + half))
    return Estimate(point, low, high)


def mean(values: np.ndarray, batches: int = BATCHES) -> Estimate:
    """Mean with a batch-means 95 % interval."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return Estimate(math.nan, math.nan, math.nan)
    point = float(v.mean())
    b = min(batches, len(v) // 10)
    if b < 2:
        return Estimate(point, point, point)
    per_batch = np.array([chunk.mean() for chunk in np.array_split(v, b)])
    half = _t_quantile_975(b - 1) * per_batch.std(ddof=1) / math.sqrt(b)
    return Estimate(point, point - half, point + half)
