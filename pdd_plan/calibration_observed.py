"""`pdd-plan calibrate observed SCENARIO PLAN OBSERVED -o profile.yaml`: an engine
profile fitted to a running deployment's operating point.

The scenario and plan are loaded as `pdd-plan evaluate` loads them, the offered rate is
set to the observed one, and the plan is evaluated with the same public calls
(`model.evaluate.prepare` and `evaluate`) at trial profiles: the scenario's own profile
with its compute efficiency (which sets prefill, so TTFT) and memory efficiency (which
sets decode steps, so TPOT) replaced. The fit is least squares on log(evaluated /
observed) over every observed figure.

Refused (one line, exit 2): fewer observed figures than fitted parameters. Refused
unless --accept-poor-fit keeps it marked (calibration_checks.py): observations no
profile reproduces (when the best fit still leaves a figure more than CONTRADICTION_FRAC,
25 %, off, the figures contradict each other, or the model cannot represent the
deployment, and a profile fitted to them would mislead), an efficiency above the
datasheet peak or at a bound, and a start from a profile itself kept as a poor fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from pdd_plan import calibration_checks as checks
from pdd_plan.calibration_checks import Finding
from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.observed import Observed, file_key, load_observed
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.engine_profile import PARAMETERS, EngineProfile
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.model.roofline import Instance
from pdd_plan.model.workload import DEFAULT_RESOLUTION

FITTED = ("compute_efficiency_frac", "memory_efficiency_frac")
CONTRADICTION_FRAC = checks.MAX_ERROR_FRAC
SATURATED_PENALTY = np.log(1e3)  # a trial profile at which the plan saturates
DIFF_STEP = 1e-3
UNIDENTIFIED_JAC = 1e-6
GOODPUT_TOL_FRAC = 1e-3  # only computed when goodput was observed (it costs a search)


@dataclass(frozen=True)
class ObservedCalibration:
    profile: EngineProfile
    start: EngineProfile
    observed: Observed
    evaluated: dict  # figure -> evaluated value at the fitted profile
    unidentified: tuple[str, ...]


class _Trial:
    """Evaluates the plan at a trial profile, as `pdd-plan evaluate` would."""

    def __init__(self, scenario, deployment, catalog: Catalog, observed: Observed):
        self.s, self.deployment, self.catalog, self.observed = (
            scenario, deployment, catalog, observed,
        )  # fmt: skip
        self.targets = dict(observed.figures_s)
        if observed.goodput_rps is not None:
            self.targets["goodput_rps"] = observed.goodput_rps

    def figures(self, profile: EngineProfile) -> dict:
        c, s = self.catalog, replace(self.s, engine=replace(self.s.engine, profile=profile))
        setup = prepare(s, self.deployment, c.model_for(s), c.gpus, c.lines, DEFAULT_RESOLUTION)
        tol = GOODPUT_TOL_FRAC if self.observed.goodput_rps is not None else 0.5
        metrics, _ = evaluate(setup, goodput_rel_tol=tol)
        out = {f"ttft_{q}": metrics.ttft_s[q] for q in metrics.ttft_s}
        out |= {f"tpot_{q}": metrics.tpot_s[q] for q in metrics.tpot_s}
        out["goodput_rps"] = metrics.goodput_rps
        return {k: out[k] for k in self.targets}

    def residuals(self, profile: EngineProfile) -> np.ndarray:
        got = self.figures(profile)
        return np.array([_log_ratio(got[k], v) for k, v in self.targets.items()])


def _log_ratio(value: float, target: float) -> float:
    if not np.isfinite(value) or value <= 0:
        return SATURATED_PENALTY
    return float(np.log(value / target))


def _loaded(scenario, plan, observed: Observed, catalog: Catalog):
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    s = replace(s, workload=replace(s.workload, arrival_rate_per_s=observed.offered_rps))
    return s, load_plan(plan, s, catalog)


def _fit(trial: _Trial, start: EngineProfile) -> tuple[EngineProfile, tuple[str, ...]]:
    low = np.array([PARAMETERS[k][1] for k in FITTED])
    high = np.array([PARAMETERS[k][2] for k in FITTED])

    def profile_of(x) -> EngineProfile:
        return replace(start, **{k: float(v) for k, v in zip(FITTED, x, strict=True)})

    x0 = np.clip([getattr(start, k) for k in FITTED], low + 1e-6, high - 1e-6)
    fit = least_squares(
        lambda x: trial.residuals(profile_of(x)), x0, bounds=(low, high),
        x_scale="jac", diff_step=DIFF_STEP,
    )  # fmt: skip
    column = np.abs(fit.jac).max(axis=0)
    unseen = tuple(k for k, c in zip(FITTED, column, strict=True) if c < UNIDENTIFIED_JAC)
    x = np.where(column < UNIDENTIFIED_JAC, x0, fit.x)
    return profile_of(x), unseen


def _agreement(observed: Observed, targets: dict, evaluated: dict) -> list[Finding]:
    """The worst figure when the best fit misses it by more than CONTRADICTION_FRAC."""
    ratios = {k: evaluated[k] / v if np.isfinite(evaluated[k]) else np.inf
              for k, v in targets.items()}  # fmt: skip
    worst = max(ratios, key=lambda k: abs(np.log(ratios[k])) if ratios[k] > 0 else np.inf)
    if abs(ratios[worst] - 1.0) <= CONTRADICTION_FRAC:
        return []
    key, unit_s = file_key(worst)  # as OBSERVED.yaml says it (tpot_ms.p90, in ms)
    fit = evaluated[worst] / unit_s
    fit_text = f"{fit:.4g}" if np.isfinite(fit) else "no finite value (saturated)"
    return [Finding(
        key, f"{targets[worst] / unit_s:.4g} observed, {fit_text} at the best fit",
        f"observations one engine profile reproduces within {CONTRADICTION_FRAC:.0%}",
        "the figures contradict each other, or this plan is not what was measured "
        "(check the plan, the offered rate and the units: ttft_s in seconds, tpot_ms in ms)",
    )]  # fmt: skip


def _instances(s, deployment, catalog: Catalog) -> list[Instance]:
    """The plan's instances as the roofline sees them (for the datasheet ceilings)."""
    model = catalog.model_for(s)
    return [
        Instance(model, catalog.gpus[g.gpu], g.gpus_per_instance, s.kv_dtype, s.weight_dtype)
        for g in deployment.instances
        if g.count > 0
    ]


def calibrate_observed(
    scenario, plan, observed_path, name: str | None = None, catalog: Catalog | None = None,
    accept_poor_fit: bool = False,
) -> ObservedCalibration:  # fmt: skip
    catalog = catalog or Catalog()
    observed = load_observed(observed_path)
    s, deployment = _loaded(scenario, plan, observed, catalog)
    trial = _Trial(s, deployment, catalog, observed)
    if len(trial.targets) < len(FITTED):
        raise InputError.single(
            observed.file, "", f"{len(trial.targets)} observed figure(s)",
            f"at least {len(FITTED)}, one per fitted parameter ({', '.join(FITTED)})",
            "add TTFT and TPOT percentiles",
        )  # fmt: skip
    gpus = sorted({g.gpu for g in deployment.instances})
    start = replace(
        s.engine.profile,
        name=name or re.sub(r"[^a-z0-9_]+", "_", f"observed_{s.name}".lower()).strip("_"),
        source="calibrate observed",
        gpu="+".join(gpus),
        model=s.model,
        fitted_on=((observed.file, observed.sha256, len(trial.targets)),),
        cv_error_frac=(),
    )
    profile, unseen = _fit(trial, start)
    evaluated = trial.figures(profile)
    missed = _agreement(observed, trial.targets, evaluated)
    findings = missed + checks.parameter_findings(profile, _instances(s, deployment, catalog))
    if s.engine.profile.poor_fit:  # its other parameters are kept: so is its verdict
        findings.append(Finding(
            "engine profile", f"{s.engine.profile.name}, itself a poor fit",
            "a start from a sound profile", "; ".join(s.engine.profile.poor_fit),
        ))  # fmt: skip
    # a fit that misses the observations is refused for that alone: where it left the
    # efficiencies is no measurement (they are kept among the notes of an accepted one)
    refused = missed if missed and not accept_poor_fit else findings
    profile = checks.settled(replace(profile, poor_fit=()), refused, observed.file,
                             accept_poor_fit)  # fmt: skip
    return ObservedCalibration(profile, start, observed, evaluated, unseen)
