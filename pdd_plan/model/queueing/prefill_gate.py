"""What batching adds to a prefill request's wait: the gap between takes from the pooled
queue and the others co-batched with it, as a mean and a second moment, fitted into one
wait model.

Mechanism (c gated batch servers taking from ONE FIFO queue, as sim/prefill.py runs them:
an instance whose step ends takes everything waiting, up to its budget):
- takes. Each instance takes at the end of each of its steps, so the pool's takes are
  the superposition of the c instances' step sequences (rate c / E[L]). Their phases
  are taken as independent (nothing aligns them: an instance starts when work finds it
  idle, and steps of different lengths shuffle the order), so the gap G that ends at an
  instance's take is the smaller of its own step L and the time since any other instance
  last took, a stationary backward recurrence per other instance:
      P(G > x) = F̄(x) F̄_e(x)^(c-1),   F̄_e(x) = (1 / E[L]) ∫_x^∞ F̄(u) du
  (the Palm interval of c superposed stationary renewal processes; E[G] = E[L] / c).
  With one instance, G = L.
- the step-to-step feedback. A take gathers what arrived during G: λN̄ G tokens (all
  of the pool's arrivals, not one instance's share), or, when nothing arrived (chance
  e^(-λG)), the one chunk n̄ that ends the instance's idle period. So a step is
  L = S(b) + β G + r e^(-λG) + its composition noise (up to a constant), β = λN̄ dS/db
  = c ρ (ρ = Λ dS/db the per-instance feedback, Λ = λN̄ / c tokens per second per
  instance, dS/db the chord from one chunk to a full step), r = n̄ dS/db the restart
  chunk's step. One step's content given its gap varies by the composition of the
  Poisson arrivals, (Λ S(b) / N̄) E[x²], plus one request's Var(x) for the restart share
  (x: what one request adds to a step): v. So Var(L) = v + Var(β G + r e^(-λG)), the
  second a function of L's law through G: the fixed point V. With one instance and no
  restart term Var(G) = Var(L) and V = v / (1 - ρ²) (a stationary AR(1)); the restart
  term lowers it (a short gap still gathers one chunk: the floor cuts the feedback where
  the pool idles often). With c instances the gap ending at an instance's take is cut
  short whenever another instance took during its step: the mean next batch follows the
  instance's own step only through dE[G | L]/dL = F̄_e(L)^(c-1), so a long step gathers a
  big next batch only if no other instance took meanwhile, and the feedback weakens with
  c (on `pdd-paper` with three instances at 90 % of full-step load: V 0.10 s² for the
  pool against 0.18 for one instance with the same per-instance load and step, 0.18
  simulated; one instance's consecutive steps correlate at 0.51 simulated there, against
  0.89 for one instance alone).
  L lies in [S(n̄), S(B)] with mean S(b), so V <= (S(B) - S(b))(S(b) - S(n̄))
  (Bhatia-Davis): 0 at full steps (there the Allen-Cunneen wait at full-step cost holds
  the queue). L is taken as gamma with mean S(b) and variance V.
- a request arrives in a gap taken length-biased (likelier in a long one):
  E[G*] = E[G²] / E[G], E[G*²] = E[G³] / E[G]; it waits a uniform part of it (the next
  take) and runs in the step that carries everything that arrived in it: the others are
  Poisson with mean λ G* (at most what the budget leaves), each adding x.
  Mean added λ E[x] E[G*]; second moment λ² E[x]² E[G*²] + λ E[x²] E[G*]; the residual
  U G*: mean E[G*] / 2, second moment E[G*²] / 3, and E[U G* · others] = λ E[x] E[G*²] / 2.
  The Allen-Cunneen term holds the one-chunk step's residual already.
The added wait A (chance π, every instance busy) and the Allen-Cunneen wait W0 are
summed as independent, and the sum is the one wait model (0, or an exponential) with
the same mean and second moment (p = 2 m² / M2, rate = 2 m / M2): the co-batched share is
heavy-tailed (a long prompt among the others), so its tail decays slower than its mean
alone says. With nothing added the result is W0 exactly (the one-at-a-time G/G/c).

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaincc

from pdd_plan.model.queueing.queueing import WaitModel, erlang_c

# Feedback below 1 by this margin at least: ρ < the full-step load < 1 below saturation
# (S(b) / b falls with b), so this only guards rounding next to saturation.
_MAX_FEEDBACK = 1.0 - 1e-9
# The gap's law P(G > x) is tabulated per pool size c over the gap in units of the mean
# step, y = x / E[L], and the gamma shape k = E[L]² / V (the law depends on nothing
# else), and interpolated linearly in ln k: each evaluation is then a few dot products.
# y on a log grid from 1e-5 / c (taking P(G > x) as 1 below it adds at most 1e-5 of E[G])
# to 1 + 60 / k_min (F̄ there below e^-50); k from 0.01 (steps with a CV² of 100) to
# 10,000 (1 % CV: a fixed step), clamped outside. 400 points in y and 12 per factor e
# in k put the moments within 0.3 % of a 6,000-point quadrature of the incomplete gamma
# function (CV² 0.02-50, c 2-10) and P0 within 3e-4; E[G] within 1e-5 of the exact
# E[L] / c (tests/unit/test_prefill_gate.py). A whole table is ~30 ms to build.
_GRID_POINTS = 400
_GRID_LOW_FRAC = 1e-5
_GRID_SCALES = 60.0
_SHAPE_LOW, _SHAPE_HIGH = 0.01, 1e4
_SHAPES_PER_E = 12
# A step variance below 1e-8 of the squared mean is a fixed step (gamma shape 1e8)
_MIN_CV2 = 1e-8
# The fixed point V to 1e-4 of the squared mean step (the length-biased step S + V / S
# to 1e-4 of S)
_V_TOLERANCE_FRAC = 1e-4
# Gap laws and their discount weights remembered (256 each of 400 x 2 and 400 x 3 floats:
# 4 MB at most), and P0 per rate per step law
_GAP_TAIL_MEMO = 256
_P0_MEMO = 16


_SHAPE_ROWS = int(math.ceil(math.log(_SHAPE_HIGH / _SHAPE_LOW) * _SHAPES_PER_E)) + 1  # 167


@lru_cache(maxsize=32)
def _tail_grid(servers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(y grid, ln k grid, k grid, the grid step in ln y) of the table for `servers`."""
    top = 1.0 + _GRID_SCALES / _SHAPE_LOW
    y = np.geomspace(_GRID_LOW_FRAC / servers, top, _GRID_POINTS)
    log_k = np.linspace(math.log(_SHAPE_LOW), math.log(_SHAPE_HIGH), _SHAPE_ROWS)
    return y, log_k, np.exp(log_k), math.log(top / y[0]) / (_GRID_POINTS - 1)


# a row is built when first asked (read-only, shared): a solve reads a few dozen of the
# 167 rows per pool size (12 on the default scenario, 24-84 per size on pdd-paper)
@lru_cache(maxsize=32 * _SHAPE_ROWS)
def _tail_row(servers: int, row: int) -> np.ndarray:
    """P(G > y E[L]) on the y grid for the gamma shape k of `row` of the table."""
    y, _, shapes, _ = _tail_grid(servers)
    k = shapes[row]
    t = y * k  # x / θ
    survival = gammaincc(k, t)
    # ∫_x^∞ F̄ / E[L] for a gamma: Q(k + 1, t) - (t / k) Q(k, t)
    residual = np.clip(gammaincc(k + 1.0, t) - (t / k) * survival, 0.0, 1.0)
    tail = survival * residual ** (servers - 1)
    tail.setflags(write=False)
    return tail


def _tail_table(servers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(y grid, ln k grid, P(G > y E[L]) per row of k, the grid step in ln y)."""
    y, log_k, _, step = _tail_grid(servers)
    return y, log_k, np.array([_tail_row(servers, r) for r in range(_SHAPE_ROWS)]), step


_TRAPEZOID = np.full(_GRID_POINTS, 1.0)
_TRAPEZOID[[0, -1]] = 0.5  # trapezoid weights on an even grid


def _gap_tail(mean_s: float, var_s2: float, servers: int):
    """(x, P(G > x), the grid step in ln x) for gamma steps of that mean and variance,
    from the table (linear in ln k between its rows); read-only arrays, shared."""
    return _gap_tail_at(float(mean_s), float(var_s2), int(servers))


# the same law is asked again and again: the variance's fixed point evaluates its upper
# bound twice, then P0 and the gap's moments read the solved variance's law
@lru_cache(maxsize=_GAP_TAIL_MEMO)
def _gap_tail_at(m: float, var_s2: float, servers: int):
    shape = m * m / max(var_s2, 1e-300)
    y, log_k, _, step = _tail_grid(servers)
    at = (math.log(min(max(shape, _SHAPE_LOW), _SHAPE_HIGH)) - log_k[0]) / (log_k[1] - log_k[0])
    i = min(int(at), len(log_k) - 2)
    f = at - i
    x, law = m * y, _tail_row(servers, i) * (1.0 - f) + _tail_row(servers, i + 1) * f
    x.setflags(write=False)
    law.setflags(write=False)
    return x, law, step


@lru_cache(maxsize=_GAP_TAIL_MEMO)
def _discounts(m: float, lam: float, servers: int):
    """(e^(-λx), e^(-2λx), (1 - λx) e^(-λx)) on `_gap_tail`'s grid x for mean step m,
    read-only: fixed while the variance's fixed point moves the gap's law."""
    x = m * _tail_grid(servers)[0]
    once, twice, slope = (
        np.exp(-lam * x),
        np.exp(-2.0 * lam * x),
        (1.0 - lam * x) * np.exp(-lam * x),
    )
    for a in (once, twice, slope):
        a.setflags(write=False)
    return once, twice, slope


def _integral(f: np.ndarray, step: float) -> float:
    """∫ f d(ln x) by the trapezoid rule on the grid."""
    return float(f @ _TRAPEZOID) * step


def gap_moments(mean_s: float, var_s2: float, servers: int) -> tuple[float, float, float]:
    """(E[G], E[G²], E[G³]) of the gap ending at a take when `servers` instances with
    gamma steps (mean, variance) take from one queue: P(G > x) = F̄(x) F̄_e(x)^(c-1)
    (module docstring); exact gamma moments for one instance."""
    m, v = float(mean_s), float(var_s2)
    if m <= 0:
        return 0.0, 0.0, 0.0
    if servers <= 1:
        return m, m * m + v, (m * m + v) * (m * m + 2.0 * v) / m
    x, tail, step = _gap_tail(m, v, servers)
    # E[G^j] = ∫ j x^(j-1) P(G > x) dx = ∫ j x^j P(G > x) d(ln x); below the grid
    # P(G > x) ≈ 1, adding x0^j
    xt = x * tail
    first = _integral(xt, step) + x[0]
    second = 2.0 * _integral(x * xt, step) + x[0] ** 2
    third = 3.0 * _integral(x * x * xt, step) + x[0] ** 3
    return first, second, third


def empty_take_prob(mean_s: float, var_s2: float, servers: int, rate_per_s: float) -> float:
    """P0 = E[e^(-λG)]: the chance a take finds nothing waiting (no arrival, pool rate λ,
    during the gap before it), gamma steps: (1 + λθ)^(-k) for one instance (shape k,
    scale θ), 1 - λ ∫ e^(-λx) P(G > x) dx for several."""
    m, v, lam = float(mean_s), float(var_s2), float(rate_per_s)
    if m <= 0 or lam <= 0:
        return 1.0
    if servers <= 1:
        if v <= _MIN_CV2 * m * m:
            return math.exp(-lam * m)
        return (1.0 + lam * v / m) ** (-m * m / v)
    x, tail, step = _gap_tail(m, v, servers)
    inside = _integral(_discounts(m, lam, int(servers))[0] * tail * x, step) + x[0]
    return float(min(max(1.0 - lam * inside, 0.0), 1.0))


def gap_driven_var(mean_s: float, var_s2: float, servers: int, rate_per_s: float,
                   beta: float, restart_s: float) -> float:  # fmt: skip
    """Var(β G + r e^(-λG)): the part of a step set by the gap before its take (β G the
    arrivals' share; r e^(-λG) the restart chunk when none arrived), gamma steps."""
    m, v, lam = float(mean_s), float(var_s2), float(rate_per_s)
    if m <= 0:
        return 0.0
    if servers <= 1:
        g1, g2 = m, m * m + v
        if v <= _MIN_CV2 * m * m:
            e1, e2, ge = math.exp(-lam * m), math.exp(-2.0 * lam * m), m * math.exp(-lam * m)
        else:
            k, theta = m * m / v, v / m
            e1 = (1.0 + lam * theta) ** -k
            e2 = (1.0 + 2.0 * lam * theta) ** -k
            ge = m * (1.0 + lam * theta) ** (-k - 1.0)
    else:
        x, tail, step = _gap_tail(m, v, servers)
        once, twice, slope = _discounts(m, lam, int(servers))  # e^(-λx), e^(-2λx), d/dx
        xt = x * tail
        # E[φ(G)] = φ(0) + ∫ φ'(x) P(G > x) dx; below the grid P(G > x) ≈ 1
        g1 = _integral(xt, step) + x[0]
        g2 = 2.0 * _integral(x * xt, step) + x[0] ** 2
        e1 = 1.0 - lam * (_integral(once * xt, step) + x[0])
        e2 = 1.0 - 2.0 * lam * (_integral(twice * xt, step) + x[0])
        ge = _integral(slope * xt, step) + x[0]
    var_g, var_e, cov = g2 - g1 * g1, e2 - e1 * e1, ge - g1 * e1
    return max(beta * beta * var_g + restart_s**2 * var_e + 2.0 * beta * restart_s * cov, 0.0)


@dataclass(frozen=True)
class StepLaw:
    """The steps of a pool of `servers` instances: mean S(b), one step's composition
    variance v, the per-instance feedback ρ, the bounds [S(n̄), S(B)], the pool's
    request rate λ and the restart chunk's step time r (what a chunk of n̄ adds)."""

    mean_s: float
    composition_var_s2: float
    feedback: float
    lone_s: float
    full_s: float
    servers: int = 1
    rate_per_s: float = 0.0
    restart_s: float = 0.0

    def _bound_s2(self) -> float:
        return max(self.full_s - self.mean_s, 0.0) * max(self.mean_s - self.lone_s, 0.0)

    def variance_s2(self) -> float:
        """V: the fixed point of V = v + Var(c ρ G + r e^(-λG) | V), at most the range's
        bound (v / (1 - ρ²) for one instance without the restart term)."""
        return self._variance_s2

    @cached_property
    def _variance_s2(self) -> float:
        rho = min(max(self.feedback, 0.0), _MAX_FEEDBACK)
        bound, v = self._bound_s2(), self.composition_var_s2
        restart = self.restart_s if self.rate_per_s > 0 else 0.0
        if rho == 0.0 and restart == 0.0:
            return min(v, bound)
        if self.servers <= 1 and restart == 0.0:
            return min(v / (1.0 - rho * rho), bound)
        beta = self.servers * rho

        def excess(var_s2: float) -> float:
            driven = gap_driven_var(self.mean_s, var_s2, self.servers, self.rate_per_s,
                                    beta, restart)  # fmt: skip
            return v + driven - var_s2

        if v >= bound or excess(bound) >= 0.0:
            return bound
        return brentq(excess, v, bound, xtol=_V_TOLERANCE_FRAC * self.mean_s**2)

    def biased_moments(self) -> tuple[float, float]:
        """(E[L*], E[L*²]) of the length-biased step, L gamma (E[L³] / E[L] =
        (S² + V)(S² + 2V) / S² for mean S, variance V)."""
        s, v = self.mean_s, self.variance_s2()
        if s <= 0:
            return 0.0, 0.0
        return s + v / s, (s * s + v) * (s * s + 2.0 * v) / (s * s)

    def empty_take_prob(self, rate_per_s: float) -> float:
        """P0: the chance an instance's take finds nothing waiting (module docstring);
        remembered per rate (a remembered law is asked again at its own rate)."""
        memo = self._p0_memo
        hit = memo.get(rate_per_s)
        if hit is None:
            if len(memo) >= _P0_MEMO:
                memo.clear()
            hit = memo[rate_per_s] = empty_take_prob(
                self.mean_s, self.variance_s2(), self.servers, rate_per_s
            )
        return hit

    @cached_property
    def _p0_memo(self) -> dict:
        return {}

    def gap_biased_moments(self) -> tuple[float, float]:
        """(E[G*], E[G*²]) of the length-biased gap between the pool's takes (the
        length-biased step itself for one instance)."""
        if self.servers <= 1:
            return self.biased_moments()
        g1, g2, g3 = gap_moments(self.mean_s, self.variance_s2(), self.servers)
        return (g2 / g1, g3 / g1) if g1 > 0 else (0.0, 0.0)


def all_busy_prob(servers: int, busy_frac: float) -> float:
    """π, the chance an arrival finds all c instances busy when each is busy a share u of
    the time: Erlang C at c u erlangs (u itself for one instance, PASTA). Not u^c: an empty
    queue idles several instances at once, so busy periods overlap. Against the simulator
    at the simulated u (c, u -> Erlang C / simulated): 4, 0.75 -> 0.50 / 0.47; 2, 0.50 ->
    0.33 / 0.32; 3, 0.73 -> 0.52 / 0.49 (agreement campaign seeds 66, 34, 11)."""
    if busy_frac >= 1.0:
        return 1.0
    if busy_frac <= 0.0:
        return 0.0
    return erlang_c(int(servers), servers * busy_frac)


def added_moments(law: StepLaw, busy_prob: float, others_rate_per_s: float,
                  mean_x_s: float, second_x_s2: float) -> tuple[float, float]:  # fmt: skip
    """(mean, second moment) of what batching adds to a request's wait (module docstring);
    `others_rate_per_s`: the pool's λ, already capped by what the budget leaves."""
    first, second = law.gap_biased_moments()
    lam = others_rate_per_s
    residual, residual_sq = first / 2.0, second / 3.0  # U G*, U uniform on [0, 1]
    others = lam * first * mean_x_s
    others_sq = lam * lam * mean_x_s**2 * second + lam * second_x_s2 * first
    cross = lam * mean_x_s * second / 2.0  # E[U G* X | G*] = (G* / 2) λ G* E[x]
    mean = busy_prob * (residual + others)
    return mean, busy_prob * (residual_sq + 2.0 * cross + others_sq)


def after_moments(law: StepLaw, busy_prob: float, others_rate_per_s: float,
                  mean_x_s: float, second_x_s2: float) -> tuple[float, float]:  # fmt: skip
    """(mean, second moment) of what the others that arrive after a request in its gap,
    until the take, add to its step: Poisson over the residual U G*, each adding x."""
    first, second = law.gap_biased_moments()
    lam, residual, residual_sq = others_rate_per_s, first / 2.0, second / 3.0
    mean = busy_prob * lam * residual * mean_x_s
    return mean, busy_prob * (lam * lam * mean_x_s**2 * residual_sq + lam * second_x_s2 * residual)


def gated_or_queued(base: WaitModel, mean_s: float, second_s2: float,
                    after=(0.0, 0.0)) -> WaitModel:  # fmt: skip
    """The wait: the full-step view (`base`, Allen-Cunneen at full-step cost: the queue
    ahead of the request, then the others that join its step after it, `after`'s mean and
    second moment, independent) or the gate's (the residual and every other of its step),
    whichever is longer on average, as the one wait model with that mean and second moment
    (p = 2m²/M2, capped at 1, rate 2m / M2). Both count the queue ahead: the full-step
    view as work at full steps, the gate's as the next step's content; at full steps the
    queue outgrows one step and the full-step view holds it."""
    b_mean = base.mean_s()
    b_second = 2.0 * base.prob_wait / base.decay_rate_per_s**2 if not base.is_zero else 0.0
    a_mean, a_second = after
    queued = (b_mean + a_mean, b_second + 2.0 * b_mean * a_mean + a_second)
    chosen = (mean_s, second_s2) if mean_s > queued[0] else queued
    m, m2 = chosen
    if m <= 0 or not (m2 > 0 and math.isfinite(m2)):
        return base
    if chosen is queued and a_mean <= 0:
        return base
    prob = min(1.0, 2.0 * m * m / m2)
    if prob <= 0.0:  # a mean so small beside its second moment that m² underflows
        return base
    return WaitModel(prob, prob / m)
