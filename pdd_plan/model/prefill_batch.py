"""Batched (chunked) prefill: one step over several requests' chunks, and the prefill pool
as a batch-service queue.

Engines run prefill in steps of at most a token budget (vLLM `max_num_batched_tokens`,
SGLang `chunked_prefill_size`): each step takes uncached tokens from the queue in arrival
order, splitting a prompt longer than what is left of the budget (its remainder stays at
the head of that instance's queue: its next chunk needs this chunk's KV), and runs all of
them in one forward pass that reads the weights once.

Step time (`step_s`): the roofline step (model/roofline.py) of the batch, built from the
same primitives: the linear FLOPs of all the step's tokens and each chunk's own attention
over its cached + new context add; the bytes are the weights the step's tokens touch, read
once, plus each chunk's cached KV read and new KV written; the communication is that of
all the step's tokens; the fixed overheads are paid once per step. One chunk alone gives
`Instance.prefill_time_s` exactly.

The pool at arrival rate λ over c instances (`pool`), budget B tokens per step:
- a request of n uncached tokens is ceil(n / B) chunks; the workload becomes chunk rows.
- a step of b tokens holds b / N̄ requests' worth of the mix (N̄: mean uncached tokens per
  request), so its time S(b) has the per-chunk parts of that many mean requests.
- operating batch (c gated batch servers on one queue, model/prefill_gate.py): an
  instance's step carries what arrived in the gap before its take (Λ S(b) per step,
  Λ = λ N̄ / c), or, when the take found nothing, the one chunk that ends its idle period:
  b = Λ S(b) + n̄ P0, P0 = E[e^(-λG)] the chance no request arrived in the gap G before a
  take, taken over the gap law of the steps at b (not at the mean step: short steps are
  common and often empty-handed, and each restart is carried into the following steps
  by the feedback, so the mean step is S(b) ≈ (s0 + slope n̄ P0) / (1 - ρ) for an affine
  S = s0 + slope b); the smallest fixed point in [n̄, B]. On `pdd-paper` with three
  instances at 90 % of full-step load: b 31,550 tokens, S(b) 0.27 s (simulated: 27,550,
  0.24 s; at the mean step, e^(-λ S(b)), 17,800 and 0.16 s).
- capacity: full steps, B / S(B) tokens/s per instance; per-request cost at capacity
  s_full = S(B) N̄ / B. The full-step view's wait is Allen-Cunneen G/G/c with mean
  service s_full (so the queue saturates where full steps no longer keep up).
- the gate's view (model/prefill_gate.py): a request that finds every instance busy
  (chance π by the flow of idle periods: each begins with an empty take, c u P0 / S(b)
  per second with u = Λ S(b) / b the busy share, and ends with an arrival that finds an
  instance idle, λ (1 - π) per second) waits for the next take from the pool (a uniform
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
from functools import cached_property

import numpy as np
from scipy.optimize import brentq

from pdd_plan.model import prefill_gate as gate
from pdd_plan.model.kernels import achievable_bytes_per_s, maximum, where
from pdd_plan.model.queueing import WaitModel, ggc_wait
from pdd_plan.model.roofline import Instance

# The operating batch to 1e-5 of the budget (under 6 tokens at the largest default
# budget, 32 GPUs x 16,384; its step to the same fraction of a full step).
_FIXED_POINT_TOL_FRAC = 1e-5
# Pools remembered per process (the planner asks the same pool at every rate it tries).
_MEMO_LIMIT = 64


def budget_tokens(inst: Instance, budget_per_gpu: int | None) -> int | None:
    """Tokens one prefill step of `inst` may carry (None: one request per step); the
    default per GPU and its source: model/scenario.py PREFILL_TOKEN_BUDGET_PER_GPU."""
    return None if budget_per_gpu is None else int(budget_per_gpu) * inst.gpus


# ---- one step over several chunks ----------------------------------------------------------
def chunk_parts(inst: Instance, new_tokens, cached_tokens) -> tuple[np.ndarray, np.ndarray]:
    """(compute seconds, KV bytes moved) each chunk adds to a step: its linear FLOPs and its
    attention over `cached` + `new` tokens; its cached KV read plus its new KV written."""
    new = np.rint(np.asarray(new_tokens, dtype=float))
    cached = np.rint(np.asarray(cached_tokens, dtype=float))
    # the roofline's own per-chunk terms (batch 0: no decode tokens in a prefill step)
    _, compute_s = inst._compute(0.0, 0.0, new, cached, 1.0)
    _, kv_bytes = inst._kv_moved_bytes(0.0, 0.0, new, cached, 1.0)
    return np.asarray(compute_s, dtype=float), np.asarray(kv_bytes, dtype=float)


def token_terms(inst: Instance, tokens):
    """(weight bytes read, communication seconds) of a step of `tokens` tokens: the parts
    set by the step's total tokens alone (weights per GPU in "ep", all GPUs in "tp")."""
    if inst._ep():
        return inst.ep_weight_read_bytes_per_gpu(tokens), inst._comm_s(tokens)
    return inst.weight_read_bytes(tokens), inst._comm_s(tokens)


def step_s(inst: Instance, compute_s, kv_bytes, tokens, prompts, terms=None):
    """One prefill step from its chunks' summed parts: `compute_s` and `kv_bytes` summed over
    the chunks, `tokens` their new tokens, `prompts` how many chunks (may be fractional: a
    mean mix); `terms`: `token_terms(inst, tokens)` when the caller has them. The weights
    the step's tokens touch are read once; 0 for no tokens."""
    weight_bytes, comm_s = token_terms(inst, tokens) if terms is None else terms
    bandwidth = achievable_bytes_per_s(inst.gpu)
    if inst._ep():
        memory_s = (weight_bytes + kv_bytes / inst.gpus) / bandwidth
    else:
        memory_s = (weight_bytes + kv_bytes) / (inst.gpus * bandwidth)
    parts = {"compute_s": compute_s, "memory_s": memory_s, "comm_s": comm_s}
    parts.update(step_overhead_s=inst.step_overhead_s, layer_s=inst.layer_latency_s())
    per_prompt = where(prompts > 0, tokens / np.maximum(prompts, 1e-300), 0.0)
    counts = {"decode_requests": 0.0, "prompts": prompts, "new_tokens": per_prompt}
    counts["groups"] = inst.gpus if inst._ep() else 1
    compute, memory, comm, overhead = inst.engine_profile.adjust(parts, counts)
    return where(tokens > 0, maximum(compute, memory) + comm + overhead, 0.0)


def batch_step_s(inst: Instance, new_tokens, cached_tokens) -> float:
    """Time of one prefill step over the chunks (new_tokens[i] after cached_tokens[i])."""
    new = np.atleast_1d(np.rint(np.asarray(new_tokens, dtype=float)))
    compute_s, kv_bytes = chunk_parts(inst, new, cached_tokens)
    prompts = float(np.count_nonzero(new > 0))
    return float(step_s(inst, float(compute_s.sum()), float(kv_bytes.sum()), new.sum(), prompts))


# ---- the workload as chunk rows --------------------------------------------------------------
def chunk_rows(uncached, cached, budget: int | None):
    """(class of each row, new tokens, cached tokens): class i as ceil(n_i / budget) chunks
    of at most `budget` tokens (one row with no budget, or no uncached tokens)."""
    n = np.rint(np.asarray(uncached, dtype=float))
    c = np.rint(np.asarray(cached, dtype=float))
    if budget is None:
        return np.arange(len(n)), n, c
    chunks = np.maximum(np.ceil(n / budget), 1).astype(np.int64)
    row_class = np.repeat(np.arange(len(n)), chunks)
    first = np.cumsum(chunks) - chunks
    index = np.arange(len(row_class)) - np.repeat(first, chunks)  # chunk number in its class
    done = index * float(budget)
    return row_class, np.minimum(n[row_class] - done, budget), c[row_class] + done


@dataclass(frozen=True)
class PrefillMix:
    """The workload's prefill on one instance with a token budget: chunk rows and the mean
    request's summed per-chunk parts."""

    inst: Instance
    budget_tokens: int
    weight: np.ndarray  # class weights (sum 1)
    row_class: np.ndarray
    row_new: np.ndarray
    row_compute_s: np.ndarray
    row_kv_bytes: np.ndarray
    mean_tokens: float  # N̄: uncached tokens per request
    mean_chunks: float  # chunks (with tokens) per request
    mean_compute_s: float  # summed over a mean request's chunks
    mean_kv_bytes: float

    @classmethod
    def build(cls, inst: Instance, uncached, cached, weight, budget_tokens: int) -> PrefillMix:
        w = np.asarray(weight, dtype=float)
        w = w / w.sum()
        row_class, new, cached_rows = chunk_rows(uncached, cached, budget_tokens)
        compute_s, kv_bytes = chunk_parts(inst, new, cached_rows)
        rw = w[row_class]
        return cls(inst, int(budget_tokens), w, row_class, new, compute_s, kv_bytes,
                   float(rw @ new), float(rw @ (new > 0)), float(rw @ compute_s),
                   float(rw @ kv_bytes))  # fmt: skip

    @property
    def mean_chunk_tokens(self) -> float:
        """n̄: the mean chunk, what a step holds at the least."""
        return self.mean_tokens / self.mean_chunks if self.mean_chunks > 0 else 0.0

    def step_s(self, tokens: float) -> float:
        """S(b): a step of `tokens` tokens of the mean mix (b / N̄ requests' worth)."""
        b = float(tokens)
        q = b / self.mean_tokens if self.mean_tokens > 0 else 0.0
        return float(step_s(self.inst, q * self.mean_compute_s, q * self.mean_kv_bytes, b,
                            q * self.mean_chunks))  # fmt: skip

    def full_step_cost_s(self) -> float:
        """s_full: a mean request's share of a full step, S(B) N̄ / B."""
        return float(self.step_s(self.budget_tokens)) * self.mean_tokens / self.budget_tokens

    def capacity_rps(self) -> float:
        """Requests per second one instance prefills in full steps."""
        cost = self.full_step_cost_s()
        return math.inf if cost <= 0 else 1.0 / cost

    def added_s(self, tokens: float) -> np.ndarray:
        """x per class: what one more request adds to a step of `tokens` tokens, its own
        time in the step less the step without it (the first request of a step pays the
        weights and overheads)."""
        n = self.mean_chunk_tokens
        beside = self.step_s(tokens - n) if tokens > n else 0.0
        return np.maximum(self.own_s(tokens) - beside, 0.0)

    @cached_property
    def _chord(self) -> tuple[float, float, float]:
        """(S(n̄), S(B), dS/db): one chunk, a full step, the chord between them."""
        lone, full = self.step_s(self.mean_chunk_tokens), self.step_s(self.budget_tokens)
        span = self.budget_tokens - self.mean_chunk_tokens
        return lone, full, (full - lone) / span if span > 0 else 0.0

    def step_law(self, tokens_per_s: float, tokens: float, servers: int) -> gate.StepLaw:
        """The steps of the pool at b = `tokens` (prefill_gate.StepLaw): mean S(b), their
        composition variance (b / N̄) E[x²] (a Poisson number of requests, each adding x)
        and the per-instance feedback ρ = Λ dS/db, dS/db the chord from one chunk to a
        full step."""
        lone, full, slope = self._chord
        step = self.step_s(tokens)
        added = self.added_s(tokens)
        second_x, mean_x = float(self.weight @ added**2), float(self.weight @ added)
        # the arrivals in the gap (a Poisson number: (Λ S(b) / N̄) E[x²]) and the chunk
        # that restarts an idle instance (one request's worth: (b - Λ S(b)) / N̄ Var(x))
        arrived = min(tokens_per_s * step, tokens)
        composition = (arrived * second_x + (tokens - arrived) * (second_x - mean_x**2)) / (
            self.mean_tokens if self.mean_tokens > 0 else math.inf
        )
        rate = tokens_per_s * servers / self.mean_tokens if self.mean_tokens > 0 else 0.0
        restart = slope * self.mean_chunk_tokens
        return gate.StepLaw(step, composition, tokens_per_s * slope, lone, full, servers,
                            rate, restart)  # fmt: skip

    def carried_tokens(self, tokens_per_s: float, tokens: float, servers: int = 1) -> float:
        """Tokens an instance's next step carries after steps of b = `tokens`: what arrived
        during the gap before its take, Λ S(b) per step, and one chunk when the take found
        nothing and the instance idled until the next arrival: + n̄ P0, P0 = E[e^(-λG)]
        over the gap law (prefill_gate; λ the pool's request rate)."""
        law = self.step_law(tokens_per_s, tokens, servers)
        rate = tokens_per_s * servers / self.mean_tokens if self.mean_tokens > 0 else 0.0
        return tokens_per_s * law.mean_s + self.mean_chunk_tokens * law.empty_take_prob(rate)

    def operating_tokens(self, tokens_per_s: float, servers: int = 1) -> float:
        """b: the smallest b in [n̄, B] that carries no more than itself (B when none:
        saturated). The carried tokens over b fall with b (S(b) / b falls): one crossing."""
        low, high = self.mean_chunk_tokens, float(self.budget_tokens)
        if low >= high or tokens_per_s <= 0:
            return min(low, high)

        def excess(tokens: float) -> float:
            return self.carried_tokens(tokens_per_s, tokens, servers) - tokens

        if excess(high) > 0:
            return high
        if excess(low) <= 0:
            return low
        return brentq(excess, low, high, xtol=_FIXED_POINT_TOL_FRAC * high)

    def own_s(self, tokens: float) -> np.ndarray:
        """Each class's prefill: the steps carrying its chunks, each filled with the mean mix
        up to `tokens` (the others' share b - n̄, at most what the budget leaves)."""
        fill = np.clip(min(tokens, self.budget_tokens) - self.mean_chunk_tokens, 0.0, None)
        fill = np.minimum(fill, self.budget_tokens - self.row_new)
        q = fill / self.mean_tokens
        rows = step_s(self.inst, self.row_compute_s + q * self.mean_compute_s,
                      self.row_kv_bytes + q * self.mean_kv_bytes, self.row_new + fill,
                      (self.row_new > 0) + q * self.mean_chunks)  # fmt: skip
        rows = np.asarray(rows, dtype=float)
        return np.bincount(self.row_class, weights=rows, minlength=len(self.weight))


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
    own = mix.own_s(mix.mean_chunk_tokens)  # each class's steps alone
    mean = float(mix.weight @ own)
    cv2 = float(mix.weight @ (own - mean) ** 2) / mean**2 if mean > 0 else 0.0
    base = ggc_wait(rate, s_full, servers, cv2_arrival, cv2, what=what)  # saturation here
    law = mix.step_law(tokens_per_s, b, servers)
    busy = _all_busy_prob(law, tokens_per_s, b, rate)
    added = mix.added_s(b)
    mean_x = float(mix.weight @ added)
    second_x = float(mix.weight @ added**2)
    mean_s, second_s2 = gate.added_moments(law, busy, _others_rate(mix, rate, law),
                                           mean_x, second_x)  # fmt: skip
    # a step with no room beside one chunk batches nothing: the one-at-a-time queue
    wait = gate.gated_or_queued(base, mean_s, second_s2) if _room(mix) > 0 else base
    return PrefillPool(own, wait, rate * s_full / servers, b)


def _all_busy_prob(law: gate.StepLaw, tokens_per_s: float, b: float, rate: float) -> float:
    """π, the chance an arrival finds every instance busy, by the flow of idle periods:
    each begins with an empty take (c u P0 / S(b) per second, u = Λ S(b) / b the busy
    share) and ends with an arrival that finds an instance idle (λ (1 - π) per second),
    so π = 1 - c u P0 / (λ S(b)); u for one instance. Here a take is empty unless an
    arrival in its gap found the other c - 1 instances busy too (an idle one takes it at
    once): P0 over arrivals thinned by u^(c-1). Idle periods cluster (an empty queue idles
    several instances at once), so this lies above u^c (independent instances): on
    `pdd-paper` with 3 instances at 90 %, 0.94 against 0.83 (simulated 0.93); 2 at 57 %
    (the default plan), 0.64 against 0.46 (0.67); 10 at 30 % (IDC-PD), 0.12 against 0
    (0.009: the thinning by u^(c-1) still overstates the gap's arrivals there)."""
    if b <= 0 or rate <= 0 or law.mean_s <= 0:
        return 0.0
    busy = min(1.0, tokens_per_s * law.mean_s / b)
    # an arrival in the gap waits for a take only if the other instances are busy too
    # (else an idle one takes it at once): the takes' arrivals thinned by u^(c-1)
    empty = law.empty_take_prob(rate * busy ** (law.servers - 1))
    takes_empty = law.servers * busy * empty / law.mean_s
    return min(max(1.0 - takes_empty / rate, 0.0), 1.0)


def _others_rate(mix: PrefillMix, rate: float, law: gate.StepLaw) -> float:
    """λ, the rate the others in a request's step arrive at over the length-biased gap
    between the pool's takes before it, capped so their mean number is at most what the
    budget leaves beside one chunk."""
    first, _ = law.gap_biased_moments()
    if first <= 0 or mix.mean_tokens <= 0:
        return 0.0
    return min(rate, _room(mix) / first)


def _room(mix: PrefillMix) -> float:
    """Requests' worth of the mix a step holds beside one mean chunk."""
    if mix.mean_tokens <= 0:
        return 0.0
    return max(mix.budget_tokens - mix.mean_chunk_tokens, 0.0) / mix.mean_tokens


_MEMO: dict = {}


def prefill_mix(inst: Instance, classes, budget_tokens: int) -> PrefillMix:
    """`PrefillMix.build` for `classes` (RequestClasses), memoised per (instance, classes,
    budget) object identity: the planner asks the same pool at every rate it tries."""
    key = (id(inst), id(classes), budget_tokens)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is inst and hit[1] is classes:
        return hit[2]
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    mix = PrefillMix.build(
        inst, classes.uncached_tokens, classes.cached_tokens, classes.weight, budget_tokens
    )
    _MEMO[key] = (inst, classes, mix)
    return mix


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
        p = pool(mix, rate, servers, cv2_arrival, what)
        return p.service_s, p.wait, p.utilization_frac
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
