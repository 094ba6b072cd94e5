"""Engine profile files (YAML): the fitted step-time parameters of one engine.

    name: vllm_0_20_b300_qwen3_32b            # id: lower-case letters, digits, _
    engine: vllm                               # free text
    engine_version: 0.20.1                     # free text
    gpu: b300                                  # catalog GPU id it was fitted on (or "any")
    model: qwen3_32b                           # catalog model id, a model class, or "any"
    parallelism: {tp: 1, ep: 1, dp: 1}         # optional: what it was fitted at
    parameters: {fixed_step_s: 0.003, ...}     # any of engine_profile.PARAMETERS; the
                                               # others keep their identity values
    fitted_on: [{file: x.csv.gz, sha256: ..., rows: 6850}]   # optional
    cv_error_frac: {decode: 0.05, prefill: 0.03, mixed: 0.04}  # optional, medians
                                               # (step times; ttft, tpot: serving figures)
    held_out_ratio: {ttft: [0.92, 1.1], tpot: [1.01]}   # optional: calibrate observed's
                                               # held-out observed / predicted ratios
    poor_fit: ["memory_efficiency_frac 1.25 ..."]   # optional: written by calibrate
                                               # --accept-poor-fit; every answer repeats it

Read through the strict loader: unknown keys, out-of-range parameters and wrong types
are each one line naming the file and key path (exit 2).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from pdd_plan.loaders.catalog import catalog_dir
from pdd_plan.loaders.input_files import shown_path
from pdd_plan.loaders.strict import Node, Problems, load_yaml
from pdd_plan.model.engine_profile import IDENTITY, PARAMETERS, EngineProfile
from pdd_plan.model.scenario import Engine
from pdd_plan.model.step_fit import PHASES

WHAT = "a pdd-plan engine profile"
CV_KEYS = (*PHASES, "ttft", "tpot")  # step phases (calibrate steps), serving figures
DEFAULT_NAME = "roofline_default"
HELD_OUT_MAX_RATIO = 1e6  # observed / predicted: a bound on nonsense, not on physics
TOP_KEYS = ("engine", "engine_version", "gpu", "model", "parallelism", "fitted_on")


def engines_dir() -> Path:
    """The shipped profiles: hardware_catalog/engines/."""
    return catalog_dir() / "engines"


def _parameters(node: Node) -> dict:
    f = node.mapping(optional=tuple(PARAMETERS))
    if f is None:
        return {}
    out = {}
    for key, (_, low, high) in PARAMETERS.items():
        value = f[key].number(minimum=low, maximum=high)
        if value is not None:
            out[key] = value
    return out


def _cv_error(node: Node) -> tuple[tuple[str, float], ...]:
    if node.is_missing:
        return ()
    f = node.mapping(optional=CV_KEYS)
    if f is None:
        return ()
    # no ceiling: an error a fit reports (calibrate writes it, 1e3 from absurd latencies
    # too) is information about the fit, used in no arithmetic; a file it wrote reads back
    values = ((p, f[p].number(minimum=0)) for p in CV_KEYS)
    return tuple((p, v) for p, v in values if v is not None)


def _held_out(node: Node) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """held_out_ratio: {ttft: [0.9, 1.1, ...], tpot: [...]}: observed / predicted of each
    figure with its point left out (calibrate observed); positive, at most HELD_OUT_MAX_RATIO."""
    if node.is_missing:
        return ()
    f = node.mapping(optional=("ttft", "tpot"))
    out = []
    for metric, child in (f or {}).items():
        if child.is_missing:
            continue
        values = [v.number(minimum=0, exclusive_minimum=True, maximum=HELD_OUT_MAX_RATIO)
                  for v in child.items(min_items=1) or []]  # fmt: skip
        if values and None not in values:
            out.append((metric, tuple(sorted(values))))
    return tuple(out)


def _poor_fit(node: Node) -> tuple[str, ...]:
    if node.is_missing:
        return ()
    notes = (item.string(required=True, expected="a note (text)") for item in node.items() or [])
    return tuple(n for n in notes if n)


def _text(node: Node) -> str:
    value = node.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)  # engine_version: 0.20 reads as a number
    return Node(value, node.path, node.problems).string(default="")


def _parallelism(node: Node) -> tuple[tuple[str, int], ...]:
    if node.is_missing:
        return ()
    f = node.mapping(optional=("tp", "ep", "dp"))
    if f is None:
        return ()
    sizes = ((k, f[k].integer(minimum=1, maximum=100_000)) for k in ("tp", "ep", "dp"))
    return tuple((k, v) for k, v in sizes if v is not None)


def _fitted_on(node: Node) -> tuple[tuple[str, str, int], ...]:
    if node.is_missing:
        return ()
    out = []
    for item in node.items() or []:
        row = item.mapping(required=("file",), optional=("sha256", "rows"))
        if row is not None:
            file = row["file"].string(required=True)
            sha = row["sha256"].string(default="")
            rows = row["rows"].integer(minimum=0, default=0)
            out.append((file or "", sha, rows))
    return tuple(out)


def load_engine_profile(path: Path | str) -> EngineProfile:
    """Read and check a profile file; InputError lists every problem."""
    name = shown_path(path)
    problems = Problems(name)
    root = Node(load_yaml(path, WHAT), "", problems)
    f = root.mapping(
        required=("name", "parameters"),
        optional=(*TOP_KEYS, "cv_error_frac", "poor_fit", "held_out_ratio"),
    )
    if f is None:
        problems.raise_if_any()
    profile_name = f["name"].identifier(required=True)
    params = _parameters(f["parameters"])
    meta = {k: _text(f[k]) for k in ("engine", "engine_version", "gpu", "model")}
    cv = _cv_error(f["cv_error_frac"])
    parallelism = _parallelism(f["parallelism"])
    fitted_on = _fitted_on(f["fitted_on"])
    poor_fit = _poor_fit(f["poor_fit"])
    held_out = _held_out(f["held_out_ratio"])
    problems.raise_if_any()
    return EngineProfile(
        name=profile_name,
        **params,
        **meta,
        source=name,
        cv_error_frac=cv,
        parallelism=parallelism,
        fitted_on=fitted_on,
        poor_fit=poor_fit,
        held_out_ratio=held_out,
    )


def default_profile() -> EngineProfile:
    """The profile used when none is given: the plain roofline (identity)."""
    return IDENTITY


# ---- the profile a run uses ----------------------------------------------------------------
# `--engine-profile FILE` sets this for the process and the worker processes it starts
# (sweep, report), so every scenario loaded in the run takes it, over the scenario's own.
OVERRIDE_ENV = "PDD_PLAN_ENGINE_PROFILE"


def use_engine_profile(path: str | None) -> EngineProfile | None:
    """Check the `--engine-profile` file now (one line, exit 2, before any work) and make
    it the run's profile; None leaves the scenarios' own."""
    if path is None:
        return None
    profile = load_engine_profile(path)
    os.environ[OVERRIDE_ENV] = str(Path(path).resolve())
    return profile


def override_profile() -> EngineProfile | None:
    path = os.environ.get(OVERRIDE_ENV)
    return load_engine_profile(path) if path else None


def scenario_profile(engine: Engine, node: Node, scenario_path: Path | str) -> Engine:
    """`engine` with the profile the run uses: --engine-profile, else the scenario's
    `engine.profile` (a path relative to the scenario file), else the identity."""
    override = override_profile()
    if override is not None:
        return replace(engine, profile=override)
    if not isinstance(node.value, dict) or "profile" not in node.value:
        return engine
    child = Node(node.value["profile"], f"{node.path}.profile", node.problems)
    relative = child.string(expected="a path to an engine profile file")
    if relative is None:
        return engine
    file = Path(scenario_path).parent / Path(relative).expanduser()
    if not file.is_file():
        child.fail("an engine profile file (a path relative to the scenario file)")
        return engine
    return replace(engine, profile=load_engine_profile(file))


def profile_summary(profile: EngineProfile) -> dict:
    """What a result says about the profile it used (JSON `engine_profile`)."""
    return {
        "name": profile.name,
        "source": profile.source,
        "engine": profile.engine,
        "engine_version": profile.engine_version,
        "gpu": profile.gpu,
        "model": profile.model,
        "identity": profile.is_identity(),
        "cv_error_frac": dict(profile.cv_error_frac) or None,
        "fitted_on": [f for f, _, _ in profile.fitted_on],
    } | ({"poor_fit": list(profile.poor_fit)} if profile.poor_fit else {})


def poor_fit_text(summary: dict) -> str:
    """The warning a profile kept with `calibrate --accept-poor-fit` puts in every answer
    (from `profile_summary`); "" for a sound one."""
    notes = summary.get("poor_fit")
    if not notes:
        return ""
    return (
        f"POOR FIT: engine profile {summary['name']} was kept with --accept-poor-fit; its "
        f"absolute times are not to be trusted: {'; '.join(notes)}"
    )


def profile_facts(profile: EngineProfile) -> list[tuple[str, str]]:
    """The BOM's header fact for a poor-fit profile (none for a sound one)."""
    text = poor_fit_text(profile_summary(profile))
    return [("engine_profile", text)] if text else []


def profile_line(summary: dict) -> str:
    """One line for table output (from `profile_summary`): which profile, and how far to
    trust absolute times."""
    warning = poor_fit_text(summary)
    return _trust_line(summary) + (f"; {warning}" if warning else "")


def _trust_line(summary: dict) -> str:
    if summary["identity"]:
        return (
            f"engine profile: {summary['name']} ({summary['source']}): the plain roofline, "
            "not calibrated to an engine (absolute times may be off by tens of %; "
            "see `pdd-plan calibrate steps`)"
        )
    cv = summary["cv_error_frac"] or {}
    errors = ", ".join(f"{p} {100 * v:.0f} %" for p, v in cv.items()) or "unknown"
    engine = f"{summary['engine']} {summary['engine_version']}".strip() or "engine unnamed"
    return (
        f"engine profile: {summary['name']} ({summary['source']}; {engine} on "
        f"{summary['gpu'] or 'any GPU'}); cross-validated error {errors}"
    )


def transfer_notes(profile: EngineProfile, gpu_ids, model_id: str = "") -> list[str]:
    """A note per GPU the profile was not fitted on (its efficiencies move by the
    datasheet ratios; its seconds terms stay as fitted), and one when the model differs
    (benchmarks/calibration.py --across-models: on the FPM data a profile moved between
    models was worse than the plain roofline)."""
    if profile.is_identity():
        return []
    notes = []
    if model_id and profile.model not in ("", "any") and model_id not in profile.model.split("+"):
        notes.append(
            f"engine profile {profile.name} was fitted on model {profile.model}, not "
            f"{model_id}: its step times may be further off than the plain roofline's"
        )
    if profile.gpu in ("", "any"):
        return notes
    return notes + [
        f"engine profile {profile.name} was fitted on {profile.gpu}; applied to {gpu} through "
        "the datasheet ratios (peak FLOP/s, HBM bandwidth); its fixed costs are kept as fitted"
        for gpu in sorted(set(gpu_ids))
        if gpu != profile.gpu
    ]
