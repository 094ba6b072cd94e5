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
    mtp: {draft_tokens: 1, accepted_tokens: 1.8}  # optional: multi-token prediction
                                               # as the engine runs it (issue #23)
    cv_error_frac: {decode: 0.05, prefill: 0.03, mixed: 0.04}  # optional, medians
                                               # (step times; ttft, tpot: serving figures)
    held_out_ratio: {ttft: [0.92, 1.1], tpot: [1.01]}   # optional: calibrate observed's
                                               # held-out observed / predicted ratios
    poor_fit: ["memory_efficiency_frac 1.25 ..."]   # optional: written by calibrate
                                               # --accept-poor-fit; every answer repeats it

A profile set (issue #23 item 4): one fitted profile per GPU type it was measured on.

    name: vllm_0_20_qwen3_32b                  # id
    profiles: [vllm_0_20_b300_qwen3_32b.yaml, vllm_0_20_h100_qwen3_32b.yaml]
                                               # profile files, relative to this one;
                                               # each fitted on a different catalog GPU

An instance runs the member fitted on its GPU; a GPU no member was fitted on runs the
member whose GPU's datasheet is nearest, carried by the datasheet ratios (its
efficiencies multiply the catalog's; its seconds terms as fitted). Every answer names,
per GPU type, the member it used and how (`profile_summary`'s `per_gpu`).

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
from pdd_plan.model.compute.engine_profile import (
    IDENTITY,
    MTP_RANGES,
    PARAMETERS,
    EngineProfile,
    mtp_problem,
)
from pdd_plan.model.compute.step_fit import PHASES
from pdd_plan.model.scenario import Engine

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


def _mtp(node: Node) -> dict:
    """`mtp: {draft_tokens: k, accepted_tokens: L}` (engine_profile.MTP_RANGES)."""
    if node.is_missing:
        return {}
    f = node.mapping(required=("draft_tokens", "accepted_tokens"))
    if f is None:
        return {}
    draft = f["draft_tokens"].integer(minimum=0, maximum=int(MTP_RANGES["mtp_draft_tokens"][2]))
    high = MTP_RANGES["mtp_accepted_tokens"][2]
    accepted = f["accepted_tokens"].number(minimum=1.0, maximum=high)
    if draft is None or accepted is None:
        return {}
    if mtp_problem(draft, accepted):
        f["accepted_tokens"].fail(
            f"at most 1 + draft_tokens = {draft + 1} (a step emits at most the tokens it verifies)"
        )
        return {}
    return {"mtp_draft_tokens": float(draft), "mtp_accepted_tokens": float(accepted)}


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
    """Read and check a profile file or a profile set; InputError lists every problem."""
    name = shown_path(path)
    problems = Problems(name)
    root = Node(load_yaml(path, WHAT), "", problems)
    if isinstance(root.value, dict) and "profiles" in root.value:
        return _load_set(path, root, problems)
    f = root.mapping(
        required=("name", "parameters"),
        optional=(*TOP_KEYS, "cv_error_frac", "poor_fit", "mtp", "held_out_ratio"),
    )
    if f is None:
        problems.raise_if_any()
    profile_name = f["name"].identifier(required=True)
    params = _parameters(f["parameters"]) | _mtp(f["mtp"])
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


def _load_set(path, root: Node, problems: Problems) -> EngineProfile:
    """A profile set (module docstring): its members, each fitted on its own catalog GPU."""
    from pdd_plan.loaders.catalog import Catalog  # the GPUs' datasheets

    f = root.mapping(required=("name", "profiles"))
    if f is None:
        problems.raise_if_any()
    set_name = f["name"].identifier(required=True)
    gpus = Catalog().gpus
    members, seen = [], {}
    for item in f["profiles"].items(min_items=1) or []:
        relative = item.string(required=True, expected="a path to an engine profile file")
        file = Path(path).parent / Path(relative or "").expanduser()
        if relative is None:
            continue
        if not file.is_file():
            item.fail("an engine profile file (a path relative to the profile set)")
            continue
        member = load_engine_profile(file)
        if member.members or member.gpu not in gpus or member.gpu in seen:
            why = "a set" if member.members else f"fitted on gpu {member.gpu!r}"
            if member.gpu in seen:
                why += f", as {seen[member.gpu]} is"
            item.fail(f"a profile fitted on a catalog GPU no other member was ({why})")
            continue
        seen[member.gpu] = relative
        g = gpus[member.gpu]
        members.append((member, g.peak_flop_per_s("bf16"), g.hbm_bytes_per_s))
    problems.raise_if_any()
    return EngineProfile(name=set_name, source=shown_path(path), members=tuple(members))


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


def profile_summary(profile: EngineProfile, gpu_ids=()) -> dict:
    """What a result says about the profile it used (JSON `engine_profile`); for a profile
    set, `per_gpu`: per GPU type of the answer (`gpu_ids`; else each member's), the member
    it used and whether fitted on that GPU or carried by the datasheet ratios."""
    if profile.members:
        return _set_summary(profile, gpu_ids)
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


def _set_summary(profile: EngineProfile, gpu_ids) -> dict:
    from pdd_plan.loaders.catalog import Catalog

    gpus = Catalog().gpus
    ids = sorted(set(gpu_ids)) or [m.gpu for m, _, _ in profile.members]
    per_gpu = {}
    for gpu_id in ids:
        g = gpus.get(gpu_id)
        member = (
            profile.for_gpu(gpu_id, g.peak_flop_per_s("bf16"), g.hbm_bytes_per_s)
            if g is not None
            else profile.members[0][0]
        )
        per_gpu[gpu_id] = {
            "profile": member.name,
            "fitted": member.gpu == gpu_id,
            "how": "fitted" if member.gpu == gpu_id else f"datasheet ratios from {member.gpu}",
            **profile_summary(member),
        }
    poor = [n for m, _, _ in profile.members for n in m.poor_fit]
    return {
        "name": profile.name,
        "source": profile.source,
        "identity": False,
        "members": [m.name for m, _, _ in profile.members],
        "per_gpu": per_gpu,
    } | ({"poor_fit": poor} if poor else {})


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
    if "per_gpu" in summary:
        each = "; ".join(
            f"{gpu}: {v['profile']} ({v['how']})" for gpu, v in summary["per_gpu"].items()
        )
        return f"engine profile set {summary['name']} ({summary['source']}): {each}"
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
    if profile.members:  # a set: each GPU's member, as that GPU's instances run it
        summary = _set_summary(profile, gpu_ids)["per_gpu"]
        by_name = {m.name: m for m, _, _ in profile.members}
        notes = [transfer_notes(by_name[v["profile"]], [g], model_id) for g, v in summary.items()]
        return list(dict.fromkeys(n for each in notes for n in each))
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
