"""Requests drawn from the scenario's workload: arrival times and per-request sizes.

The simulator samples the distributions themselves (not the closed form's discretised
classes), so class discretisation is one of the things the comparison checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from pdd_plan.model.scenario import Workload
from pdd_plan.model.workload import workload as wl


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
    if isinstance(d, wl.Mixture):
        w = np.asarray(d.weights, float)
        return _by_component(d.components, rng.choice(len(w), size=n, p=w / w.sum()), rng)
    raise TypeError(f"no sampler for distribution kind {getattr(d, 'kind', d)!r}")


def _by_component(components, which: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per entry of `which` from the component it names."""
    out = np.empty(len(which))
    for c in np.unique(which):
        mask = which == c
        out[mask] = sample(components[c], int(mask.sum()), rng)
    return out


def _joint_draws(hits: wl.Bins, workload: Workload, n: int, rng: np.random.Generator):
    """Joint hit-rate bins: first each request's bin, then its hit rate uniform in the bin
    and its lengths from that bin's own distributions."""
    which = rng.choice(len(hits.shares), size=n, p=np.asarray(hits.shares) / sum(hits.shares))
    lows, highs = np.asarray(hits.lows)[which], np.asarray(hits.highs)[which]
    hit = lows + (highs - lows) * rng.random(n)
    lengths = [
        sample(fallback, n, rng) if column is None else _by_component(column, which, rng)
        for column, fallback in (
            (hits.input_tokens, workload.input_tokens),
            (hits.output_tokens, workload.output_tokens),
        )
    ]
    return lengths[0], lengths[1], hit


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
    hit_dist = hit_rate or workload.prefix_hit_rate
    if isinstance(hit_dist, wl.Bins) and hit_dist.is_joint:
        inputs, outputs, hits = _joint_draws(hit_dist, workload, n, rng)
    else:  # independent: the same draws in the same order as ever
        inputs = sample(workload.input_tokens, n, rng)
        outputs = sample(workload.output_tokens, n, rng)
        hits = sample(hit_dist, n, rng)
    inputs = np.maximum(np.round(inputs), 1.0)
    outputs = np.maximum(np.round(outputs), 1.0)
    return Requests(np.cumsum(gaps), inputs, outputs, np.clip(hits, 0.0, 1.0))


def stepped_arrivals_s(unit_arrivals: np.ndarray, rate_steps) -> np.ndarray:
    """Arrival times of a process drawn at rate 1 (`unit_arrivals`), its clock run at the
    rate of each step ((from_s, req/s), the first from 0): time t is where the expected
    arrivals Lambda(t) = integral of the rate reach the unit time (a Poisson process
    stays Poisson, piecewise at each step's rate; a renewal one keeps its shape)."""
    starts = np.array([s for s, _ in rate_steps], float)
    rates = np.array([r for _, r in rate_steps], float)
    expected = np.concatenate(([0.0], np.cumsum(np.diff(starts) * rates[:-1])))
    step = np.searchsorted(expected, unit_arrivals, side="right") - 1
    return starts[step] + (unit_arrivals - expected[step]) / rates[step]
