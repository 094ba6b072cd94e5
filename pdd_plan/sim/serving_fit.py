"""Fit an engine profile to serving-benchmark percentiles (`pdd-plan calibrate serving`).

Each measured run is replayed by the aggregated-serving simulation (sim/aggregated.py)
at trial profile parameters; the fit is least squares on log(simulated / measured) over
every TTFT and TPOT figure of every run (a relative error, so a 20 ms TPOT and a 2 s
TTFT weigh alike), within the bounds of `engine_profile.PARAMETERS`.

Serving percentiles identify fewer parameters than per-iteration step times do: a TTFT
mixes queueing with prefill, a TPOT mixes decode steps with the prefill chunks that
share them. The fit therefore frees only `FITTED` (compute and memory efficiency, the
fixed cost of every step and of a step that carries prefill); the others keep the
starting profile's values. A parameter the runs do not move (its column of the Jacobian
is zero: e.g. compute efficiency when no run is ever compute-bound) is reported as not
identified and keeps its starting value.

Closed-loop runs are re-timed from a schedule computed once (fast, smooth: on its own
output the fit recovers the parameters to 1e-9). An open-loop schedule depends on the
step times, so an open-loop run is simulated afresh at every trial (at most
MAX_OPEN_FIT_REQUESTS requests; about a second per run and trial), and its figures are
jagged in the parameters (a request lands before or after an iteration boundary): the
finite-difference step is DIFF_STEP (3 %) to see past that. Measured: three Poisson runs
made at known parameters are fitted back to within 5 % of every figure, but the
parameters themselves only to 2-35 % (at low load, fixed step cost and memory
efficiency both just lengthen a small-batch decode step): prefer closed-loop runs
(`--max-concurrency`) at several concurrencies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from pdd_plan.model.compute.engine_profile import PARAMETERS, EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.aggregated import (
    IterationParts,
    Load,
    closed_loop_schedule,
    open_loop_schedule,
    running_cap,
    time_closed_loop,
    time_open_loop,
)

FITTED = ("compute_efficiency_frac", "memory_efficiency_frac", "fixed_step_s", "prefill_fixed_s")
MAX_CLOSED_FIT_REQUESTS = 5000
MAX_OPEN_FIT_REQUESTS = 500
DIFF_STEP = 0.03  # finite differences wide enough to step over an open loop's jitter
TYPICAL_START = {"fixed_step_s": 2e-3, "prefill_fixed_s": 1e-2}  # s
UNIDENTIFIED_JAC = 1e-9  # a column below this: the runs do not see the parameter


@dataclass(frozen=True)
class Benchmark:
    """One measured run, ready to replay: the instance (any profile), the load, and the
    measured figures in seconds by name ("ttft_p50", "tpot_mean", ...)."""

    label: str
    inst: Instance
    load: Load
    measured_s: dict


class _Replay:
    """A run replayed at any profile: a closed loop re-timed from its one schedule, an
    open loop simulated afresh."""

    def __init__(self, bench: Benchmark):
        self.bench, self.load = bench, bench.load
        self.cap = running_cap(bench.inst, bench.load)
        if self.cap < 1:
            raise ValueError(f"{bench.label}: the KV cache cannot hold one request")
        self.schedule = self.parts = None
        if self.load.concurrency is not None:
            self.schedule = closed_loop_schedule(self.load, self.cap)
            self.parts = IterationParts(bench.inst, self.schedule)

    def predict_s(self, profile: EngineProfile) -> dict:
        if self.parts is not None:
            step_s = self.parts.seconds(profile.vector())
            serving = time_closed_loop(self.schedule, step_s, self.load.osl_tokens)
        else:
            inst = replace(self.bench.inst, engine_profile=profile)
            schedule = open_loop_schedule(inst, self.load, self.cap)
            step_s = IterationParts(inst, schedule).seconds(profile.vector())
            serving = time_open_loop(schedule, step_s, self.load)
        summary = serving.summary()
        return {k: summary[f"{k}_s"] for k in self.bench.measured_s}


def fit_load(load: Load) -> Load:
    """The load replayed in a fit: the run's, with at most the fit's request cap."""
    cap = MAX_CLOSED_FIT_REQUESTS if load.concurrency is not None else MAX_OPEN_FIT_REQUESTS
    return replace(load, requests=min(load.requests, cap))


@dataclass(frozen=True)
class ServingFit:
    profile: EngineProfile
    unidentified: tuple[str, ...]
    ratios: tuple[tuple[str, str, float], ...]  # (run, figure, simulated / measured)


def _residuals(replays, profile: EngineProfile) -> np.ndarray:
    out = []
    for r in replays:
        predicted = r.predict_s(profile)
        for key, measured in r.bench.measured_s.items():
            value = predicted[key]
            out.append(np.log(max(value, 1e-12) / measured) if value is not None else 0.0)
    return np.array(out)


def observations(benchmarks) -> int:
    return sum(len(b.measured_s) for b in benchmarks)


def _solve(replays, start: EngineProfile, x0, free) -> tuple[EngineProfile, tuple]:
    low = np.array([PARAMETERS[k][1] for k in free])
    high = np.array([PARAMETERS[k][2] for k in free])

    def profile_of(x) -> EngineProfile:
        return replace(start, **{k: float(v) for k, v in zip(free, x, strict=True)})

    x0 = np.clip(x0, low + 1e-6, high - 1e-6)
    fit = least_squares(
        lambda x: _residuals(replays, profile_of(x)), x0, bounds=(low, high),
        x_scale="jac", diff_step=DIFF_STEP,
    )  # fmt: skip
    column = np.abs(fit.jac).max(axis=0) if fit.jac.size else np.zeros(len(free))
    unseen = tuple(k for k, c in zip(free, column, strict=True) if c < UNIDENTIFIED_JAC)
    start_x = np.array([getattr(start, k) for k in free])
    return profile_of(np.where(column < UNIDENTIFIED_JAC, start_x, fit.x)), unseen


def fit_serving(benchmarks, start: EngineProfile, free: tuple[str, ...] = FITTED) -> ServingFit:
    """The profile whose simulated figures best match the measured ones."""
    replays = [_Replay(b) for b in benchmarks]
    # seconds terms start at a typical engine's value, not at 0, where a relative
    # finite-difference step would be too small to see
    x0 = np.array([max(getattr(start, k), TYPICAL_START.get(k, 0.0)) for k in free])
    profile, unseen = _solve(replays, start, x0, free)
    ratios = tuple(
        (r.bench.label, key, float(np.exp(v)))
        for r in replays
        for key, v in zip(r.bench.measured_s, _residuals([r], profile), strict=True)
    )
    return ServingFit(profile, unseen, ratios)


def held_out_errors(benchmarks, start: EngineProfile, free=FITTED) -> dict[str, float]:
    """Leave one run out: each run's figures predicted by a profile fitted to the others;
    the median absolute relative error of its TTFT figures and of its TPOT figures."""
    errors: dict[str, list[float]] = {"ttft": [], "tpot": []}
    for i, bench in enumerate(benchmarks):
        others = benchmarks[:i] + benchmarks[i + 1 :]
        if observations(others) < len(free):
            return {}
        profile = fit_serving(others, start, free).profile
        predicted = _Replay(bench).predict_s(profile)
        for key, measured in bench.measured_s.items():
            if predicted[key] is not None:
                errors[key.split("_")[0]].append(abs(predicted[key] / measured - 1.0))
    return {k: float(np.median(v)) for k, v in errors.items() if v}
