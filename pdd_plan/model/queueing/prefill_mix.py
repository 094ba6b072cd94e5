"""The workload's prefill as chunk rows on one instance with a token budget (one step over
several chunks: prefill_step.py) (the mechanism: model/queueing/prefill_batch.py's docstring).

The planner asks the same pool at many rates, from many equal Instance objects, and a
rate's operating batch is a fixed point that evaluates the step law at a dozen token
counts; so the figures are remembered, each keyed on everything it depends on:
- the mix per (instance fields, the model object, budget, the classes' token counts and
  weights): equal instances share it;
- inside a mix (its fields fixed): the step figures per token count b, the step law per
  (tokens per second, b, servers), whatever a caller keeps per its own key (the pool per
  rate, prefill_batch.prefill_queue). Each memo is bounded (cleared when full).
The step figures at a new b come from one vectorised step over b, b - n̄ and the mix's
distinct chunk rows (the workload's classes differ by output length too, which prefill
does not see), the same elementwise arithmetic as the scalar `step_s` / `own_s` it
replaces (tests/unit/test_prefill_batch_fast.py holds them equal).

Pure: numpy and scipy only, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import cached_property

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaincinv

from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.queueing import prefill_gate as gate
from pdd_plan.model.queueing.prefill_step import (
    COMPOSITION_POINTS,
    COMPOSITION_PROBS,
    MIN_COMPOSITION_CV2,
    chunk_parts,
    step_s,
)

# The operating batch to 1e-5 of the budget (under 6 tokens at the largest default
# budget, 32 GPUs x 16,384; its step to the same fraction of a full step).
_FIXED_POINT_TOL_FRAC = 1e-5
# Mixes remembered per process: a solve meets a few instance shapes per role (5 on the
# default scenario's PDD solve, 9 on pdd-paper's, 27 for its three architectures); a
# sweep starts afresh once past this.
_MIX_MEMO_LIMIT = 32
# Entries of each memo inside a mix (step figures, step laws, pools): a solve asks up to
# about 1,300 token counts of one mix (pdd-paper's PDD solve). At most 32 mixes x 3 x
# 2,048 entries of under 1 kB: about 130 MB worst case; 11 MB measured (tracemalloc, with
# the gate's memos) after pdd-paper's PDD solve.
_ENTRY_MEMO_LIMIT = 2048


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


def remember(store: dict, key, compute: Callable):
    """`store[key]`, from `compute()` on a miss; the store starts afresh when full."""
    hit = store.get(key)
    if hit is None:
        if len(store) >= _ENTRY_MEMO_LIMIT:
            store.clear()
        hit = store[key] = compute()
    return hit


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
    distinct_rows: np.ndarray  # one row of each distinct chunk
    row_distinct: np.ndarray  # each row's index into distinct_rows
    # per kind ("point", "law", a caller's): key -> figure (module docstring)
    memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def build(cls, inst: Instance, uncached, cached, weight, budget_tokens: int) -> PrefillMix:
        w = np.asarray(weight, dtype=float)
        w = w / w.sum()
        row_class, new, cached_rows = chunk_rows(uncached, cached, budget_tokens)
        # each distinct (new, cached) chunk once (the classes differ by output length too)
        pairs = np.stack([new, cached_rows], axis=1)
        _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        compute_s, kv_bytes = (
            v[inverse] for v in chunk_parts(inst, new[first], cached_rows[first])
        )
        rw = w[row_class]
        return cls(inst, int(budget_tokens), w, row_class, new, compute_s, kv_bytes,
                   float(rw @ new), float(rw @ (new > 0)), float(rw @ compute_s),
                   float(rw @ kv_bytes), first, inverse)  # fmt: skip

    def remember(self, kind: str, key, compute: Callable):
        """`compute()` once per (`kind`, `key`) for this mix (bounded)."""
        return remember(self.memo.setdefault(kind, {}), key, compute)

    @cached_property
    def request_tokens(self) -> np.ndarray:
        """Each class's uncached tokens (its chunks summed)."""
        return np.bincount(self.row_class, weights=self.row_new, minlength=len(self.weight))

    @property
    def mean_chunk_tokens(self) -> float:
        """n̄: the mean chunk, what a step holds at the least."""
        return self.mean_tokens / self.mean_chunks if self.mean_chunks > 0 else 0.0

    def mean_mix_step_s(self, tokens: float) -> float:
        """A step of `tokens` tokens of the mean mix (b / N̄ requests' worth)."""
        b = float(tokens)
        q = b / self.mean_tokens if self.mean_tokens > 0 else 0.0
        return float(step_s(self.inst, q * self.mean_compute_s, q * self.mean_kv_bytes, b,
                            q * self.mean_chunks))  # fmt: skip

    def step_s(self, tokens: float) -> float:
        """S(b): the mean step of `tokens` tokens over the steps' compositions, not the step
        of the mean composition. A step lasts the larger of its compute and its memory
        time, so a mix of short prompts (the weight read dominates) and a few long ones
        (compute dominates) steps longer on average than its mean request:
        E[max(C, M)] > max(E[C], M). A step of b tokens is one chunk drawn from the mix
        (each distinct chunk at its share) and the rest, b - n̄ tokens' worth of the mean
        mix whose compute is a Poisson number of chunks' (mean q E[c], variance q E[c²],
        taken as gamma at COMPOSITION_POINTS equal-chance points). One Llama-3.1-70B
        instance on 134 uncached tokens a request, a few of 8,192 (agreement campaign seed
        33): a one-request step 0.0278 s (simulated 0.0277), 0.0219 s at the mean
        request; two requests 0.0366 s (0.0354)."""
        b = float(tokens)
        if b <= 0 or self.mean_tokens <= 0:
            return self.mean_mix_step_s(b)
        return self.remember("step", b, lambda: self._composed_step_s(b))

    def _composed_step_s(self, b: float) -> float:
        if b < self.mean_chunk_tokens * (1.0 - 1e-9):  # less than a chunk: the mean mix
            return self.mean_mix_step_s(b)
        rest = max(b - self.mean_chunk_tokens, 0.0)
        q = rest / self.mean_tokens
        mean = q * self.mean_compute_s
        # a compound Poisson sum of q N chunks: variance q N E[c²]
        second = q * self.mean_chunks * self._chunk_compute_second_moment
        if mean <= 0 or second <= MIN_COMPOSITION_CV2 * mean * mean:
            compute = np.full(1, mean)
        else:
            shape, scale = mean * mean / second, second / mean
            compute = gammaincinv(shape, COMPOSITION_PROBS) * scale  # the gamma law's points
            if not (np.all(np.isfinite(compute)) and compute.mean() > 1e-6 * mean):
                # a shape so small that the points miss the mass: one lump at the top
                compute = np.zeros(COMPOSITION_POINTS)
                compute[-1] = mean
            compute *= mean / compute.mean()  # the points keep the mean exactly
        new, c_s, kv, weight = self._first_chunks
        steps = step_s(
            self.inst,
            (c_s[:, None] + compute[None, :]).ravel(),
            np.repeat(kv + q * self.mean_kv_bytes, len(compute)),
            np.repeat(new + rest, len(compute)),
            np.repeat(1.0 + q * self.mean_chunks, len(compute) * len(new)),
        )
        steps = np.asarray(steps, dtype=float).reshape(len(new), len(compute))
        return float(weight @ steps.mean(axis=1))

    @cached_property
    def _first_chunks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(new tokens, compute, KV bytes, share) of each distinct chunk with tokens, the
        share over chunks (a class's weight on each of its chunks)."""
        share = np.bincount(self.row_distinct, weights=self.weight[self.row_class],
                            minlength=len(self.distinct_rows))  # fmt: skip
        pick = self.distinct_rows
        keep = self.row_new[pick] > 0
        share = share[keep] / share[keep].sum() if share[keep].sum() > 0 else share[keep]
        return (self.row_new[pick][keep], self.row_compute_s[pick][keep],
                self.row_kv_bytes[pick][keep], share)  # fmt: skip

    @cached_property
    def _chunk_compute_second_moment(self) -> float:
        """E[c²] of one chunk's compute, over chunks (a class's weight on each chunk)."""
        w = self.weight[self.row_class]
        return float(w @ self.row_compute_s**2 / w.sum()) if w.sum() > 0 else 0.0

    def full_step_cost_s(self) -> float:
        """s_full: a mean request's share of a full step, S(B) N̄ / B."""
        return self._chord[1] * self.mean_tokens / self.budget_tokens

    def capacity_rps(self) -> float:
        """Requests per second one instance prefills in full steps."""
        cost = self.full_step_cost_s()
        return math.inf if cost <= 0 else 1.0 / cost

    def added_s(self, tokens: float) -> np.ndarray:
        """x per class: what one more request adds to a step of `tokens` tokens, its own
        time in the step less the step of the mean mix without it (the first request of a
        step pays the weights and overheads), scaled to what a chunk adds over the steps'
        compositions (`_composed_margin`)."""
        n = self.mean_chunk_tokens
        beside = self.mean_mix_step_s(tokens - n) if tokens > n else 0.0
        rows = self._row_steps(tokens)
        own = np.bincount(self.row_class, weights=rows, minlength=len(self.weight))
        return np.maximum(own - beside, 0.0) * self._composed_margin(tokens, rows, beside)

    def point(self, tokens: float) -> tuple[float, float, float]:
        """(S(b), E[x], E[x²]) at b = `tokens`: `step_s(b)` and the class-weighted moments
        of `added_s(b)`, remembered per b."""
        b = float(tokens)
        return self.remember("point", b, lambda: self._point(b))

    def _point(self, b: float) -> tuple[float, float, float]:
        """`point` from one vectorised step over b - n̄ and the distinct rows, each element
        the arithmetic of `mean_mix_step_s` (b - n̄) or `own_s` (the rows); S(b) apart."""
        n = self.mean_chunk_tokens
        beside = b - n if b > n else 0.0
        q = beside / self.mean_tokens if self.mean_tokens > 0 else 0.0
        fill, new, chunk_compute_s, chunk_kv_bytes, chunks = self._rows_filled(b)
        rows = np.asarray(step_s(
            self.inst,
            np.concatenate(([q * self.mean_compute_s], chunk_compute_s)),
            np.concatenate(([q * self.mean_kv_bytes], chunk_kv_bytes)),
            np.concatenate(([beside], new + fill)),
            np.concatenate(([q * self.mean_chunks], chunks)),
        ), dtype=float)  # fmt: skip
        beside_s = float(rows[0]) if b > n else 0.0
        chunk_steps = rows[1:][self.row_distinct]
        own = np.bincount(self.row_class, weights=chunk_steps, minlength=len(self.weight))
        added = np.maximum(own - beside_s, 0.0) * self._composed_margin(b, chunk_steps, beside_s)
        return self.step_s(b), float(self.weight @ added), float(self.weight @ added**2)

    def _composed_margin(self, b: float, chunk_steps: np.ndarray, beside_s: float) -> float:
        """What one more chunk adds to a step over its compositions (`step_s`: the
        step of b + n̄ against that of b: an other joins a step that holds the request)
        over what it adds beside the mean mix: a step of
        short prompts bound by the weight read absorbs a short chunk, but over its
        compositions it is often compute-bound already, and then each chunk adds its
        compute (seed 33 of the campaign: S(2) - S(1) 0.0090 s, 0.0077 simulated, against
        0.0043 beside the mean mix). The classes' spread is kept; 1 below one chunk."""
        n = self.mean_chunk_tokens
        if b <= n:
            return 1.0
        w = self.weight[self.row_class]
        beside_mean = float(w @ np.maximum(chunk_steps - beside_s, 0.0)) / float(w.sum())
        if beside_mean <= 0:
            return 1.0
        return (self.step_s(b + n) - self.step_s(b)) / beside_mean

    def _rows_filled(self, tokens: float):
        """(fill, new, compute_s, kv_bytes, chunks) of each distinct row's step filled with
        the mean mix up to `tokens` (`own_s`), all but the fill before the fill's share."""
        pick = self.distinct_rows
        new = self.row_new[pick]
        fill = np.clip(min(tokens, self.budget_tokens) - self.mean_chunk_tokens, 0.0, None)
        fill = np.minimum(fill, self.budget_tokens - new)
        q = fill / self.mean_tokens
        return (fill, new, self.row_compute_s[pick] + q * self.mean_compute_s,
                self.row_kv_bytes[pick] + q * self.mean_kv_bytes,
                (new > 0) + q * self.mean_chunks)  # fmt: skip

    @cached_property
    def _chord(self) -> tuple[float, float, float]:
        """(S(n̄), S(B), dS/db): one chunk, a full step, the chord between them."""
        lone = self.step_s(self.mean_chunk_tokens)
        full = self.step_s(self.budget_tokens)
        span = self.budget_tokens - self.mean_chunk_tokens
        return lone, full, (full - lone) / span if span > 0 else 0.0

    def step_law(self, tokens_per_s: float, tokens: float, servers: int) -> gate.StepLaw:
        """The steps of the pool at b = `tokens` (prefill_gate.StepLaw): mean S(b), their
        composition variance (b / N̄) E[x²] (a Poisson number of requests, each adding x)
        and the per-instance feedback ρ = Λ dS/db, dS/db the chord from one chunk to a
        full step. Remembered per (Λ, b, c), with the variance it solves for."""
        key = (float(tokens_per_s), float(tokens), servers)
        return self.remember("law", key, lambda: self._step_law(*key))

    def _step_law(self, tokens_per_s: float, tokens: float, servers: int) -> gate.StepLaw:
        lone, full, slope = self._chord
        step, mean_x, second_x = self.point(tokens)
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
        """Tokens an instance's next step carries after steps of b = `tokens`: what waited
        for the take, and one chunk when the take found nothing and the instance idled
        until the next arrival (+ n̄ P0). Arrivals wait only when every instance is busy
        (chance π, `prefill_gate.all_busy_prob` at the busy share u = Λ S(b) / b), and each
        is taken by the next take, so the takes carry the share π of the tokens: π b per
        step (Λ S(b) for one instance, π = u). P0 = E[e^(-λ' G)] over the gap law, λ' the
        arrivals that find the other instances busy given this one is: λ π / u. With
        several instances, counting every arrival in an instance's step as its own (π = u)
        made the steps 32 % too long (4 instances at 73 %: 1.01 s against 0.76 s
        simulated; now 0.77 s)."""
        law = self.step_law(tokens_per_s, tokens, servers)
        rate = tokens_per_s * servers / self.mean_tokens if self.mean_tokens > 0 else 0.0
        busy = min(tokens_per_s * law.mean_s / tokens, 1.0) if tokens > 0 else 1.0
        waits = gate.all_busy_prob(servers, busy)
        thinned = rate * waits / busy if busy > 0 else rate
        return waits * tokens + self.mean_chunk_tokens * law.empty_take_prob(thinned)

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
        rows = self._row_steps(tokens)
        return np.bincount(self.row_class, weights=rows, minlength=len(self.weight))

    def _row_steps(self, tokens: float) -> np.ndarray:
        """Each row's step filled with the mean mix up to `tokens` (`own_s`)."""
        fill = np.clip(min(tokens, self.budget_tokens) - self.mean_chunk_tokens, 0.0, None)
        fill = np.minimum(fill, self.budget_tokens - self.row_new)
        q = fill / self.mean_tokens
        rows = step_s(self.inst, self.row_compute_s + q * self.mean_compute_s,
                      self.row_kv_bytes + q * self.mean_kv_bytes, self.row_new + fill,
                      (self.row_new > 0) + q * self.mean_chunks)  # fmt: skip
        return np.asarray(rows, dtype=float)

    @cached_property
    def alone_s(self) -> np.ndarray:
        """Each class's steps alone (`own_s` at one chunk per step), read-only."""
        own = self.own_s(self.mean_chunk_tokens)
        own.setflags(write=False)
        return own


_MIXES: dict = {}


def _mix_key(inst: Instance, classes, budget_tokens: int) -> tuple:
    """Everything `PrefillMix.build` reads: the instance's fields (its model by identity:
    a model is one catalogue object, and its memo lives on it, as the roofline's does),
    the budget and the classes' token counts and weights."""
    shape = tuple(id(v) if f.name == "model" else v for f in fields(inst)
                  for v in (getattr(inst, f.name),))  # fmt: skip
    counts = (classes.uncached_tokens, classes.cached_tokens, classes.weight)
    return (
        shape
        + (int(budget_tokens),)
        + tuple(np.ascontiguousarray(a, dtype=float).tobytes() for a in counts)
    )


def prefill_mix(inst: Instance, classes, budget_tokens: int) -> PrefillMix:
    """`PrefillMix.build` for `classes` (RequestClasses), remembered per value (module
    docstring): the planner asks the same pool at every rate it tries, from many equal
    Instance objects."""
    key = _mix_key(inst, classes, budget_tokens)
    hit = _MIXES.get(key)
    if hit is not None and hit.inst.model is inst.model:
        return hit
    if len(_MIXES) >= _MIX_MEMO_LIMIT:
        _MIXES.clear()
    mix = PrefillMix.build(
        inst, classes.uncached_tokens, classes.cached_tokens, classes.weight, budget_tokens
    )
    _MIXES[key] = mix
    return mix
