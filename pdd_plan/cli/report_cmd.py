"""`pdd-plan report SCENARIO -o report.html`: the sizing report as one self-contained HTML
file (the Markdown report plus its plots, inline SVG and CSS, nothing fetched)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from pdd_plan.cli.bounds import jobs_option, time_limit_option
from pdd_plan.cli.output import check_architecture, console, safe
from pdd_plan.cli.output_formats import HTML_ONLY, MARKDOWN_ONLY
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.cli.prices_opt import prices_option, use_prices
from pdd_plan.cli.progress import bars, progress_option, step
from pdd_plan.errors import InputError
from pdd_plan.report.files import write_atomic

OUTPUT_FORMATS = {"--output": HTML_ONLY, "--markdown": MARKDOWN_ONLY}
# the bathtub plot's points: each starts a solve, two where the report also draws a
# baseline architecture (report_build.extra_points), so 999 values started 2,002 solves;
# 32 points draw a smooth curve, and a finer one is a sweep of the hit-rate mean
MAX_HIT_MEANS = 32


def _hit_means(text: str | None):
    """The means `--hit-rates` names, checked; None when not given (build's default).
    Counted before parsed: a list past the cap is refused at once."""
    if text is None:
        return None
    count = text.count(",") + 1
    if count > MAX_HIT_MEANS:
        from pdd_plan.plan.scenario_edit import HIT_MEAN_KEY

        raise InputError.single(
            "command line", "--hit-rates", f"{count:,} values",
            f"at most {MAX_HIT_MEANS} (each starts one or two solves); for more points, "
            f"`pdd-plan sweep SCENARIO --vary {HIT_MEAN_KEY}=LOW:HIGH:STEP`",
        )  # fmt: skip
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if not values or not all(0.0 <= v <= 1.0 for v in values):
        raise InputError.single(
            "command line", "--hit-rates", repr(text), "means between 0 and 1, e.g. 0.3,0.7,0.95"
        )
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise InputError.single(
            "command line", "--hit-rates", f"{repeated[0]:g} more than once",
            "each mean once (a repeat solves the same case again)",
        )  # fmt: skip
    return values


def _write(output: str, markdown: str | None, result) -> None:
    write_atomic(Path(output), result.html)
    if markdown:
        write_atomic(Path(markdown), result.markdown)


def report(
    scenario: str = typer.Argument(None, help="a scenario file or shipped name (default: default)"),
    output: str = typer.Option(..., "-o", "--output", help="the HTML file to write (.html)"),
    architecture: str = typer.Option(
        None,
        "--architecture",
        help="force pdd, cdc_pd, idc_pd or colocated (default: the one `solve` recommends)",
    ),
    jobs: int = jobs_option(),
    time_limit: float = time_limit_option(),
    hit_rates: str = typer.Option(
        None, "--hit-rates", help="mean hit rates of the bathtub plot (default 0.3,0.5,...,0.98)"
    ),
    markdown: str = typer.Option(None, "--markdown", help="also write the Markdown report (.md)"),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    prices: str | None = prices_option(),
    progress: bool = progress_option(),
) -> None:
    """Write the sizing report as a self-contained HTML file with its plots."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    use_prices(prices)  # checked first too; every scenario loaded takes its quotes
    if architecture is not None:
        check_architecture(architecture)
    check_outputs([scenario], {"--output": output, "--markdown": markdown}, formats=OUTPUT_FORMATS)
    means = _hit_means(hit_rates)
    start = time.perf_counter()
    from pdd_plan.stages.reporting.report_pool import start_drawer

    start_drawer()  # forked now: it imports matplotlib as this process imports the solver
    from pdd_plan.stages.reporting.report_build import HIT_MEANS, build

    def say(text: str) -> None:
        typer.echo(f"report: {text}...", err=True)

    with bars(progress) as shown:
        result = build(scenario, architecture, jobs, time_limit_s=time_limit,
                       hit_means=means or HIT_MEANS,
                       say=shown.say if shown else say, progress=shown, png=False)  # fmt: skip
        step(shown, "writing the files", lambda: _write(output, markdown, result))
    console.print(
        f"wrote {safe(output)} ({len(result.html) / 1024:.0f} KiB, {len(result.figures)} plots) in "
        f"{time.perf_counter() - start:.1f} s"
    )
