"""What batching adds to a prefill request's wait: the step in progress and the others
co-batched with it, as a mean and a second moment, fitted into one wait model.

Mechanism (each instance a gated batch server fed its 1/c share of the arrivals, as the
operating batch b of model/prefill_batch.py): a request that finds every instance busy
(chance π) waits for the first to free, then runs in the step that carries everything
that arrived meanwhile. Both parts scale with the step L it arrived during, taken
length-biased (a request is likelier to arrive in a long step):
- the step length fluctuates from step to step, and a long step gathers a larger next
  batch (the arrivals during it), which makes the next step long: the batch is a
  branching process with immigration whose feedback per step is ρ = Λ dS/db (Λ tokens
  per second per instance, dS/db the time a step adds per token, the chord from one chunk
  to a full step). One step's content given its mean varies by the composition of the
  Poisson arrivals, v = (b / N̄) E[x²] (x: what one request adds to a step); the
  feedback amplifies it to Var(L) = v / (1 - ρ²) (stationary AR(1) variance). L lies in
  [S(n̄), S(B)] with mean S(b), so Var(L) <= (S(B) - S(b))(S(b) - S(n̄)) (Bhatia-Davis):
  0 at full steps (there the Allen-Cunneen wait at full-step cost holds the queue).
- length-biased moments, L taken as gamma with that mean and variance:
  E[L*] = E[L²] / E[L], E[L*²] = E[L³] / E[L].
- the wait for the first of c instances: a min of c uniform residuals of L*, its mean
  L* / (c + 1), second moment 2 L*² / ((c + 1)(c + 2)); the Allen-Cunneen term holds
  the one-chunk step's residual already, so the added part is that of L* - S(n̄).
- the others: Poisson with mean λ_i L* (λ_i = λ / c; at most what the budget leaves),
  each adding x: mean λ_i E[L*] E[x], second moment λ_i² E[x]² E[L*²] + λ_i E[x²] E[L*].
The added wait A (chance π) and the Allen-Cunneen wait W0 are summed as independent, and
the sum is the one wait model (0, or an exponential) with the same mean and second moment
(p = 2 m² / M2, rate = 2 m / M2): the co-batched share is heavy-tailed (a long prompt
among the others), so its tail decays slower than its mean alone says. With nothing added
the result is W0 exactly (the one-at-a-time G/G/c).

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdd_plan.model.queueing import WaitModel

# Feedback below 1 by this margin at least: ρ < the full-step load < 1 below saturation
# (S(b) / b falls with b), so this only guards rounding next to saturation.
_MAX_FEEDBACK = 1.0 - 1e-9


@dataclass(frozen=True)
class StepLaw:
    """The step a request arrives during: mean S(b), one step's composition variance v,
    the feedback ρ, and the bounds [S(n̄), S(B)]."""

    mean_s: float
    composition_var_s2: float
    feedback: float
    lone_s: float
    full_s: float

    def variance_s2(self) -> float:
        rho = min(max(self.feedback, 0.0), _MAX_FEEDBACK)
        amplified = self.composition_var_s2 / (1.0 - rho * rho)
        bound = max(self.full_s - self.mean_s, 0.0) * max(self.mean_s - self.lone_s, 0.0)
        return min(amplified, bound)

    def biased_moments(self) -> tuple[float, float]:
        """(E[L*], E[L*²]) of the length-biased step, L gamma (E[L³] / E[L] =
        (S² + V)(S² + 2V) / S² for mean S, variance V)."""
        s, v = self.mean_s, self.variance_s2()
        if s <= 0:
            return 0.0, 0.0
        return s + v / s, (s * s + v) * (s * s + 2.0 * v) / (s * s)


def added_moments(law: StepLaw, servers: int, busy_prob: float, others_rate_per_s: float,
                  mean_x_s: float, second_x_s2: float) -> tuple[float, float]:  # fmt: skip
    """(mean, second moment) of what batching adds to a request's wait (module docstring);
    `others_rate_per_s`: λ_i, already capped by what the budget leaves."""
    first, second = law.biased_moments()
    # the residual of the gap between takes, L* / c (c instances staggered over a step)
    c = float(servers)
    residual = first / (2.0 * c)
    residual_sq = second / (3.0 * c * c)
    lam = others_rate_per_s
    others = lam * first * mean_x_s
    others_sq = lam * lam * mean_x_s**2 * second + lam * second_x_s2 * first
    cross = lam * mean_x_s * second / (2.0 * c)  # E[R X | L] = (L / 2c) λ_i L E[x]
    mean = busy_prob * (residual + others)
    return mean, busy_prob * (residual_sq + 2.0 * cross + others_sq)


def gated_or_queued(base: WaitModel, mean_s: float, second_s2: float) -> WaitModel:
    """The wait: `base` (Allen-Cunneen at full-step cost) or the gate's (the added wait of
    that mean and second moment as the one wait model with them: p = 2m²/M2, capped at 1,
    rate 2m / M2), whichever is longer on average. Both count the same requests: the queue
    the full-step view builds is, below full steps, what the next step carries (the
    co-batched others); at full steps the queue outgrows one step and the full-step view
    holds it."""
    if mean_s <= base.mean_s() or not (second_s2 > 0 and math.isfinite(second_s2)):
        return base
    prob = min(1.0, 2.0 * mean_s * mean_s / second_s2)
    return WaitModel(prob, prob / mean_s)
