"""A schedule's period boundary replayed request by request (issue #26 item 4).

A period is replayed from the boundary where it starts: arrivals at the previous period's
rate for `warm_s` (its counts running: the system in its steady state), then at the
period's rate; each role's instance count changes at the boundary. A role that grows gets
its new instances `lag_s` after the boundary (ordered then, they arrive late), one that
shrinks lets the instances it drops take nothing new from the boundary and finish what
they hold (scale-down at the end of in-flight work). The stages take these as each
instance's availability window (sim/prefill.py, sim/decode.py: `windows`); the arrivals are
one renewal process whose clock follows the rate's steps (piecewise Poisson when
`burstiness_cv2` is 1). The requests arriving after the boundary, over the lag and
`settle_s` more, are measured against the SLA: the period's worst stretch. Ordered ahead
(`ahead`), a grown role's instances are ordered a lag before the boundary and run from
it. Percentiles of the whole period mix this stretch with its steady state, and a
quantile of a mixture is at most the larger of the parts', so the stretch and a
steady-state run meeting the SLA mean the period meets it.

Limits: spot interruptions are not replayed (the schedule's headroom covers them by its
own arithmetic); colocated plans are not replayed (an instance's prefill and decode share
one clock, which the windows do not split).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.setup import Setup
from pdd_plan.sim.run import SimConfig, simulate

QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}
MIN_MEASURED = 2_000  # requests measured after the boundary, at least


@dataclass(frozen=True)
class Boundary:
    """One period's start: the counts before and after (role -> instances), the rates."""

    before: dict[str, int]
    after: dict[str, int]
    rate_before_per_s: float
    rate_after_per_s: float


@dataclass(frozen=True)
class BoundaryReplay:
    requests: int  # measured: arrived after the boundary
    window_s: float  # how long after the boundary they arrived
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    checks: dict[str, dict[str, float]]  # each SLA percentile: limit, value

    @property
    def sla_met(self) -> bool:
        return all(c["value"] <= c["limit"] for c in self.checks.values())


def windows(b: Boundary, boundary_s: float, lag_s: float, ahead: bool = False) -> dict:
    """role -> each instance's (from, until): the common ones always, a grown role's new
    ones from the boundary + lag (`ahead`: ordered a lag early, from the boundary), a
    shrunk role's dropped ones until the boundary."""
    out = {}
    joins_s = boundary_s if ahead else boundary_s + lag_s
    for role, before in b.before.items():
        after = b.after[role]
        keep = [(0.0, math.inf)] * min(before, after)
        if after > before:
            keep += [(joins_s, math.inf)] * (after - before)
        else:
            keep += [(0.0, boundary_s)] * (before - after)
        out[role] = tuple(keep)
    return out


def replay_boundary(setup: Setup, b: Boundary, lag_s: float, settle_s: float, warm_s: float,
                    seed: int = 0, ahead: bool = False) -> BoundaryReplay:  # fmt: skip
    """`setup`: the period's scenario on a deployment with each role at the larger of its
    two counts (the windows take out what is not there)."""
    warm_n = max(1, round(b.rate_before_per_s * warm_s))
    after_n = max(MIN_MEASURED, round(b.rate_after_per_s * (lag_s + settle_s)))
    config = SimConfig(
        requests=warm_n + after_n, seed=seed, warmup_frac=0.0, rate_per_s=b.rate_after_per_s,
        windows=windows(b, warm_s, lag_s, ahead),
        rate_steps=((0.0, b.rate_before_per_s), (warm_s, b.rate_after_per_s)),
    )  # fmt: skip
    tr = simulate(setup, config).trace
    arrival = tr.requests.arrival_s
    measured = arrival >= warm_s
    ttft = (tr.first_token_s - arrival)[measured]
    out = tr.requests.output_tokens
    multi = measured & (out > 1)
    tpot = ((tr.done_s - tr.first_token_s) / np.maximum(out - 1, 1))[multi]
    sla = setup.scenario.sla
    checks = {}
    for metric, limits, values in (("ttft", sla.ttft_s, ttft), ("tpot", sla.tpot_s, tpot)):
        for pct, limit in limits.items():
            value = float(np.quantile(values, pct / 100)) if len(values) else math.nan
            checks[f"{metric}_p{pct:g}_s"] = {"limit": limit, "value": value}
    return BoundaryReplay(
        requests=int(measured.sum()),
        window_s=float(arrival[-1] - warm_s),
        ttft_s={q: float(np.quantile(ttft, v)) for q, v in QUANTILES.items()},
        tpot_s={
            q: float(np.quantile(tpot, v)) if len(tpot) else math.nan for q, v in QUANTILES.items()
        },  # fmt: skip
        checks=checks,
    )
