"""Admission to a decode role: how many requests an instance holds (slots, from the KV
bytes of the requests it holds), and the wait for a free slot.

An engine admits a request when its KV blocks fit beside those of the requests running.
A request's blocks grow as it decodes; here it counts for its life-average, prompt + half
its output (an engine that reserves the maximum output, `engine.reserve_max_output`,
counts prompt + that maximum). Growth and the engine's retraction of a request when the
blocks run out are not modelled. Requests in service are sampled by how long they stay (a
request that decodes twice as many tokens is twice as likely to be found running), so
the bytes an instance holds per request are the hold-weighted mean, and its slot count

    K = min(KV bytes free beside the weights / hold-weighted mean, count cap)

per KV pool: the whole instance under tensor parallelism, each GPU under expert
parallelism (a request's KV lives on one GPU, as roofline `max_batch` counts it).

where the count cap is the batch whose step reaches the TPOT limit. A role of n instances
is then a queue with n x K servers, the service time of a request its output tokens x the
step time (Allen-Cunneen G/G/c, the service variability from the output-length mix); the
wait for a free slot is added to the TTFT of the requests whose first token that role
emits. Bias: the pooled queue takes a slot anywhere in the role as free for everyone
(least-loaded dispatch comes close to it); a reservation of the final context admits
fewer requests than a pool holding the sizes exactly (bin packing of a few requests per
GPU leaves room unused: the simulator packs them, benchmarks/agreement.py measures it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.queueing.queueing import WaitModel, ggc_wait


def reserved_tokens(input_tokens, output_tokens, reserve_output_tokens: float | None):
    """Tokens of KV a request counts for while it holds a slot: its prompt + half its
    output (the life-average of blocks that grow as it decodes), or its prompt + the
    engine's reserved output (`reserve_output_tokens`, the workload's maximum)."""
    if reserve_output_tokens is None:
        return np.asarray(input_tokens, float) + np.asarray(output_tokens, float) / 2
    return np.asarray(input_tokens, float) + float(reserve_output_tokens)


def slots_per_instance(
    instance, reserved_tokens_: np.ndarray, hold_weights: np.ndarray, count_cap: int
) -> int:
    """K: requests one instance holds at the hold-weighted mean reservation, at most
    `count_cap` (0 when not one fits)."""
    mass = float(hold_weights.sum())
    if mass <= 0:
        return int(count_cap)
    per_request = instance.held_kv_bytes(np.maximum(np.round(reserved_tokens_), 1).astype(np.int64))
    mean_bytes = float(np.dot(hold_weights, per_request)) / mass
    capacity = instance.kv_capacity_bytes()
    if capacity <= 0 or mean_bytes <= 0:
        return 0
    bins = kv_bins(instance)
    return int(min(bins * ((capacity / bins) // mean_bytes), count_cap))


def kv_bins(instance) -> int:
    """Separate KV pools of an instance: with expert parallelism each request's KV lives
    whole on one GPU (roofline `max_batch`), so each GPU is its own pool."""
    return instance.gpus if instance.parallel_mode() == "ep" else 1


@dataclass(frozen=True)
class Admission:
    """The slot queue of one role at one arrival rate."""

    servers: int  # n x K
    offered_erlangs: float  # arrival rate x mean service
    wait: WaitModel

    @property
    def load_frac(self) -> float:
        return self.offered_erlangs / self.servers if self.servers else 0.0


def admission_wait(
    arrival_rate_per_s: float,
    service_s: np.ndarray,
    weights: np.ndarray,
    servers: int,
    cv2_arrival: float,
    what: str,
) -> Admission:
    """Wait for one of `servers` slots; `service_s` and `weights` per request class."""
    share = float(weights.sum())
    if share <= 0 or arrival_rate_per_s <= 0:
        return Admission(max(servers, 1), 0.0, WaitModel.none())
    mean = float(np.dot(weights, service_s)) / share
    cv2 = float(np.dot(weights, (service_s - mean) ** 2)) / share / mean**2 if mean > 0 else 0.0
    rate = arrival_rate_per_s * share
    wait = ggc_wait(rate, mean, max(servers, 1), cv2_arrival, cv2, what=what)
    z = (cv2_arrival + cv2) / 2
    if not wait.is_zero and z > 0:
        # Many servers: Erlang-C is the Halfin-Whitt alpha(beta) of M/M/c; variable
        # arrivals and service act as beta / sqrt(z) (Whitt's heavy-traffic scaling), so
        # scale the chance of waiting by that ratio (1 for M/M/c).
        beta = (1.0 - rate * mean / servers) * math.sqrt(servers)
        log_ratio = _log_halfin_whitt(beta / math.sqrt(z)) - _log_halfin_whitt(beta)
        prob = wait.prob_wait * math.exp(min(log_ratio, 0.0 if z <= 1 else 700.0))
        wait = WaitModel(min(1.0, prob), wait.decay_rate_per_s)
    return Admission(servers, rate * mean, wait)


def _log_halfin_whitt(beta: float) -> float:
    """log P(wait) of M/M/c in the Halfin-Whitt regime, 1 / (1 + beta Phi(beta) / phi(beta)),
    in logs: far from saturation (beta above ~38) phi underflows to 0 while the ratio of two
    such chances stays finite."""
    if beta <= 0:
        return 0.0
    big_phi = 0.5 * (1 + math.erf(beta / math.sqrt(2)))
    log_r = math.log(beta * big_phi) + beta * beta / 2 + 0.5 * math.log(2 * math.pi)
    return -float(np.logaddexp(0.0, log_r))


def merge_waits(a: WaitModel, b: WaitModel) -> WaitModel:
    """One wait standing for two independent ones in sequence (the mixture quantiles take
    at most two): waits if either does, with the sum of their means."""
    if a.is_zero:
        return b
    if b.is_zero:
        return a
    prob = a.prob_wait + b.prob_wait - a.prob_wait * b.prob_wait  # exact for tiny ones too
    mean = a.mean_s() + b.mean_s()
    return WaitModel(prob, prob / mean) if prob > 0 and mean > 0 else WaitModel.none()


def support_max(distribution) -> float:
    """The largest value a workload distribution can draw (its upper edge)."""
    for name in ("value", "high"):
        if hasattr(distribution, name):
            return float(getattr(distribution, name))
    for name in ("highs", "values"):
        if hasattr(distribution, name):
            return float(max(getattr(distribution, name)))
    raise TypeError(f"no upper edge for {type(distribution).__name__}")


def count_cap(pool, context_tokens: float) -> int:
    """The count limit of a pool's batch: the TPOT-feasible batch where it binds before
    HBM at the mean context (`RolePool.batch_limit`), else none (KV bytes decide)."""
    hbm = pool.instance.max_batch(context_tokens)
    return int(pool.batch_limit) if 0 < pool.batch_limit < hbm else 10**9


def reserve_output_tokens(scenario) -> float | None:
    """The output an engine reserves KV for: the workload's maximum, or None (each
    request's own output)."""
    if not getattr(scenario.engine, "reserve_max_output", False):  # (an older Engine lacks it)
        return None
    return support_max(scenario.workload.output_tokens)
