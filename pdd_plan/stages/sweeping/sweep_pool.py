"""The sweep's worker processes: how many (`job_plan`), the pool started by a fork server
that has imported the solver once (`process_pool`, `warm_pool_server`), and stopping it
(`stop_pool`). Split from sweep.py; sweep re-exports every name."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor

# modules the pool's fork server imports once, so that each worker starts warm
_PRELOAD = ["pdd_plan.api", "pdd_plan.plan.solve", "pdd_plan.plan.scenario_edit"]

JOBS_PER_CPU_MAX = 4  # an explicit --jobs runs at most this many processes a CPU


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity, which a container may narrow)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def job_count(jobs: int | None, points: int, cpus: int | None = None) -> int:
    return job_plan(jobs, points, cpus)[0]


def job_plan(jobs: int | None, points: int, cpus: int | None = None) -> tuple[int, str]:
    """Processes for `points` points, and a note for stderr ('' when none is due).

    The default is one a CPU: more only share the CPUs (each holds its own solver and
    catalog, so memory grows and nothing ends sooner). An explicit `jobs` above the CPU
    count is honoured, with a note, up to JOBS_PER_CPU_MAX a CPU, and capped there. Never
    more processes than points."""
    cpus = cpus or cpu_count()
    cap = JOBS_PER_CPU_MAX * cpus
    count = max(1, min(jobs or cpus, cap, points))
    if jobs and jobs > cap and points > cap:
        return count, (f"--jobs {jobs} capped at {cap} processes ({JOBS_PER_CPU_MAX} a CPU, "
                       f"{cpus} CPU{'s' if cpus > 1 else ''})")  # fmt: skip
    if count > cpus:
        return count, f"--jobs {jobs}: {count} processes share {cpus} CPUs (oversubscribed)"
    return count, ""


def process_pool(jobs: int) -> ProcessPoolExecutor:
    """Worker processes started by a fork server that has imported the solver once: no
    thread of the caller (a progress bar, HiGHS) is ever forked, and workers start warm.
    A script that starts one needs the `if __name__ == "__main__":` guard."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return ProcessPoolExecutor(jobs, context, initializer=_ignore_sigint)


def warm_pool_server(extra_preload: tuple[str, ...] = ()) -> None:
    """Start `process_pool`'s fork server now: it imports the solver (about a second of
    CPU) and `extra_preload` while the caller works, so that a pool made later starts its
    workers at once (with those modules: the report's workers draw its figures).
    It starts with SIGINT ignored (inherited): a Ctrl-C to the process group while it
    imports would print its traceback (the caller stops on it and ends the server)."""
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload([*_PRELOAD, *extra_preload])
    if threading.current_thread() is not threading.main_thread():  # no signal handling
        forkserver.ensure_running()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # a few milliseconds: the spawn
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the caller stops the workers (`stop_pool`),
    # and a worker must not die printing its own traceback first
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Drop the points not started, end the running ones and wait for the workers to
    exit, so that none outlives an interrupted caller."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=5)
    if manager is not None:  # let it close its wake-up pipe before the interpreter exits:
        manager.join(timeout=5)  # else Python's exit hook may write to it as it closes
