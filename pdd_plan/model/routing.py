"""PDD routing and its baselines: which path each request class takes, what crosses the
WAN, and how many tokens the relay decodes (the handoff: model/decode/handoff.py).

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

from pdd_plan.model.compute.llm import ModelSpec
from pdd_plan.model.deployment import RoutingPolicy
from pdd_plan.model.scenario import ShortOutputCutoff
from pdd_plan.model.workload.workload import RequestClasses

DIRECT, RELAY, LOCAL = 0, 1, 2

# The decode step the cut-off's default threshold is set at when the scenario has no TPOT
# limit: 50 ms, the published SLA's P90 TPOT (pdd-system.md, the paper scenario).
DEFAULT_CUTOFF_STEP_S = 0.050


@dataclass(frozen=True)
class Routes:
    """Per-class path and WAN payload."""

    path: np.ndarray  # DIRECT | RELAY | LOCAL per class
    md_hit_rate: np.ndarray
    wan_payload_bytes: np.ndarray  # bytes a class ships to MD (0 for LOCAL)
    rdma_payload_bytes: np.ndarray  # bytes P ships inside datacenter A (to RLD or D)


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


def default_cutoff_bytes_per_output_token(per_connection_bits_per_s: float, step_s: float,
                                          stripes: int = 1):  # fmt: skip
    """The cut-off's default threshold: shipping a relayed request's uncached input is pure
    waste when the transfer (on its `stripes` connections at their per-connection rate)
    lasts longer than decoding its whole output on RLD: bytes / (stripes x rate) >= output
    x step, i.e. bytes per output token >= stripes x per-connection bytes/s x step."""
    return stripes * per_connection_bits_per_s / 8.0 * step_s


def resolved_cutoff(scenario) -> ShortOutputCutoff:
    """The scenario's cut-off with its threshold filled in: the default derived from the
    line's per-connection rate (times the stripes a transfer runs on) and the decode step
    RLD is sized to stay within (the tightest TPOT limit: RLD's batch grows until its step
    reaches it)."""
    c = scenario.policy.short_output_cutoff
    if c.min_uncached_bytes_per_output_token is not None:
        return c
    step = min(scenario.sla.tpot_s.values(), default=DEFAULT_CUTOFF_STEP_S)
    wan = scenario.wan
    threshold = default_cutoff_bytes_per_output_token(
        wan.per_connection_bits_per_s, step, wan.stripes_per_transfer
    )
    return ShortOutputCutoff(c.enabled, threshold)


def relay_threshold_bytes(model, kv_dtype, policy, threshold_input_tokens) -> float:
    """The router's line between direct and relayed: the bytes a request of
    `threshold_input_tokens` at the threshold hit rate would ship."""
    m = float(threshold_input_tokens)
    at_threshold = md_missing_tokens(m, policy.rld_hit_threshold)
    return float(kv_payload_bytes(model, kv_dtype, at_threshold, m))


def cutoff_mask(architecture, classes, policy, cutoff, model, kv_dtype,
                threshold_input_tokens=None) -> np.ndarray:  # fmt: skip
    """The short-output cut-off (pdd-system.md §5): a PDD request the router would relay
    (P's uncached bytes above the relay threshold's bytes: routing on what P computed needs
    no fixed point with MD's cache) whose transfer would outlast decoding its whole output
    on RLD (bytes per output token at the cut-off threshold): RLD emits every token before
    MD holds the KV, so the transfer serves only the next turn. It finishes beside prefill.
    A direct request's small transfer is what MD needs anyway: never cut off.
    `threshold_input_tokens`: as in `route` (default: the classes' mean input)."""
    n = len(classes)
    if architecture != "pdd" or not (policy.short_output_cutoff and cutoff.enabled):
        return np.zeros(n, bool)
    if cutoff.min_uncached_bytes_per_output_token is None:
        raise ValueError("the cut-off's threshold is unresolved (routing.resolved_cutoff)")
    m = threshold_input_tokens
    m = classes.mean(classes.input_tokens) if m is None else m
    p_side_bytes = kv_payload_bytes(model, kv_dtype, classes.uncached_tokens, classes.input_tokens)
    relay_candidate = p_side_bytes > relay_threshold_bytes(model, kv_dtype, policy, m)
    wasted = p_side_bytes / classes.output_tokens >= cutoff.min_uncached_bytes_per_output_token
    return relay_candidate & wasted


def md_missing_tokens(input_tokens, md_hit_rate) -> np.ndarray:
    """Prompt tokens MD lacks (at least the last one, which P computed)."""
    return np.maximum(input_tokens - np.floor(md_hit_rate * input_tokens), 1.0)


def route(
    architecture: str,
    classes: RequestClasses,
    policy: RoutingPolicy,
    cutoff: ShortOutputCutoff,
    model: ModelSpec,
    kv_dtype: str,
    md_cache=1.0,
    threshold_input_tokens: float | None = None,
    md_extra_missing_tokens=0.0,
) -> Routes:
    """`md_cache`: per class (or one for all), the share of P's hit MD holds: 1 or 0 for
    resident or not (decode_cache.split_md_view), 1 everywhere with an unlimited cache;
    `md_extra_missing_tokens`: tokens MD lacks besides (a cut-off previous turn's).

    PDD relays a request when the bytes MD lacks exceed what a request of
    `threshold_input_tokens` (default: the classes' mean input) at the threshold hit rate
    would ship: the decision reads what must cross to MD, and with MD's cache unlimited
    and a fixed input it is the old rule, P's hit < threshold."""
    n = len(classes)
    path = np.full(n, DIRECT)
    md_held = classes.hit_rate * np.asarray(md_cache, float)
    md_missing = md_missing_tokens(classes.input_tokens, md_held) + md_extra_missing_tokens
    md_missing = np.minimum(md_missing, classes.input_tokens)
    wan = kv_payload_bytes(model, kv_dtype, md_missing, classes.input_tokens)
    if architecture in ("idc_pd", "colocated"):
        path[:] = LOCAL
    elif architecture == "pdd":
        m = classes.mean(classes.input_tokens)
        m = float(m if threshold_input_tokens is None else threshold_input_tokens)
        path[wan > relay_threshold_bytes(model, kv_dtype, policy, m)] = RELAY
        path[cutoff_mask(architecture, classes, policy, cutoff, model, kv_dtype, m)] = LOCAL
    wan = np.where(path == LOCAL, 0.0, wan)  # a cut-off request ships nothing to MD
    rdma = np.where(
        path == DIRECT,
        0.0,
        kv_payload_bytes(model, kv_dtype, classes.uncached_tokens, classes.input_tokens),
    )
    if architecture == "colocated":
        rdma = np.zeros(n)
    md_hit = 1.0 - md_missing / classes.input_tokens  # share of the prompt MD holds
    return Routes(path, md_hit, wan, rdma)
