"""Sweep points as Ray tasks (`pdd-plan sweep --executor ray`).

Each point is one task running `sweep.run_point`, the function the process pool runs, so
the rows are the same. With `--ray-address` the tasks go to that running cluster, whose
workers must have this version of pdd-plan installed; without one, a local Ray instance of
`jobs` CPUs is started for the sweep and shut down after it. Ray is an optional extra and
is imported only here, when a sweep asks for it.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable

from pdd_plan.errors import InputError
from pdd_plan.loaders.engine_profile import OVERRIDE_ENV
from pdd_plan.loaders.prices_apply import PRICES_ENV
from pdd_plan.stages.sweeping.sweep_points import Sweep, failed_row, run_point

INSTALL_HINT = "pip install 'pdd-plan[ray]'"
_POLL_S = 0.2  # how often finished tasks are gathered (the progress bar's resolution)


def import_ray():
    """The `ray` module, or the one-line error saying how to get it."""
    try:
        import ray
    except ImportError:
        missing = "ray, but Ray is not installed"
        expected = f"Ray installed: {INSTALL_HINT} (or --executor local)"
        raise InputError.single("command line", "--executor", missing, expected) from None
    return ray


def _connect(ray, address: str | None, jobs: int) -> bool:
    """Join the cluster at `address`, or start a local instance; True when started here
    (and so to be shut down here)."""
    env = {k: os.environ[k] for k in (OVERRIDE_ENV, PRICES_ENV) if k in os.environ}
    runtime_env = {"env_vars": env} if env and address else None  # local workers inherit it
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False, "configure_logging": True}
    if address is None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing phones home
        ray.init(num_cpus=jobs, include_dashboard=False, **quiet)
        return True
    probe(address)
    try:
        ray.init(address=address, runtime_env=runtime_env, **quiet)
    except Exception as exc:  # unreachable, refused, a version mismatch
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        expected = "the address of a running Ray cluster"
        raise InputError.single(
            "command line", "--ray-address", repr(address), expected, reason
        ) from None
    return False


def probe(address: str, timeout_s: float = 5.0) -> None:
    """Refuse a HOST:PORT nobody answers at before Ray tries it (Ray retries an unreachable
    cluster for minutes, printing warnings); other forms (`auto`, `ray://...`) go to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in address:
        return
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout_s).close()
    except (OSError, ValueError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise InputError.single("command line", "--ray-address", repr(address),
                                "the address of a running Ray cluster's head (HOST:PORT)",
                                f"no answer: {reason}") from None  # fmt: skip


def run_on_ray(
    sweep: Sweep,
    todo: list[int],
    jobs: int,
    on_done: Callable[[dict], None] | None,
    address: str | None = None,
) -> dict[int, dict]:
    """The rows of points `todo` (index -> row), each a Ray task; `on_done` sees each
    row as it ends. An interrupt cancels the tasks left (and stops a local instance)."""
    if not todo:
        return {}
    ray = import_ray()
    started = _connect(ray, address, jobs)
    pending: dict = {}
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(run_point)
        shared = ray.put(sweep)  # shipped to the object store once, not once a point
        pending = {task.remote(shared, i): i for i in todo}
        return _gather(ray, pending, sweep, on_done)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


def _gather(ray, pending: dict, sweep: Sweep, on_done) -> dict[int, dict]:
    """Rows as their tasks end; `pending` (task -> index) shrinks to what is left."""
    rows: dict[int, dict] = {}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=_POLL_S)
        for ref in ready:
            i = pending.pop(ref)
            try:
                rows[i] = ray.get(ref)
            except Exception as exc:  # the worker died (killed, out of memory, node lost)
                rows[i] = failed_row(sweep, i, exc)
            if on_done:
                on_done(rows[i])
    return rows
