"""`pdd-plan calibrate observed SCENARIO PLAN OBSERVED -o profile.yaml`: an engine
profile fitted to a running deployment's operating points (a load sweep, possibly of
several plans of one deployment: PDD and CDC-PD at the same load).

Each point's plan (its own `plan:` or the command's PLAN) is loaded as `pdd-plan
evaluate` loads it, the offered rate set to the point's, and evaluated with the same
public calls (`model.evaluate.prepare` and `evaluate`) at trial profiles: the scenario's
own profile with the fitted parameters replaced (default: compute efficiency, which sets
prefill, so TTFT, and memory efficiency, which sets decode steps, so TPOT; `fit=` any of
engine_profile.PARAMETERS). The fit is joint least squares on log(evaluated / observed)
over every figure of every point, with each parameter's uncertainty, the parameters the
points do not identify refused by name, and the held-out error of leaving each point out
(observed_fit.py); the held-out ratios are stored in the profile (`solve --confidence`).

Refused (one line, exit 2): fewer observed figures than fitted parameters; a parameter
the points do not identify. Refused unless --accept-poor-fit keeps it marked
(calibration_checks.py): observations no profile reproduces (the best fit still leaves
a figure more than CONTRADICTION_FRAC, 25 %, off), an efficiency above the datasheet
peak or at a bound, and a start from a profile itself kept as a poor fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.observed import Observed, file_key, load_observed
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.loaders.suggest import did_you_mean
from pdd_plan.model.compute.engine_profile import PARAMETERS, EngineProfile
from pdd_plan.stages.calibrating import calibration_checks as checks
from pdd_plan.stages.calibrating import observed_fit
from pdd_plan.stages.calibrating.calibration_checks import Finding
from pdd_plan.stages.calibrating.calibration_observed_trial import (
    PointTrial,
    instances_of,
    log_ratio,
)

FITTED = ("compute_efficiency_frac", "memory_efficiency_frac")
LATENCY_METRICS = ("ttft", "tpot")
CONTRADICTION_FRAC = checks.MAX_ERROR_FRAC


@dataclass(frozen=True)
class ObservedCalibration:
    profile: EngineProfile
    start: EngineProfile
    observed: Observed
    evaluated: tuple[dict, ...]  # per point: figure -> evaluated value at the fitted profile
    fit: observed_fit.Fit
    held_out: observed_fit.HeldOut

    @property
    def unidentified(self) -> tuple[str, ...]:
        return self.fit.unidentified


class _Trials:
    """Every point's trial; the fit vector `x` holds the parameters `names`."""

    def __init__(self, points: list[PointTrial], start: EngineProfile, names: tuple[str, ...]):
        self.points, self.start, self.names = points, start, names

    def profile_of(self, x) -> EngineProfile:
        return replace(self.start, **{k: float(v) for k, v in zip(self.names, x, strict=True)})

    def point_residuals(self, i: int):
        point = self.points[i]
        return lambda x: point.residuals(self.profile_of(x))

    def residuals(self, x) -> np.ndarray:
        profile = self.profile_of(x)
        return np.concatenate([p.residuals(profile) for p in self.points])


def _loaded(scenario, plan, observed: Observed, catalog: Catalog) -> list[PointTrial]:
    base = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    trials = []
    for point in observed.points:
        s = replace(base, workload=replace(base.workload, arrival_rate_per_s=point.offered_rps))
        deployment = load_plan(point.plan or plan, s, catalog)
        trials.append(PointTrial(s, deployment, catalog, point))
    return trials


def _check_names(fit: tuple[str, ...]) -> None:
    for name in fit:
        if name not in PARAMETERS:
            raise InputError.single(
                "command line", "--fit", repr(name),
                f"one of the engine parameters: {', '.join(PARAMETERS)}",
                did_you_mean(name, PARAMETERS),
            )  # fmt: skip
    if len(set(fit)) != len(fit) or not fit:
        raise InputError.single("command line", "--fit", ", ".join(fit) or "nothing",
                                "each engine parameter at most once, at least one")  # fmt: skip


def _identified(observed: Observed, fit: observed_fit.Fit, names) -> None:
    """InputError naming the parameters the points do not identify (observed_fit.py)."""
    if not fit.unidentified:
        return
    rel = dict(zip(names, fit.rel_std(), strict=True))
    found = "; ".join(
        f"{n} not identified (relative standard error "
        f"{'unbounded' if not np.isfinite(rel[n]) else f'{100 * rel[n]:.0f} %'})"
        for n in fit.unidentified
    )  # fmt: skip
    keep = [n for n in names if n not in fit.unidentified]
    hint = f"fit only {' '.join('--fit ' + n for n in keep)}, or " if keep else ""
    raise InputError.single(
        observed.file, "", found,
        f"points that move every fitted parameter (relative standard error at most "
        f"{100 * observed_fit.REL_STD_MAX:.0f} %)",
        f"{hint}add points or figures that move {', '.join(fit.unidentified)}",
    )  # fmt: skip


def _agreement(trials: list[PointTrial], evaluated: list[dict]) -> list[Finding]:
    """The worst figure when the best fit misses it by more than CONTRADICTION_FRAC."""
    worst, worst_log = None, -1.0
    for trial, got in zip(trials, evaluated, strict=True):
        for k, v in trial.targets.items():
            size = abs(log_ratio(got[k], v))
            if size > worst_log:
                worst, worst_log = (trial, k), size
    trial, figure = worst
    target, value = trial.targets[figure], evaluated[trials.index(trial)][figure]
    ratio = value / target if np.isfinite(value) else np.inf
    if abs(ratio - 1.0) <= CONTRADICTION_FRAC:
        return []
    key, unit_s = file_key(figure, trial.point.label)  # as OBSERVED.yaml says it
    fit = value / unit_s
    fit_text = f"{fit:.4g}" if np.isfinite(fit) else "no finite value (saturated)"
    return [Finding(
        key, f"{target / unit_s:.4g} observed, {fit_text} at the best fit",
        f"observations one engine profile reproduces within {CONTRADICTION_FRAC:.0%}",
        "the figures contradict each other, or this plan is not what was measured "
        "(check the plan, the offered rate and the units: ttft_s in seconds, tpot_ms in ms)",
    )]  # fmt: skip


def _start(s, trials, observed: Observed, name: str | None) -> EngineProfile:
    gpus = sorted({g.gpu for t in trials for g in t.deployment.instances})
    return replace(
        s.engine.profile,
        name=name or re.sub(r"[^a-z0-9_]+", "_", f"observed_{s.name}".lower()).strip("_"),
        source="calibrate observed",
        gpu="+".join(gpus),
        model=s.model,
        fitted_on=((observed.file, observed.sha256, observed.figure_count),),
        cv_error_frac=(),
        held_out_ratio=(),
    )


def _held_out(trials: _Trials, x, names) -> observed_fit.HeldOut:
    low = np.array([PARAMETERS[k][1] for k in names])
    high = np.array([PARAMETERS[k][2] for k in names])
    figures = [tuple(p.targets) for p in trials.points]
    residuals = [trials.point_residuals(i) for i in range(len(trials.points))]
    return observed_fit.held_out(residuals, figures, x, low, high)


def calibrate_observed(
    scenario, plan, observed_path, name: str | None = None, catalog: Catalog | None = None,
    accept_poor_fit: bool = False, fit: tuple[str, ...] = FITTED,
) -> ObservedCalibration:  # fmt: skip
    _check_names(tuple(fit))
    catalog = catalog or Catalog()
    observed = load_observed(observed_path)
    points = _loaded(scenario, plan, observed, catalog)
    if observed.figure_count < len(fit):
        raise InputError.single(
            observed.file, "", f"{observed.figure_count} observed figure(s)",
            f"at least {len(fit)}, one per fitted parameter ({', '.join(fit)})",
            "add TTFT and TPOT percentiles",
        )  # fmt: skip
    s = points[0].scenario
    start = _start(s, points, observed, name)
    trials = _Trials(points, start, tuple(fit))
    result = observed_fit.fit(
        trials.residuals, fit, [getattr(start, k) for k in fit],
        [PARAMETERS[k][1] for k in fit], [PARAMETERS[k][2] for k in fit],
    )  # fmt: skip
    fitted = trials.profile_of(result.x)
    missed = _agreement(points, [p.figures(fitted) for p in points])
    if missed and not accept_poor_fit:  # the figures contradict: that first, and alone
        checks.settled(fitted, missed, observed.file, accept=False)
    _identified(observed, result, fit)
    held = _held_out(trials, result.x, fit)
    # the latencies' ratios are stored: what `solve --confidence` sizes with
    ratios = tuple((k, v) for k, v in held.by_metric().items() if k in LATENCY_METRICS)
    # the held-out median absolute error per metric, as `calibrate serving` reports its own
    cv = tuple((k, float(np.median(np.abs(np.array(v) - 1.0)))) for k, v in ratios)
    profile = replace(fitted, held_out_ratio=ratios, cv_error_frac=cv)
    evaluated = [p.figures(profile) for p in points]
    instances = [i for p in points for i in instances_of(p.scenario, p.deployment, catalog)]
    findings = missed + checks.parameter_findings(profile, instances)
    if s.engine.profile.poor_fit:  # its other parameters are kept: so is its verdict
        findings.append(Finding(
            "engine profile", f"{s.engine.profile.name}, itself a poor fit",
            "a start from a sound profile", "; ".join(s.engine.profile.poor_fit),
        ))  # fmt: skip
    # a fit that misses the observations was refused above for that alone: where it left
    # the efficiencies is no measurement (they are kept among the notes of an accepted one)
    profile = checks.settled(replace(profile, poor_fit=()), findings, observed.file,
                             accept_poor_fit)  # fmt: skip
    return ObservedCalibration(profile, start, observed, tuple(evaluated), result, held)
