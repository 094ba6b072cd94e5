"""Queueing: Erlang-B/C, Allen-Cunneen G/G/c waits, their tails, and mixture percentiles.

A waiting time is modelled as 0 with probability 1 - p and Exp(rate) with probability p
(`WaitModel`): exact for M/M/c, the Allen-Cunneen approximation otherwise. TTFT percentiles
are quantiles of `d_K + W`, a request class's deterministic delay plus the sum of at most
two such waits, found by root-finding on the closed-form CDF (`mixture_quantiles_s`).

Saturation (offered load >= capacity) raises `SaturatedError`, never returns infinity.
Pure math: numbers in, numbers out.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq

from pdd_plan.errors import SaturatedError

_Q_TOL = 1e-12  # probability slack: a level within this of an atom's CDF resolves to the atom
_XTOL_S = 1e-12
_RTOL = 1e-12


def _as_out(values: np.ndarray, like) -> float | np.ndarray:
    """A float for a scalar input, an array for an array input."""
    return float(values) if np.ndim(like) == 0 else values


def _check_servers(servers: int, least: int) -> int:
    servers = operator.index(servers)  # an int, never a float that happens to be whole
    if servers < least:
        raise ValueError(f"servers must be >= {least}, got {servers}")
    return servers


def _check_nonneg(**values: float) -> None:
    for name, value in values.items():
        if not value >= 0:  # also rejects NaN
            raise ValueError(f"{name} must be >= 0, got {value}")


# ---------------------------------------------------------------------------- Erlang


def erlang_b(servers: int, offered_load: float) -> float:
    """Blocking probability of M/M/c/c with `offered_load` a = λ/μ erlangs.

    The forward recursion stays in [0, 1] at every step, so it neither overflows nor
    loses precision for large c (factorials would overflow near c = 170).
    """
    servers = _check_servers(servers, 0)
    _check_nonneg(offered_load=offered_load)
    return _erlang_b(servers, float(offered_load))


@lru_cache(maxsize=4096)  # ~100 kB; a solve asks for the same (c, a) again and again
def _erlang_b(servers: int, a: float) -> float:
    """The recursion, O(c) in Python: memoised (exact: the same inputs, the same float)
    because neighbouring plans of a search share pools and rates (pdd-paper's PDD solve:
    1,586 calls of ~1,000 steps each, 932 distinct)."""
    b = 1.0
    for c in range(1, servers + 1):
        ab = a * b
        b = ab / (c + ab)
        if b == 0.0:  # underflowed (c far above a): every later step keeps 0 / (c + 0) = 0
            break  # exact, and 2/3 of a sweep's steps (pools of thousands of slots)
    return b


def erlang_c(servers: int, offered_load: float, what: str = "queue") -> float:
    """Probability that an arrival waits in M/M/c: C = B / (1 - ρ (1 - B)), ρ = a/c."""
    servers = _check_servers(servers, 1)
    _check_nonneg(offered_load=offered_load)
    if offered_load >= servers:
        raise SaturatedError(what, float(offered_load), float(servers), "servers")
    b = erlang_b(servers, offered_load)
    rho = offered_load / servers
    return b / (1.0 - rho * (1.0 - b))


# ---------------------------------------------------------------------------- WaitModel


@dataclass(frozen=True)
class WaitModel:
    """W = 0 with probability 1 - prob_wait, else Exp(decay_rate_per_s).

    An infinite rate means the exponential part is zero too (no wait at all).
    """

    prob_wait: float
    decay_rate_per_s: float

    def __post_init__(self):
        if not 0.0 <= self.prob_wait <= 1.0:
            raise ValueError(f"prob_wait must be in [0, 1], got {self.prob_wait}")
        if not self.decay_rate_per_s > 0:
            raise ValueError(f"decay_rate_per_s must be > 0, got {self.decay_rate_per_s}")

    @classmethod
    def none(cls) -> WaitModel:
        """No wait: W = 0 always."""
        return cls(0.0, math.inf)

    @property
    def is_zero(self) -> bool:
        """True when W = 0 almost surely."""
        return self.prob_wait == 0.0 or math.isinf(self.decay_rate_per_s)

    def mean_s(self) -> float:
        return 0.0 if self.is_zero else self.prob_wait / self.decay_rate_per_s

    def tail(self, t_s):
        """P(W > t), vectorised over t."""
        t = np.asarray(t_s, dtype=float)
        if self.is_zero:
            return _as_out(np.where(t < 0, 1.0, 0.0), t_s)
        decay = self.prob_wait * np.exp(-self.decay_rate_per_s * np.maximum(t, 0.0))
        return _as_out(np.where(t < 0, 1.0, decay), t_s)

    def cdf(self, t_s):
        """P(W <= t), vectorised over t."""
        t = np.asarray(t_s, dtype=float)
        return _as_out(1.0 - np.asarray(self.tail(t)), t_s)

    def quantile_s(self, q):
        """Smallest t with P(W <= t) >= q; 0 inside the atom, inf at q = 1 if W can wait."""
        qs = np.asarray(q, dtype=float)
        if np.any((qs < 0) | (qs > 1)):
            raise ValueError(f"quantile levels must be in [0, 1], got {q}")
        if self.is_zero:
            return _as_out(np.zeros_like(qs), q)
        inside = qs <= 1.0 - self.prob_wait
        with np.errstate(divide="ignore"):
            t = np.log(self.prob_wait / (1.0 - np.where(inside, 0.0, qs))) / self.decay_rate_per_s
        return _as_out(np.where(inside, 0.0, t), q)


# ---------------------------------------------------------------------------- queues


def ggc_wait(
    arrival_rate_per_s: float,
    mean_service_s: float,
    servers: int,
    cv2_arrival: float = 1.0,
    cv2_service: float = 1.0,
    what: str = "queue",
) -> WaitModel:
    """Waiting time in G/G/c by Allen-Cunneen.

    P(wait) is Erlang-C; the M/M/c mean wait C/(cμ - λ) is multiplied by
    (c_a² + c_s²)/2 and the tail rate divided by it, so the mean comes out right.
    """
    servers = _check_servers(servers, 1)
    _check_nonneg(
        arrival_rate_per_s=arrival_rate_per_s,
        mean_service_s=mean_service_s,
        cv2_arrival=cv2_arrival,
        cv2_service=cv2_service,
    )
    offered = arrival_rate_per_s * mean_service_s
    if offered >= servers:
        raise SaturatedError(what, offered, float(servers), "servers")
    factor = (cv2_arrival + cv2_service) / 2.0
    if mean_service_s == 0 or factor == 0:
        return WaitModel.none()  # no work, or D/D/c below capacity: nobody waits
    prob = erlang_c(servers, offered, what)
    mmc_rate_per_s = (servers - offered) / mean_service_s  # cμ - λ
    return WaitModel(prob, mmc_rate_per_s / factor)


def mmc_mean_wait_s(
    arrival_rate_per_s: float, service_rate_per_s: float, servers: int, what: str = "queue"
) -> float:
    """M/M/c mean wait in queue: C / (cμ - λ)."""
    servers = _check_servers(servers, 1)
    _check_nonneg(arrival_rate_per_s=arrival_rate_per_s)
    if not service_rate_per_s > 0:
        raise ValueError(f"service_rate_per_s must be > 0, got {service_rate_per_s}")
    offered = arrival_rate_per_s / service_rate_per_s
    if offered >= servers:
        raise SaturatedError(what, offered, float(servers), "servers")
    prob = erlang_c(servers, offered, what)
    return prob / (servers * service_rate_per_s - arrival_rate_per_s)


def md1_mean_sojourn_s(arrival_rate_per_s: float, service_s: float, what: str = "queue") -> float:
    """M/D/1 mean time in system, D + λD² / (2(1 - λD)) (Pollaczek-Khinchine)."""
    _check_nonneg(arrival_rate_per_s=arrival_rate_per_s, service_s=service_s)
    rho = arrival_rate_per_s * service_s
    if rho >= 1.0:
        raise SaturatedError(what, rho, 1.0, "servers")
    return service_s + arrival_rate_per_s * service_s**2 / (2.0 * (1.0 - rho))


def ps_mean_sojourn_s(size, capacity: float, load_frac: float, what: str = "link", unit: str = ""):
    """M/G/1 processor sharing: a job of `size` takes size / (capacity (1 - ρ)) on average.

    `size` may be an array (one per request class); the unit is whatever `capacity` is per
    second. The saturation message gives the offered and full capacity in that unit.
    """
    if not capacity > 0:
        raise ValueError(f"capacity must be > 0, got {capacity}")
    _check_nonneg(load_frac=load_frac)
    if load_frac >= 1.0:
        raise SaturatedError(what, load_frac * capacity, capacity, unit)
    sojourn = np.asarray(size, dtype=float) / (capacity * (1.0 - load_frac))
    return _as_out(sojourn, size)


# ---------------------------------------------------------------------------- sums of waits


def _live(waits: Sequence[WaitModel]) -> list[WaitModel]:
    """The waits that can be non-zero; at most two are supported in closed form."""
    live = [w for w in waits if not w.is_zero]
    if len(live) > 2:
        raise ValueError(f"closed form covers the sum of at most 2 waits, got {len(live)}")
    return live


def sum_survival_fn(waits: Sequence[WaitModel]) -> Callable[[np.ndarray], np.ndarray]:
    """P(W > x) for x >= 0, where W is the sum of the waits (at most two non-zero)."""
    return _sum_survival_fn(_live(waits))


def _sum_survival_fn(live: list[WaitModel]) -> Callable[[np.ndarray], np.ndarray]:
    """P(W > x) for x >= 0, where W is the sum of the (0, 1 or 2) live waits."""
    if not live:
        return np.zeros_like
    if len(live) == 1:
        p, r = live[0].prob_wait, live[0].decay_rate_per_s
        return lambda x: p * np.exp(-r * x)
    (r1, p1), (r2, p2) = sorted((w.decay_rate_per_s, w.prob_wait) for w in live)
    delta = r2 - r1  # >= 0

    def survival(x: np.ndarray) -> np.ndarray:
        # Hypoexponential survival (r2 e^{-r1 x} - r1 e^{-r2 x}) / (r2 - r1), rewritten as
        # e^{-r1 x} (1 + r1 h(x)), h = (1 - e^{-δx}) / δ, which tends to x (Erlang-2) as δ -> 0
        # without the cancellation of the textbook form.
        h = -np.expm1(-delta * x) / delta if delta > 0 else x
        e1 = np.exp(-r1 * x)
        return p1 * e1 * (1.0 + p2 * r1 * h) + (1.0 - p1) * p2 * np.exp(-r2 * x)

    return survival


def _sum_cdf_fn(waits: Sequence[WaitModel]) -> Callable[[np.ndarray], np.ndarray]:
    survival = _sum_survival_fn(_live(waits))

    def cdf(x: np.ndarray) -> np.ndarray:
        inside = np.isfinite(x) & (x >= 0)
        tail = survival(np.where(inside, x, 0.0))
        outside = np.where(x > 0, 1.0, np.where(np.isnan(x), np.nan, 0.0))  # +inf, <0, NaN
        return np.where(inside, 1.0 - tail, outside)

    return cdf


def sum_cdf(waits: Sequence[WaitModel], t_s):
    """P(W_1 + ... + W_n <= t) for n <= 2 independent waits, in closed form, vectorised."""
    t = np.asarray(t_s, dtype=float)
    return _as_out(_sum_cdf_fn(waits)(t), t_s)


# ---------------------------------------------------------------------------- mixtures


def _classes(weights, delays_s) -> tuple[np.ndarray, np.ndarray]:
    """Distinct delays, sorted, with their normalised weights (zero-weight classes dropped)."""
    w = np.atleast_1d(np.asarray(weights, dtype=float))
    d = np.atleast_1d(np.asarray(delays_s, dtype=float))
    if w.shape != d.shape or w.ndim != 1:
        raise ValueError(f"weights {w.shape} and delays_s {d.shape} must be equal 1-d shapes")
    if not (np.all(w >= 0) and np.all(np.isfinite(w)) and w.sum() > 0):
        raise ValueError("weights must be finite, >= 0, and not all zero")
    if not (np.all(d >= 0) and np.all(np.isfinite(d))):
        raise ValueError("delays_s must be finite and >= 0")
    keep = w > 0
    delays, inverse = np.unique(d[keep], return_inverse=True)
    mass = np.bincount(inverse, weights=w[keep], minlength=delays.size)
    return delays, mass / mass.sum()


def _mixture_cdf_fn(delays, mass, live: list[WaitModel]) -> Callable[[float], float]:
    """F(t) = Σ_k mass_k P(W <= t - d_k) at one t, over the classes already started."""
    cum_mass = np.cumsum(mass)
    survival = _sum_survival_fn(live)

    def mixture_cdf(t: float) -> float:
        n = np.searchsorted(delays, t, side="right")  # classes with d_k > t add nothing yet
        return float(cum_mass[n - 1] - mass[:n] @ survival(t - delays[:n])) if n else 0.0

    return mixture_cdf


def _quantile(q: float, delays, mass, live: list[WaitModel], mixture_cdf) -> float:
    """Smallest t with F(t) >= q."""
    # F at the sorted delays rises with the index: bisect for the first one reaching q,
    # starting where the delays alone (F <= their step CDF) could first reach it
    lo, hi = int(np.searchsorted(np.cumsum(mass), q - _Q_TOL)), delays.size
    if not live or q <= 0:  # F is the step CDF: the weighted quantile of the delays
        return float(delays[min(lo, hi - 1)])
    while lo < hi:
        mid = (lo + hi) // 2
        if mixture_cdf(delays[mid]) >= q - _Q_TOL:
            hi = mid
        else:
            lo = mid + 1
    if lo < delays.size:
        top = delays[lo]
        jump = mass[lo] * math.prod(1.0 - w.prob_wait for w in live)  # mass_k P(W = 0)
        if lo == 0 or mixture_cdf(top) - jump < q:
            return float(top)  # q falls inside the atom at `top` (or below every delay)

        def gap(t: float) -> float:  # F made left-continuous at `top`: smooth on the bracket
            return mixture_cdf(t) - q - (jump if t >= top else 0.0)

        return float(brentq(gap, delays[lo - 1], top, xtol=_XTOL_S, rtol=_RTOL))
    if q >= 1.0:
        return math.inf  # an exponential tail never reaches 1
    return _quantile_beyond_delays(q, float(delays[-1]), live, mixture_cdf)


def _quantile_beyond_delays(q: float, bottom: float, live, mixture_cdf) -> float:
    """The quantile when it lies past the largest delay, where F is continuous."""
    level = q ** (1.0 / len(live))
    span = sum(w.quantile_s(level) for w in live)  # each part at q^(1/n): P(W <= span) >= q
    for _ in range(64):  # rounding may leave the bound a hair short: widen until it holds
        if mixture_cdf(bottom + span) >= q:
            break
        span = 2.0 * span + _XTOL_S
    else:
        raise RuntimeError(f"no upper bracket for quantile {q}")

    def gap(t: float) -> float:
        return mixture_cdf(t) - q

    return float(brentq(gap, bottom, bottom + span, xtol=_XTOL_S, rtol=_RTOL))


def mixture_quantiles_s(
    quantiles: Sequence[float],
    weights,
    delays_s,
    waits: Sequence[WaitModel] = (),
) -> np.ndarray:
    """Quantiles of T = d_K + W: class k (probability ∝ weights[k]) adds a fixed delay d_k,
    and W, the sum of `waits` (at most two non-zero), is common to all classes.

    F(t) = Σ_k w_k P(W <= t - d_k) has an atom at each d_k of size w_k P(W = 0) and is
    continuous and increasing between them when W can wait, so each quantile is either an
    atom (found by bisecting over the sorted delays) or a root of F - q on the bracket
    between two neighbouring atoms (brentq). With no waits it is the weighted quantile of
    the delays.
    """
    qs = np.atleast_1d(np.asarray(quantiles, dtype=float))
    if np.any((qs < 0) | (qs > 1)) or np.any(np.isnan(qs)):
        raise ValueError(f"quantile levels must be in [0, 1], got {quantiles}")
    delays, mass = _classes(weights, delays_s)
    live = _live(waits)
    mixture_cdf = _mixture_cdf_fn(delays, mass, live)
    return np.array([_quantile(q, delays, mass, live, mixture_cdf) for q in qs])
