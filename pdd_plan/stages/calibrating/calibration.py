"""`pdd-plan calibrate steps`: fit an engine profile to per-iteration measurements.

Reads the files (loaders/step_measurements.py), computes the plain roofline's parts of
every measured iteration, fits the profile (model/compute/step_fit.py) and measures its error
per phase three ways: the plain roofline on the same rows ("before"), the fit on the
rows it was fitted to, and cross-validated (leave one configuration out, or 5 blocks of
rows when there is one configuration), which is the figure the profile file carries.
A fit that is physically impossible or errs by more than 25 % is refused, or kept marked
(calibration_checks.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.step_measurements import ConfigResolver, Measured, read_file
from pdd_plan.model.compute import step_fit as sf
from pdd_plan.model.compute.engine_profile import IDENTITY, EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.stages.calibrating import calibration_checks as checks


@dataclass(frozen=True)
class Calibration:
    profile: EngineProfile
    measured: tuple[Measured, ...]
    rows: int
    rows_kept: int
    before_frac: dict  # plain roofline, median absolute error per phase
    fit_frac: dict  # the profile on the rows it was fitted to
    cv_frac: dict  # cross-validated (empty when not asked)
    phase_rows: dict
    held: dict = field(default_factory=dict)  # parameter -> why the fit held it


def read_measurements(files, options: dict, catalog: Catalog, skip_rows: int = 3):
    resolver = ConfigResolver(catalog, options)
    return [m for f in files for m in read_file(f, resolver, skip_rows)]


def with_graph_sizes(measured, sizes: dict) -> list:
    """Each measurement with its engine's largest captured CUDA graph (`sizes`: tokens by
    file name; files not named keep the default, step_fit.GRAPH_MAX_TOKENS)."""
    out = []
    for m in measured:
        size = sizes.get(Path(m.file).name)
        samples = m.samples if size is None else replace(m.samples, graph_max_tokens=size)
        out.append(replace(m, samples=samples))
    return out


def prepared(measured, catalog: Catalog) -> sf.Prepared:
    samples = [m.samples for m in measured]
    models = {s.model: catalog.model(s.model) for s in samples}
    return sf.prepare(samples, models, catalog.gpus)


def _one(values) -> str:
    values = sorted(set(values))
    return values[0] if len(values) == 1 else "+".join(values)


def _name(measured) -> str:
    c = measured[0].config
    text = f"{c.engine}_{c.engine_version}_{_one(m.config.gpu for m in measured)}_{c.model}"
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", text.lower())).strip("_")


def _metadata(measured, name: str | None) -> EngineProfile:
    configs = {(m.config.tp, m.config.ep, m.config.dp) for m in measured}
    parallelism = ()
    if len(configs) == 1:
        parallelism = tuple(zip(("tp", "ep", "dp"), next(iter(configs)), strict=True))
    return replace(
        IDENTITY,
        name=name or _name(measured),
        engine=_one(m.config.engine for m in measured),
        engine_version=_one(m.config.engine_version for m in measured),
        gpu=_one(m.config.gpu for m in measured),
        model=_one(m.config.model for m in measured),
        source="calibrate steps",
        parallelism=parallelism,
        fitted_on=tuple((m.file, m.sha256, m.rows) for m in measured),
    )


def instances(measured, catalog: Catalog) -> list[Instance]:
    """The roofline instance of each measured configuration (as `step_fit.prepare` maps
    an engine's tp/ep/dp onto one)."""
    out = []
    for c in (m.config for m in measured):
        model = catalog.model(c.model)
        gpus, mode, _ = sf.layout(model, c.tp, c.ep, c.dp)
        out.append(Instance(model, catalog.gpus[c.gpu], gpus, c.kv_dtype, parallelism=mode))
    return out


def files_named(measured) -> str:
    return ", ".join(dict.fromkeys(m.file for m in measured))


def calibrate_steps(
    files, options: dict, name: str | None = None, cross_validate: bool = True,
    catalog: Catalog | None = None, graph_sizes: dict | None = None,
    accept_poor_fit: bool = False,
) -> Calibration:  # fmt: skip
    """The fit; a poor one (calibration_checks.py) is InputError unless `accept_poor_fit`,
    which keeps it with its `poor_fit` notes."""
    catalog = catalog or Catalog()
    measured = with_graph_sizes(read_measurements(files, options, catalog), graph_sizes or {})
    data = prepared(measured, catalog)
    profile, keep = sf.fit_profile(data, _metadata(measured, name))
    errors = lambda p: sf.phase_errors(p, data.latency_s, data.phase)  # noqa: E731
    cv = errors(sf.held_out_s(data, sf.folds(data))) if cross_validate else {}
    profile = replace(profile, cv_error_frac=tuple(cv.items()))
    fit = errors(sf.predict_s(profile.vector(), data))
    findings = checks.parameter_findings(profile, instances(measured, catalog))
    findings += checks.error_findings(cv or fit, bool(cv))
    profile = checks.settled(profile, findings, files_named(measured), accept_poor_fit)
    return Calibration(
        profile,
        tuple(measured),
        len(data.latency_s),
        int(keep.sum()),
        errors(sf.predict_s(IDENTITY.vector(), data)),
        fit,
        cv,
        {p: int(np.sum(data.phase == p)) for p in sf.PHASES},
        sf.held_reasons(data),
    )
