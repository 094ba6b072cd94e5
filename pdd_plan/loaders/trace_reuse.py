"""The decode-side cache curve of a trace, for a scenario's `workload.prefix_reuse`.

MD's cache sees every request (in PDD each request ends on a main-decode instance), so
its LRU is the prefill side's LRU replayed at MD's capacity. The curve is, at each
capacity C, the token hits an LRU of C holds over the token hits an unlimited cache holds:
the share of P-side prefix hits MD still has resident. LRU is a stack algorithm (a cache
of C holds a subset of what a larger one holds, at every moment), so the curve never
falls as C grows, and it reaches 1 at the working set (every distinct block: nothing is
ever evicted).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from pdd_plan.loaders.trace_lru import PrefixCache, check_held

# capacities written: 8 is enough to follow an LRU curve's knee at a geometric step of
# (working set / one prompt)^(1/7) and keeps the scenario block one line per list
LADDER_POINTS = 8


@dataclass(frozen=True)
class ReuseCurve:
    capacity_tokens: tuple[int, ...]  # ascending
    resident_frac: tuple[float, ...]  # non-decreasing, in [0, 1]
    at_arrival_rate_per_s: float  # the trace's: the curve's capacities scale with the rate

    def block(self) -> dict:
        """The `prefix_reuse` mapping of a scenario's workload."""
        return {
            "capacity_tokens": list(self.capacity_tokens),
            "resident_frac": [round(f, 6) for f in self.resident_frac],
            "at_arrival_rate_per_s": float(f"{self.at_arrival_rate_per_s:.6g}"),
        }


def ladder_blocks(smallest_blocks: int, working_set_blocks: int, points: int = LADDER_POINTS):
    """Capacities in blocks from `smallest_blocks` (below one prompt an LRU keeps nothing a
    conversation can reuse whole) to the working set, geometric, whole and distinct."""
    top = max(1, working_set_blocks)
    low = min(max(1, smallest_blocks), top)
    if low == top:
        return [top]
    ratios = np.arange(points) / (points - 1)
    ladder = np.round(low * (top / low) ** ratios).astype(int)
    return sorted(set(ladder.tolist()) | {top})


def hit_tokens(hit_blocks: int, block_tokens: int, input_tokens: int) -> int:
    """Cached prompt tokens of a request (the last block may be partly filled)."""
    return min(hit_blocks * block_tokens, input_tokens)


def replay_ladder(
    requests: Iterable, ladder: list[int], block_tokens: int, path: str = "trace"
) -> dict[int, int]:
    """Token hits summed over the requests, one LRU per capacity of `ladder` (blocks);
    refused once the caches take more than trace_lru.MAX_CACHE_BYTES together."""
    caches = {c: PrefixCache(c) for c in ladder}
    totals = dict.fromkeys(ladder, 0)
    for count, request in enumerate(requests, 1):
        if request.hash_ids is None:
            continue
        for capacity, cache in caches.items():
            blocks = cache.replay(request.hash_ids)
            totals[capacity] += hit_tokens(blocks, block_tokens, request.input_tokens)
        check_held(caches.values(), path, count)
    return totals


def reuse_curve(
    requests: Iterable,
    *,
    block_tokens: int,
    working_set_blocks: int,
    mean_input_tokens: float,
    unlimited_hit_tokens: float,
    arrival_rate_per_s: float,
    path: str = "trace",
) -> ReuseCurve | None:
    """The curve on the ladder, or None when no request ever hits (nothing to keep)."""
    if unlimited_hit_tokens <= 0:
        return None
    smallest = math.ceil(mean_input_tokens / block_tokens)
    ladder = ladder_blocks(smallest, working_set_blocks)
    totals = replay_ladder(requests, ladder, block_tokens, path)
    fracs = np.minimum([totals[c] / unlimited_hit_tokens for c in ladder], 1.0)
    fracs = np.maximum.accumulate(fracs)  # exact already (LRU inclusion); kept safe
    return ReuseCurve(
        tuple(c * block_tokens for c in ladder),
        tuple(float(f) for f in fracs),
        arrival_rate_per_s,
    )
