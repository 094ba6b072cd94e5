"""The roofline's memos and scalar fast path: how an `Instance` answers step queries fast.

The planner asks for thousands of scalar steps. A step whose arguments are all Python
numbers is assembled in plain floats by the same code as the vectorised one (the kernels'
primitives keep a float a float) and memoised per (batch, context, new, cached, prompts);
small vectorised calls are memoised per their arguments' bytes; the per-instance constants
and per-count FLOP and KV figures are memoised too. Every memo is bounded (it starts
afresh at its limit). The memos live in the model's private cache under the instance's
fields (`Instance.__post_init__`), so every `Instance` of the same (model, GPU, shape,
dtypes, profile) shares them.

`MemoisedSteps` is a mixin of `roofline.Instance`: it reads the instance's `_memo` (constants,
scalar steps, vector totals), `model`, `kv_dtype` and `_assemble`, the step's formula.
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import math

import numpy as np

from pdd_plan.model.compute.kernels import as_output, per_unique

STEP_KEYS = ("compute_s", "memory_s", "comm_s", "overhead_s", "total_s", "flops", "bytes")
# Memoised scalar steps per instance before the memo starts afresh (a sweep in one process
# meets many contexts; one solve stays far below this).
STEP_MEMO_LIMIT = 200_000
# Vectorised step times are memoised too (the planner asks the same per-class prefill
# times at every rate it tries) for arguments of at most this many elements each, this
# many calls per instance: at most 20 MB, in practice well under 1 MB.
VECTOR_MEMO_MAX_ELEMENTS = 2048
VECTOR_MEMO_LIMIT = 256
# KV bytes of arrays of at most this many token counts are looked up per count in the
# instance's memo (a numpy evaluation costs 50-100 us whatever the size below this).
KV_MEMO_MAX_ELEMENTS = 256


class MemoisedSteps:
    """The memoised step queries and per-instance figures of `roofline.Instance`."""

    def _const(self, key, compute):
        """`compute()` once per instance and `key` (figures fixed by the instance's fields)."""
        consts = self._memo[0]
        try:
            return consts[key]
        except KeyError:
            consts[key] = value = compute()
            return value

    def _kv_bytes(self, tokens, held: bool = False):
        """KV bytes of one request of `tokens` (whole) tokens; memoised per count for a
        float and for the elements of a small array (a step's classes recur). `held`: in
        the decode engine's layout (what a decoding request holds and its step reads)."""
        of = self._held_kv_bytes_of if held else self._kv_bytes_of
        if isinstance(tokens, float) and math.isfinite(tokens):
            return of(int(tokens))
        counts = np.asarray(tokens).astype(np.int64)
        if counts.size > KV_MEMO_MAX_ELEMENTS or not (counts >= 0).all():
            # refuses negative counts
            model = self.model.decode_kv_model() if held else self.model
            return model.kv_bytes(counts, self.kv_dtype, self.kv_tp_degree())
        if counts.ndim == 0:
            return of(int(counts))
        return self._per_unique(of, counts)

    def _per_unique(self, fn, *arrays):
        """`per_unique` of one of this instance's per-count figures, a small array's
        result memoised per its values (a step's classes recur at every batch)."""
        return per_unique(fn, *arrays, memo=self._const("per_unique", dict))

    def _kv_bytes_of(self, count: int) -> float:
        return self._const(
            ("kv_bytes", count),
            lambda: self.model.kv_bytes(count, self.kv_dtype, self.kv_tp_degree()),
        )

    def _held_kv_bytes_of(self, count: int) -> float:
        return self._const(
            ("held_kv_bytes", count),
            lambda: self.model.resident_kv_bytes(count, self.kv_dtype, self.kv_tp_degree()),
        )

    def _step(self, batch, context, new, cached, prompts=1.0) -> dict:
        """One forward pass: `batch` decode tokens at `context` plus `prompts` chunks of
        `new` tokens after `cached` ones. Arrays broadcast; each result is an array (a
        float when every argument is a finite Python or numpy number); a step with no
        tokens is no forward pass and costs 0."""
        key = _scalar_key(batch, context, new, cached, prompts)
        if key is not None:
            return dict(zip(STEP_KEYS, self._scalar_step(key), strict=True))
        return self._vector_step(batch, context, new, cached, prompts)

    def _step_total_s(self, batch, context, new, cached, prompts=1.0):
        """`_step(...)["total_s"]`: a float for numbers, an array for arrays."""
        key = _scalar_key(batch, context, new, cached, prompts)
        if key is not None:
            return self._scalar_step(key)[4]
        key = _vector_key(batch, context, new, cached, prompts)
        if key is None:
            return as_output(self._vector_step(batch, context, new, cached, prompts)["total_s"])
        vectors = self._memo[2]
        if key not in vectors:
            if len(vectors) >= VECTOR_MEMO_LIMIT:
                vectors.clear()
            step = self._vector_step(batch, context, new, cached, prompts)
            vectors[key] = as_output(step["total_s"])
        out = vectors[key]
        return out.copy() if isinstance(out, np.ndarray) else out  # callers may write to it

    def _scalar_step(self, key: tuple) -> tuple:
        """The STEP_KEYS figures of one step in plain floats, memoised per `key`."""
        steps = self._memo[1]
        if key not in steps:
            if len(steps) >= STEP_MEMO_LIMIT:
                steps.clear()
            batch, context, new, cached, prompts = key
            if min(batch, context, new, cached) < 0:
                raise ValueError("batch and token counts must be >= 0")
            if prompts < 0:
                raise ValueError("prompts must be >= 0")
            step = self._assemble(batch, context, new, cached, prompts, plain=True)
            steps[key] = tuple(float(step[k]) for k in STEP_KEYS)
        return steps[key]

    def _vector_step(self, batch, context, new, cached, prompts) -> dict:
        batch = np.asarray(batch, dtype=float)
        prompts = np.asarray(prompts, dtype=float)
        context, new, cached = (np.rint(np.asarray(v, dtype=float)) for v in (context, new, cached))
        if (batch < 0).any() or (new < 0).any() or (cached < 0).any() or (context < 0).any():
            raise ValueError("batch and token counts must be >= 0")
        if (prompts < 0).any():
            raise ValueError("prompts must be >= 0")
        return self._assemble(batch, context, new, cached, prompts)


def _scalar_key(batch, context, new, cached, prompts) -> tuple | None:
    """(batch, context, new, cached, prompts) as floats, token counts rounded half to even
    as `np.rint` does, when all five are finite numbers; None sends a call down the
    vectorised path (arrays, NaN, infinities)."""
    numbers = _NUMBERS
    if not (
        isinstance(batch, numbers)
        and isinstance(context, numbers)
        and isinstance(new, numbers)
        and isinstance(cached, numbers)
        and isinstance(prompts, numbers)
    ):
        return None
    b, c, n, k, p = float(batch), float(context), float(new), float(cached), float(prompts)
    # x - x is 0.0 for a finite x, NaN for an infinity or a NaN
    if b - b != 0.0 or c - c != 0.0 or n - n != 0.0 or k - k != 0.0 or p - p != 0.0:
        return None
    return (b, float(round(c)), float(round(n)), float(round(k)), p)


def _vector_key(*values) -> tuple | None:
    """The arguments of a vectorised call as (shape, float bytes) each, or None when they
    are too large to memoise."""
    arrays = [np.asarray(v, dtype=float) for v in values]
    if max(a.size for a in arrays) > VECTOR_MEMO_MAX_ELEMENTS:
        return None
    return tuple((a.shape, a.tobytes()) for a in arrays)


_NUMBERS = (int, float, np.integer, np.floating)
