"""The processes `pdd-plan report` works in, and the order it gives them their tasks.

Two pools, both forked from the report's own process (fork_pool.py) where it can fork:
- the drawer: one worker forked first thing, before the solver loads, that imports
  matplotlib on the second CPU while this process imports the solver (about 0.7 s of CPU
  that would otherwise come later, on the critical path); it draws the four figures.
- the solvers: one worker a CPU, forked once the solver is loaded and before this process
  solves anything (no HiGHS thread running at the fork); they solve the architectures
  (`fork_pool.sharing`), the plot points, the sensitivity cases and the evaluations.
A fork server (the sweep's pool) would import the solver a second time, about 1.6 s of
CPU with matplotlib; the workers forked here start with it loaded. Off Linux the solvers
are the sweep's pool and the figures are drawn in this process.

This module imports nothing heavy: the CLI forks the drawer before it imports the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future

from pdd_plan.stages import fork_pool

# what the drawer imports as it starts: plots.draw's own imports
DRAW_PRELOAD = ("matplotlib.pyplot", "pdd_plan.report.plots")

_started: Executor | None = None  # the drawer forked early by `start_drawer`


def start_drawer() -> None:
    """Fork the drawer now (the CLI, before it imports the solver); `drawer` hands it
    to the build that follows."""
    global _started
    if _started is None and fork_pool.can_fork():
        _started = fork_pool.preloaded(DRAW_PRELOAD)


def drawer() -> Executor | None:
    """The drawer `start_drawer` forked, else one forked now; None off Linux."""
    global _started
    pool, _started = _started, None
    if pool is None and fork_pool.can_fork():
        pool = fork_pool.preloaded(DRAW_PRELOAD)
    return pool


def solvers(jobs: int) -> Executor:
    """`jobs` solver workers: forked from this process where it can fork, else the
    sweep's fork-server pool (its workers import the solver themselves)."""
    if fork_pool.can_fork():
        import pdd_plan.plan.solve  # noqa: F401  (loaded before the fork, once for all)

        return fork_pool.executor(jobs)
    from pdd_plan.stages.sweeping import sweep as sw

    return sw.process_pool(jobs)


def submission_order(points: tuple[dict, ...], hit_key: str) -> list[int]:
    """The indices of the plot points in the order they are submitted: the hit-rate
    points first, by ascending mean (a lower hit rate leaves more prompt tokens to
    prefill, and the solve takes longer: on the default at 5d37ff4, 0.85 s of CPU at a
    mean of 0.3 against 0.15 s at 0.98; the longest start first, so none is left to run
    alone at the end), then the price points in their own order (about 0.12 s each,
    they fill the last gaps, and the figure drawn after them, the tornado, is the
    quickest: about 0.1 s)."""
    hits = sorted((i for i, p in enumerate(points) if hit_key in p),
                  key=lambda i: points[i][hit_key])  # fmt: skip
    return hits + [i for i, p in enumerate(points) if hit_key not in p]


def when_all_done(futures, then: Callable[[], None]) -> threading.Event:
    """Call `then()` once every future of `futures` has ended, in the thread that ends
    the last (a pool's: this process may be busy meanwhile, explaining the plan); the
    event is set after it returns or raises (its error is dropped: the caller does the
    work itself when it finds it undone)."""
    futures = list(futures)
    ended = threading.Event()
    left = [len(futures)]
    lock = threading.Lock()

    def one_ended(_future: Future) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            try:
                then()
            except Exception:  # noqa: S110 (the caller draws it later itself)
                pass
            finally:
                ended.set()

    if not futures:
        ended.set()
    for future in futures:
        future.add_done_callback(one_ended)
    return ended
