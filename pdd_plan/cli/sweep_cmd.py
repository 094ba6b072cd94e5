"""`pdd-plan sweep SCENARIO --vary KEY=...`: the scenario solved at every grid point."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from pdd_plan import __version__
from pdd_plan.cli.bounds import jobs_option, time_limit_option
from pdd_plan.cli.output import (
    FORMAT_HELP,
    Format,
    check_architecture,
    console,
    print_structured,
    safe,
    table,
)
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.cli.prices_opt import prices_option, use_prices
from pdd_plan.cli.progress import forced, progress_option, wanted
from pdd_plan.report.files import write_folder

VARY_HELP = (
    "KEY=START:STOP:STEP (stop included) or KEY=V1,V2,...; KEY is a dotted path into the "
    "scenario YAML (list items by index: datacenters.0.gpus.1.price_usd_per_gpu_hour); "
    "workload.prefix_hit_rate.mean moves the hit-rate distribution to that mean. Repeat for "
    "a grid."
)


def _progress(label: str, shown: bool, force: bool):
    """The sweep's bar on stderr; `shown` False draws nothing, not even a last frame (a
    pipe's reader, `sweep | head -1`, gets no bar: cli/progress.wanted)."""
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
        TextColumn(f"sweep ({label})"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True, force_terminal=force or None),
        transient=False,
        disable=not shown,
    )


def _workers(jobs: int, executor: str, ray_address: str | None) -> str:
    if executor == "ray":
        return f"Ray cluster {ray_address}" if ray_address else f"local Ray, {jobs} CPUs"
    return f"{jobs} process{'es' if jobs > 1 else ''}"


def run_with_progress(
    sweep,
    jobs: int,
    journal=None,
    done=None,
    executor: str = "local",
    ray_address: str | None = None,
    bar: tuple[bool, bool] = (False, False),
) -> tuple[list[dict], float]:
    """The sweep's rows with a progress bar (and ETA) on stderr where `bar` (shown, forced)
    says, and the wall time. Each new row goes to `journal` as it ends; the rows in `done`
    (resumed) count as done."""
    from pdd_plan.stages.sweeping import sweep as sw
    from pdd_plan.stages.sweeping.sweep_journal import as_stored

    done = done or {}
    start = time.perf_counter()
    failed = sum(r["status"] not in sw.OK_STATUSES for r in done.values())
    with _progress(_workers(jobs, executor, ray_address), *bar) as progress:
        task = progress.add_task("points", total=len(sweep.points), failed=failed,
                                 completed=len(done))  # fmt: skip

        def on_done(row: dict) -> None:
            nonlocal failed
            if journal is not None:
                journal.append(row)
            failed += row["status"] not in sw.OK_STATUSES
            progress.update(task, advance=1, failed=failed)

        try:
            rows = sw.run(sweep, jobs, on_done, done=done, executor=executor,
                          ray_address=ray_address)  # fmt: skip
        except BaseException:
            progress.console.quiet = True  # an interrupt's one error line stands alone
            raise
    return [as_stored(r) for r in rows], time.perf_counter() - start


def summary(sweep, rows: list[dict], jobs: int, wall_s: float, executor: str = "local",
            resumed: int = 0) -> dict:  # fmt: skip
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
        "points_resumed": resumed,
        "executor": executor,
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
    """One line a point; the plans themselves are in sweep.csv / --format json. A failed
    point's reason comes next to its status (a narrow terminal leaves out the rightmost
    figures first, #14 item 14); no error column when every point ran."""
    from pdd_plan.report.sweep_files import gpu_groups

    keys = [a.key for a in sweep.axes]
    short = [k.rsplit(".", 1)[-1] for k in keys]
    errors = any(r["error"] for r in rows)
    cols = [*short, "status", *(["error"] if errors else []), "$/h", "goodput req/s", "BCR",
            "TTFT P99 s", "GPUs"]  # fmt: skip
    body = []
    for r in rows:
        m = r["metrics"] or {}
        ttft_p99_s = (m.get("ttft_s") or {}).get("p99")
        gpus = sum(gpu_groups(r["plan"]).values()) if r["plan"] else None
        error = (r["error"] or "")[:60] + ("..." if len(r["error"] or "") > 60 else "")
        body.append([*(r["values"][k] for k in keys), r["status"], *([error] if errors else []),
                     m.get("cost_usd_per_hour"), m.get("goodput_rps"),
                     m.get("bcr_rps_per_usd_hour"), ttft_p99_s, gpus])  # fmt: skip
    table(f"sweep of {Path(sweep.label).name}", cols, body)


def _check_executor(executor: str, ray_address: str | None, resume: bool, out) -> None:
    """The executor options, checked before any work (Ray itself imported only if asked)."""
    from pdd_plan.errors import InputError
    from pdd_plan.stages.sweeping.sweep import EXECUTORS

    if executor not in EXECUTORS:
        raise InputError.single("command line", "--executor", repr(executor), "local or ray")
    if ray_address is not None and executor != "ray":
        raise InputError.single("command line", "--ray-address", "it without --executor ray",
                                "--executor ray with it")  # fmt: skip
    if resume and not out:
        raise InputError.single("command line", "--resume", "it without --out",
                                "--out DIR naming the interrupted sweep's folder")  # fmt: skip
    if executor == "ray":
        from pdd_plan.stages.sweeping.sweep_ray import import_ray, probe

        import_ray()
        if ray_address is not None:
            probe(ray_address)  # before the journal: a refusal leaves nothing behind


def _journal(out: str, spec, catalog, resume: bool):
    """The journal in `out` (opened, locked) and the rows it already holds."""
    from pdd_plan.stages.sweeping.sweep_journal import open_journal, sweep_key

    journal, done, replaced = open_journal(out, sweep_key(spec, catalog.root), spec.points,
                                           resume)  # fmt: skip
    if replaced:
        typer.echo(f"note: {safe(out)}: an unfinished sweep's journal replaced (--resume "
                   "continues one)", err=True)  # fmt: skip
    if resume:
        typer.echo(f"note: resuming: {len(done)} of {len(spec.points)} points already done",
                   err=True)  # fmt: skip
    return journal, done


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
        None,
        "--out",
        help="write the folder DIR: sweep.csv and sweep.json (every point), run.json (the "
        "run's settings) and the plots as SVG and PNG (pareto.*, composition.*, and "
        "bathtub.* when the hit rate varies, cost.* and bcr.* when the first axis is a "
        "number); while it runs, DIR/.sweep-journal.jsonl, which --resume reads",
    ),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    prices: str | None = prices_option(),
    executor: str = typer.Option(
        "local", "--executor", help="local (a process pool) or ray (Ray tasks; needs the ray extra)"
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="a running Ray cluster (default: a local Ray instance)"
    ),
    resume: bool = typer.Option(
        False, "--resume", help="with --out: skip the points an interrupted run finished"
    ),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
    progress: bool = progress_option(),
) -> None:
    """Solve (or evaluate a plan) at every point of a grid of scenario values."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    use_prices(prices)  # checked first too; every scenario loaded takes its quotes
    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.stages.sweeping import sweep as sw

    check_architecture(architecture)
    _check_executor(executor, ray_address, resume, out)
    check_outputs([scenario, plan], folders={"--out": out})
    catalog = Catalog()
    spec = sw.prepare(scenario, vary, objective, architecture, plan, time_limit_s=time_limit,
                      catalog=catalog)  # fmt: skip
    jobs, note = sw.job_plan(jobs, len(spec.points))
    if note:
        typer.echo(f"note: {note}", err=True)
    journal, done = _journal(out, spec, catalog, resume) if out else (None, {})
    try:
        bar = (wanted(progress, format.structured), forced(progress))
        rows, wall_s = run_with_progress(spec, jobs, journal, done, executor, ray_address, bar)
    finally:
        if journal is not None:
            journal.close()
    info = summary(spec, rows, jobs, wall_s, executor, len(done))
    from pdd_plan.loaders.engine_profile import profile_summary
    from pdd_plan.plan.scenario_edit import edited

    base = edited(spec.data, {}, spec.label, catalog)[0]
    # the profile every point's absolute times are in (issue #13: a run names its profile)
    info["engine_profile"] = profile_summary(base.engine.profile)
    if out:
        mean = base.workload.prefix_hit_rate.mean()
        write_out(Path(out), spec, rows, info, mean)  # the journal goes with the old folder
    _print(spec, rows, info, format, out, _workers(jobs, executor, ray_address))
    failed = sw.all_failed_error(rows, spec.label)  # some points failed: exit 0, counted
    if failed is not None:
        raise failed


def _print(spec, rows: list[dict], info: dict, format: Format, out, workers: str) -> None:
    if format.structured:
        print_structured({**info, "points": rows}, format)
        return
    _print_table(spec, rows)
    from pdd_plan.loaders.engine_profile import poor_fit_text

    if poor_fit_text(info["engine_profile"]):  # a profile kept with --accept-poor-fit
        console.print(poor_fit_text(info["engine_profile"]), markup=False)
    resumed = f", {info['points_resumed']} resumed" if info["points_resumed"] else ""
    console.print(
        f"{info['points_total']} points ({info['points_failed']} failed{resumed}) in "
        f"{info['wall_s']:.1f} s with {workers}" + (f"; files in {safe(out)}" if out else "")
    )
