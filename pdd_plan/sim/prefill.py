"""The prefill pool: one FCFS queue in front of c instances.

- `fcfs_pool`: each instance prefills one request at a time, the next request taken by
  the first free one (colocated, and any scenario with `engine.prefill_batching: false`).
- `batched_pool`: chunked prefill as engines run it. An instance, when free, builds one
  step of at most `budget` uncached tokens: first the next chunk of the request it has
  started (a chunk needs the previous chunk's KV, so a request stays on its instance),
  then requests that have arrived, in arrival order, each whole or, when it does not fit,
  its first part (its remainder stays at the head of that instance's queue). The step
  runs for `step_s(chunks)`, then the instance repeats. A request's prefill starts with
  the step carrying its first chunk and ends with the one carrying its last.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.queueing.prefill_batch import chunk_parts, step_s, token_terms


@dataclass(frozen=True)
class PrefillRun:
    start_s: np.ndarray  # when the request's prefill began (after queueing)
    end_s: np.ndarray
    instance: np.ndarray  # which instance prefilled it
    # batched: each step's (start, end, load weight); None: one request per step, each
    # request's [start, end] a step of weight 1
    steps: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def busy_s(self, window: tuple[float, float]) -> float:
        """Instance-seconds of prefill capacity the window used: the steps' overlap with
        it times their weight (`with_load`: batched steps count the time full steps would
        have taken for their tokens; 1 when one request is one step)."""
        start, end, fill = self.steps or (self.start_s, self.end_s, 1.0)
        low, high = window
        return float(
            (np.clip(np.minimum(end, high) - np.maximum(start, low), 0, None) * fill).sum()
        )


# per instance, (from, until): when it joins and leaves the pool (None: always there)
Windows = Sequence[tuple[float, float]] | None


def fcfs_pool(arrival_s: np.ndarray, service_s: np.ndarray, servers: int,
              windows: Windows = None) -> PrefillRun:  # fmt: skip
    """FCFS G/G/c: requests in arrival order, each to the instance that frees first
    (ties: the lowest index). `windows`: each instance's (from, until): it takes no
    request before `from` nor starts one at or after `until` (what it runs, it finishes)."""
    n = len(arrival_s)
    start = np.empty(n)
    instance = np.empty(n, dtype=np.int64)
    free = [(windows[i][0] if windows else 0.0, i) for i in range(servers)]
    heapq.heapify(free)
    arrivals, services = arrival_s.tolist(), service_s.tolist()
    for k in range(n):
        t_free, i = heapq.heappop(free)
        s = arrivals[k] if arrivals[k] > t_free else t_free
        while windows and s >= windows[i][1]:  # retired: not put back
            t_free, i = heapq.heappop(free)
            s = arrivals[k] if arrivals[k] > t_free else t_free
        start[k] = s
        instance[k] = i
        heapq.heappush(free, (s + services[k], i))
    return PrefillRun(start, start + service_s, instance)


StepTime = Callable[[Sequence[tuple[float, float]]], float]  # [(new, cached), ...] -> s


class _Pool:
    """State of `batched_pool`: the FCFS head, each instance's started request."""

    def __init__(self, arrival_s, new_tokens, cached_tokens, servers: int, budget: int):
        self.arrival = arrival_s.tolist()
        self.new = np.asarray(new_tokens, dtype=float).tolist()
        self.cached = np.asarray(cached_tokens, dtype=float).tolist()
        self.budget = float(budget)
        self.head = 0  # the first request no instance has taken
        self.carry: list[list | None] = [None] * servers  # [request, tokens done]
        n = len(self.arrival)
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.instance = np.full(n, -1, dtype=np.int64)

    def has_work(self, i: int, t: float) -> bool:
        waiting = self.head < len(self.arrival) and self.arrival[self.head] <= t
        return self.carry[i] is not None or waiting

    def build(self, i: int, t: float, take_new: bool = True):
        """The chunks of instance i's step at t and the requests it finishes (`take_new`
        False: only the request it has started, as a retiring instance does)."""
        chunks, finished, left = [], [], self.budget
        if self.carry[i] is not None:
            k, done = self.carry[i]
            take = min(self.new[k] - done, left)
            chunks.append((take, self.cached[k] + done))
            left -= take
            if done + take >= self.new[k]:
                finished.append(k)
                self.carry[i] = None
            else:
                self.carry[i] = [k, done + take]
        n = len(self.arrival)
        while take_new and self.head < n and self.arrival[self.head] <= t:
            k = self.head
            if left <= 0 and self.new[k] > 0:
                break
            take = min(self.new[k], left)
            self.head += 1
            self.start[k], self.instance[k] = t, i
            chunks.append((take, self.cached[k]))
            left -= take
            if take >= self.new[k]:
                finished.append(k)
            else:
                self.carry[i] = [k, take]
        return chunks, finished


def batched_pool(arrival_s: np.ndarray, new_tokens, cached_tokens, servers: int, budget: int,
                 step_time: StepTime, windows: Windows = None) -> PrefillRun:  # fmt: skip
    """Chunked, batched prefill over `servers` instances (module docstring); arrivals in
    order. An idle instance takes the next arrival; of several idle, the lowest index.
    `windows`: as fcfs_pool's (a retiring instance finishes the request it has started)."""
    pool = _Pool(arrival_s, new_tokens, cached_tokens, servers, budget)
    steps = array("d")  # start, end, tokens of every step in turn (flat: memory per step)
    later = [i for i in range(servers) if windows and windows[i][0] > 0]
    # (free at, instance) of instances running a step (or not yet there)
    busy: list[tuple[float, int]] = [(windows[i][0], i) for i in later]
    heapq.heapify(busy)
    idle = [i for i in range(servers) if i not in later]  # a heap of instance indices
    n = len(pool.arrival)

    def retired(i: int, t: float) -> bool:
        return bool(windows) and t >= windows[i][1]

    while pool.head < n or busy:
        t_busy = busy[0][0] if busy else float("inf")
        t_next = pool.arrival[pool.head] if pool.head < n else float("inf")
        if idle and t_next <= t_busy:
            t, i = t_next, heapq.heappop(idle)
            if retired(i, t):
                continue  # left the pool idle: dropped
        else:
            t, i = heapq.heappop(busy)
            if not pool.has_work(i, t) or (retired(i, t) and pool.carry[i] is None):
                if not retired(i, t):
                    heapq.heappush(idle, i)
                continue
        chunks, finished = pool.build(i, t, take_new=not retired(i, t))
        end = t + step_time(chunks)
        steps.extend((t, end, sum(new for new, _ in chunks)))
        for k in finished:
            pool.end[k] = end
        heapq.heappush(busy, (end, i))
    table = np.frombuffer(steps, dtype=float).reshape(-1, 3)
    record = (table[:, 0], table[:, 1], table[:, 2])  # tokens until `with_load`
    return PrefillRun(pool.start, pool.end, pool.instance, record)


def with_load(run: PrefillRun, full_step_s: float, budget: int) -> PrefillRun:
    """`run` with each step weighted by the time full steps take for its tokens over its
    own length (tokens x full_step_s / budget / length), so the busy share is the load
    against the pool's throughput in full steps: 1 when every step is full and they
    follow without pause, as at saturation, below that otherwise."""
    start, end, tokens = run.steps
    length = np.maximum(end - start, 1e-300)
    weight = np.where(end > start, tokens * full_step_s / budget / length, 0.0)
    return PrefillRun(run.start_s, run.end_s, run.instance, (start, end, weight))


class ChunkTable:
    """What one chunk adds to a prefill step (`prefill_batch.chunk_parts`: compute
    seconds, KV bytes), tabulated once over new tokens (log axis up to the budget) and
    cached tokens (linear up to the longest prompt) and interpolated bilinearly; the step
    itself is `prefill_batch.step_s` of the summed parts (weights read once)."""

    def __init__(self, instance: Instance, budget: int, max_input_tokens: float):
        self.instance, self.budget = instance, float(budget)
        self.seen = (0.0, 0.0, 0.0, 0.0)  # summed parts of every chunk stepped so far
        self.new_axis = _axis(np.geomspace(1.0, max(float(budget), 2.0), 160))
        self.cached_axis = _axis(np.linspace(0.0, max(max_input_tokens, 1.0), 33))
        new, cached = np.meshgrid(self.new_axis, self.cached_axis, indexing="ij")
        compute_s, kv_bytes = chunk_parts(instance, new, cached)
        self.compute_s, self.kv_bytes = compute_s.tolist(), kv_bytes.tolist()
        self.new_list, self.cached_list = self.new_axis.tolist(), self.cached_axis.tolist()
        # the weight bytes and communication a step's total tokens set, likewise
        self.tokens_list = _axis(np.geomspace(1.0, max(float(budget), 2.0), 400)).tolist()
        weight_bytes, comm_s = token_terms(instance, np.asarray(self.tokens_list))
        self.weight_bytes = np.broadcast_to(weight_bytes, len(self.tokens_list)).tolist()
        self.comm_s = np.broadcast_to(comm_s, len(self.tokens_list)).tolist()

    def _interp(self, table, i, fi, j, fj) -> float:
        i1, j1 = min(i + 1, len(self.new_list) - 1), min(j + 1, len(self.cached_list) - 1)
        return ((table[i][j] * (1 - fj) + table[i][j1] * fj) * (1 - fi)
                + (table[i1][j] * (1 - fj) + table[i1][j1] * fj) * fi)  # fmt: skip

    def full_step_s(self) -> float:
        """A step of a full budget of the chunks run so far (their summed parts scaled to
        the budget): the pool's full-step time for the mix it actually saw."""
        compute_s, kv_bytes, tokens, prompts = self.seen
        if tokens <= 0:
            return 0.0
        q = self.budget / tokens
        terms = self._token_terms(self.budget)
        return float(
            step_s(self.instance, q * compute_s, q * kv_bytes, self.budget, q * prompts, terms)
        )

    def _token_terms(self, tokens: float) -> tuple[float, float]:
        i, f = _locate(self.tokens_list, tokens)
        j = min(i + 1, len(self.tokens_list) - 1)
        weight = self.weight_bytes[i] * (1 - f) + self.weight_bytes[j] * f
        return weight, self.comm_s[i] * (1 - f) + self.comm_s[j] * f

    def step_s(self, chunks: Sequence[tuple[float, float]]) -> float:
        """Time of one step over `chunks` [(new, cached), ...]."""
        compute_s = kv_bytes = tokens = prompts = 0.0
        for new, cached in chunks:
            if new <= 0:
                continue
            i, fi = _locate(self.new_list, new)
            j, fj = _locate(self.cached_list, cached)
            compute_s += self._interp(self.compute_s, i, fi, j, fj)
            kv_bytes += self._interp(self.kv_bytes, i, fi, j, fj)
            tokens += new
            prompts += 1.0
        if tokens <= 0:
            return 0.0
        seen = self.seen
        self.seen = (seen[0] + compute_s, seen[1] + kv_bytes, seen[2] + tokens, seen[3] + prompts)
        terms = self._token_terms(tokens)
        return float(step_s(self.instance, compute_s, kv_bytes, tokens, prompts, terms))


def _axis(points: np.ndarray) -> np.ndarray:
    return np.unique(np.round(points))


def _locate(axis: list[float], x: float) -> tuple[int, float]:
    """Lower grid index and the fraction towards the next point (clamped to the axis)."""
    if x <= axis[0] or len(axis) == 1:
        return 0, 0.0
    if x >= axis[-1]:
        return len(axis) - 1, 0.0
    i = bisect_right(axis, x) - 1
    return i, (x - axis[i]) / (axis[i + 1] - axis[i])
