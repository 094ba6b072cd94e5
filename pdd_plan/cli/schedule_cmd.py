"""`pdd-plan schedule [SCENARIO]`: the plan over the scenario's load curve.

A command of its own, not `solve` on a curve scenario: solve's answer is one plan at one
rate (design.md §7's JSON, the goldens, sweep and report read it so), while a schedule is
a committed base with a different top-up each period, its own files and costs. `solve` on
the same scenario still answers for one rate, the curve's peak (the schedule's baseline).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from pdd_plan import __version__
from pdd_plan.cli.bounds import time_limit_option
from pdd_plan.cli.output import FORMAT_HELP, Format, check_architecture, console, print_structured
from pdd_plan.cli.output_formats import CSV_ONLY
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.errors import InfeasibleError, UnprovenError
from pdd_plan.report.files import write_atomic, write_folder

OUTPUT_FORMATS = {"--schedule": CSV_ONLY, "--bom": CSV_ONLY}
MAX_ROWS_SHOWN = 48  # a longer curve's table is cut (the CSV has every period)


def schedule(
    scenario: str = typer.Argument(
        None, help="a scenario with workload.load_curve (file or shipped name)"
    ),
    architecture: str = typer.Option(
        None, "--architecture", help="force pdd, cdc_pd, idc_pd or colocated"
    ),
    time_limit: float = time_limit_option(),
    schedule_out: str = typer.Option(
        None, "--schedule", help="write the schedule as CSV, one row a period"
    ),
    bom: str = typer.Option(
        None, "--bom", help="write the committed base's bill of materials (reserved + lines)"
    ),
    out: str = typer.Option(
        None,
        "--out",
        help="write the folder DIR: schedule.json (the answer), schedule.csv, bom.csv, "
        "scenario.json (the scenario as planned) and run.json",
    ),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Plan over a day's load: reserved base, on-demand and spot top-ups, hour by hour."""
    from pdd_plan.stages.solving.schedule_service import schedule_scenario

    if architecture is not None:
        check_architecture(architecture)
    paths = {"--schedule": schedule_out, "--bom": bom}
    check_outputs([scenario], paths, {"--out": out}, formats=OUTPUT_FORMATS)
    result, files = schedule_scenario(scenario, architecture, time_limit_s=time_limit)
    if files is None:
        if format.structured:
            print_structured(result, format)
        error = InfeasibleError if result["status"] == "infeasible" else UnprovenError
        raise error(result["reason"])
    if schedule_out:
        write_atomic(schedule_out, files.schedule_csv)
    if bom:
        write_atomic(bom, files.bom_csv)
    if out:
        _write_folder(Path(out), result, files)
    if format.structured:
        print_structured(result, format)
        return
    print_schedule(result)


def _write_folder(folder: Path, result: dict, files) -> None:
    run = {"version": __version__, "solver": result["solver"]["name"],
           "status": result["status"], "wall_s": result["solver"]["wall_s"]}  # fmt: skip
    write_folder(
        folder,
        {
            "schedule.json": json.dumps(result, indent=2) + "\n",
            "schedule.csv": files.schedule_csv,
            "bom.csv": files.bom_csv,
            "scenario.json": json.dumps(files.resolved_scenario, indent=2) + "\n",
            "run.json": json.dumps(run, indent=2) + "\n",
        },
    )


def print_schedule(result: dict) -> None:
    from pdd_plan.report.schedule_view import summary_lines

    plan, rows = result["plan"], result["schedule"]
    lines = ", ".join(f"{x['count']} x {x['tier']}" for x in plan["lines"]) or "none"
    console.print(
        f"{result['scenario']}: {plan['architecture']} over {len(rows)} periods "
        f"({result['status']}); lines: {lines}",
        markup=False,
    )
    table = Table(title="Schedule: instances needed (reserved + on-demand [+ spot])")
    for name in ("start", "req/s", *(r["role"] for r in rows[0]["roles"]), "$/h",
                 "TTFT p90", "TPOT p90", "SLA"):  # fmt: skip
        table.add_column(name, justify="right")
    for row in rows[:MAX_ROWS_SHOWN]:
        table.add_row(*_cells(row))
    console.print(table)
    if len(rows) > MAX_ROWS_SHOWN:
        console.print(f"... {len(rows) - MAX_ROWS_SHOWN} more periods (--schedule writes all)")
    for r in rows[0]["roles"]:
        console.print(
            f"{r['role']}: {r['gpu']} x{r['gpus_per_instance']} in {r['datacenter']}, "
            f"{r['reserved']} reserved",
            markup=False,
        )
    for line in summary_lines(result):
        console.print(line, markup=False)
    s = result["solver"]
    console.print(
        f"{s['structures']} structures bounded, {s['structures_sized']} sized, in "
        f"{s['wall_s']:.1f} s" + (f"; stopped by the {s['stopped_by']}" if s["stopped_by"] else ""),
        markup=False,
    )


def _cells(row: dict) -> list[str]:
    start = row.get("start") or f"{row['start_h']:g} h"
    roles = [
        f"{r['needed']} ({r['reserved']}+{r['on_demand']}"
        + (f"+{r['spot']})" if r["spot"] else ")")
        for r in row["roles"]
    ]
    ttft, tpot = row["ttft_s"]["p90"], row["tpot_s"]["p90"]
    return [
        start,
        f"{row['arrival_rate_per_s']:g}",
        *roles,
        f"{row['cost_usd_per_hour']:,.2f}",
        "-" if ttft is None else f"{ttft:.3g} s",
        "-" if tpot is None else f"{tpot * 1e3:.3g} ms",
        "yes" if row["sla_met"] else "NO",
    ]
