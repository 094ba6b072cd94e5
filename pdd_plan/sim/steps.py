"""Roofline step times as fast lookups: the simulator asks for hundreds of thousands of
them, and one `Instance` call costs most of a millisecond. Each table is filled by one
vectorised call to the roofline and interpolated (linearly; the step times are smooth in
the context and near-linear in the token counts between grid points).
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from pdd_plan.model.compute.roofline import Instance

# Chunked prefill: a prompt is prefilled in chunks of at most this many tokens per GPU of
# the instance (DeepSeek's and SGLang's EP prefill servers run 16,384 tokens per GPU per
# pass; roofline.prefill_time_s cites the same figure).
PREFILL_CHUNK_TOKENS_PER_GPU = 16_384


def _axis(low: float, high: float, points: int, log: bool = False) -> np.ndarray:
    high = max(high, low + 1.0)
    grid = np.geomspace(max(low, 1.0), high, points) if log else np.linspace(low, high, points)
    return np.unique(np.round(grid))


def _weights(axis: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower grid index and the fraction towards the next point (clamped to the axis)."""
    x = np.clip(x, axis[0], axis[-1])
    i = np.clip(np.searchsorted(axis, x, side="right") - 1, 0, max(len(axis) - 2, 0))
    if len(axis) == 1:
        return i, np.zeros_like(x)
    return i, (x - axis[i]) / (axis[i + 1] - axis[i])


class PrefillTimes:
    """Prefill of `new` tokens after `cached` ones on one instance, chunked."""

    def __init__(self, instance: Instance, max_input_tokens: float):
        self.chunk_tokens = PREFILL_CHUNK_TOKENS_PER_GPU * instance.gpus
        self.new_axis = _axis(1, min(max_input_tokens, self.chunk_tokens), 160, log=True)
        self.cached_axis = _axis(0, max_input_tokens, 33)
        grid = instance.prefill_time_s(self.new_axis[:, None], self.cached_axis[None, :])
        self.table = np.asarray(grid, dtype=float)

    def _one_pass_s(self, new: np.ndarray, cached: np.ndarray) -> np.ndarray:
        i, fi = _weights(self.new_axis, new)
        j, fj = _weights(self.cached_axis, cached)
        t, n1, c1 = self.table, min(1, len(self.new_axis) - 1), min(1, len(self.cached_axis) - 1)
        return (
            t[i, j] * (1 - fi) * (1 - fj)
            + t[i + n1, j] * fi * (1 - fj)
            + t[i, j + c1] * (1 - fi) * fj
            + t[i + n1, j + c1] * fi * fj
        )

    def service_s(self, new_tokens: np.ndarray, cached_tokens: np.ndarray) -> np.ndarray:
        """Sum of the chunk passes of each request (one pass when it fits a chunk)."""
        new = np.asarray(new_tokens, float)
        cached = np.asarray(cached_tokens, float)
        total = np.zeros_like(new)
        chunks = np.ceil(new / self.chunk_tokens).astype(int)
        for k in range(int(chunks.max(initial=0))):
            m = chunks > k
            piece = np.minimum(new[m] - k * self.chunk_tokens, self.chunk_tokens)
            total[m] += self._one_pass_s(piece, cached[m] + k * self.chunk_tokens)
        return total


class DecodeSteps:
    """Decode step at batch 0..cap (exact integers) and mean context (interpolated), and
    the extend-decode step of a batch that absorbs e handed-off tokens (interpolated over
    batch, handed tokens and context)."""

    def __init__(
        self, instance: Instance, cap: int, context_low: float, context_high: float, max_handed=1
    ):
        self.cap = max(int(cap), 1)
        self.context_axis = _axis(max(context_low, 1.0), context_high, 33)
        batches = np.arange(self.cap + 1, dtype=float)
        grid = instance.decode_step_s(batches[:, None], self.context_axis[None, :])
        self.table = np.asarray(grid, dtype=float)
        self._ctx_list = self.context_axis.tolist()
        # extend steps: batch x handed tokens x context, one vectorised roofline call
        self._xb = _axis(1, self.cap, 24, log=True)
        self._xe = _axis(1, max(max_handed, 2), 48, log=True)
        self._xc = _axis(max(context_low, 1.0), context_high, 9)
        ext = instance.extend_decode_s(
            self._xb[:, None, None], self._xe[None, :, None], self._xc[None, None, :]
        )
        self._ext = np.asarray(ext, dtype=float).tolist()
        self._axes = [a.tolist() for a in (self._xb, self._xe, self._xc)]

    def step_s(self, batch: int, mean_context: float) -> float:
        a = self._ctx_list
        j, f = _locate(a, mean_context)
        row = self.table[min(batch, self.cap)]
        return float(row[j] * (1 - f) + row[min(j + 1, len(a) - 1)] * f)

    def extend_s(self, batch: int, handed_tokens: int, context: float) -> float:
        """One step of `batch` requests that also absorbs `handed_tokens` tokens of one of
        them after `context` tokens (`Instance.extend_decode_s`), trilinear in the grid."""
        (i, fi), (j, fj), (k, fk) = (
            _locate(a, x) for a, x in zip(self._axes, (batch, handed_tokens, context), strict=True)
        )
        t, total = self._ext, 0.0
        for di, wi in ((0, 1 - fi), (1, fi)):
            if wi == 0:
                continue
            for dj, wj in ((0, 1 - fj), (1, fj)):
                if wj == 0:
                    continue
                row = t[i + di][j + dj]
                total += wi * wj * (row[k] * (1 - fk) + (row[k + 1] * fk if fk else 0.0))
        return total


def _locate(axis: list[float], x: float) -> tuple[int, float]:
    """Lower grid index and fraction towards the next point (clamped to the axis)."""
    if len(axis) == 1:
        return 0, 0.0
    j = min(max(bisect_right(axis, x) - 1, 0), len(axis) - 2)
    return j, min(max((x - axis[j]) / (axis[j + 1] - axis[j]), 0.0), 1.0)
