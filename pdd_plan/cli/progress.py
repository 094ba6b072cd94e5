"""Progress bars on stderr for the long commands (#14 item 13): `report`, `solve --report`,
`simulate` and `sweep` (its own bar, with the points' ETA: sweep_cmd.py).

The layers below the CLI know nothing of rich: they take a callback
`progress(stage, done, total)` and call it as each stage moves (a stage is finished when
`done >= total`; several may run at once, as the report's worker processes do beside its
own solves). Here each stage becomes one bar.

Bars are drawn only where a person watches: stderr a terminal and no `--format json`.
`--no-progress` turns them off, `--progress` on; PDD_PLAN_PROGRESS=1 (or 0) does the same
from the environment (the tests force it with a pipe for stderr). Stdout never carries a
bar, so what a command prints there is the same with or without them.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer

PROGRESS_ENV = "PDD_PLAN_PROGRESS"

Callback = Callable[[str, int, int], None]


def progress_option():
    return typer.Option(
        None,
        "--progress/--no-progress",
        help=f"progress bars on stderr (default: when stderr is a terminal; {PROGRESS_ENV}=1 "
        "forces them)",
    )


def wanted(option: bool | None, json_output: bool = False) -> bool:
    """Whether to draw bars: the option if given, else the environment, else a terminal
    on stderr without JSON output."""
    if option is not None:
        return option
    forced = os.environ.get(PROGRESS_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return not json_output and sys.stderr.isatty()


def forced(option: bool | None) -> bool:
    """Whether bars are asked for whatever stderr is (`--progress`, PDD_PLAN_PROGRESS=1):
    then drawn as on a terminal, since rich would otherwise print only the last frame."""
    return option is True or os.environ.get(PROGRESS_ENV, "").strip() == "1"


class Bars:
    """One rich bar per stage, created when the stage is first reported."""

    def __init__(self, forced: bool):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(stderr=True, force_terminal=forced or None)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self.tasks: dict[str, int] = {}
        self.lock = threading.Lock()  # worker futures report from the pool's thread

    def __call__(self, stage: str, done: int, total: int) -> None:
        with self.lock:
            task = self.tasks.get(stage)
            if task is None:
                task = self.tasks[stage] = self.progress.add_task(stage, total=total)
            self.progress.update(task, completed=min(done, total), total=total)

    def say(self, text: str) -> None:
        """A note printed above the bars."""
        self.progress.console.print(text, markup=False, highlight=False)


@contextmanager
def bars(option: bool | None, json_output: bool = False) -> Iterator[Bars | None]:
    """The bars for one command (None when not wanted), stopped on the way out."""
    if not wanted(option, json_output):
        yield None
        return
    b = Bars(forced=forced(option))
    b.progress.start()
    try:
        yield b
    finally:
        b.progress.stop()


def step(progress: Callback | None, stage: str, work: Callable[[], object]):
    """`work()` as a one-step stage."""
    if progress:
        progress(stage, 0, 1)
    out = work()
    if progress:
        progress(stage, 1, 1)
    return out
