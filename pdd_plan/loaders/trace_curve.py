"""A trace analysis -> a load curve file (`pdd-plan trace analyze --load-curve OUT`): the
arrival rate per period from the requests' timestamps and, where the trace has prefix
hashes, each period's own hit-rate mix (the LRU replay's per-request hits of the requests
that arrived in it). The file reads back as `workload.load_curve: {file: OUT}`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.trace_analyze import TraceAnalysis
from pdd_plan.loaders.trace_workload import _distribution

# a period's own hit mix needs this many requests: fewer would make bins of a handful of
# requests (the workload's mix is used instead, said in the file's header)
MIN_REQUESTS_FOR_MIX = 100
HOUR_DECIMALS = 6  # start_h and duration_h written to 3.6 ms


def curve_periods(analysis: TraceAnalysis, period_s: float) -> tuple[list[dict], int]:
    """The periods (as a curve file writes them) of whole `period_s` periods from the first
    arrival, and the requests after the last whole period (left out)."""
    arrival_s = analysis.arrival_s
    first_s = float(arrival_s.min())
    whole = int(np.floor((float(arrival_s.max()) - first_s) / period_s))
    if whole < 1:
        span = float(arrival_s.max()) - first_s
        raise InputError.single(
            analysis.path,
            "",
            f"a trace spanning {span:,.3g} s",
            f"a trace spanning at least one period ({period_s:g} s: --period-min)",
        )
    index = np.floor((arrival_s - first_s) / period_s).astype(np.int64)
    kept = index < whole
    counts = np.bincount(index[kept], minlength=whole)
    hits = analysis.prefill.hit_frac if analysis.prefill is not None else None
    periods = []
    for k in range(whole):
        period = {
            "start_h": round(k * period_s / 3600, HOUR_DECIMALS),
            "duration_h": round(period_s / 3600, HOUR_DECIMALS),
            "arrival_rate_per_s": float(f"{counts[k] / period_s:.6g}"),
        }
        if hits is not None and counts[k] >= MIN_REQUESTS_FOR_MIX:
            mine = hits[kept & (index == k)]
            period["prefix_hit_rate"] = _distribution(mine, "bins", 0.0, 1.0, False)
        periods.append(period)
    return periods, int((~kept).sum())


def curve_yaml(analysis: TraceAnalysis, periods: list[dict], left_out: int) -> str:
    """The curve file: a header saying where it came from, then `periods:`."""
    name = Path(analysis.path).name
    lines = [
        f"# pdd-plan trace analyze {name} --load-curve: {len(periods)} periods of "
        f"{periods[0]['duration_h'] * 60:g} min from the first arrival",
        "# arrival_rate_per_s: the requests that arrived in the period / its length",
    ]
    if left_out:
        lines.append(f"# {left_out:,} requests after the last whole period are left out")
    if analysis.prefill is None:
        lines.append("# no prefix hashes: every period takes the workload's prefix_hit_rate")
    else:
        lines.append(
            f"# prefix_hit_rate: the LRU replay's hits of the period's requests (periods of "
            f"fewer than {MIN_REQUESTS_FOR_MIX} requests take the workload's)"
        )
    body = yaml.safe_dump({"periods": periods}, sort_keys=False, default_flow_style=None,
                          width=100)  # fmt: skip
    return "\n".join(lines) + "\n" + body
