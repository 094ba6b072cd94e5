"""Each simulated request's largest inter-token gap, from the recorded step segments.

A request on an instance emits its tokens at the ends of steps first .. last; the gaps
between them are the durations of steps first+1 .. last: the segments' step times, the
first step of a segment being an extend step where a handed-off request joined. On a
colocated instance a prefill that starts between a request's first and last token pauses
one of its steps for the prefill's length. Between the stages: MD's first token after
RLD's last (the one-shot handoff)."""

from __future__ import annotations

import numpy as np


class RangeMax:
    """Maximum of values[i..j] in O(1) after an O(n log n) sparse table."""

    def __init__(self, values: np.ndarray):
        self.levels = [np.asarray(values, float)]
        span = 1
        while 2 * span <= len(values):
            prev = self.levels[-1]
            self.levels.append(np.maximum(prev[:-span], prev[span:]))
            span *= 2

    def query(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """max(values[i..j]) per pair (inclusive); -inf where j < i."""
        i, j = np.asarray(i, np.int64), np.asarray(j, np.int64)
        out = np.full(len(i), -np.inf)
        ok = j >= i
        if not ok.any():
            return out
        length = j[ok] - i[ok] + 1
        level = np.floor(np.log2(length)).astype(np.int64)
        for lv in np.unique(level):
            sel = level == lv
            table = self.levels[lv]
            a, b = i[ok][sel], j[ok][sel] - (1 << lv) + 1
            vals = np.maximum(table[a], table[b])
            idx = np.flatnonzero(ok)[sel]
            out[idx] = vals
        return out


def instance_gaps_s(seg, first: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Largest step between the tokens of requests that emit `tokens` tokens from step
    `first` on (0 for a single token), in the instance's own clock."""
    k0, _, d_first, d, _ = seg
    last = first + tokens - 1
    start = np.searchsorted(k0, first + 1, side="left") - 1  # segment holding step first+1
    end = np.searchsorted(k0, last, side="left") - 1  # segment holding step last
    start, end = np.clip(start, 0, len(k0) - 1), np.clip(end, 0, len(k0) - 1)
    whole = np.maximum(d_first, d)
    head = np.where(k0[start] == first, whole[start], d[start])
    rest = RangeMax(whole).query(start + 1, end)
    return np.where(tokens > 1, np.maximum(head, rest), 0.0)


def pause_gaps_s(clock, first_s: np.ndarray, last_s: np.ndarray) -> np.ndarray:
    """Longest prefill that starts between a request's first and last token (0: none)."""
    starts = np.asarray(clock.starts, float)
    if not len(starts):
        return np.zeros(len(first_s))
    lengths = np.asarray(clock.ends, float) - starts
    i = np.searchsorted(starts, first_s, side="right")
    j = np.searchsorted(starts, last_s, side="left") - 1
    return np.maximum(RangeMax(lengths).query(i, j), 0.0)


def _measured(run) -> np.ndarray:
    n = len(run.trace.requests)
    return np.arange(n) >= min(int(run.config.warmup_frac * n), n - 1)


def measured_gaps_s(run) -> np.ndarray:
    """Largest gap of each measured request of more than one token (arrival order)."""
    tr = run.trace
    return tr.largest_gap_s[_measured(run) & (tr.requests.output_tokens > 1)]


def overflow_frac(run) -> float:
    """Share of the measured RLD-bound requests that found RLD full (P -> MD instead)."""
    tr = run.trace
    near = _measured(run) & (tr.path != 0)  # routing.DIRECT
    return float(tr.overflowed[near].mean()) if near.any() else 0.0
