"""`pdd-plan calibrate serving`: an engine profile fitted to serving-benchmark results.

Reads the result files (loaders/serving_results.py), builds each run's instance (the
same mapping of an engine's tp/ep/dp onto an `Instance` as `calibrate steps`,
model/compute/step_fit.py `layout`) and load, fits the profile (sim/serving_fit.py) and measures
its error: simulated / measured per figure on the runs it was fitted to, and, with two
runs or more, leave-one-run-out (the figure the profile file carries as
`cv_error_frac: {ttft, tpot}`). A fit that is physically impossible or errs by more
than 25 % is refused, or kept marked (calibration_checks.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.serving_files import read_serving_file
from pdd_plan.loaders.serving_results import ServingFile, ServingRun
from pdd_plan.model.compute.engine_profile import IDENTITY, EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.compute.step_fit import layout
from pdd_plan.sim.aggregated import MAX_BATCHED_TOKENS, Load, running_cap
from pdd_plan.sim.serving_fit import (
    FITTED,
    Benchmark,
    ServingFit,
    fit_load,
    fit_serving,
    held_out_errors,
    observations,
)
from pdd_plan.stages.calibrating import calibration_checks as checks


@dataclass(frozen=True)
class ServingCalibration:
    profile: EngineProfile
    files: tuple[ServingFile, ...]
    fit: ServingFit
    cv_frac: dict  # {"ttft": ..., "tpot": ...}; empty when not asked or one run


def _benchmark(run: ServingRun, file: str, catalog: Catalog, options: dict) -> Benchmark:
    c = run.config
    model = catalog.model(c.model)
    gpus, mode, _ = layout(model, c.tp, c.ep, c.dp)
    inst = Instance(
        model, catalog.gpus[c.gpu], gpus, c.kv_dtype, options.get("weight_dtype"),
        parallelism=mode,
    )  # fmt: skip
    budget = options.get("max_batched_tokens") or MAX_BATCHED_TOKENS
    load = Load(
        run.isl_tokens, run.osl_tokens, run.requests, run.concurrency, run.rate_per_s,
        max_batched_tokens=budget,
    )  # fmt: skip
    if running_cap(inst, load) < 1:
        raise InputError.single(
            file, run.label, f"{c.model} on {gpus} x {c.gpu} with {run.isl_tokens:,} + "
            f"{run.osl_tokens:,} tokens per request", "a run whose instance holds one request",
            "the weights leave no KV room: check --gpu, --tp and --weight-dtype",
        )  # fmt: skip
    measured = dict(run.measured_s)
    return Benchmark(f"{file}: {run.label}", inst, fit_load(load), measured)


def _one(values) -> str:
    values = sorted(set(values) - {""})
    return "+".join(values)


def _metadata(files, runs, name: str | None) -> EngineProfile:
    engine = _one(f.kind for f in files if f.kind in ("vllm", "sglang"))
    gpu, model = _one(r.config.gpu for r in runs), _one(r.config.model for r in runs)
    configs = {(r.config.tp, r.config.ep, r.config.dp) for r in runs}
    parallelism = ()
    if len(configs) == 1:
        parallelism = tuple(zip(("tp", "ep", "dp"), next(iter(configs)), strict=True))
    default = f"{engine or 'serving'}_{gpu}_{model}".lower()
    return replace(
        IDENTITY,
        name=name or re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", default)).strip("_"),
        engine=engine,
        gpu=gpu,
        model=model,
        source="calibrate serving",
        parallelism=parallelism,
        fitted_on=tuple((f.file, f.sha256, len(f.runs)) for f in files),
    )


def fitted_errors(fit: ServingFit) -> dict[str, float]:
    """Median |simulated / measured - 1| of the TTFT and of the TPOT figures fitted."""
    errors: dict[str, list[float]] = {}
    for _, key, ratio in fit.ratios:
        errors.setdefault(key.split("_")[0], []).append(abs(ratio - 1.0))
    return {k: float(np.median(v)) for k, v in errors.items()}


def calibrate_serving(
    paths, options: dict, name: str | None = None, cross_validate: bool = True,
    catalog: Catalog | None = None, accept_poor_fit: bool = False,
) -> ServingCalibration:  # fmt: skip
    """The fit; a poor one (calibration_checks.py) is InputError unless `accept_poor_fit`,
    which keeps it with its `poor_fit` notes."""
    catalog = catalog or Catalog()
    files = [read_serving_file(p, options, catalog) for p in paths]
    runs = [run for f in files for run in f.runs]
    benchmarks = [_benchmark(run, f.file, catalog, options) for f in files for run in f.runs]
    count = observations(benchmarks)
    if count < len(FITTED):
        raise InputError.single(
            files[0].file, "", f"{count} measured TTFT/TPOT figure(s) in {len(runs)} run(s)",
            f"at least {len(FITTED)}, one per fitted parameter ({', '.join(FITTED)})",
            "add runs at other concurrencies or lengths, or their P50/P90/P99",
        )  # fmt: skip
    start = _metadata(files, runs, name)
    fit = fit_serving(benchmarks, start)
    cv = held_out_errors(benchmarks, start) if cross_validate and len(benchmarks) > 1 else {}
    profile = replace(fit.profile, cv_error_frac=tuple(cv.items()))
    findings = checks.parameter_findings(profile, [b.inst for b in benchmarks])
    findings += checks.error_findings(cv or fitted_errors(fit), bool(cv))
    named = ", ".join(f.file for f in files)
    profile = checks.settled(profile, findings, named, accept_poor_fit)
    return ServingCalibration(profile, tuple(files), fit, cv)
