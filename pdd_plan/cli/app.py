"""The `pdd-plan` command: thin commands over the library, errors mapped to exit codes.

Expected errors (bad input 2, infeasible 3, solver 4, no plan found but not proven
infeasible 5: the search stopped at --time-limit first) print one line each and no
traceback; bugs keep theirs (exit 1). `--debug` (or PDD_PLAN_DEBUG=1) shows tracebacks
always, and the exit code stays the error's. Ctrl-C exits 130 and SIGTERM 143, each with
one line that says which outputs were written whole before it and which were not (every
output is written whole or not at all; the code stays 130 or 143 even when all were
written, since what the command prints may be cut); a closed stdout (`| head -1`) exits
141 quietly.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

import typer

from pdd_plan import __version__
from pdd_plan.cli import catalog_dir, completion, output_guard
from pdd_plan.cli.fast_params import install
from pdd_plan.cli.lazy import Lazy, lazy_group
from pdd_plan.errors import PddPlanError, visible

# One BLAS thread unless the user says otherwise: the models' arrays are small (thousands of
# elements), so OpenBLAS's threads never speed them up, but starting one per CPU when numpy
# loads costs about 0.15 s of CPU on every run, and the processes forked for architectures,
# sweep points and report variants already use every CPU. Set before numpy is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a process stopped by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as `cat` or `yes` end when the reader goes away
EXIT_TERMINATED = 143  # 128 + SIGTERM

# Each subcommand's module is imported only when it runs (cli/lazy.py): `--help` and the
# listing start without the models, scipy or the optimiser. The summaries are the first
# paragraphs of the commands' docstrings (tests/cli/test_startup_lazy.py compares them).
_CLI = "pdd_plan.cli."
COMMANDS = {
    "estimate": Lazy(
        _CLI + "estimate_cmd",
        "estimate",
        "One instance's prefill time, decode step (TPOT) and max batch, with the roofline\n"
        "breakdown: compute vs memory vs communication vs fixed overhead.",
    ),
    "evaluate": Lazy(
        _CLI + "evaluate_cmd",
        "evaluate",
        "Predict TTFT/TPOT percentiles, goodput, cost and BCR of a given deployment.",
    ),
    "solve": Lazy(
        _CLI + "solve_cmd",
        "solve",
        "Choose P, RLD and MD instances, GPU types, line tiers and routing policy.",
    ),
    "schedule": Lazy(
        _CLI + "schedule_cmd",
        "schedule",
        "Plan over a day's load: reserved base, on-demand and spot top-ups, hour by hour.",
    ),
    "compare": Lazy(
        _CLI + "compare_cmd",
        "compare",
        "Optimise every architecture on the same scenario and print them side by side.",
    ),
    "explain": Lazy(
        _CLI + "explain_cmd",
        "explain",
        "Binding constraints, what relaxing each is worth, pruned candidates, binding role.",
    ),
    "simulate": Lazy(
        _CLI + "simulate_cmd",
        "simulate",
        "Simulate a deployment request by request: the metrics of `evaluate`, with 95 %\n"
        "confidence intervals, from a seeded discrete-event run.",
    ),
    "sweep": Lazy(
        _CLI + "sweep_cmd",
        "sweep",
        "Solve (or evaluate a plan) at every point of a grid of scenario values.",
    ),
    "report": Lazy(
        _CLI + "report_cmd",
        "report",
        "Write the sizing report as a self-contained HTML file with its plots.",
    ),
    "deploy": Lazy(
        _CLI + "deploy_cmd",
        "deploy",
        "Write the manifests that run a plan on Dynamo, llm-d or plain Kubernetes.",
    ),
    "validate": Lazy(
        _CLI + "validate_cmd",
        "validate",
        "Replay measured serving benchmarks and print the model's error on each figure.",
    ),
    "schema": Lazy(
        _CLI + "schema_cmd",
        "schema",
        "Print the JSON Schema of a scenario or plan file, for the tools that write or read them.",
    ),
    "catalog": Lazy(
        _CLI + "catalog_cmd", "app", "GPUs and WAN line tiers of the hardware catalog."
    ),
    "model": Lazy(
        _CLI + "model_cmd",
        "app",
        "Models of the catalog: KV bytes, weights, FLOPs; import HF configs.",
    ),
    "scenario": Lazy(
        _CLI + "scenario_cmd", "app", "Check scenario files; print a documented template."
    ),
    "trace": Lazy(_CLI + "trace_cmd", "app", "Analyse request traces (Mooncake JSONL, Azure CSV)."),
    "calibrate": Lazy(_CLI + "calibrate_cmd", "app", "Fit engine profiles to measurements."),
}
# the listing's order: the commands, `version`, then the groups (as typer lists them)
ORDER = (
    *(n for n, c in COMMANDS.items() if c.attr != "app"),
    "version",
    *(n for n, c in COMMANDS.items() if c.attr == "app"),
)


def _print_version(ctx: typer.Context, value: bool) -> None:
    """`--version`, eager: it answers before any command is looked for, as `version` does."""
    if value and not ctx.resilient_parsing:
        typer.echo(__version__)
        raise typer.Exit()


def _top_level(
    show_version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="print the version"
    ),
    install_completion: bool = completion.install_option(),
    show_completion: bool = completion.show_option(),
) -> None:
    """The root's options (each eager: it answers and exits); they also make typer build
    a group although only `version` is registered eagerly."""


app = typer.Typer(
    name="pdd-plan",
    help="Plan the hardware for cross-datacenter, heterogeneous PD-disaggregated LLM serving.\n\n"
    + catalog_dir.HELP,
    no_args_is_help=True,
    add_completion=False,  # ours take the shell's name (cli/completion.py)
    pretty_exceptions_enable=False,
    cls=lazy_group(COMMANDS, ORDER),
    callback=_top_level,
)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def _fail(lines: list[str], code: int) -> None:
    for line in lines:
        sys.stderr.write(f"error: {visible(line)}\n")  # user text cannot forge a line
    sys.exit(code)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that `finally` blocks run (temporary files
    removed, worker processes stopped); not an Exception, so no `except Exception` in the
    library swallows it."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _quiet_broken_pipe() -> None:
    """The reader of stdout went away (`pdd-plan ... | head -1`): exit 141 as a process
    killed by SIGPIPE does, nothing on stderr. Python flushes stdout again at exit, so
    stdout's descriptor is pointed at the null device first (opened, never created)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(null)
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def _stopped(what: str) -> list[str]:
    """The interrupt's line, with what was written before it."""
    note = output_guard.written_note()
    return [f"{what} {note}" if note else what]


def _run(command, args: list[str], debug: bool) -> None:
    try:
        rv = command.main(args=args, prog_name="pdd-plan", standalone_mode=False)
    except PddPlanError as exc:
        if debug:
            traceback.print_exc()
        _fail((str(exc) or type(exc).__name__).split("\n"), exc.exit_code)
    except SystemExit as exc:
        # typer turns a broken pipe into sys.exit(1) inside its `except OSError`
        if isinstance(exc.__context__, BrokenPipeError):
            _quiet_broken_pipe()
        raise
    except Exception as exc:
        # typer vendors click privately: match its Exit / Abort / UsageError by shape
        kind = type(exc).__name__
        if kind == "Exit":
            sys.exit(exc.exit_code)
        if kind == "Abort":
            _fail(_stopped("aborted"), EXIT_INTERRUPTED)
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise  # a bug: its traceback, exit 1
        if kind == "NoArgsIsHelpError":
            sys.stdout.write(exc.format_message() + "\n")  # the group's help text
            sys.exit(0)
        if debug:
            traceback.print_exc()
        _fail([" ".join(exc.format_message().split())], 2)
    # typer returns the code of an Exit raised in a command (130 for Ctrl-C) instead
    # of exiting with it
    if rv == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if isinstance(rv, int) and not isinstance(rv, bool) and rv:
        sys.exit(rv)
    sys.stdout.flush()  # a broken pipe shows here when the output was still buffered


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("PDD_PLAN_DEBUG") == "1" or "--debug" in args
    args = [a for a in args if a != "--debug"]
    if sys.stdout is None:  # started with stdout closed (`>&-`): nowhere to print
        _fail(["standard output: found closed; expected an open stdout (a file, a pipe "
               "or a terminal)"], 2)  # fmt: skip
    output_guard.begin_run()  # what this command opens and writes, from here
    try:
        _command(args, debug)
    finally:
        output_guard.end_run()


def _command(args: list[str], debug: bool) -> None:
    try:
        args, overlay = catalog_dir.take_catalog_dir(args)
        args = completion.take_shell_names(args)
        if overlay is not None:
            catalog_dir.apply_catalog_dir(overlay)
    except PddPlanError as exc:
        _fail(str(exc).split("\n"), exc.exit_code)
    completion.enable_completion()  # only when the shell asks for completions
    command = install(typer.main.get_command(app))  # values without pydantic
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        _run(command, args, debug)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        _fail(_stopped("interrupted (SIGINT)"), EXIT_INTERRUPTED)
    except Terminated:
        if debug:
            traceback.print_exc()
        _fail(_stopped("terminated (SIGTERM)"), EXIT_TERMINATED)
    finally:
        signal.signal(signal.SIGTERM, previous)
