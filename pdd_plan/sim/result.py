"""A simulated run as the Metrics and JSON of `evaluate` (design.md §7), plus what only a
simulation has: confidence intervals, SLA attainment, the connection-pool wait."""

from __future__ import annotations

import math

import numpy as np

from pdd_plan.model.evaluate import binding_role
from pdd_plan.model.metrics import Metrics, json_safe
from pdd_plan.sim.gaps import measured_gaps_s, overflow_frac
from pdd_plan.sim.measure import Measured, sla_checks
from pdd_plan.sim.run import SimRun

_QS = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


def to_metrics(run: SimRun, m: Measured, goodput_rps: float = math.nan) -> Metrics:
    """`goodput_rps` is NaN (null in JSON) unless a goodput search was run."""
    checks = sla_checks(run, m)
    gaps = measured_gaps_s(run)
    req = run.trace.requests
    uncached = req.uncached_tokens
    return Metrics(
        offered_rps=run.rate_per_s,
        goodput_rps=goodput_rps,
        cost_usd_per_hour=run.setup.cost_usd_per_hour,
        ttft_s={q: e.value for q, e in m.ttft_s.items()},
        tpot_s={q: e.value for q, e in m.tpot_s.items()},
        max_inter_token_gap_s=m.max_inter_token_gap_s,
        wan_mean_bits_per_s=m.wan_mean_bits_per_s,
        wan_utilization_frac=m.wan_utilization_frac,
        wan_pool_utilization_frac=m.wan_pool_utilization_frac,
        wan_transfer_s={q: e.value for q, e in m.wan_transfer_s.items()}
        or {"p50": 0.0, "p99": 0.0},
        rld_token_share_frac=m.rld_token_share_frac,
        role_utilization_frac=m.utilization_frac,
        binding_role=binding_role(m.utilization_frac),
        sla_met=all(c["value"] <= c["limit"] for c in checks.values()),
        mean_output_tokens=float(req.output_tokens.mean()),
        mean_uncached_input_tokens=float(uncached.mean()),
        sla_checks=checks,
        largest_gap_s={q: float(np.quantile(gaps, v)) for q, v in _QS.items()} if len(gaps) else {},
        relay_overflow_frac=overflow_frac(run),
    )


def metrics_json(run: SimRun, m: Measured, goodput_rps: float = math.nan) -> dict:
    """Metrics.to_json plus the simulator's own keys."""
    out = to_metrics(run, m, goodput_rps).to_json()
    out["wan"]["pool_mean_wait_s"] = m.wan_pool_mean_wait_s.value
    out["confidence_intervals"] = {
        "ttft_s": {q: e.to_json() for q, e in m.ttft_s.items()},
        "tpot_s": {q: e.to_json() for q, e in m.tpot_s.items()},
        "wan_transfer_s": {q: e.to_json() for q, e in m.wan_transfer_s.items()},
        "wan_pool_mean_wait_s": m.wan_pool_mean_wait_s.to_json(),
    }
    out["simulation"] = {
        "requests": len(run.trace.requests),
        "measured_requests": m.requests,
        "seed": run.config.seed,
        "warmup_frac": run.config.warmup_frac,
        "window_s": list(m.window_s),
    }
    return json_safe(out)
