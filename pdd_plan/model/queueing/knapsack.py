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

The recursion's q is the compound Poisson law of the occupancy cut at C (its generating
function is exp(sum_k a_k z^b_k)), so q(0..C) is read off by FFT in O(N log N) instead of
the recursion's C Python steps (0.2-0.7 ms a call against 1.8 ms; relay_load asks for it
on each of its passes at every rate the search evaluates). Where the offered units exceed
C, the law is first tilted (loads a_k rho^b_k, rho < 1, so that its mean is C): its mass
then lies around C, where the blocking is read, and q(j) = tilted(j) / rho^j. N, a power
of two, is chosen by the Chernoff bound so that the mass aliased from N and above is below
ALIAS_PROB.

Pure: numpy only.
"""

from __future__ import annotations

import math

import numpy as np

CAPACITY_UNITS = 1024  # the capacity's resolution (a size takes at least one unit)
ALIAS_PROB = 1e-20  # mass the FFT may fold back from beyond its length
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
    loads = size_load[sizes]
    log_rho = _tilt(loads, sizes, capacity)
    tilted = loads * np.exp(log_rho * sizes)
    n = _fft_length(tilted, sizes, capacity)
    spread = np.zeros(n)
    spread[sizes] = tilted
    law = np.fft.irfft(np.exp(np.fft.rfft(spread) - tilted.sum()), n)[: capacity + 1]
    # back from the tilt, in logs: rho^-C alone may overflow
    log_q = np.log(np.maximum(law, 1e-300)) - log_rho * np.arange(capacity + 1)
    q = np.exp(log_q - log_q.max())
    return q / q.sum()


def _tilt(loads: np.ndarray, sizes: np.ndarray, capacity: int) -> float:
    """log rho <= 0 with sum_k a_k b_k rho^b_k = C (0 when the offered units are within C).
    Newton on log(sum a b e^(x b)), convex and increasing in x, from a point where it is
    at or above log C (e^(x b) >= C / offered for every b <= the largest): the iterates
    fall to the root from above, never past it."""
    offered = float(loads @ sizes)
    if offered <= capacity:
        return 0.0
    x = math.log(capacity / offered) / float(sizes.max())
    for _ in range(200):
        w = loads * sizes * np.exp(x * sizes)
        mass = float(w.sum())
        step = (math.log(mass) - math.log(capacity)) * mass / float(w @ sizes)
        x -= step
        if step < 1e-12:
            break
    return x


def _fft_length(loads: np.ndarray, sizes: np.ndarray, capacity: int) -> int:
    """The least power of two N >= 2 (C + 1) with P(occupancy >= N) < ALIAS_PROB by the
    Chernoff bound (the best theta of a grid)."""
    thetas = np.geomspace(1e-4, 50.0, 48) / max(float(sizes.max()), 1.0)
    with np.errstate(over="ignore"):
        cumulant = (loads[None, :] * np.expm1(thetas[:, None] * sizes[None, :])).sum(1)
    n = 1 << math.ceil(math.log2(2 * (capacity + 1)))
    while float((cumulant - thetas * n).min()) >= math.log(ALIAS_PROB):
        n *= 2
    return n
