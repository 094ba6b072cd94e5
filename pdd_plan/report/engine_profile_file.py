"""An engine profile as the YAML file `loaders/engine_profile.py` reads back."""

from __future__ import annotations

import yaml

from pdd_plan.model.compute.engine_profile import PARAMETERS, EngineProfile

HEADER = """\
# pdd-plan engine profile: fitted step-time parameters (pdd_plan/model/compute/engine_profile.py).
# Efficiency fractions multiply the catalog's measured ones; seconds terms are added.
# cv_error_frac: cross-validated median absolute relative error of the step time
# (decode, prefill, mixed: calibrate steps) or of serving TTFT and TPOT (calibrate serving).
# held_out_ratio: observed / predicted of each figure with its point left out of the fit
# (calibrate observed), per metric: `solve --confidence` sizes from its quantiles.
# poor_fit: present only when kept with --accept-poor-fit; every answer using it says so.
"""


def profile_document(profile: EngineProfile) -> dict:
    doc: dict = {"name": profile.name}
    for key in ("engine", "engine_version", "gpu", "model"):
        if getattr(profile, key):
            doc[key] = getattr(profile, key)
    if profile.parallelism:
        doc["parallelism"] = dict(profile.parallelism)
    # 6 significant digits; a bound the fit reached up to rounding (1e-17 s) is written 0
    doc["parameters"] = {
        k: 0.0 if abs(v := getattr(profile, k)) < 1e-12 else float(f"{v:.6g}") for k in PARAMETERS
    }
    if profile.fitted_on:
        doc["fitted_on"] = [
            {"file": f, "sha256": h, "rows": int(n)} for f, h, n in profile.fitted_on
        ]
    if profile.cv_error_frac:
        doc["cv_error_frac"] = {p: round(float(v), 4) for p, v in profile.cv_error_frac}
    if profile.held_out_ratio:
        doc["held_out_ratio"] = {
            k: [float(f"{v:.6g}") for v in values] for k, values in profile.held_out_ratio
        }
    if profile.poor_fit:
        doc["poor_fit"] = list(profile.poor_fit)
    return doc


def profile_yaml(profile: EngineProfile) -> str:
    body = yaml.safe_dump(profile_document(profile), sort_keys=False, width=100)
    return HEADER + body
