"""Blocking in a loss system whose requests take different amounts of one capacity: the
stochastic knapsack (Kaufman 1981, Roberts 1981).

A relay-decode pool admits a request only if its KV fits in the bytes left; one that
does not is not queued (the router sends it P -> MD). With Poisson arrivals of each class
k at offered load a_k (arrival rate x mean hold) taking b_k units of a capacity of C, the
occupancy has a product form, insensitive to the hold distribution, and its distribution
q(j) over the units in use follows the Kaufman-Roberts recursion

    j q(j) = sum_k a_k b_k q(j - b_k),   q(0) = 1,

so a class-k request is blocked with probability sum_{j > C - b_k} q(j) / sum_j q(j): a long
prompt is turned away far more often than a short one (Erlang-B's one blocking for every
request is this with every b_k = 1). Capacities and sizes are counted in CAPACITY_UNITS
units of the capacity, each size rounded to the nearest unit (at least one): rounding up
would add up to a unit to a request of one or two units, half again its size.

Pure: numpy only.
"""

from __future__ import annotations

import math

import numpy as np

CAPACITY_UNITS = 1024  # the capacity's resolution (a size takes at least one unit)
_RESCALE_ABOVE = 1e200  # q is kept relative: rescaled before it overflows
NEVER_FULL_PROB = 1e-12  # below this chance of filling, no class is blocked


def knapsack_blocking(capacity: float, sizes: np.ndarray, loads: np.ndarray) -> np.ndarray:
    """Per class, the chance an arrival finds less than its size free. `capacity` and
    `sizes` in one unit (bytes); `loads`: offered load of each class (Erlangs). A class
    larger than the whole capacity is always blocked."""
    sizes, loads = np.asarray(sizes, float), np.asarray(loads, float)
    if capacity <= 0:
        return np.ones(len(sizes))
    unit = capacity / CAPACITY_UNITS
    units = np.maximum(np.rint(sizes / unit), 1).astype(np.int64)
    fits = sizes <= capacity
    # the recursion needs the load of each size once
    size_load = np.bincount(units[fits], weights=loads[fits], minlength=CAPACITY_UNITS + 1)
    blocked = np.where(fits, 0.0, 1.0)
    if _never_full(size_load, int(units[fits].max(initial=0))):
        return blocked
    q = _occupancy(size_load)
    above = np.concatenate([np.cumsum(q[::-1])[::-1], [0.0]])  # above[j] = sum_{i >= j} q(i)
    free_from = CAPACITY_UNITS - units[fits] + 1  # occupancies from here leave too little
    blocked[fits] = above[free_from] / above[0]
    return blocked


def _never_full(size_load: np.ndarray, largest: int) -> bool:
    """Whether the occupancy, were the capacity unlimited (a compound Poisson sum), reaches
    the capacity less the largest size with a chance below NEVER_FULL_PROB, by the
    Chernoff bound P(X >= x) <= exp(-θ x + sum_k a_k (e^(θ b_k) - 1)), the best θ of a
    grid: then every class is kept (within that chance) and the recursion is skipped."""
    x = len(size_load) - 1 - largest
    if x <= 0:
        return False
    b = np.flatnonzero(size_load)
    a = size_load[b]
    thetas = np.geomspace(1e-4, 50.0, 64) / max(float(b.max(initial=1)), 1.0)
    with np.errstate(over="ignore"):
        exponent = -thetas * x + (a[None, :] * np.expm1(thetas[:, None] * b[None, :])).sum(1)
    return float(exponent.min()) < math.log(NEVER_FULL_PROB)


def _occupancy(size_load: np.ndarray) -> np.ndarray:
    """q(0..C) of the recursion, normalised to sum 1 (size_load[b]: the load of size b)."""
    capacity = len(size_load) - 1
    sizes = np.flatnonzero(size_load)
    weights = size_load[sizes] * sizes  # a_k b_k
    q = np.zeros(capacity + 1)
    q[0] = 1.0
    for j in range(1, capacity + 1):
        back = j - sizes
        ok = back >= 0
        q[j] = float(weights[ok] @ q[back[ok]]) / j
        if q[j] > _RESCALE_ABOVE:
            q[: j + 1] /= q[j]
    return q / q.sum()
