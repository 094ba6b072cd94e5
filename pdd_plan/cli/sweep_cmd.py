"""`pdd-plan sweep SCENARIO --vary KEY=...`: the scenario solved at every grid point."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from pdd_plan import __version__
from pdd_plan.cli.bounds import jobs_option, time_limit_option
from pdd_plan.cli.output import Format, check_architecture, console, print_json, safe, table
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.report.files import write_folder

VARY_HELP = (
    "KEY=START:STOP:STEP (stop included) or KEY=V1,V2,...; KEY is a dotted path into the "
    "scenario YAML (list items by index: datacenters.0.gpus.1.price_usd_per_gpu_hour); "
    "workload.prefix_hit_rate.mean moves the hit-rate distribution to that mean. Repeat for "
    "a grid."
)


def _progress(total: int, jobs: int):
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn(f"sweep ({jobs} process{'es' if jobs > 1 else ''})"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )


def run_with_progress(sweep, jobs: int) -> tuple[list[dict], float]:
    """The sweep's rows with a progress bar (and ETA) on stderr, and the wall time."""
    from pdd_plan import sweep as sw

    start = time.perf_counter()
    with _progress(len(sweep.points), jobs) as progress:
        task = progress.add_task("points", total=len(sweep.points), failed=0)
        failed = 0

        def done(row: dict) -> None:
            nonlocal failed
            failed += row["status"] not in ("optimal", "feasible", "evaluated")
            progress.update(task, advance=1, failed=failed)

        try:
            rows = sw.run(sweep, jobs, on_done=done)
        except BaseException:
            progress.console.quiet = True  # an interrupt's one error line stands alone
            raise
    return rows, time.perf_counter() - start


def summary(sweep, rows: list[dict], jobs: int, wall_s: float) -> dict:
    ok = [r for r in rows if r["status"] in ("optimal", "feasible", "evaluated")]
    return {
        "scenario": sweep.label,
        "version": __version__,
        "architecture": sweep.architecture,
        "plan_file": sweep.plan_path,
        "objective": (sweep.data.get("objective") or {}).get("kind", "max_bcr"),
        "axes": [{"key": a.key, "values": list(a.values)} for a in sweep.axes],
        "points_total": len(rows),
        "points_failed": len(rows) - len(ok),
        "jobs": jobs,
        "wall_s": wall_s,
    }


def write_out(folder: Path, sweep, rows: list[dict], info: dict, scenario_mean: float) -> list[str]:
    """sweep.csv, sweep.json, run.json and every plot as SVG and PNG, all rendered first,
    then the folder swapped in whole (never half-written, never mixed with another run)."""
    from pdd_plan.report.plots import render
    from pdd_plan.report.sweep_files import csv_text, json_text
    from pdd_plan.report.sweep_plots import sweep_figures

    keys = [a.key for a in sweep.axes]
    contents = {
        "sweep.csv": csv_text(rows, keys),
        "sweep.json": json_text(info, rows),
        "run.json": json.dumps(info, indent=2) + "\n",
    }
    for name, fig in sweep_figures(rows, keys, scenario_mean).items():
        contents[f"{name}.svg"], contents[f"{name}.png"] = render(fig)
    write_folder(folder, contents)
    return list(contents)


def _print_table(sweep, rows: list[dict]) -> None:
    """One line a point; the plans themselves are in sweep.csv / --format json."""
    from pdd_plan.report.sweep_files import gpu_groups

    keys = [a.key for a in sweep.axes]
    short = [k.rsplit(".", 1)[-1] for k in keys]
    cols = [*short, "status", "$/h", "goodput req/s", "BCR", "TTFT P99 s", "GPUs", "error"]
    body = []
    for r in rows:
        m = r["metrics"] or {}
        ttft_p99_s = (m.get("ttft_s") or {}).get("p99")
        gpus = sum(gpu_groups(r["plan"]).values()) if r["plan"] else None
        error = (r["error"] or "")[:60] + ("..." if len(r["error"] or "") > 60 else "")
        body.append([*(r["values"][k] for k in keys), r["status"], m.get("cost_usd_per_hour"),
                     m.get("goodput_rps"), m.get("bcr_rps_per_usd_hour"), ttft_p99_s, gpus,
                     error])  # fmt: skip
    table(f"sweep of {Path(sweep.label).name}", cols, body)


def sweep(
    scenario: str = typer.Argument(None, help="a scenario file or shipped name (default: default)"),
    vary: list[str] = typer.Option(..., "--vary", help=VARY_HELP),
    objective: str = typer.Option(None, "--objective", help="max_bcr, min_cost or max_goodput"),
    architecture: str = typer.Option(
        "pdd", "--architecture", help="pdd, cdc_pd, idc_pd or colocated"
    ),
    plan: str = typer.Option(
        None, "--plan", help="evaluate this plan file at every point instead of solving"
    ),
    jobs: int = jobs_option(),
    time_limit: float = time_limit_option(),
    out: str = typer.Option(
        None, "--out", help="write sweep.csv, sweep.json, run.json and the plots"
    ),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    format: Format = typer.Option(Format.table, "--format", help="table or json"),
) -> None:
    """Solve (or evaluate a plan) at every point of a grid of scenario values."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    from pdd_plan import sweep as sw
    from pdd_plan.loaders.catalog import Catalog

    check_architecture(architecture)
    check_outputs([scenario, plan], folders={"--out": out})
    catalog = Catalog()
    spec = sw.prepare(scenario, vary, objective, architecture, plan, time_limit_s=time_limit,
                      catalog=catalog)  # fmt: skip
    jobs, note = sw.job_plan(jobs, len(spec.points))
    if note:
        typer.echo(f"note: {note}", err=True)
    rows, wall_s = run_with_progress(spec, jobs)
    info = summary(spec, rows, jobs, wall_s)
    if out:
        from pdd_plan.plan.scenario_edit import edited

        mean = edited(spec.data, {}, spec.label, catalog)[0].workload.prefix_hit_rate.mean()
        write_out(Path(out), spec, rows, info, mean)
    if format is Format.json:
        print_json({**info, "points": rows})
    else:
        _print_table(spec, rows)
        console.print(
            f"{info['points_total']} points ({info['points_failed']} failed) in {wall_s:.1f} s "
            f"with {jobs} process{'es' if jobs > 1 else ''}"
            + (f"; files in {safe(out)}" if out else "")
        )
    failed = sw.all_failed_error(rows, spec.label)  # some points failed: exit 0, counted
    if failed is not None:
        raise failed
