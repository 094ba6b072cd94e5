"""The distribution of TPOT and of each request's largest inter-token gap.

A request's TPOT is the mean of the steps it shares over its life, plus what interrupts
them, over its output tokens - 1:
- the batch of its instance varies: with least-loaded dispatch an instance holds about
  N/n of the role's N requests, N ~ Poisson (M/G/inf, capped), so Var(B) = mean batch / n;
  a request sees the time average over its life T, whose variance is Var(B) g(T) with
  g(T) = (2/T^2) int_0^T (T - u) r(u) du and r(u) the autocorrelation of M/G/inf,
  int_u^inf P(S > s) ds / E[S]. The step's slope in the batch turns it into seconds.
- interruptions arrive at a rate per instance: co-batched extend-decode steps on MD (each
  costs extend - step more, for everyone in that step), and on colocated instances the
  prefills that pause decoding (each its prefill time). M ~ Poisson(rate x T) of them,
  sizes from their mix: a compound Poisson sum, taken as an atom at 0 (no interruption)
  plus a normal with the conditional mean and variance.
- the one-shot handoff: RLD's tokens, the handoff gap, then MD's (`evaluate`).
The largest gap: the largest of the request's step, its one-shot handoff gap and step +
the largest of its M interruptions, P(G <= g) = exp(-m (1 - F(g - step))) above the rest.
Percentiles by root-finding over the mixture of request classes, like TTFT's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from pdd_plan.model.queueing.quantile_verdict import BRENTQ_DEFAULT_RTOL, sign_verdict

_XTOL_S = 1e-7  # the TPOT and gap percentiles' root search: a tenth of a microsecond


@dataclass(frozen=True)
class TpotRows:
    """Per row (a request class on one path): its weight and TPOT parts, in seconds."""

    weights: np.ndarray
    mean_s: np.ndarray  # TPOT without interruptions
    sd_s: np.ndarray  # spread of the batch a request shares, over its life
    interrupts: np.ndarray  # expected interruptions during its life
    gaps: np.ndarray  # output tokens - 1
    step_s: np.ndarray  # its ordinary step (the largest of its paths')
    fixed_gap_s: np.ndarray  # one-shot handoff gap (0 elsewhere)
    sizes_s: np.ndarray  # interruption sizes (shared by every row) ...
    size_weights: np.ndarray  # ... and their probabilities
    size_second_factor: float = 1.0  # the sizes' second moment, times this (busy periods)

    def _moments(self) -> tuple[float, float]:
        if not len(self.sizes_s):
            return 0.0, 0.0
        p = self.size_weights / self.size_weights.sum()
        second = float(np.dot(p, self.sizes_s**2)) * self.size_second_factor
        return float(np.dot(p, self.sizes_s)), second

    @cached_property
    def _tpot_parts(self) -> tuple:
        """What `tpot_cdf` needs that does not depend on t (the root search asks for tens
        of t): each row's chance of no, one and more interruptions; the normal without
        any and the normal given two or more (the compound sum's conditional moments);
        one interruption is its size itself (skewed: a long prompt's prefill), read from
        the sizes' distribution (`_gap_parts`) at t."""
        m, g = self.interrupts, self.gaps
        none = np.exp(-m)
        one = m * none
        e1, e2 = self._moments()
        more = np.maximum(1.0 - none - one, 0.0)
        safe = np.maximum(more, 1e-300)
        mean2 = (m * e1 - one * e1) / safe / g  # TPOT added, given two or more
        var2 = np.maximum((m * e2 + m * m * e1 * e1 - one * e2) / safe / g**2 - mean2**2, 0.0)
        normals = (_Normal(self.mean_s, self.sd_s),
                   _Normal(self.mean_s + mean2, np.sqrt(self.sd_s**2 + var2)))  # fmt: skip
        return none, one, more, normals, self.weights.sum()

    def tpot_cdf(self, t: float) -> float:
        none, one, more, (plain, hit), total = self._tpot_parts
        mass = none * plain.cdf(t) + more * hit.cdf(t)
        sizes, cum = self._gap_parts
        if sizes is not None:  # one interruption: P(size <= (t - TPOT without) x gaps)
            room = (t - self.mean_s) * self.gaps
            mass = mass + one * cum[np.searchsorted(sizes, room, side="right")]
        return float(np.dot(self.weights, mass) / total)

    @cached_property
    def _gap_parts(self) -> tuple:
        """What `gap_cdf` needs that does not depend on g: the sorted interruption sizes
        and their cumulative probabilities."""
        if not len(self.sizes_s):
            return None, None
        order = np.argsort(self.sizes_s)
        cum = np.concatenate(([0.0], np.cumsum(self.size_weights[order])))
        cum /= cum[-1]
        return self.sizes_s[order], cum

    def gap_cdf(self, g: float) -> float:
        above = (g >= self.step_s) & (g >= self.fixed_gap_s)
        beyond = np.zeros(len(self.step_s))
        sizes, cum = self._gap_parts
        if sizes is not None:
            below = cum[np.searchsorted(sizes, g - self.step_s, side="right")]
            beyond = 1.0 - below  # P(an interruption is longer than g - step)
        mass = np.where(above, np.exp(-self.interrupts * beyond), 0.0)
        return float(np.dot(self.weights, mass) / self.weights.sum())

    def max_gap_s(self) -> float:
        """The largest gap any request can see (its step + the longest interruption)."""
        if not len(self.weights):
            return 0.0
        hit = self.interrupts > 0
        longest = float(self.sizes_s.max(initial=0.0))
        worst = np.maximum(self.step_s, self.fixed_gap_s)
        return float(np.where(hit, np.maximum(worst, self.step_s + longest), worst).max())

    def quantiles(self, cdf, qs) -> list[float]:
        return cdf_quantiles(cdf, qs, *self._bracket())

    def quantile_at_most(self, cdf, q: float, limit_s: float) -> bool:
        """`self.quantiles(cdf, [q])[0] <= limit_s`, the same verdict (quantile_verdict.py)."""
        return cdf_quantile_at_most(cdf, q, limit_s, *self._bracket())

    def _bracket(self) -> tuple[float, float]:
        low = float(min(self.mean_s.min(), self.step_s.min())) * 0.5
        high = float(max(self.mean_s.max(), self.step_s.max(), self.fixed_gap_s.max()))
        return low, high


def cdf_quantiles(cdf, qs, low_s: float, high_s: float) -> list[float]:
    """The seconds at which a TPOT or gap CDF reaches each of `qs`: bracketed from `low_s`,
    the bracket's top doubled from 2 x `high_s` until it holds the quantile."""
    once = _once(cdf)
    return [_quantile_s(once, q, low_s, _top(once, q, high_s)) for q in qs]


def cdf_quantile_at_most(cdf, q: float, limit_s: float, low_s: float, high_s: float) -> bool:
    """`cdf_quantiles(cdf, [q], low_s, high_s)[0] <= limit_s`, mostly from the CDF's sign
    beside the limit. Only a bracket brentq would search counts (its ends of opposite
    signs): else brentq returns an end or raises, and the search itself runs."""
    once = _once(cdf)
    top = _top(once, q, high_s)
    if once(low_s) - q < 0 < once(top) - q:
        gap = lambda x: once(x) - q  # noqa: E731
        verdict = sign_verdict(gap, limit_s, _XTOL_S, BRENTQ_DEFAULT_RTOL)
        if verdict is not None:
            return verdict
    return _quantile_s(once, q, low_s, top) <= limit_s


def _once(cdf):
    """`cdf`, each point computed once (the bracket's ends are asked for again by brentq)."""
    seen: dict[float, float] = {}

    def once(x: float) -> float:
        got = seen.get(x)
        if got is None:
            got = seen[x] = cdf(x)
        return got

    return once


def _top(once, q: float, high_s: float) -> float:
    top = max(high_s, 1e-6) * 2
    while once(top) < q and top < 1e6:
        top *= 2
    return top


def _quantile_s(once, q: float, low_s: float, top_s: float) -> float:
    return float(brentq(lambda x: once(x) - q, low_s, top_s, xtol=_XTOL_S))


class _Normal:
    """N(mean, sd²) per row, its CDF at one t; a row with sd = 0 is a step at its mean."""

    def __init__(self, mean: np.ndarray, sd: np.ndarray):
        self.mean, self.spread = mean, sd > 0
        self.safe_sd = np.where(self.spread, sd, 1.0)

    def cdf(self, t: float) -> np.ndarray:
        return np.where(self.spread, ndtr((t - self.mean) / self.safe_sd),
                        (t >= self.mean).astype(float))  # fmt: skip


def time_average_factor(window_s: np.ndarray, holds_s: np.ndarray, hold_weights) -> np.ndarray:
    """g(T): the variance of an M/G/inf occupancy averaged over a window T, over its
    variance at an instant; holds S take `holds_s` with weights `hold_weights`."""
    return _Holds(holds_s, hold_weights).factor(window_s)


class _Holds:
    """The holds' distribution of `time_average_factor`, built once for any windows: the
    holds sorted with prefix sums of w, w s, w s², w s³, so a window's integral splits at
    its place among them (exact, O(log) a window: every class's hold can differ)."""

    def __init__(self, holds_s: np.ndarray, hold_weights):
        s = np.asarray(holds_s, float).ravel()
        w = np.broadcast_to(np.asarray(hold_weights, float), s.shape).ravel()
        order = np.argsort(s, kind="stable")
        self.s, w = s[order], w[order]
        # prefix[k][i] = sum over the i shortest holds of w s^k
        self.prefix = [np.concatenate(([0.0], np.cumsum(w * self.s**k))) for k in range(4)]
        self.w_sum = float(self.prefix[0][-1])
        self.mean_hold = float(self.prefix[1][-1]) / self.w_sum if self.w_sum > 0 else 0.0

    def factor(self, window_s) -> np.ndarray:
        if self.mean_hold <= 0:
            return np.zeros(np.shape(window_s))
        t = np.maximum(np.asarray(window_s, float), 1e-12)
        # int_0^T (T - u) (s - u)^+ du: T T s / 2 - T^3 / 6 for s >= T, T s s / 2 - s^3 / 6
        # for s < T; summed with the holds' weights, split where the holds pass T
        i = np.searchsorted(self.s, t, side="right")  # holds below T: s < T (or equal)
        p0, p1, p2, p3 = self.prefix
        below = t / 2 * p2[i] - p3[i] / 6
        above = t * t / 2 * (p1[-1] - p1[i]) - t**3 / 6 * (p0[-1] - p0[i])
        return (2.0 / t**2) * (below + above) / self.w_sum / self.mean_hold


class LifeSpread:
    """Spread of the mean step a request sees over a life of `window_s` (`sd_s`), for one
    pool at one load: the step's slope in the batch and the holds' distribution found
    once for any number of windows (tpot_rows asks for two)."""

    def __init__(self, instance, batch: float, instances: int, context: float, holds_s,
                 hold_weights):  # fmt: skip
        self.idle = batch <= 0 or instances < 1
        if self.idle:
            return
        low, high = max(batch - 1.0, 1.0), batch + 1.0
        steps = np.asarray(instance.decode_step_s(np.array([low, high]), context), float)
        self.slope = float(steps[1] - steps[0]) / (high - low)
        self.per_instance = batch / instances
        self.holds = _Holds(holds_s, hold_weights)

    def sd_s(self, window_s) -> np.ndarray:
        if self.idle:
            return np.zeros(np.shape(window_s))
        return self.slope * np.sqrt(self.per_instance * self.holds.factor(window_s))


def weighted_quantiles_dict(rows: TpotRows, cdf, quantiles: dict[str, float]) -> dict:
    if not len(rows.weights) or rows.weights.sum() <= 0:
        return {k: math.nan for k in quantiles}
    return dict(zip(quantiles, rows.quantiles(cdf, list(quantiles.values())), strict=True))
