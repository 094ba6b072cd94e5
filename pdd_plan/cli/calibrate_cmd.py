"""`pdd-plan calibrate steps FILE... -o profile.yaml`: an engine profile fitted to measured
per-iteration step times (vLLM forward-pass metrics or the plain CSV format)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from pdd_plan.cli.bounds import MAX_BATCH, bounded, check_id_option, parallel_size_option
from pdd_plan.cli.calibrate_serving_cmd import accept_poor_fit_option, warn_poor_fit
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.cli.output_formats import YAML_ONLY
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.errors import InputError
from pdd_plan.model.compute.engine_profile import PARAMETERS, vllm_graph_max_tokens
from pdd_plan.report.engine_profile_file import profile_yaml
from pdd_plan.report.files import write_atomic

if TYPE_CHECKING:  # the fit (scipy) loads when the command runs, not for --help
    from pdd_plan.stages.calibrating.calibration import Calibration

app = typer.Typer(help="Fit engine profiles to measurements.", no_args_is_help=True)


def _check(out: str, name: str | None, sizes: dict) -> None:
    if not out.strip():
        raise InputError.single("command line", "-o", repr(out), "a file name for the profile")
    check_id_option("--name", name)
    for option, value in sizes.items():
        if value is not None and value < 1:
            raise InputError.single("command line", f"--{option}", str(value), "an integer >= 1")


def calibrate_data(c: Calibration, out: str) -> dict:
    return {
        "profile": c.profile.describe() | {"source": out},
        "rows": c.rows,
        "rows_kept": c.rows_kept,
        "rows_by_phase": c.phase_rows,
        "median_abs_error_frac": {"before": c.before_frac, "fit": c.fit_frac, "cv": c.cv_frac},
        "configurations": [m.samples.label for m in c.measured],
        "held": c.held,
    }


def _print(c: Calibration, out: str) -> None:
    from pdd_plan.model.compute.step_fit import PHASES

    p = c.profile
    console.print(
        f"profile {safe(p.name)} ({p.engine} {p.engine_version}, {p.model} on {p.gpu}) from "
        f"{c.rows:,} iterations in {len(c.measured)} configuration(s), {c.rows_kept:,} kept"
    )
    rows = [[k, f"{getattr(p, k):.4g}", c.held.get(k, "fitted")] for k in PARAMETERS]
    table("fitted parameters", ["parameter", "value", "how"], rows)
    cells = []
    for phase in PHASES:
        if phase in c.fit_frac:
            cv = c.cv_frac.get(phase)
            cells.append([
                phase, c.phase_rows[phase], f"{100 * c.before_frac[phase]:.1f} %",
                f"{100 * c.fit_frac[phase]:.1f} %", "-" if cv is None else f"{100 * cv:.1f} %",
            ])  # fmt: skip
    table(
        "median absolute error of the step time",
        ["phase", "rows", "plain roofline", "fitted", "cross-validated"],
        cells,
    )
    console.print(f"wrote {safe(out)}")


def _graph_sizes(files: list[Path]) -> dict[str, int]:
    """Each FPM file's largest captured CUDA graph from the launch recorded in an
    index.csv beside it (`extra_engine_args`, `max_num_seqs`); files it does not name, or
    an index without those columns, keep vLLM's default."""
    sizes: dict[str, int] = {}
    for folder in {f.parent for f in files}:
        index = folder / "index.csv"
        try:
            rows = list(csv.DictReader(index.open(encoding="utf-8"))) if index.is_file() else []
        except (OSError, UnicodeDecodeError, csv.Error):
            rows = []  # the loader reports a broken index when it reads the configuration
        for r in rows:
            seqs = r.get("max_num_seqs") or ""
            n = int(seqs) if seqs.isdigit() else None
            sizes[str(r.get("file"))] = vllm_graph_max_tokens(r.get("extra_engine_args") or "", n)
    return sizes


@app.command("steps")
def steps(
    files: list[Path] = typer.Argument(..., help="FPM CSVs (.csv or .csv.gz) or plain CSVs"),
    out: str = typer.Option(..., "-o", "--out", help="the profile YAML to write (.yaml)"),
    model: str | None = typer.Option(None, help="catalog model id (when no index.csv says)"),
    gpu: str | None = typer.Option(None, help="catalog GPU id (when no index.csv says)"),
    tp: int | None = parallel_size_option("--tp", "tensor-parallel"),
    ep: int | None = parallel_size_option("--ep", "expert-parallel"),
    dp: int | None = parallel_size_option("--dp", "data-parallel"),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="KV cache dtype (bf16)"),
    graph_tokens: int | None = bounded(
        None,
        "--cuda-graph-max-tokens",
        low=1,
        high=MAX_BATCH,
        help="the engine's largest captured CUDA graph, tokens per rank (default: the "
        "launch flags in an index.csv beside the file, else vLLM's 512)",
    ),
    name: str | None = typer.Option(None, help="the profile's id (default from the data)"),
    cross_validate: bool = typer.Option(
        True, "--cv/--no-cv", help="cross-validated error (one fit per configuration)"
    ),
    accept_poor_fit: bool = accept_poor_fit_option(),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Fit the step-time model to measured iterations and write an engine profile.

    Model, GPU and parallelism of an FPM file come from an index.csv beside it, else
    from the options; the plain CSV may carry them per row. Refused (exit 2): a fit above
    the datasheet peak or at a bound, or with a median error above 25 % (README).
    """
    from pdd_plan.stages.calibrating.calibration import calibrate_steps

    _check(out, name, {"tp": tp, "ep": ep, "dp": dp, "cuda-graph-max-tokens": graph_tokens})
    check_outputs(files, {"--out": out}, formats={"--out": YAML_ONLY})
    options = dict(model=model, gpu=gpu, tp=tp, ep=ep, dp=dp, kv_dtype=kv_dtype)
    sizes = {f.name: graph_tokens for f in files} if graph_tokens else _graph_sizes(files)
    result = calibrate_steps(
        files, options, name, cross_validate, graph_sizes=sizes, accept_poor_fit=accept_poor_fit
    )
    write_atomic(out, profile_yaml(result.profile))
    warn_poor_fit(result.profile)
    if format.structured:
        print_structured(calibrate_data(result, out), format)
        return
    _print(result, out)


def _register() -> None:
    from pdd_plan.cli.calibrate_observed_cmd import observed
    from pdd_plan.cli.calibrate_serving_cmd import serving

    app.command("serving")(serving)
    app.command("observed")(observed)


_register()
