"""Workload distributions: input length, output length and prefix-hit rate.

Each distribution answers `mean()` and `discretise(n)` -> (values, weights), the
representative points later turned into weighted request classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Fixed:
    value: float
    kind: str = "fixed"

    def mean(self) -> float:
        return self.value

    def discretise(self, n: int, tail: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        return np.array([self.value], dtype=float), np.array([1.0])


@dataclass(frozen=True)
class Bins:
    """Shares of requests in [low, high) intervals, uniform inside each interval.

    A hit-rate `bins` may be joint with the lengths: `input_tokens` / `output_tokens`
    hold one length distribution per bin (the loader fills a bin without its own with
    the workload's), None when the lengths are independent of the hit rate.
    """

    lows: tuple[float, ...]
    highs: tuple[float, ...]
    shares: tuple[float, ...]
    kind: str = "bins"
    input_tokens: tuple | None = None
    output_tokens: tuple | None = None

    @property
    def is_joint(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None

    def mean(self) -> float:
        mids = (np.array(self.lows) + np.array(self.highs)) / 2
        return float(np.dot(mids, self.shares))

    def discretise(self, n: int, tail: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        if len(self.shares) > max(n, MAX_EXACT_BINS):  # too many to keep: n strata
            mids = (np.array(self.lows) + np.array(self.highs)) / 2
            return merge_strata(mids, np.array(self.shares, float), n, tail)
        # the same number of points in every bin, each carrying an equal part of its share
        per_bin = max(1, n // max(len(self.shares), 1))
        values, weights = [], []
        for low, high, share in zip(self.lows, self.highs, self.shares, strict=True):
            edges = np.linspace(low, high, per_bin + 1)
            values.extend((edges[:-1] + edges[1:]) / 2)
            weights.extend([share / per_bin] * per_bin)
        return np.array(values), np.array(weights)


_SUBPOINTS = 64  # quantile evaluations per stratum when averaging it


@dataclass(frozen=True)
class _TruncatedContinuous:
    """A continuous distribution truncated to [low, high], discretised by its quantiles.

    Subclasses give `_cdf` and `_ppf` of the untruncated distribution (from
    scipy.special, which loads in milliseconds where scipy.stats takes a second).
    """

    low: float
    high: float

    def _cdf(self, x):
        raise NotImplementedError

    def _ppf(self, q):
        raise NotImplementedError

    def discretise(self, n: int, tail: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        # probability strata (`strata_edges`: equal, or finer towards `tail`), each
        # represented by its conditional mean (the average of the quantile function over
        # the stratum), so the discretised mean is exact
        lo, hi = self._cdf(self.low), self._cdf(self.high)
        edges = strata_edges(n, tail)
        sub = (np.arange(_SUBPOINTS) + 0.5) / _SUBPOINTS
        p = edges[:-1, None] + np.diff(edges)[:, None] * sub[None, :]
        values = np.clip(self._ppf(lo + (hi - lo) * p), self.low, self.high).mean(axis=1)
        return values, np.diff(edges)

    def mean(self) -> float:
        return _stratified_mean(self)


@lru_cache(maxsize=512)
def _stratified_mean(dist: _TruncatedContinuous) -> float:
    """The mean of 256 equal-probability strata (a frozen distribution is its own key: the
    routing and cache models ask it for every plan, ~100 times a solve, at 0.4 ms each)."""
    values, weights = dist.discretise(256)
    return float(np.dot(values, weights))


@dataclass(frozen=True)
class TruncatedLognormal(_TruncatedContinuous):
    median: float = 1.0
    sigma: float = 1.0
    kind: str = "lognormal"

    def _cdf(self, x):
        from scipy import special  # on first use: 0.2 s of start-up otherwise

        return special.ndtr((np.log(np.maximum(x, 1e-300)) - np.log(self.median)) / self.sigma)

    def _ppf(self, q):
        from scipy import special  # on first use: 0.2 s of start-up otherwise

        return self.median * np.exp(self.sigma * special.ndtri(q))


@dataclass(frozen=True)
class BetaRange(_TruncatedContinuous):
    """Beta(alpha, beta) stretched onto [low, high]."""

    alpha: float = 1.0
    beta: float = 1.0
    kind: str = "beta"

    def _cdf(self, x):
        from scipy import special  # on first use: 0.2 s of start-up otherwise

        unit = np.clip((np.asarray(x, float) - self.low) / (self.high - self.low), 0.0, 1.0)
        return special.betainc(self.alpha, self.beta, unit)

    def _ppf(self, q):
        from scipy import special  # on first use: 0.2 s of start-up otherwise

        return self.low + (self.high - self.low) * special.betaincinv(self.alpha, self.beta, q)


@dataclass(frozen=True)
class Empirical:
    values: tuple[float, ...]
    weights: tuple[float, ...]
    kind: str = "empirical"

    def mean(self) -> float:
        return float(np.dot(self.values, self.weights))

    def discretise(self, n: int, tail: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        values, weights = np.array(self.values, float), np.array(self.weights, float)
        if len(values) <= n:
            return values, weights
        return merge_strata(values, weights, n, tail)


@dataclass(frozen=True)
class Mixture:
    """Components with weights summing to 1: a length's marginal over joint hit-rate bins
    (its mean is the mixture's, which is what every `.mean()` of the workload reads)."""

    components: tuple
    weights: tuple[float, ...]
    kind: str = "mixture"

    def mean(self) -> float:
        return float(sum(w * c.mean() for c, w in zip(self.components, self.weights, strict=True)))

    @property
    def high(self) -> float:
        """The largest value any component can draw (its upper edge)."""
        return max(_upper_edge(c) for c in self.components)

    def discretise(self, n: int, tail: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        # every component at n points, pooled by weight, merged back to n strata (mean kept)
        parts = [
            (c.discretise(n, tail), w) for c, w in zip(self.components, self.weights, strict=True)
        ]
        values = np.concatenate([v for (v, _), _ in parts])
        weights = np.concatenate([pw * w for (_, pw), w in parts])
        return merge_strata(values, weights / weights.sum(), n, tail)


def _upper_edge(d) -> float:
    for name in ("value", "high"):
        if hasattr(d, name):
            return float(getattr(d, name))
    return float(max(getattr(d, "highs", None) or d.values))


# Finer strata towards a tail (`strata_edges`): a latency percentile at 0.9-0.99 is set
# by the longest prompts and outputs and the lowest hit rates, which equal strata of
# 1/8 lump into one point (TTFT P90 = P99 on a lognormal prompt with no other spread).
TAIL_MASS_FRAC = 0.25  # the probability the tail strata cover
LAST_STRATUM_FRAC = 0.002  # the outermost stratum at most: its mean near the 0.999 quantile
TAIL_RATIO = 0.2  # each tail stratum's distance to the end over the previous one, at most


def strata_edges(n: int, tail: str | None = None) -> np.ndarray:
    """n + 1 probability edges from 0 to 1: n equal strata, or with `tail` "upper" or
    "lower" half of them (n // 2, from 4 points) spanning TAIL_MASS_FRAC at that end, their
    distances to the end falling geometrically (by TAIL_RATIO, or slower where there are
    enough points to reach LAST_STRATUM_FRAC), the rest equal over the bulk. With 8
    points: 0.75, 0.95, 0.99, 0.998."""
    if tail is None or n < 4:
        return np.linspace(0.0, 1.0, n + 1)
    n_tail = n // 2
    ratio = max(TAIL_RATIO, (LAST_STRATUM_FRAC / TAIL_MASS_FRAC) ** (1.0 / (n_tail - 1)))
    outer = TAIL_MASS_FRAC * ratio ** np.arange(n_tail)  # distance from the end, falling
    bulk = np.linspace(0.0, 1.0 - TAIL_MASS_FRAC, n - n_tail + 1)
    upper = np.concatenate([bulk, 1.0 - outer[1:], [1.0]])
    if tail == "upper":
        return upper
    if tail == "lower":
        return (1.0 - upper)[::-1]
    raise ValueError(f"tail must be 'upper', 'lower' or None, got {tail!r}")


def merge_strata(
    values: np.ndarray, weights: np.ndarray, n: int, tail: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Points with weights summing to 1 merged into n quantile strata (`strata_edges`),
    each its weighted mean (so the mean is kept exactly); a point is not split across
    strata."""
    order = np.argsort(values)
    values, weights = values[order], weights[order]
    mid = np.cumsum(weights) - weights / 2
    edges = strata_edges(n, tail)
    stratum = np.clip(np.searchsorted(edges, mid, side="right") - 1, 0, n - 1)
    w = np.bincount(stratum, weights, minlength=n)
    v = np.bincount(stratum, weights * values, minlength=n)
    keep = w > 0
    return v[keep] / w[keep], w[keep]


# A `bins` distribution keeps one point per bin (or more) up to this many bins, or the
# points asked for if more; a longer one (a histogram of 10,000 bins would make 800,000
# request classes and a solve of minutes) is merged into the points asked for.
MAX_EXACT_BINS = 32


def coarsening_notes(workload, resolution: tuple[int, int, int]) -> list[str]:
    """What `discretise` merges, said for the output: the bins distributions of a
    scenario's `workload` (input, output, hit rate and its alternatives) too long to keep
    at `resolution` (input, output, hit-rate points)."""
    n_in, n_out, n_hit = resolution
    named = [
        ("workload.input_tokens", workload.input_tokens, n_in),
        ("workload.output_tokens", workload.output_tokens, n_out),
        ("workload.prefix_hit_rate", workload.prefix_hit_rate, n_hit),
    ] + [
        (f"workload.prefix_hit_rate_alternatives.{name}", dist, n_hit)
        for name, dist in workload.hit_rate_alternatives.items()
    ]
    return [
        f"{key}: {len(dist.shares):,} bins merged into {n} equal-probability request classes "
        "for the optimiser and the closed-form model (the mean is kept exactly)"
        for key, dist, n in named
        if isinstance(dist, Bins) and len(dist.shares) > max(n, MAX_EXACT_BINS)
    ]


Distribution = Fixed | Bins | TruncatedLognormal | BetaRange | Empirical | Mixture


class PromptTokens:
    """Cached and computed prompt tokens from `input_tokens` and `hit_rate` arrays."""

    input_tokens: np.ndarray
    hit_rate: np.ndarray

    @property
    def cached_tokens(self) -> np.ndarray:
        return np.floor(self.hit_rate * self.input_tokens)

    @property
    def uncached_tokens(self) -> np.ndarray:
        # at least one token is always computed: the last prompt token yields the logits
        return np.maximum(self.input_tokens - self.cached_tokens, 1.0)


@dataclass(frozen=True)
class RequestClasses(PromptTokens):
    """The workload as weighted classes of (input length, output length, prefix-hit rate).

    The three are independent unless the hit-rate bins are joint with the lengths (then
    each bin's classes carry its own lengths); every array has one entry per class.
    """

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    hit_rate: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.weight)

    def mean(self, values: np.ndarray) -> float:
        return float(np.dot(self.weight, values))

    def select(self, mask: np.ndarray) -> RequestClasses:
        """The classes where `mask` holds, weights kept (not renormalised)."""
        return RequestClasses(
            self.input_tokens[mask],
            self.output_tokens[mask],
            self.hit_rate[mask],
            self.weight[mask],
        )


DEFAULT_RESOLUTION = (16, 10, 24)  # input, output, hit-rate points: 1,920 classes


# the tails the latencies live in: long prompts and outputs, low prefix hits
LENGTH_TAIL, HIT_TAIL = "upper", "lower"


def request_classes(
    input_tokens: Distribution,
    output_tokens: Distribution,
    hit_rate: Distribution,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
) -> RequestClasses:
    """Discretise the three marginals and form their product (zero weights dropped); a
    joint hit-rate `bins` forms it bin by bin with that bin's lengths instead."""
    if isinstance(hit_rate, Bins) and hit_rate.is_joint:
        return _joint_classes(hit_rate, input_tokens, output_tokens, resolution)
    return _product_classes(
        input_tokens.discretise(resolution[0], LENGTH_TAIL),
        output_tokens.discretise(resolution[1], LENGTH_TAIL),
        hit_rate.discretise(resolution[2], HIT_TAIL),
    )


def _product_classes(inputs, outputs, hits) -> RequestClasses:
    """The product of three (values, weights) discretisations, weights renormalised."""
    (iv, iw), (ov, ow), (hv, hw) = inputs, outputs, hits
    grid_i, grid_o, grid_h = np.meshgrid(np.round(iv), np.round(ov), hv, indexing="ij")
    weight = np.einsum("i,j,k->ijk", iw, ow, hw)
    keep = weight.ravel() > 0
    total = weight.sum()
    return RequestClasses(
        np.maximum(grid_i.ravel()[keep], 1.0),
        np.maximum(grid_o.ravel()[keep], 1.0),
        np.clip(grid_h.ravel()[keep], 0.0, 1.0),
        weight.ravel()[keep] / total,
    )


def _joint_classes(hits: Bins, inputs, outputs, resolution) -> RequestClasses:
    """Per hit-rate bin, the product of its hit points (those `Bins.discretise` gives it:
    the same hit resolution as independent bins) with that bin's own lengths at the
    input/output resolution; each bin's classes carry exactly its share."""
    n_in, n_out, n_hit = resolution
    per_bin = max(1, n_hit // len(hits.shares))
    parts = []
    for b, (low, high, share) in enumerate(zip(hits.lows, hits.highs, hits.shares, strict=True)):
        if share <= 0:
            continue
        edges = np.linspace(low, high, per_bin + 1)
        hit_points = ((edges[:-1] + edges[1:]) / 2, np.full(per_bin, 1.0 / per_bin))
        b_in = inputs if hits.input_tokens is None else hits.input_tokens[b]
        b_out = outputs if hits.output_tokens is None else hits.output_tokens[b]
        c = _product_classes(
            b_in.discretise(n_in, LENGTH_TAIL), b_out.discretise(n_out, LENGTH_TAIL), hit_points
        )
        parts.append((c, share))
    total = sum(share for _, share in parts)
    return RequestClasses(
        *(np.concatenate([getattr(c, k) for c, _ in parts]) for k in _COLUMNS),
        np.concatenate([c.weight * share / total for c, share in parts]),
    )


_COLUMNS = ("input_tokens", "output_tokens", "hit_rate")
