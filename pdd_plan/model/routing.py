"""PDD routing and its baselines: which path each request class takes, what crosses the
WAN, and how many tokens the relay decodes (the handoff: model/handoff.py).

Paths (pdd-system.md §5):
- DIRECT: P -> MD over the WAN; MD emits the first token once it holds the KV.
- RELAY: P -> RLD over RDMA and, in parallel, P -> MD over the WAN; RLD emits tokens
  ("eager tokens") until MD holds the KV, then hands off by token ids (extend-decode).
- LOCAL: finished near prefill without crossing the WAN: the whole of IDC-PD, and in PDD
  only the short-output cut-off (long input, short output). P -> RLD-only is otherwise
  never chosen: requests that end on RLD never land in MD's cache and RLD's load feeds
  on itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model.deployment import RoutingPolicy
from pdd_plan.model.llm import ModelSpec
from pdd_plan.model.scenario import ShortOutputCutoff
from pdd_plan.model.workload import RequestClasses

DIRECT, RELAY, LOCAL = 0, 1, 2

# How long a conversation's prefix must stay in MD's radix cache to be hit again
# (one agent turn to the next). With a finite cache, the share of prefixes still held is
# capacity / (arrival rate x mean prompt x this interval). An assumption: see README.
CACHE_REUSE_INTERVAL_S = 300.0


@dataclass(frozen=True)
class Routes:
    """Per-class path and WAN payload."""

    path: np.ndarray  # DIRECT | RELAY | LOCAL per class
    md_hit_rate: np.ndarray
    wan_payload_bytes: np.ndarray  # bytes a class ships to MD (0 for LOCAL)
    rdma_payload_bytes: np.ndarray  # bytes P ships inside datacenter A (to RLD or D)


def md_cache_factor(
    capacity_tokens: float | None, arrival_rate_per_s: float, mean_input_tokens: float
) -> float:
    """Share of P's prefix hits that MD's decode-side cache also holds."""
    if capacity_tokens is None:
        return 1.0
    needed = arrival_rate_per_s * mean_input_tokens * CACHE_REUSE_INTERVAL_S
    return float(min(1.0, capacity_tokens / needed)) if needed > 0 else 1.0


def kv_payload_bytes(model: ModelSpec, kv_dtype: str, new_tokens, total_tokens) -> np.ndarray:
    """Bytes to ship so the receiver holds the whole context: the growing part of the
    tokens it lacks (at the engine's shipped bytes per token) plus the parts that do not
    grow with length (windows, recurrent states), which change with every token."""
    total = np.asarray(total_tokens, dtype=float)
    growing = model.kv_bytes_per_token(kv_dtype)
    fixed_and_windowed = np.maximum(
        model.kv_bytes(total.astype(np.int64), kv_dtype) - growing * total, 0
    )
    return (
        model.shipped_bytes_per_token(kv_dtype) * np.asarray(new_tokens, float) + fixed_and_windowed
    )


def route(
    architecture: str,
    classes: RequestClasses,
    policy: RoutingPolicy,
    cutoff: ShortOutputCutoff,
    model: ModelSpec,
    kv_dtype: str,
    md_cache: float = 1.0,
) -> Routes:
    n = len(classes)
    path = np.full(n, DIRECT)
    if architecture in ("idc_pd", "colocated"):
        path[:] = LOCAL
    elif architecture == "pdd":
        path[classes.hit_rate < policy.rld_hit_threshold] = RELAY
        if policy.short_output_cutoff and cutoff.enabled:
            short = (classes.output_tokens <= cutoff.max_output_tokens) & (
                classes.input_tokens >= cutoff.min_input_tokens
            )
            path[short] = LOCAL
    md_hit = classes.hit_rate * md_cache
    md_missing = np.maximum(classes.input_tokens - np.floor(md_hit * classes.input_tokens), 1.0)
    wan = kv_payload_bytes(model, kv_dtype, md_missing, classes.input_tokens)
    wan = np.where(path == LOCAL, 0.0, wan) if architecture != "pdd" else wan
    rdma = np.where(
        path == DIRECT,
        0.0,
        kv_payload_bytes(model, kv_dtype, classes.uncached_tokens, classes.input_tokens),
    )
    if architecture == "colocated":
        rdma = np.zeros(n)
    return Routes(path, md_hit, wan, rdma)


def eager_tokens(
    wan_time_s: np.ndarray, rld_step_s: float, output_tokens: np.ndarray
) -> np.ndarray:
    """Tokens RLD emits while MD waits for the KV: one per RLD step, at most the output."""
    return np.minimum(np.ceil(wan_time_s / rld_step_s), output_tokens)
