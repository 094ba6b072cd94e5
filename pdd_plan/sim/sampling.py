"""Requests drawn from the scenario's workload: arrival times and per-request sizes.

The simulator samples the distributions themselves (not the closed form's discretised
classes), so class discretisation is one of the things the comparison checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from pdd_plan.model import workload as wl
from pdd_plan.model.scenario import Workload


@dataclass(frozen=True)
class Requests(wl.PromptTokens):
    """N requests in arrival order; token counts are whole numbers (as floats)."""

    arrival_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    hit_rate: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


def sample(d: wl.Distribution, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws from a workload distribution."""
    if isinstance(d, wl.Fixed):
        return np.full(n, float(d.value))
    if isinstance(d, wl.Bins):
        which = rng.choice(len(d.shares), size=n, p=np.asarray(d.shares) / sum(d.shares))
        lows, highs = np.asarray(d.lows)[which], np.asarray(d.highs)[which]
        return lows + (highs - lows) * rng.random(n)
    if isinstance(d, wl.Empirical):
        w = np.asarray(d.weights, float)
        return np.asarray(d.values, float)[rng.choice(len(w), size=n, p=w / w.sum())]
    if isinstance(d, wl.TruncatedLognormal):
        z = (np.log([d.low, d.high]) - np.log(d.median)) / d.sigma
        u = special.ndtr(z[0]) + (special.ndtr(z[1]) - special.ndtr(z[0])) * rng.random(n)
        return np.clip(d.median * np.exp(d.sigma * special.ndtri(u)), d.low, d.high)
    if isinstance(d, wl.BetaRange):
        return d.low + (d.high - d.low) * rng.beta(d.alpha, d.beta, size=n)
    raise TypeError(f"no sampler for distribution kind {getattr(d, 'kind', d)!r}")


def inter_arrivals_s(rate_per_s: float, cv2: float, n: int, rng: np.random.Generator):
    """Renewal inter-arrival times with mean 1/rate and squared CV `cv2`: exponential at
    cv2 = 1 (Poisson), gamma(shape 1/cv2) otherwise, constant at cv2 = 0."""
    mean = 1.0 / rate_per_s
    if cv2 == 0:
        return np.full(n, mean)
    if cv2 == 1:
        return rng.exponential(mean, n)
    return rng.gamma(1.0 / cv2, mean * cv2, n)


def draw_requests(
    workload: Workload, rate_per_s: float, n: int, rng: np.random.Generator, hit_rate=None
) -> Requests:
    """`n` requests at `rate_per_s`; token counts rounded as the closed form rounds them."""
    gaps = inter_arrivals_s(rate_per_s, workload.burstiness_cv2, n, rng)
    inputs = np.maximum(np.round(sample(workload.input_tokens, n, rng)), 1.0)
    outputs = np.maximum(np.round(sample(workload.output_tokens, n, rng)), 1.0)
    hits = np.clip(sample(hit_rate or workload.prefix_hit_rate, n, rng), 0.0, 1.0)
    return Requests(np.cumsum(gaps), inputs, outputs, hits)
