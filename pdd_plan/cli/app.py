"""The `pdd-plan` command: thin commands over the library, errors mapped to exit codes.

Expected errors (bad input 2, infeasible 3, solver 4) print one line each and no
traceback; bugs keep theirs. `--debug` (or PDD_PLAN_DEBUG=1) shows tracebacks always.
"""

from __future__ import annotations

import os
import sys

import typer

from pdd_plan import __version__
from pdd_plan.cli import (
    catalog_cmd,
    compare_cmd,
    estimate_cmd,
    evaluate_cmd,
    explain_cmd,
    model_cmd,
    report_cmd,
    scenario_cmd,
    simulate_cmd,
    solve_cmd,
    sweep_cmd,
    trace_cmd,
)
from pdd_plan.errors import PddPlanError, visible

app = typer.Typer(
    name="pdd-plan",
    help="Plan the hardware for cross-datacenter, heterogeneous PD-disaggregated LLM serving.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(catalog_cmd.app, name="catalog")
app.add_typer(model_cmd.app, name="model")
app.add_typer(scenario_cmd.app, name="scenario")
app.add_typer(trace_cmd.app, name="trace")
app.command("estimate")(estimate_cmd.estimate)
app.command("evaluate")(evaluate_cmd.evaluate)
app.command("solve")(solve_cmd.solve)
app.command("compare")(compare_cmd.compare)
app.command("explain")(explain_cmd.explain)
app.command("simulate")(simulate_cmd.simulate)
app.command("sweep")(sweep_cmd.sweep)
app.command("report")(report_cmd.report)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def _fail(lines: list[str], code: int) -> None:
    for line in lines:
        sys.stderr.write(f"error: {visible(line)}\n")  # user text cannot forge a line
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("PDD_PLAN_DEBUG") == "1" or "--debug" in args
    args = [a for a in args if a != "--debug"]
    command = typer.main.get_command(app)
    try:
        command.main(args=args, prog_name="pdd-plan", standalone_mode=False)
    except PddPlanError as exc:
        if debug:
            raise
        _fail((str(exc) or type(exc).__name__).split("\n"), exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        # typer vendors click privately: match its Exit / Abort / UsageError by shape
        kind = type(exc).__name__
        if kind == "Exit":
            sys.exit(exc.exit_code)
        if kind == "Abort":
            _fail(["aborted"], 130)
        if debug or not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        if kind == "NoArgsIsHelpError":
            sys.stdout.write(exc.format_message() + "\n")  # the group's help text
            sys.exit(0)
        _fail([" ".join(exc.format_message().split())], 2)
