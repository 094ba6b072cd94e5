"""One decode instance under continuous batching, stepped lazily.

Between two changes of its batch an instance runs identical steps back to back, so it is
kept as a segment: it started at step boundary k0 at time t0, its first step lasts
d_first (an extend-decode step when a handed-off request joined) and the others d. Requests
join and leave only at step boundaries; a request that joins at boundary k emits its
tokens at the ends of steps k+1, k+2, ... Every segment is recorded so that the time of
any step boundary can be looked up at the end of the run.

Times here are the instance's own clock: wall time, except for colocated instances, whose
decode clock stops while they prefill (`PausedClock`).
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_right

import numpy as np

_EPS = 1e-12


class PausedClock:
    """Wall time <-> decode time of an instance that pauses decoding for its prefills.

    Decode time v(t) = t - (prefill busy time before t); busy intervals are sorted and
    disjoint (one instance prefills one request at a time)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray):
        self.starts, self.ends = starts.tolist(), ends.tolist()
        busy = np.concatenate(([0.0], np.cumsum(ends - starts)))
        self.busy_before = busy.tolist()  # busy time before interval i
        self.v_starts = (starts - busy[:-1]).tolist()

    def to_decode(self, t: float) -> float:
        i = bisect_right(self.starts, t) - 1
        if i < 0:
            return t
        return t - self.busy_before[i] - (min(t, self.ends[i]) - self.starts[i])

    def to_wall(self, v: float) -> float:
        # a step that ends exactly when a prefill starts is emitted before it
        i = bisect_right(self.v_starts, v - _EPS) - 1
        return v if i < 0 else v + self.busy_before[i + 1]


class DecodeInstance:
    __slots__ = (
        "index", "slot", "clock", "t0", "k0", "d_first", "d", "busy", "batch", "ctx_base",
        "leaves", "pending", "pending_k", "version", "segments",
    )  # fmt: skip

    def __init__(self, index: int, clock: PausedClock | None = None, slot: int | None = None):
        self.index, self.clock = index, clock  # index: unique in the role
        self.slot = index if slot is None else slot  # position in its pool
        self.t0, self.k0, self.d_first, self.d = 0.0, 0, 0.0, 0.0
        self.busy = False
        self.batch = 0
        self.ctx_base = 0.0  # sum over the batch of (context at join - join step)
        self.leaves: list = []  # heap of (leave step, request), lazily invalidated
        self.pending: list = []  # joins waiting for the next boundary
        self.pending_k = -1
        self.version = 0
        # k0, t0, d_first, d, batch of each segment, flat: 40 bytes a segment, where a
        # tuple of five Python numbers took ~200
        self.segments = array("d")

    @property
    def load(self) -> int:
        return self.batch + len(self.pending)

    # ---- the step grid of the current segment --------------------------------------
    def time_of(self, k: int) -> float:
        return self.t0 + self.d_first + (k - self.k0 - 1) * self.d

    def steps_done_by(self, t: float) -> int:
        """Steps completed by time t (extrapolating the current segment)."""
        if not self.busy or t < self.t0 + self.d_first - _EPS:
            return self.k0
        return self.k0 + 1 + int(math.floor((t - self.t0 - self.d_first) / self.d + _EPS))

    def steps_done_at(self, t: float) -> int:
        """Steps completed by time t, also before the current segment (looked up in the
        recorded segments; an idle segment completes none)."""
        if t >= self.t0 or len(self.segments) < 10:
            return self.steps_done_by(t)
        k0, t0, d_first, d, batch = self.segment_arrays()
        i = int(np.searchsorted(t0, t, side="right")) - 1
        if i < 0:
            return int(k0[0])
        first_end = t0[i] + d_first[i]
        if batch[i] <= 0 or t < first_end - _EPS:
            return int(k0[i])
        done = int(k0[i]) + 1 + int(math.floor((t - first_end) / d[i] + _EPS))
        return min(done, int(k0[i + 1]))  # i is not the last segment: t < self.t0

    def next_boundary(self, t: float) -> int:
        """The first step boundary at or after t (the instance is busy)."""
        if t <= self.t0 + self.d_first + _EPS:
            return self.k0 + 1
        return self.k0 + 1 + int(math.ceil((t - self.t0 - self.d_first) / self.d - _EPS))

    def next_change(self, leave_of: dict) -> int | None:
        """The next boundary at which the batch changes (a leave or the pending joins)."""
        while self.leaves and leave_of.get(self.leaves[0][1]) != self.leaves[0][0]:
            heapq.heappop(self.leaves)
        k = self.leaves[0][0] if self.leaves else None
        if self.pending:
            k = self.pending_k if k is None else min(k, self.pending_k)
        return k

    def start_segment(self, k: int, t: float, d_first: float, d: float) -> None:
        self.k0, self.t0, self.d_first, self.d = k, t, d_first, d
        self.busy = self.batch > 0
        self.segments.extend((k, t, d_first, d, self.batch))

    def segment_arrays(self) -> tuple[np.ndarray, ...]:
        """Columns k0, t0, d_first, d, batch: views on the flat record (no copy; the
        instance records no more segments once they are taken)."""
        if not self.segments:
            return tuple(np.zeros(0) for _ in range(5))
        flat = np.frombuffer(self.segments, dtype=np.float64).reshape(-1, 5)
        return tuple(flat[:, c] for c in range(5))


def boundary_times(seg: tuple[np.ndarray, ...], steps: np.ndarray) -> np.ndarray:
    """Time of step boundaries `steps` (each > the first segment's k0) from the segments."""
    k0, t0, d_first, d, _ = seg
    i = np.searchsorted(k0, steps, side="left") - 1  # the last segment that began before
    i = np.clip(i, 0, max(len(k0) - 1, 0))
    return t0[i] + d_first[i] + (steps - k0[i] - 1) * d[i]
