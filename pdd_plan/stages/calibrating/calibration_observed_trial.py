"""One observed operating point evaluated at a trial engine profile, as `pdd-plan
evaluate` would evaluate its plan at its offered rate (calibration_observed.py).

Figures: TTFT and TPOT percentiles (seconds), goodput (req/s, the SLA search: only when
observed, it costs a search), throughput (req/s completed: the offered rate where the
plan carries it, else the largest rate it carries) and mean batch (running requests per
instance of the role that finishes requests, averaged over its instances).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.observed import ObservedPoint
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.evaluate import _parts, _prefill, evaluate, prepare, snapshot
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION

# the log residual of a figure a trial profile leaves undefined (the plan saturates): more
# than any finite figure's (e^50 ~ 5e21 times off), so no start or step prefers saturation
SATURATED_PENALTY = 50.0
GOODPUT_TOL_FRAC = 1e-3
CAPACITY_TOL_FRAC = 1e-3
CAPACITY_HALVINGS = 40


def log_ratio(value: float, target: float) -> float:
    if not np.isfinite(value) or value <= 0:
        return SATURATED_PENALTY
    return float(np.log(value / target))


class PointTrial:
    """Evaluates one point's plan at a trial profile."""

    def __init__(self, scenario, deployment, catalog: Catalog, point: ObservedPoint):
        self.scenario, self.deployment, self.catalog, self.point = (
            scenario, deployment, catalog, point,
        )  # fmt: skip
        self.targets = dict(point.figures)

    def _setup(self, profile: EngineProfile):
        c = self.catalog
        s = replace(self.scenario, engine=replace(self.scenario.engine, profile=profile))
        return prepare(s, self.deployment, c.model_for(s), c.gpus, c.lines, DEFAULT_RESOLUTION)

    def figures(self, profile: EngineProfile) -> dict:
        setup = self._setup(profile)
        rate = self.point.offered_rps
        out: dict[str, float] = {}
        if "goodput_rps" in self.targets:
            metrics, _ = evaluate(setup, goodput_rel_tol=GOODPUT_TOL_FRAC)
            out["goodput_rps"] = metrics.goodput_rps
        try:
            snap = snapshot(setup, rate)
        except SaturatedError:
            snap = None
        nan = float("nan")
        for metric in ("ttft", "tpot"):
            values = getattr(snap, f"{metric}_s") if snap else {}
            out |= {f"{metric}_{q}": values.get(q, nan) for q in ("p50", "p90", "p99")}
        if "throughput_rps" in self.targets:
            out["throughput_rps"] = rate if snap else _capacity_rps(setup, rate)
        if "mean_batch" in self.targets:
            out["mean_batch"] = _mean_batch(setup, rate) if snap else nan
        return {k: out[k] for k in self.targets}

    def residuals(self, profile: EngineProfile) -> np.ndarray:
        got = self.figures(profile)
        return np.array([log_ratio(got[k], v) for k, v in self.targets.items()])


def _carries(setup, rate: float) -> bool:
    try:
        snapshot(setup, rate)
        return True
    except SaturatedError:
        return False


def _capacity_rps(setup, rate: float) -> float:
    """The largest rate below `rate` the plan carries unsaturated (bisection)."""
    low = rate
    for _ in range(CAPACITY_HALVINGS):
        low /= 2
        if _carries(setup, low):
            break
    else:
        return 0.0
    high = 2 * low
    while high - low > CAPACITY_TOL_FRAC * high:
        mid = (low + high) / 2
        low, high = (mid, high) if _carries(setup, mid) else (low, mid)
    return low


def _mean_batch(setup, rate: float) -> float:
    """Running requests per instance of the finishing role, the decode side's own mean
    (shares of a mixed role weighted by their instances)."""
    service, _, util = _prefill(setup, rate)
    parts = _parts(setup, rate, service, util)
    counts = [su.decode.group.count for _, su, *_ in parts]
    batches = [side.md.batch * n for (*_, side), n in zip(parts, counts, strict=True)]
    return float(sum(batches) / max(sum(counts), 1))


def instances_of(s, deployment, catalog: Catalog) -> list[Instance]:
    """The plan's instances as the roofline sees them (for the datasheet ceilings)."""
    model = catalog.model_for(s)
    return [
        Instance(model, catalog.gpus[g.gpu], g.gpus_per_instance, s.kv_dtype, s.weight_dtype)
        for g in deployment.instances
        if g.count > 0
    ]
