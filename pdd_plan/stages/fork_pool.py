"""Independent calls side by side in processes forked from this one.

`solve` without `--architecture` optimises every architecture the scenario allows, each
alone and none needing another's answer: on more than one CPU they run at once. The
children are forked from this process, so they start with everything it has loaded (numpy,
scipy, the solver, the catalog, the scenario) in milliseconds, where a fresh interpreter
(the sweep's fork server) spends about a second of CPU importing them again; the function
and its inputs are inherited, never pickled (only the answers travel back).

Where a fork is not safe (off Linux), there is one CPU, or this process is itself a
worker (a sweep's point: its pool already fills the CPUs), the calls run here one after
another. A call that fails in a child is made again here, so its exception is raised
exactly as it would be without the pool (some of ours do not survive pickling).

A caller that keeps a pool of forked workers for its own tasks (the report: `executor`)
lends it to the calls made inside `sharing(pool)`: they run there (the function and its
item pickled, a few milliseconds) instead of in children forked for them alone. And
`preloaded` forks one worker at once that imports what it will need (the report's
drawing: matplotlib) while this process goes on importing and solving.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

# what the forked children call: set just before the fork, read by the child's copy
_CALL: tuple[Callable[[Any], Any], Sequence[Any]] | None = None
# the pool lent by `sharing`, and the process that lent it (a worker forked from it
# inherits the variable, and must not submit to its parent's pool)
_SHARED: tuple[int, Executor] | None = None


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity, which a container may narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def jobs_for(tasks: int, jobs: int | None = None) -> int:
    """Processes for `tasks` independent calls: 1 (here, in turn) unless a fork is possible
    and useful; else `jobs`, by default one a task up to one a CPU."""
    if jobs is not None and jobs <= 1 or tasks < 2:
        return 1
    if multiprocessing.parent_process() is not None:  # a worker: its pool fills the CPUs
        return 1
    # Linux only: macOS's system libraries (numpy's Accelerate BLAS) are not fork-safe
    if not sys.platform.startswith("linux"):
        return 1
    return max(1, min(tasks, jobs if jobs is not None else cpu_count()))


def each(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    jobs: int | None = None,
    on_done: Callable[[int, int], None] | None = None,
) -> list:
    """[fn(item) for item in items], in `jobs_for` processes; `on_done(n, i)` hears, in
    this thread, how many have ended and which one (its index) just did."""
    count = jobs_for(len(items), jobs)
    if count == 1:
        return _here(fn, items, on_done)
    if _SHARED is not None and _SHARED[0] == os.getpid():
        return _in_pool(_SHARED[1], fn, items, on_done)
    global _CALL
    _CALL = (fn, items)
    pool = ProcessPoolExecutor(count, multiprocessing.get_context("fork"), initializer=_child)
    try:
        futures = {pool.submit(_call, i): i for i in range(len(items))}
        answers: dict[int, Any] = {}
        for n, future in enumerate(as_completed(futures), start=1):
            answers[futures[future]] = _answer(future)
            if on_done:
                on_done(n, futures[future])
    except BaseException:  # an interrupt: no child outlives this call
        _stop(pool)
        raise
    finally:
        _CALL = None
        pool.shutdown(wait=True, cancel_futures=True)
    # a call that failed in its child is made again here, raising its own exception
    return [fn(x) if isinstance(answers[i], _Failed) else answers[i] for i, x in enumerate(items)]


def can_fork() -> bool:
    """Whether `executor` and `preloaded` may fork here (as `jobs_for` decides)."""
    return sys.platform.startswith("linux") and multiprocessing.parent_process() is None


def executor(jobs: int, modules: Sequence[str] = ()) -> ProcessPoolExecutor:
    """`jobs` workers forked from this process now (with everything it has loaded),
    each importing `modules` first. Forked before this process solves anything: HiGHS's
    threads (and a progress bar's) must not be running in it at the fork."""
    pool = ProcessPoolExecutor(jobs, multiprocessing.get_context("fork"), initializer=_child,
                               initargs=(tuple(modules),))  # fmt: skip
    pool.submit(int)  # a fork pool forks all its workers at its first task: now
    return pool


def preloaded(modules: Sequence[str]) -> ProcessPoolExecutor:
    """One worker, forked now, that imports `modules` while this process goes on."""
    return executor(1, modules)


@contextmanager
def sharing(pool: Executor) -> Iterator[None]:
    """Inside: `each` runs its calls in `pool` (forked workers of this process)."""
    global _SHARED
    previous, _SHARED = _SHARED, (os.getpid(), pool)
    try:
        yield
    finally:
        _SHARED = previous


def _in_pool(pool: Executor, fn, items, on_done) -> list:
    futures = {pool.submit(_apply, fn, item): i for i, item in enumerate(items)}
    answers: dict[int, Any] = {}
    for n, future in enumerate(as_completed(futures), start=1):
        answers[futures[future]] = _answer(future)
        if on_done:
            on_done(n, futures[future])
    return [fn(x) if isinstance(answers[i], _Failed) else answers[i] for i, x in enumerate(items)]


def _apply(fn, item) -> Any:
    try:
        return fn(item)
    except Exception:  # as `_call`: the parent raises it
        return _Failed()


class _Failed:
    """A call that raised in its child (made again in the parent)."""


def _answer(future) -> Any:
    try:
        return future.result()
    except (Exception, BrokenProcessPool):  # an unpicklable answer, a killed child
        return _Failed()


def _here(fn, items, on_done) -> list:
    out = []
    for i, item in enumerate(items):
        out.append(fn(item))
        if on_done:
            on_done(len(out), i)
    return out


def _child(modules: Sequence[str] = ()) -> None:
    # Ctrl-C reaches the whole process group: the parent stops the children
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # so may SIGTERM: the CLI's handler (raise, then one error line) is the parent's; a
    # child inheriting it would print a traceback, where it should just end
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # the parent's stream objects may have been locked by one of its threads (a progress
    # bar) at the fork: a child that writes (a warning) gets streams of its own
    sys.stdout = open(os.dup(1), "w", buffering=1)  # noqa: SIM115 (lives with the child)
    sys.stderr = open(os.dup(2), "w", buffering=1)  # noqa: SIM115
    for name in modules:
        importlib.import_module(name)


def _call(i: int) -> Any:
    fn, items = _CALL
    try:
        return fn(items[i])
    except Exception:  # our errors do not all survive pickling: the parent raises it
        return _Failed()


def _stop(pool: ProcessPoolExecutor) -> None:
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=5)
