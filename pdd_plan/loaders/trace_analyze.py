"""One pass over a trace: every prefix cache replayed side by side, lengths and arrivals kept
as compact arrays (the hash ids of a request are dropped once it has been replayed)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.loaders import trace_reuse
from pdd_plan.loaders import trace_stats as stats
from pdd_plan.loaders.input_files import shown_path
from pdd_plan.loaders.trace_lru import PrefixCache, check_held
from pdd_plan.loaders.trace_reuse import ReuseCurve
from pdd_plan.loaders.traces import read_trace

MOONCAKE_BLOCK_TOKENS = 512


@dataclass(frozen=True)
class CacheResult:
    """Prefix hits of every request against one LRU capacity (None = unlimited)."""

    capacity_blocks: int | None
    block_tokens: int
    hit_frac: np.ndarray  # per request: cached prompt tokens / prompt tokens

    @property
    def capacity_tokens(self) -> int | None:
        return None if self.capacity_blocks is None else self.capacity_blocks * self.block_tokens

    def token_hit_frac(self, input_tokens: np.ndarray) -> float:
        """Cached prompt tokens / all prompt tokens (token-weighted)."""
        return float(np.dot(self.hit_frac, input_tokens) / input_tokens.sum())

    def describe(self, input_tokens: np.ndarray) -> dict:
        p50, p90 = np.percentile(self.hit_frac, [50, 90])
        return {
            "capacity_blocks": self.capacity_blocks,
            "capacity_tokens": self.capacity_tokens,
            "token_hit_frac": self.token_hit_frac(input_tokens),
            "mean_request_hit_frac": float(self.hit_frac.mean()),
            "p50_hit_frac": float(p50),
            "p90_hit_frac": float(p90),
            "zero_hit_share": float(np.mean(self.hit_frac == 0)),
        }


@dataclass(frozen=True)
class TraceAnalysis:
    path: str
    format: str
    block_tokens: int
    arrivals: stats.Arrivals
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    has_hashes: bool
    prefill: CacheResult | None  # None when the trace has no prefix hashes
    decode: CacheResult | None
    # the ceiling any finite cache approaches; None unless an unlimited capacity was asked
    # for (it holds every distinct block of the trace in memory)
    unlimited: CacheResult | None
    by_capacity: list[CacheResult] = field(default_factory=list)
    out_of_order: int = 0  # requests earlier than the one before them (replayed in file order)
    reuse: ReuseCurve | None = None  # MD's LRU curve for `workload.prefix_reuse`
    arrival_s: np.ndarray | None = None  # per request, file order (a load curve's rates)


def analyze(
    path: Path | str,
    *,
    format_in: str = "auto",
    block_tokens: int = MOONCAKE_BLOCK_TOKENS,
    capacities_blocks: tuple[int | None, ...] = (None,),
    decode_capacity_blocks: int | None = None,
    reuse_curve: bool = False,
) -> TraceAnalysis:
    """Replay the trace through one cache per distinct capacity, in file order.

    `capacities_blocks[0]` is the prefill-side cache the workload uses; the rest form the
    hit-rate-against-capacity sweep. The decode-side cache sees the same requests (in PDD
    every request ends on a main-decode instance) with its own capacity. Memory: the
    caches asked for (an unlimited one holds every distinct block), refused past
    trace_lru.MAX_CACHE_BYTES together, plus 8 bytes per request and cache for the
    hit rates and 24 per request for arrivals and lengths.

    `reuse_curve`: also MD's LRU curve (trace_reuse.py), from an unlimited cache (added
    if not asked for) and a second pass over the file at a ladder of capacities.
    """
    fmt, requests = read_trace(path, format_in)
    asked = (*capacities_blocks, decode_capacity_blocks)
    wanted = (*asked, *((None,) if reuse_curve else ()))  # the curve needs the ceiling
    p = _replay(requests, dict.fromkeys(wanted), block_tokens, shown_path(path))
    arrival_s, inputs, outputs, hits = p.arrival_s, p.inputs, p.outputs, p.hits
    has_hashes, out_of_order = p.has_hashes, p.out_of_order
    try:
        arrival_stats = stats.arrivals(np.frombuffer(arrival_s, float))
    except ValueError:
        raise InputError.single(
            str(path), "", f"{len(arrival_s)} request(s) over 0 s", "at least two arrival times"
        ) from None
    results = {
        c: CacheResult(c, block_tokens, np.frombuffer(h, float)) if has_hashes else None
        for c, h in hits.items()
    }
    input_tokens = np.frombuffer(inputs, np.int64).astype(float)
    reuse = None
    if reuse_curve and has_hashes and len(input_tokens):
        reuse = trace_reuse.reuse_curve(
            read_trace(path, fmt)[1],  # the second pass: the ladder needs the working set
            block_tokens=block_tokens,
            working_set_blocks=p.working_set_blocks,
            mean_input_tokens=float(input_tokens.mean()),
            unlimited_hit_tokens=round(float(np.dot(results[None].hit_frac, input_tokens))),
            arrival_rate_per_s=arrival_stats.rate_per_s,
            path=shown_path(path),
        )
    return TraceAnalysis(
        path=str(path),
        format=fmt,
        block_tokens=block_tokens,
        arrivals=arrival_stats,
        input_tokens=input_tokens,
        output_tokens=np.frombuffer(outputs, np.int64).astype(float),
        has_hashes=has_hashes,
        prefill=results[capacities_blocks[0]],
        decode=results[decode_capacity_blocks],
        unlimited=results.get(None) if None in asked else None,
        by_capacity=[results[c] for c in dict.fromkeys(capacities_blocks)] if has_hashes else [],
        out_of_order=out_of_order,
        reuse=reuse,
        arrival_s=np.frombuffer(arrival_s, float),
    )


@dataclass
class _Pass:
    """What one pass over the trace keeps: compact arrays, and the caches' sizes (the
    caches themselves are dropped when it ends)."""

    arrival_s: array = field(default_factory=lambda: array("d"))
    inputs: array = field(default_factory=lambda: array("q"))
    outputs: array = field(default_factory=lambda: array("q"))
    hits: dict = field(default_factory=dict)
    has_hashes: bool = True
    out_of_order: int = 0
    working_set_blocks: int = 0  # distinct blocks (the unlimited cache's size), if asked


def _replay(requests, capacities: dict, block_tokens: int, path: str) -> _Pass:
    """Every request through one cache per capacity, in file order; refused once the
    caches take more than trace_lru.MAX_CACHE_BYTES together."""
    caches = {c: PrefixCache(c) for c in capacities}
    p = _Pass(hits={c: array("d") for c in caches})
    last_s = float("-inf")
    for count, request in enumerate(requests, 1):
        p.arrival_s.append(request.arrival_s)
        p.inputs.append(request.input_tokens)
        p.outputs.append(request.output_tokens)
        p.out_of_order += request.arrival_s < last_s
        last_s = request.arrival_s
        if request.hash_ids is None:
            p.has_hashes = False
            continue
        for capacity, cache in caches.items():
            hit_tokens = min(cache.replay(request.hash_ids) * block_tokens, request.input_tokens)
            p.hits[capacity].append(hit_tokens / request.input_tokens)
        check_held(caches.values(), path, count)
    p.working_set_blocks = len(caches[None]) if None in caches else 0
    return p
