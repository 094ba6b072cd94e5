"""A pool of decode instances under continuous batching: the batch each instance runs
follows from Little's law, and the step time from the roofline at that batch.

Each instance holds B = (arrival rate per instance) x (tokens per request) x step
requests, where step is the step a request itself decodes in: at the batch it shares, the
others (B of them on average: an arrival sees the time average, PASTA, and so does the
request through its life in a stationary M/G/inf occupancy) plus itself, step(B + 1), at
most the slots. step rises with B, so B is the fixed point, found by bisection. No fixed
point below the batch that fits HBM means the pool is saturated. (Without the +1 a pool of
a few requests decodes faster than any of its requests can: 15 % too fast at 6.5.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import SaturatedError

_GRID_POINTS = 64


@dataclass(frozen=True)
class DecodeLoad:
    batch: float  # requests decoding at once on one instance
    step_s: float  # the step a request decodes in: the batch it shares, itself included
    max_batch: int  # the slots of one instance
    utilization_frac: float  # batch / max_batch: how full the slots are


def decode_fixed_point(
    instance,
    instances: int,
    arrival_rate_per_s: float,
    mean_tokens: float,
    mean_context_tokens: float,
    what: str,
    slots: int | None = None,
) -> DecodeLoad:
    """Solve B = lambda/n x tokens x step(B) on [0, slots] (roofline `instance`; `slots`:
    the requests an instance admits, decode_admission.slots_per_instance; None: the batch
    that fits HBM at the mean context)."""
    max_batch = instance.max_batch(mean_context_tokens) if slots is None else int(slots)
    demand = arrival_rate_per_s / max(instances, 1) * mean_tokens  # token-steps per second
    if demand <= 0:
        step = float(instance.decode_step_s(1, mean_context_tokens))
        return DecodeLoad(0.0, step, max_batch, 0.0)
    if max_batch < 1 or instances < 1:
        raise SaturatedError(f"{what} (no request fits in HBM)", demand, 0.0, "tokens/s")

    def own_step(batches: np.ndarray) -> np.ndarray:  # the step a request shares
        seen = np.minimum(batches + 1.0, float(max_batch))
        return np.asarray(instance.decode_step_s(seen, mean_context_tokens), dtype=float)

    def excess(batches: np.ndarray) -> np.ndarray:
        return demand * own_step(batches) - batches

    if excess(np.array([float(max_batch)]))[0] > 0:
        # tokens per second asked of one instance vs what a full batch delivers
        capacity = max_batch / float(instance.decode_step_s(max_batch, mean_context_tokens))
        raise SaturatedError(what, demand, capacity, "tokens/s per instance")
    # the excess falls through zero once: bracket it on a grid, twice, then interpolate
    # (a batch of exactly 0 runs no step at all: start just above it)
    low, high = 1e-6, float(max_batch)
    for _ in range(2):
        grid = np.linspace(low, high, _GRID_POINTS)
        values = excess(grid)
        first = int(np.argmax(values <= 0))
        low, high = grid[max(first - 1, 0)], grid[first]
    v_low, v_high = excess(np.array([low, high]))
    batch = high if v_low <= 0 or v_low == v_high else low + (high - low) * v_low / (v_low - v_high)
    step = float(own_step(np.array([batch]))[0])
    return DecodeLoad(batch, step, max_batch, batch / max_batch)
