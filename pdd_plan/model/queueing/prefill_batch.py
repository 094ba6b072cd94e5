"""Batched (chunked) prefill: one step over several requests' chunks, and the prefill pool
as a batch-service queue.

Engines run prefill in steps of at most a token budget (vLLM `max_num_batched_tokens`,
SGLang `chunked_prefill_size`): each step takes uncached tokens from the queue in arrival
order, splitting a prompt longer than what is left of the budget (its remainder stays at
the head of that instance's queue: its next chunk needs this chunk's KV), and runs all of
them in one forward pass that reads the weights once.

Step time (`step_s`): the roofline step (model/compute/roofline.py) of the batch, built from the
same primitives: the linear FLOPs of all the step's tokens and each chunk's own attention
over its cached + new context add; the bytes are the weights the step's tokens touch, read
once, plus each chunk's cached KV read and new KV written; the communication is that of
all the step's tokens; the fixed overheads are paid once per step. One chunk alone gives
`Instance.prefill_time_s` exactly.

The pool at arrival rate λ over c instances (`pool`), budget B tokens per step:
- a request of n uncached tokens is ceil(n / B) chunks; the workload becomes chunk rows.
- a step of b tokens holds b / N̄ requests' worth of the mix (N̄: mean uncached tokens per
  request), so its time S(b) has the per-chunk parts of that many mean requests.
- operating batch (c gated batch servers on one queue, model/queueing/prefill_gate.py): an arrival
  waits for a take only when every instance is busy (chance π: Erlang C at the busy share
  u = Λ S(b) / b, Λ = λ N̄ / c; u itself for one instance), so the takes carry the share π
  of the tokens, π b per step, and a take that found nothing restarts its idle instance
  with one chunk: b = π b + n̄ P0, P0 = E[e^(-λ' G)] the chance no waiting arrival came in
  the gap G before a take (λ' = λ π / u: the arrivals that find the others busy), taken
  over the gap law of the steps at b (not at the mean step: short steps are common and
  often empty-handed); the smallest fixed point in [n̄, B]. For one instance this is
  b = Λ S(b) + n̄ P0. With 4 Kimi-K2 instances at 73 % (agreement campaign seed 66):
  S(b) 0.77 s against 0.76 simulated (1.01 s when every arrival in an instance's step
  counted as its own, π = u).
- capacity: full steps, B / S(B) tokens/s per instance; per-request cost at capacity
  s_full = S(B) N̄ / B. The full-step view's wait is Allen-Cunneen G/G/c with mean
  service s_full (so the queue saturates where full steps no longer keep up) and the
  spread of the requests' tokens (each queues its tokens at the full step's cost), plus
  the others that join the request's step after it (the gate's view counts them; the
  queue ahead of it does not hold them).
- the gate's view (model/queueing/prefill_gate.py): a request that finds every instance busy
  (chance π, as above) waits for the next take from the pool (a uniform
  part of the length-biased gap between takes) and runs in the step that carries
  everything that arrived in that gap, each other request adding its x (its time in a
  step of b tokens less the step without it). The gap is the Palm interval of the c
  instances' superposed steps (phases independent), whose variance is the composition's
  amplified by the feedback of a long gap into a large next batch (weaker with more
  instances: another instance's take cuts the gap short; and where the pool idles often:
  a short gap still gathers one chunk). Its mean and second moment set the one wait
  model (0 or an exponential) with the same two moments: the co-batched share is
  heavy-tailed, so its P99 lies far above its mean.
- the wait is whichever of the two views is longer on average: they count the same
  requests (below full steps the queue is what the next step carries; at full steps it
  outgrows a step). TTFT per class = wait + the class's own steps alone.
With one chunk per step (B no larger than every request's tokens, identical requests)
everything above is the one-at-a-time G/G/c: S(b) = S(n̄), s_full = the service time and
no room for a second chunk, so the full-step view alone.

Pure: numpy and scipy only, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.queueing import prefill_gate as gate

# the step primitives live in model/queueing/prefill_mix.py; sim/prefill.py and the tests read
# them from here too (re-exported by the redundant aliases)
from pdd_plan.model.queueing.prefill_mix import PrefillMix, prefill_mix
from pdd_plan.model.queueing.prefill_mix import chunk_rows as chunk_rows
from pdd_plan.model.queueing.prefill_step import batch_step_s as batch_step_s
from pdd_plan.model.queueing.prefill_step import chunk_parts as chunk_parts
from pdd_plan.model.queueing.prefill_step import step_s as step_s
from pdd_plan.model.queueing.prefill_step import token_terms as token_terms
from pdd_plan.model.queueing.queueing import WaitModel, ggc_wait


def budget_tokens(inst: Instance, budget_per_gpu: int | None) -> int | None:
    """Tokens one prefill step of `inst` may carry (None: one request per step); the
    default per GPU and its source: model/scenario.py PREFILL_TOKEN_BUDGET_PER_GPU."""
    return None if budget_per_gpu is None else int(budget_per_gpu) * inst.gpus


@dataclass(frozen=True)
class PrefillPool:
    """The prefill pool at one rate: each class's own time, the wait, the load."""

    service_s: np.ndarray  # each class's own steps
    wait: WaitModel
    utilization_frac: float  # of the capacity in full steps
    step_tokens: float  # b, the mean tokens per step


def pool(mix: PrefillMix, rate: float, servers: int, cv2_arrival: float, what: str):
    """The pool of `servers` instances at `rate` requests/s (module docstring)."""
    s_full = mix.full_step_cost_s()
    tokens_per_s = rate * mix.mean_tokens / servers
    b = mix.operating_tokens(tokens_per_s, servers)
    own = mix.alone_s  # each class's steps alone
    # the full-step view queues each request's tokens at a full step's cost per token: its
    # spread is the tokens' (a long prompt holds the queue for its whole share of steps)
    tokens = mix.request_tokens
    cv2 = float(mix.weight @ (tokens - mix.mean_tokens) ** 2) / mix.mean_tokens**2
    base = ggc_wait(rate, s_full, servers, cv2_arrival, cv2, what=what)  # saturation here
    law = mix.step_law(tokens_per_s, b, servers)
    busy = _all_busy_prob(law, tokens_per_s, b, rate)
    _, mean_x, second_x = mix.point(b)  # E[x], E[x²] of `added_s(b)`
    others = _clustered(_others_rate(mix, rate, law), law, cv2_arrival)
    mean_s, second_s2 = gate.added_moments(law, busy, others, mean_x, second_x)
    after = gate.after_moments(law, busy, others, mean_x, second_x)
    # a step with no room beside one chunk batches nothing: the one-at-a-time queue
    wait = gate.gated_or_queued(base, mean_s, second_s2, after) if _room(mix) > 0 else base
    return PrefillPool(own, wait, rate * s_full / servers, b)


def _all_busy_prob(law: gate.StepLaw, tokens_per_s: float, b: float, rate: float) -> float:
    """π, the chance an arrival finds every instance busy: Erlang C at the busy share
    u = Λ S(b) / b (prefill_gate.all_busy_prob), the same π the operating batch b is
    solved with (prefill_mix.carried_tokens), so the restarts balance the empty takes
    (n̄ P0 = (1 - π) b). It replaced the flow of idle periods with arrivals thinned by
    u^(c-1), which disagreed with the operating batch's own count: 0.62 against 0.47
    simulated for 4 instances at 73 % (now 0.55)."""
    if b <= 0 or rate <= 0 or law.mean_s <= 0:
        return 0.0
    return gate.all_busy_prob(law.servers, min(1.0, tokens_per_s * law.mean_s / b))


def _others_rate(mix: PrefillMix, rate: float, law: gate.StepLaw) -> float:
    """λ, the rate the others in a request's step arrive at over the length-biased gap
    between the pool's takes before it, capped so their mean number is at most what the
    budget leaves beside one chunk."""
    first, _ = law.gap_biased_moments()
    if first <= 0 or mix.mean_tokens <= 0:
        return 0.0
    return min(rate, _room(mix) / first)


def _clustered(others_rate_per_s: float, law: gate.StepLaw, cv2_arrival: float) -> float:
    """The others' rate over a request's gap under renewal arrivals of squared coefficient
    of variation c²: given an arrival, the others expected in a window about it are the
    Poisson λ G* plus (c² - 1) (the renewal function's offset, m(x) ~ λx + (c² - 1) / 2 on
    each side of it: its cluster-mates when c² > 1), the offset capped by the chance the
    window holds anyone (1 - e^(-λ G*)) so a short gap gathers no phantom others."""
    first, _ = law.gap_biased_moments()
    if first <= 0 or cv2_arrival == 1.0:
        return others_rate_per_s
    poisson = others_rate_per_s * first
    offset = (cv2_arrival - 1.0) * (1.0 - math.exp(-poisson))
    return max(poisson + offset, 0.0) / first


def _room(mix: PrefillMix) -> float:
    """Requests' worth of the mix a step holds beside one mean chunk."""
    if mix.mean_tokens <= 0:
        return 0.0
    return max(mix.budget_tokens - mix.mean_chunk_tokens, 0.0) / mix.mean_tokens


def batching_applies(budget_per_gpu: int | None, architecture: str) -> bool:
    """Batched prefill is modelled for the prefill pools of the disaggregated architectures;
    colocated instances mix prefill chunks into decode steps (sim/aggregated.py), another
    mechanism, and keep one prefill at a time here."""
    return budget_per_gpu is not None and architecture != "colocated"


def prefill_queue(inst: Instance, classes, servers: int, rate: float, cv2_arrival: float,
                  budget_per_gpu: int | None, architecture: str):  # fmt: skip
    """(each class's prefill time, its wait, the pool's load) at `rate`: the batched pool
    when batching applies, else one request at a time (G/G/c, Allen-Cunneen)."""
    what = f"prefill ({servers} x {inst.gpus} {inst.gpu.id})"
    if batching_applies(budget_per_gpu, architecture):
        mix = prefill_mix(inst, classes, budget_tokens(inst, budget_per_gpu))
        # the search asks the same pool at the same rate from several bounds and checks
        p = mix.remember("pool", (rate, servers, cv2_arrival, what),
                         lambda: pool(mix, rate, servers, cv2_arrival, what))  # fmt: skip
        return p.service_s.copy(), p.wait, p.utilization_frac
    service = np.asarray(inst.prefill_time_s(classes.uncached_tokens, classes.cached_tokens))
    service = service.astype(float)
    mean = classes.mean(service)
    cv2 = classes.mean((service - mean) ** 2) / mean**2 if mean > 0 else 0.0
    wait = ggc_wait(rate, mean, servers, cv2_arrival, cv2, what=what)
    return service, wait, rate * mean / servers


def prefill_capacity_rps(inst: Instance, classes, budget_per_gpu, architecture) -> float:
    """Requests per second one instance prefills at most: full steps when batching applies,
    else 1 / the mean prefill time."""
    if batching_applies(budget_per_gpu, architecture):
        return prefill_mix(inst, classes, budget_tokens(inst, budget_per_gpu)).capacity_rps()
    service = np.asarray(inst.prefill_time_s(classes.uncached_tokens, classes.cached_tokens))
    mean = classes.mean(service.astype(float))
    return math.inf if mean <= 0 else 1.0 / mean
