"""What a simulated run measured: latency percentiles with intervals, WAN and pool load,
relay share and utilisation of every role, over the requests after the warm-up."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.network.network import BITS_PER_BYTE
from pdd_plan.model.setup import DECODE_ROLE, PREFILL_ROLE
from pdd_plan.sim import stats
from pdd_plan.sim.run import SimRun

QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


@dataclass(frozen=True)
class Measured:
    requests: int  # measured (after the warm-up)
    window_s: tuple[float, float]
    ttft_s: dict[str, stats.Estimate]
    tpot_s: dict[str, stats.Estimate]
    max_inter_token_gap_s: float
    wan_mean_bits_per_s: float
    wan_utilization_frac: float
    wan_pool_utilization_frac: float
    wan_pool_mean_wait_s: stats.Estimate
    wan_transfer_s: dict[str, stats.Estimate]
    rld_token_share_frac: float
    utilization_frac: dict[str, float]
    ttft_all_s: np.ndarray
    tpot_all_s: np.ndarray


def busy_overlap_s(start: np.ndarray, end: np.ndarray, window: tuple[float, float]) -> float:
    """Total length of the intervals [start, end] inside the window."""
    low, high = window
    return float(np.clip(np.minimum(end, high) - np.maximum(start, low), 0, None).sum())


def _mean_batch(segments: list, window: tuple[float, float]) -> float:
    """Time-average batch per instance over the window, from the recorded segments."""
    total = 0.0
    for _, t0, _, _, batch in segments:
        if len(t0) == 0:
            continue
        ends = np.append(t0[1:], max(t0[-1], window[1]))
        total += float((batch * np.clip(np.minimum(ends, window[1]) - np.maximum(t0, window[0]),
                                        0, None)).sum())  # fmt: skip
    return total / max(len(segments), 1) / (window[1] - window[0])


def _utilization(run: SimRun, window, measured: np.ndarray) -> dict[str, float]:
    setup, tr = run.setup, run.trace
    span = window[1] - window[0]
    arch = setup.deployment.architecture
    util = {PREFILL_ROLE[arch]: tr.prefill.busy_s(window) / (setup.prefill.group.count * span)}
    if tr.wan is not None:
        bits = tr.wan_payload_bytes[measured] * BITS_PER_BYTE
        util["wan_line"] = bits.sum() / span / setup.link.goodput_bits_per_s
        crossing = tr.wan_payload_bytes > 0
        # a striped transfer holds its stripes' connections over about the same span
        held = busy_overlap_s(tr.wan.connect_s[crossing], tr.wan.release_s[crossing], window)
        held *= setup.link.stripes_per_transfer
        util["wan_pool"] = held / (setup.link.connection_pool_size * span)
    req = tr.requests
    context = float(np.average(req.input_tokens + req.output_tokens / 2, weights=req.output_tokens))
    pools = {"relay_decode": setup.relay, DECODE_ROLE[arch]: setup.decode}
    for role, segments in run.segments.items():
        hbm = pools[role].instance.max_batch(context)
        util[role] = max(util.get(role, 0.0), _mean_batch(segments, window) / max(hbm, 1))
    return util


def _max_gap_s(run: SimRun, measured: np.ndarray) -> float:
    tr = run.trace
    gaps = [0.0]
    for segments in run.segments.values():
        for _, _, d_first, d, batch in segments:
            live = batch > 0
            gaps += [float(d_first[live].max(initial=0)), float(d[live].max(initial=0))]
    both = measured & (tr.local_tokens > 0) & (tr.main_tokens > 0)
    gaps.append(float((tr.main_first_s[both] - tr.local_last_s[both]).max(initial=0)))
    if run.setup.deployment.architecture == "colocated":  # a prefill pauses the decode steps
        gaps[-1] += float(tr.prefill_service_s.max())
    return max(gaps)


def measure(run: SimRun) -> Measured:
    tr, n = run.trace, len(run.trace.requests)
    warm = min(int(run.config.warmup_frac * n), n - 1)
    measured = np.arange(n) >= warm
    arrival = tr.requests.arrival_s
    window = (float(arrival[warm]), float(arrival[-1]))
    if window[1] <= window[0]:
        window = (window[0], window[0] + 1e-9)
    ttft = (tr.first_token_s - arrival)[measured]
    out = tr.requests.output_tokens
    multi = measured & (out > 1)
    tpot = ((tr.done_s - tr.first_token_s) / np.maximum(out - 1, 1))[multi]
    util = _utilization(run, window, measured)
    transfer, wait, mean_bits = {}, stats.Estimate(0.0, 0.0, 0.0), 0.0
    if tr.wan is not None:
        crossing = measured & (tr.wan_payload_bytes > 0)
        ready = tr.prefill.end_s[crossing]
        latency = tr.wan.done_s[crossing] - ready
        transfer = {q: stats.percentile(latency, QUANTILES[q]) for q in ("p50", "p99")}
        # streamed KV asks for its connection at prefill start (model/network/wan_streaming.py)
        streamed = run.setup.scenario.wan.stream_during_prefill
        asked = tr.prefill.start_s if streamed else tr.prefill.end_s
        wait = stats.mean(tr.wan.connect_s[crossing] - asked[crossing])
        mean_bits = float(tr.wan_payload_bytes[measured].sum() * BITS_PER_BYTE) / (
            window[1] - window[0]
        )
    relay = run.setup.deployment.architecture == "pdd"
    share = float(tr.local_tokens[measured].sum() / out[measured].sum()) if relay else 0.0
    return Measured(
        requests=int(measured.sum()),
        window_s=window,
        ttft_s={q: stats.percentile(ttft, v) for q, v in QUANTILES.items()},
        tpot_s={q: stats.percentile(tpot, v) for q, v in QUANTILES.items()},
        max_inter_token_gap_s=_max_gap_s(run, measured),
        wan_mean_bits_per_s=mean_bits,
        wan_utilization_frac=util.get("wan_line", 0.0),
        wan_pool_utilization_frac=util.get("wan_pool", 0.0),
        wan_pool_mean_wait_s=wait,
        wan_transfer_s=transfer,
        rld_token_share_frac=share,
        utilization_frac=util,
        ttft_all_s=ttft,
        tpot_all_s=tpot,
    )


def sla_checks(run: SimRun, m: Measured) -> dict[str, dict[str, float]]:
    """Each SLA percentile: limit, simulated value, and the share of requests within it."""
    sla, checks = run.setup.scenario.sla, {}
    for metric, limits, values in (("ttft", sla.ttft_s, m.ttft_all_s),
                                   ("tpot", sla.tpot_s, m.tpot_all_s)):  # fmt: skip
        for pct, limit in limits.items():
            value = float(np.quantile(values, pct / 100)) if len(values) else math.nan
            within = float(np.mean(values <= limit)) if len(values) else math.nan
            checks[f"{metric}_p{pct:g}_s"] = {
                "limit": limit, "value": value, "attainment_frac": within
            }  # fmt: skip
    return checks
