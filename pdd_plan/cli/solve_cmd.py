"""`pdd-plan solve [SCENARIO]`: the deployment with the best objective under the SLA."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import typer

from pdd_plan import __version__
from pdd_plan.cli.bounds import bounded, time_limit_option
from pdd_plan.cli.evaluate_cmd import print_result
from pdd_plan.cli.objective import (
    GOVERNED_KEYS,
    check_objective,
    forced_objective,
    governed,
    governed_text,
    objective_option,
    scenario_kind,
)
from pdd_plan.cli.output import FORMAT_HELP, Format, check_architecture, console, print_structured
from pdd_plan.cli.output_formats import CSV_ONLY, HTML, LP_ONLY, REPORT
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.cli.prices_opt import prices_option, use_prices
from pdd_plan.cli.progress import bars, progress_option, step
from pdd_plan.errors import InfeasibleError, UnprovenError
from pdd_plan.report.files import write_atomic, write_folder

OUTPUT_FORMATS = {"--dump-lp": LP_ONLY, "--bom": CSV_ONLY, "--report": REPORT}


class _Outputs(NamedTuple):
    dump_lp: str | None
    bom: str | None
    report: str | None
    report_format: str | None  # output_formats.MARKDOWN or HTML
    out: str | None


def write_outputs(folder: Path, result: dict, files, report_md: str | None = None) -> None:
    """The folder is built aside and swapped in whole: never half-written, never mixed."""
    from pdd_plan.plan.formulate import MIP_GAP_REL  # PuLP: not at every command's start

    run = {
        "version": __version__,
        "solver": result["solver"]["name"],
        "status": result["status"],
        "objective": result["solver"]["objective"],
        "mip_gap_rel_limit": MIP_GAP_REL,
        "wall_s": result["solver"]["wall_s"],
        **{k: result["solver"][k] for k in GOVERNED_KEYS if k in result["solver"]},
    }
    contents = {
        "plan.json": json.dumps(result, indent=2) + "\n",
        "bom.csv": files.bom_csv,
        "scenario.json": json.dumps(files.resolved_scenario, indent=2) + "\n",
        "run.json": json.dumps(run, indent=2) + "\n",
    }
    if report_md is not None:
        contents["report.md"] = report_md
    write_folder(folder, contents)


def _infeasible(scenario, architecture, result, files, time_limit, format) -> None:
    """Why no plan: with `--format json` an answer on stdout too; always exit 3 with the
    one line on stderr."""
    from pdd_plan.api import infeasible_answer

    answer = infeasible_answer(scenario, architecture, result, files, time_limit_s=time_limit)
    if "confidence" in result:  # the limits it missed were the SLA's divided by the margin
        answer["confidence"] = result["confidence"]
        answer["reason"] += f" (sized with a margin: {result['confidence']['text']})"
    if format.structured:
        print_structured(answer, format)
    raise InfeasibleError(answer["reason"])


def _unproven(result, files, format) -> None:
    """No plan found, none proven impossible (stages/solving/unproven.py): with `--format json`
    the answer on stdout too; always exit 5 with the one line on stderr."""
    from pdd_plan.stages.solving.unproven import answer

    found = answer(result["scenario"], result, files.solved_each if files else ())
    if format.structured:
        print_structured(found, format)
    raise UnprovenError(found["reason"])


def _solve(solve_scenario, scenario, architecture, time_limit, shown, confidence=None):
    """The solve; a forced architecture is one stage of one step."""
    if architecture is None:
        return solve_scenario(scenario, None, time_limit_s=time_limit, progress=shown,
                              confidence=confidence)  # fmt: skip
    stage = f"solving {architecture}"
    return step(shown, stage, lambda: solve_scenario(scenario, architecture,
                                                     time_limit_s=time_limit,
                                                     confidence=confidence))  # fmt: skip


def _write(result, files, report_md, report_text, outputs: _Outputs) -> None:
    if outputs.dump_lp and files.lp_text:
        write_atomic(outputs.dump_lp, files.lp_text)
    if outputs.bom:
        write_atomic(outputs.bom, files.bom_csv)
    if outputs.report:
        write_atomic(outputs.report, report_text)
    if outputs.out:
        write_outputs(Path(outputs.out), result, files, report_md)


def _report_text(report_md: str, result: dict, report_format: str) -> str:
    """The sizing report as its file's name asks: Markdown, or the same as an HTML page
    (the page `pdd-plan report` writes, without the plots it solves more for)."""
    if report_format != HTML:
        return report_md
    from pdd_plan.report.html import render_html

    return render_html(report_md, result, [])


def print_choice(result: dict) -> None:
    """The recommendation first: which architecture, over which, by how much, and why."""
    from pdd_plan.report.choice_text import recommendation

    choice = result.get("architecture_choice")
    if choice:
        console.print(recommendation(choice), markup=False)


def solve(
    scenario: str = typer.Argument(None, help="a scenario file or shipped name (default: default)"),
    architecture: str = typer.Option(
        None,
        "--architecture",
        help="force pdd, cdc_pd, idc_pd or colocated (default: the best the scenario allows)",
    ),
    objective: str | None = objective_option(),
    time_limit: float = time_limit_option(),
    dump_lp: str = typer.Option(None, "--dump-lp", help="write the winning MILP as an LP file"),
    bom: str = typer.Option(None, "--bom", help="write the bill of materials as CSV"),
    report: str = typer.Option(
        None,
        "--report",
        help="write the sizing report (solves its sensitivity cases): x.md Markdown, x.html "
        "the same as one self-contained page (`pdd-plan report` adds the plots)",
    ),
    out: str = typer.Option(
        None,
        "--out",
        help="write the folder DIR: plan.json (the answer), bom.csv, the sizing report "
        "report.md (so it solves the sensitivity cases, as --report), scenario.json (the "
        "scenario as solved) and run.json (version, solver, objective, wall time)",
    ),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    prices: str | None = prices_option(),
    confidence: float | None = bounded(
        None,
        "--confidence",
        low=0.5,
        high=0.999,
        help="size so the SLA holds at this quantile of the engine profile's held-out "
        "error (a profile from calibrate observed); the answer says the margin and its cost",
    ),  # fmt: skip
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
    progress: bool = progress_option(),
) -> None:
    """Choose P, RLD and MD instances, GPU types, line tiers and routing policy."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    use_prices(prices)  # checked first too; every scenario loaded takes its quotes
    if architecture is not None:
        check_architecture(architecture)
    check_objective(objective)
    paths = {"--dump-lp": dump_lp, "--bom": bom, "--report": report}
    chosen = check_outputs([scenario], paths, {"--out": out}, formats=OUTPUT_FORMATS)
    said = governed(objective, scenario_kind(scenario) if objective else None)
    outputs = _Outputs(dump_lp, bom, report, chosen.get("--report"), out)
    with forced_objective(objective):
        result = _solved_and_written(scenario, architecture, time_limit, confidence, format,
                                     progress, outputs, said)  # fmt: skip
    if format.structured:
        print_structured(result, format)
        return
    _print_table(result)


def _solved_and_written(scenario, architecture, time_limit, confidence, format, progress,
                        outputs: _Outputs, said: dict) -> dict:  # fmt: skip
    """The answer, with every file asked for written (computed first, then written)."""
    from pdd_plan.api import sizing_report, solve_scenario

    with bars(progress, format.structured) as shown:
        try:
            result, files = _solve(solve_scenario, scenario, architecture, time_limit, shown,
                                   confidence)  # fmt: skip
        except InfeasibleError as exc:  # refused before any search: the reason is its own
            result, files = {"status": "infeasible", "error": exc}, None
        if result["status"] == "infeasible":  # the limit that cannot be met, by how much
            _infeasible(scenario, architecture, result, files, time_limit, format)
        if result["status"] == "unproven":  # stopped before a plan or a proof: exit 5
            _unproven(result, files, format)
        result["solver"].update(said)  # which objective governed, when --objective did
        report_md = None
        if outputs.report or outputs.out:  # everything is computed before the first write
            if not format.structured and shown is None:
                typer.echo(
                    "sizing report: solving the price and hit-rate cases and explaining...",
                    err=True,
                )
            known = {r["architecture"]: r for r in files.solved_each}
            report_md = sizing_report(
                scenario, architecture, time_limit_s=time_limit, solved=result, known=known,
                progress=shown, solved_run=files.run,
            )  # fmt: skip
            if "confidence" in result:
                from pdd_plan.stages.solving.confidence import report_section

                report_md += report_section(result["confidence"]["text"])
        text = _report_text(report_md, result, outputs.report_format) if outputs.report else None
        step(shown, "writing the files", lambda: _write(result, files, report_md, text, outputs))
    return result


def _print_table(result: dict) -> None:
    print_choice(result)
    print_result(result)
    if "confidence" in result:
        console.print(f"margin bought: {result['confidence']['text']}", markup=False)
    s = result["solver"]
    each = s.get("architectures_solved")
    console.print(
        (f"{each} architectures solved" if each else "solved")
        + f" in {s['wall_s']:.1f} s with {s['name']} (objective {s['objective']}"
        + governed_text(s)
        + f", sized for {s['sized_rate_rps']:.3g} req/s); {len(s['pruned_candidates'])} "
        "candidates pruned (`--format json` lists them with the reason)"
    )
    if s.get("stopped"):  # a plan, but the search stopped before proving it the best
        stop = s["stopped"]
        console.print(
            f"not proven optimal: the search stopped at its {stop['stopped_by']} "
            f"after {stop['evaluations']:,} evaluations; try a longer --time-limit"
        )
