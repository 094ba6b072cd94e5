"""Statistics of a trace: arrival rate, burstiness, distributions as scenario bins."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# quantile probabilities of the bin edges: deciles, then a finer tail, where the mean of a
# heavy-tailed length distribution lives
EDGE_QUANTILES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
POINT_MASS_SHARE = 0.02  # a single value holding this share of requests gets its own bin
EMPIRICAL_STRATA = 32
TRIM_FRAC = 0.001  # the share of longest gaps left out of `cv2_trimmed`


@dataclass(frozen=True)
class Arrivals:
    requests: int
    span_s: float
    rate_per_s: float  # 1 / mean inter-arrival time = (requests - 1) / span
    cv2: float  # squared coefficient of variation of inter-arrival times (1 = Poisson)
    cv2_trimmed: float  # the same without the longest 0.1 % of gaps (idle periods)


def arrivals(arrival_s: np.ndarray) -> Arrivals:
    """Rate and burstiness of the arrival times (sorted here; ties are zero gaps)."""
    times = np.sort(np.asarray(arrival_s, float))
    if len(times) < 2 or times[-1] <= times[0]:
        raise ValueError("at least two distinct arrival times are needed")
    gaps_s = np.diff(times)
    mean_gap_s = float(gaps_s.mean())  # > 0: the times are not all equal
    return Arrivals(
        requests=len(times),
        span_s=float(times[-1] - times[0]),
        rate_per_s=1.0 / mean_gap_s,
        cv2=_cv2(gaps_s),
        cv2_trimmed=_cv2(np.sort(gaps_s)[: max(1, int(np.ceil(len(gaps_s) * (1 - TRIM_FRAC))))]),
    )


def _cv2(gaps_s: np.ndarray) -> float:
    mean_s = float(gaps_s.mean())
    # the gaps over their mean first: mean² underflows to 0 for gaps of 1e-200 s (NaN)
    return float((gaps_s / mean_s).var()) if mean_s > 0 else 0.0


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    share: float


def _strata(values: np.ndarray) -> list[Bin]:
    """Bins [edge_i, edge_i+1) between quantile edges, the last one closed; share = count."""
    edges = np.unique(np.quantile(values, EDGE_QUANTILES, method="inverted_cdf"))
    if len(edges) == 1:
        return [Bin(float(edges[0]), float(edges[0]), float(len(values)))]
    counts = np.histogram(values, bins=edges)[0]  # numpy closes the last bin too
    return [
        Bin(float(lo), float(hi), float(c))
        for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)
        if c > 0
    ]


def quantile_bins(values: np.ndarray, min_point_count: int = 1) -> list[Bin]:
    """A `bins` distribution of `values`: point masses for frequent single values (e.g. a
    hit rate of exactly 0), quantile-edged bins for the rest; shares sum to 1. A point mass
    needs POINT_MASS_SHARE of the values and `min_point_count` of them."""
    return [b for b, _ in quantile_bins_with_members(values, min_point_count)]


def quantile_bins_with_members(
    values: np.ndarray, min_point_count: int = 1
) -> list[tuple[Bin, np.ndarray]]:
    """`quantile_bins` with, for each bin, the mask of the values it holds (a point mass
    holds its value; a stratum [low, high) the other values in it, the last one closed)."""
    values = np.asarray(values, float)
    unique, counts = np.unique(values, return_counts=True)
    heavy = unique[(counts >= POINT_MASS_SHARE * len(values)) & (counts >= min_point_count)]
    is_heavy = np.isin(values, heavy)
    bins = [
        (Bin(float(v), float(v), float(c)), values == v)
        for v, c in zip(unique, counts, strict=True)
        if v in heavy
    ]
    rest = values[~is_heavy]
    if len(rest):
        strata = _strata(rest)
        for i, b in enumerate(strata):
            upper = values <= b.high if i == len(strata) - 1 else values < b.high
            bins.append((b, ~is_heavy & (values >= b.low) & upper))
    bins.sort(key=lambda bm: (bm[0].low, bm[0].high))
    return [(Bin(b.low, b.high, b.share / len(values)), m) for b, m in bins]


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    values = np.asarray(values, float)
    order = np.argsort(values, kind="stable")
    unique, first, counts = np.unique(values[order], return_index=True, return_counts=True)
    mean_rank = first + (counts + 1) / 2  # ranks first+1 .. first+count
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(mean_rank, counts)
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rank correlation (the Pearson correlation of average ranks); None when
    either variable is constant (no ranking to correlate)."""
    rx, ry = average_ranks(x), average_ranks(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    norm = float(np.sqrt(np.dot(dx, dx) * np.dot(dy, dy)))
    return float(np.dot(dx, dy) / norm) if norm > 0 else None


# hit-rate bands of the correlation table: misses, partial hits, and the high-hit end
# where PDD's relay decision and the bathtub's low-cost side lie
HIT_BANDS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)


def input_by_hit_band(hit_frac: np.ndarray, input_tokens: np.ndarray) -> list[dict]:
    """Share of requests and mean input length per hit-rate band [low, high), the last
    closed; empty bands left out."""
    rows = []
    for i, (low, high) in enumerate(zip(HIT_BANDS[:-1], HIT_BANDS[1:], strict=True)):
        upper = hit_frac <= high if i == len(HIT_BANDS) - 2 else hit_frac < high
        mask = (hit_frac >= low) & upper
        if mask.any():
            rows.append(
                {
                    "hit_low": low,
                    "hit_high": high,
                    "share": float(mask.mean()),
                    "mean_input_tokens": float(input_tokens[mask].mean()),
                }
            )
    return rows


def bins_mean(bins: list[Bin]) -> float:
    """The mean a scenario's `bins` gives (uniform inside each bin)."""
    return float(sum((b.low + b.high) / 2 * b.share for b in bins))


def empirical_strata(values: np.ndarray, strata: int = EMPIRICAL_STRATA) -> tuple[list, list]:
    """Equal-count strata of the sorted values, each its mean: the mean is kept exactly."""
    ordered = np.sort(np.asarray(values, float))
    groups = [g for g in np.array_split(ordered, min(strata, len(ordered))) if len(g)]
    return [float(g.mean()) for g in groups], [len(g) / len(ordered) for g in groups]


def summary(values: np.ndarray) -> dict:
    v = np.asarray(values, float)
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return {
        "mean": float(v.mean()),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "max": float(v.max()),
    }
