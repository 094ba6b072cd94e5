"""`pdd-plan calibrate serving FILE... -o profile.yaml`: an engine profile fitted to
serving-benchmark results (vLLM, SGLang, genai-perf or the plain CSV)."""

from __future__ import annotations

from pathlib import Path

import typer

from pdd_plan.cli.bounds import MAX_TOKENS, bounded, check_id_option, parallel_size_option
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.cli.output_formats import YAML_ONLY
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.errors import InputError, visible
from pdd_plan.model.units import DTYPE_BYTES
from pdd_plan.report.engine_profile_file import profile_yaml
from pdd_plan.report.files import write_atomic


def check_common(out: str, name: str | None, dtypes: dict) -> None:
    """-o, --name and dtype options, before any file is read."""
    if not out.strip():
        raise InputError.single("command line", "-o", repr(out), "a file name for the profile")
    check_id_option("--name", name)
    for option, value in dtypes.items():
        if value is not None and value not in DTYPE_BYTES:
            raise InputError.single(
                "command line", option, repr(value), f"one of {', '.join(DTYPE_BYTES)}"
            )


def accept_poor_fit_option():
    return typer.Option(
        False, "--accept-poor-fit",
        help="keep a fit above the datasheet peak, at a bound or with a median error above "
        "25 %, marked in the file and in every answer that uses it (default: refused)",
    )  # fmt: skip


def warn_poor_fit(profile) -> None:
    """One stderr line per poor-fit note of a profile kept with --accept-poor-fit."""
    for note in profile.poor_fit:
        typer.echo(visible(f"warning: poor fit kept (--accept-poor-fit): {note}"), err=True)


def serving_data(c, out: str) -> dict:
    from pdd_plan.sim.serving_fit import FITTED  # scipy: loads when the command runs

    return {
        "profile": c.profile.describe() | {"source": out},
        "fitted": list(FITTED),
        "not_identified": list(c.fit.unidentified),
        "runs": sum(len(f.runs) for f in c.files),
        "files": [{"file": f.file, "format": f.kind, "runs": len(f.runs)} for f in c.files],
        "simulated_over_measured": [
            {"run": run, "figure": key, "ratio": ratio} for run, key, ratio in c.fit.ratios
        ],
        "cv_error_frac": c.cv_frac,
    }


def _print(c, out: str) -> None:
    from pdd_plan.sim.serving_fit import FITTED

    p = c.profile
    console.print(
        f"profile {safe(p.name)} ({p.engine or 'engine unnamed'}, {p.model} on {p.gpu}) from "
        f"{sum(len(f.runs) for f in c.files)} run(s) in {len(c.files)} file(s)",
        markup=False,
    )
    rows = [[k, f"{getattr(p, k):.4g}", "not identified" if k in c.fit.unidentified else ""]
            for k in FITTED]  # fmt: skip
    table("fitted parameters", ["parameter", "value", ""], rows)
    table("simulated / measured, per run", ["run", "TTFT figures", "TPOT figures"], _ranges(c))
    if c.cv_frac:
        errors = ", ".join(f"{k.upper()} {100 * v:.1f} %" for k, v in c.cv_frac.items())
        console.print(f"leave-one-run-out median error: {errors}", markup=False)
    console.print(f"wrote {safe(out)}", markup=False)


def _ranges(c) -> list[list[str]]:
    """One row per run: the lowest and highest ratio of its TTFT and of its TPOT figures."""
    by_run: dict[str, dict[str, list[float]]] = {}
    for run, key, ratio in c.fit.ratios:
        by_run.setdefault(run, {"ttft": [], "tpot": []})[key.split("_")[0]].append(ratio)
    return [
        [safe(run)] + [f"{min(v):.3f} to {max(v):.3f}" if v else "-" for v in m.values()]
        for run, m in by_run.items()
    ]


def serving(
    files: list[Path] = typer.Argument(
        ..., help="vLLM bench serve JSON, SGLang bench_serving JSONL, genai-perf JSON, or CSV"
    ),
    out: str = typer.Option(..., "-o", "--out", help="the profile YAML to write (.yaml)"),
    model: str | None = typer.Option(None, help="catalog model id (over the file's)"),
    gpu: str | None = typer.Option(None, help="catalog GPU id (over the file's)"),
    tp: int | None = parallel_size_option("--tp", "tensor-parallel"),
    ep: int | None = parallel_size_option("--ep", "expert-parallel"),
    dp: int | None = parallel_size_option("--dp", "data-parallel"),
    weight_dtype: str | None = typer.Option(None, "--weight-dtype", help="default: native"),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="KV cache dtype (bf16)"),
    max_batched_tokens: int = bounded(
        8192, "--max-batched-tokens", low=1, high=MAX_TOKENS,
        help="the engine's token budget per iteration",
    ),
    name: str | None = typer.Option(None, help="the profile's id (default from the data)"),
    cross_validate: bool = typer.Option(
        True, "--cv/--no-cv", help="leave-one-run-out error (one fit per run)"
    ),
    accept_poor_fit: bool = accept_poor_fit_option(),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:  # fmt: skip
    """Fit an engine profile to serving-benchmark results and write it.

    The profile is the one with which `estimate --concurrency N` (or `--rate R`)
    reproduces the measured TTFT and TPOT figures of every run.

    Fitted: compute and memory efficiency, the fixed cost of a step and of a step with
    prefill (serving figures identify no more); the other parameters stay at the plain
    roofline. Each run is replayed with its own lengths, concurrency or rate and request
    count. Model, GPU and parallelism: the options, else the file's own (vLLM --metadata).
    Refused (exit 2): a fit above the datasheet peak or at a bound, or with a median error
    above 25 % (--accept-poor-fit keeps it, marked).
    """
    from pdd_plan.stages.calibrating.calibration_serving import calibrate_serving

    check_common(out, name, {"--weight-dtype": weight_dtype, "--kv-dtype": kv_dtype})
    check_outputs(files, {"--out": out}, formats={"--out": YAML_ONLY})
    options = dict(model=model, gpu=gpu, tp=tp, ep=ep, dp=dp, kv_dtype=kv_dtype)
    options.update(weight_dtype=weight_dtype, max_batched_tokens=max_batched_tokens)
    result = calibrate_serving(
        files, options, name, cross_validate, accept_poor_fit=accept_poor_fit
    )
    write_atomic(out, profile_yaml(result.profile))
    warn_poor_fit(result.profile)
    if format.structured:
        print_structured(serving_data(result, out), format)
        return
    _print(result, out)
