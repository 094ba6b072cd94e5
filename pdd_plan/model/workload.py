"""Workload distributions: input length, output length and prefix-hit rate.

Each distribution answers `mean()` and `discretise(n)` -> (values, weights), the
representative points later turned into weighted request classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Fixed:
    value: float
    kind: str = "fixed"

    def mean(self) -> float:
        return self.value

    def discretise(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return np.array([self.value], dtype=float), np.array([1.0])


@dataclass(frozen=True)
class Bins:
    """Shares of requests in [low, high) intervals, uniform inside each interval."""

    lows: tuple[float, ...]
    highs: tuple[float, ...]
    shares: tuple[float, ...]
    kind: str = "bins"

    def mean(self) -> float:
        mids = (np.array(self.lows) + np.array(self.highs)) / 2
        return float(np.dot(mids, self.shares))

    def discretise(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        # split n points over the bins in proportion to width-weighted share, at least one each
        per_bin = max(1, n // max(len(self.shares), 1))
        values, weights = [], []
        for low, high, share in zip(self.lows, self.highs, self.shares, strict=True):
            edges = np.linspace(low, high, per_bin + 1)
            values.extend((edges[:-1] + edges[1:]) / 2)
            weights.extend([share / per_bin] * per_bin)
        return np.array(values), np.array(weights)


@dataclass(frozen=True)
class _ScipyContinuous:
    """Shared discretisation of a continuous distribution truncated to [low, high]."""

    low: float
    high: float

    def _frozen(self):
        raise NotImplementedError

    def _truncated_cdf(self, x):
        dist = self._frozen()
        lo, hi = dist.cdf(self.low), dist.cdf(self.high)
        return (dist.cdf(x) - lo) / (hi - lo)

    def discretise(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        # equal-probability strata, each represented by its conditional median
        dist = self._frozen()
        lo, hi = dist.cdf(self.low), dist.cdf(self.high)
        q = lo + (hi - lo) * (np.arange(n) + 0.5) / n
        values = np.clip(dist.ppf(q), self.low, self.high)
        return values, np.full(n, 1.0 / n)

    def mean(self) -> float:
        values, weights = self.discretise(4096)
        return float(np.dot(values, weights))


@dataclass(frozen=True)
class TruncatedLognormal(_ScipyContinuous):
    median: float = 1.0
    sigma: float = 1.0
    kind: str = "lognormal"

    def _frozen(self):
        return stats.lognorm(s=self.sigma, scale=self.median)


@dataclass(frozen=True)
class BetaRange(_ScipyContinuous):
    """Beta(alpha, beta) stretched onto [low, high]."""

    alpha: float = 1.0
    beta: float = 1.0
    kind: str = "beta"

    def _frozen(self):
        return stats.beta(self.alpha, self.beta, loc=self.low, scale=self.high - self.low)


@dataclass(frozen=True)
class Empirical:
    values: tuple[float, ...]
    weights: tuple[float, ...]
    kind: str = "empirical"

    def mean(self) -> float:
        return float(np.dot(self.values, self.weights))

    def discretise(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        values, weights = np.array(self.values, float), np.array(self.weights, float)
        if len(values) <= n:
            return values, weights
        # merge into n equal-weight quantile strata
        order = np.argsort(values)
        values, weights = values[order], weights[order]
        stratum = np.minimum((np.cumsum(weights) - weights / 2) * n, n - 1).astype(int)
        w = np.bincount(stratum, weights, minlength=n)
        v = np.bincount(stratum, weights * values, minlength=n)
        keep = w > 0
        return v[keep] / w[keep], w[keep]


Distribution = Fixed | Bins | TruncatedLognormal | BetaRange | Empirical
