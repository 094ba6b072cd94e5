"""`pdd-plan sweep`: a scenario solved (or a plan evaluated) at every point of a grid.

Each axis is a scenario key (`scenario_edit`) and its values; the grid is their product.
Points run in a process pool; a point that fails (an infeasible scenario, a value out of
range, a saturated queue, a solver failure, a bug) is recorded with its error and the sweep
goes on. Everything about the sweep itself (an unknown key, a malformed axis, a plan file
that does not load) is an InputError raised before any point runs.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from pdd_plan.errors import (
    InfeasibleError,
    InputError,
    PddPlanError,
    SolverError,
    UnprovenError,
)
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import resolve_scenario_path
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.scenario_edit import ARCH_KEY, WHERE, check_key, edited
from pdd_plan.stages.sweeping.sweep_evaluate import evaluate_loaded, evaluated_status  # noqa: F401 (the API)
from pdd_plan.stages.sweeping.sweep_points import (  # noqa: F401  (re-exported: the sweep's API)
    Axis,
    Sweep,
    failed_row,
    run_point,
    worker_catalog,
)
from pdd_plan.stages.sweeping.sweep_pool import (  # noqa: F401  (re-exported: the sweep's API)
    JOBS_PER_CPU_MAX,
    cpu_count,
    job_count,
    job_plan,
    process_pool,
    stop_pool,
    warm_pool_server,
)

MAX_POINTS = 100_000
OBJECTIVES = ("max_bcr", "min_cost", "max_goodput")
AXIS_FORMS = "KEY=START:STOP:STEP (stop included) or KEY=V1,V2,... (or KEY=V)"


# --- axes ----------------------------------------------------------------------------


def _axis_error(spec: str, expected: str = AXIS_FORMS) -> InputError:
    return InputError.single(WHERE, "--vary", repr(spec), expected)


def _number(text: str, spec: str) -> float | int:
    value = _scalar(text)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _axis_error(spec, f"START:STOP:STEP of numbers (found {text.strip()!r})")
    return value


def _range(text: str, spec: str) -> tuple:
    start, stop, step = (_number(t, spec) for t in text.split(":"))
    if step <= 0 or stop < start:
        raise _axis_error(spec, "START:STOP:STEP with START <= STOP and STEP > 0")
    count = math.floor((stop - start) / step * (1 + 1e-12) + 1e-9) + 1
    if count > MAX_POINTS:
        raise _axis_error(spec, f"at most {MAX_POINTS:,} values (found {count:,})")
    if all(isinstance(v, int) for v in (start, stop, step)):
        return tuple(start + i * step for i in range(count))
    return tuple(round(start + i * step, 12) for i in range(count))


def _scalar(text: str):
    """A listed value: an integer, a number, true/false, or else the text itself (no YAML
    1.1 surprises: `no` stays text, `@x` is allowed; `parse_axis` refuses `1:30`)."""
    text = text.strip()
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        if kind is int or math.isfinite(value):
            return value
    return {"true": True, "false": False}.get(text, text)


def parse_axis(spec: str) -> Axis:
    """`KEY=START:STOP:STEP` (floats rounded to 12 decimals) or `KEY=V1,V2,...` (`_scalar`)."""
    key, sep, text = spec.partition("=")
    if not sep or not key.strip() or not text.strip():
        raise _axis_error(spec)
    if text.count(":") == 2 and "," not in text:
        return Axis(key.strip(), _range(text, spec))
    values = tuple(_scalar(v) for v in text.split(","))
    if any(v == "" for v in values):
        raise _axis_error(spec, "V1,V2,... with no value empty")
    for value in values:
        if isinstance(value, str) and (":" in value or _DASHED_RANGE.match(value)):
            raise _axis_error(spec, f"START:STOP:STEP or V1,V2,... (found {value!r})")
    return Axis(key.strip(), values)


# `5-10` or `0.5 - 2`: a range written with a dash, refused before any point runs (a
# value with a colon that is not START:STOP:STEP likewise: no scenario value has one)
_DASHED_RANGE = re.compile(r"^-?[\d.]+(e-?\d+)?\s*-\s*[\d.]+(e-?\d+)?$", re.IGNORECASE)


def grid(axes: tuple[Axis, ...] | list[Axis]) -> tuple[dict, ...]:
    """Every combination of the axes' values, the last axis varying fastest."""
    keys = [a.key for a in axes]
    return tuple(
        dict(zip(keys, combo, strict=True))
        for combo in itertools.product(*[a.values for a in axes])
    )


# --- preparing -----------------------------------------------------------------------


def prepare(
    scenario: str | Path | None,
    specs: list[str],
    objective: str | None = None,
    architecture: str = "pdd",
    plan: str | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    catalog: Catalog | None = None,
) -> Sweep:
    """Read the scenario and the axes and check everything a point does not decide."""
    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    data = load_yaml(path, "a pdd-plan scenario")
    if objective is not None:
        data = _with_objective(data, objective)
    label = str(path)
    base, _ = edited(data, {}, label, catalog)  # the scenario itself must load
    axes = [parse_axis(s) for s in specs]
    if not axes:
        raise InputError.single(WHERE, "--vary", "no axis", f"at least one --vary {AXIS_FORMS}")
    seen = set()
    for axis in axes:
        if axis.key in seen:
            raise InputError.single(WHERE, f"--vary {axis.key}", "the key twice", "each key once")
        seen.add(axis.key)
        for value in axis.values if axis.key == ARCH_KEY else axis.values[:1]:
            check_key(data, axis.key, value, label, catalog)
    size = math.prod(len(a.values) for a in axes)
    if size > MAX_POINTS:
        raise InputError.single(WHERE, "--vary", f"{size:,} points", f"at most {MAX_POINTS:,}")
    if plan is not None:
        from pdd_plan.loaders.plan_file import load_plan

        load_plan(plan, base, catalog)  # a plan that does not load fails the sweep, not a point
    return Sweep(label, data, grid(axes), tuple(axes), architecture, plan, resolution, time_limit_s)


def _with_objective(data: dict, kind: str) -> dict:
    if kind not in OBJECTIVES:
        raise InputError.single(WHERE, "--objective", repr(kind), f"one of {', '.join(OBJECTIVES)}")
    current = data.get("objective") if isinstance(data.get("objective"), dict) else {}
    return {**data, "objective": {**current, "kind": kind}}


# --- the sweep's outcome -------------------------------------------------------------

OK_STATUSES = ("optimal", "feasible", "evaluated")
# a failed point's status -> the exit code of a sweep whose every point failed so
_EXIT_OF_STATUS = {"error": 1, "bad_value": 2, "infeasible": 3, "saturated": 3,
                   "sla_missed": 3, "solver_error": 4, "unproven": 5}  # fmt: skip


def all_failed_error(rows: list[dict], label: str) -> PddPlanError | None:
    """None when a point ran. When none did, the error the sweep ends with: the lowest
    exit code among the points' (a bug 1, bad values 2, infeasible, saturated or SLA
    missed 3, a solver failure 4, a search stopped without a plan or a proof 5),
    naming the count of each status and the first point's error. A
    sweep with some points failed is not an error: it exits 0 and counts them."""
    if not rows or any(r["status"] in OK_STATUSES for r in rows):
        return None
    code = min(_EXIT_OF_STATUS.get(r["status"], 1) for r in rows)
    counts = Counter(r["status"] for r in rows)
    first = next((r for r in rows if _EXIT_OF_STATUS.get(r["status"], 1) == code), rows[0])
    error = " ".join(str(first["error"] or first["status"]).split())
    error = error if len(error) <= 200 else error[:200] + "..."
    found = f"all {len(rows)} points failed ({', '.join(f'{n} {s}' for s, n in counts.items())})"
    if code == 2:
        return InputError.single(label, "--vary", found, "values at which a point loads",
                                 f"point {first['index']}: {error}")  # fmt: skip
    cls = {3: InfeasibleError, 4: SolverError, 5: UnprovenError}.get(code, PddPlanError)
    return cls(f"{label}: {found}; point {first['index']}: {error}")


# --- the pool ------------------------------------------------------------------------


def submit_points(pool: ProcessPoolExecutor, sweep: Sweep, indices=None) -> dict:
    """future -> point index, for the points `indices` of `sweep` (default: every one)."""
    indices = range(len(sweep.points)) if indices is None else indices
    return {pool.submit(run_point, sweep, i): i for i in indices}


def collect(futures: dict, sweep: Sweep, on_done: Callable[[dict], None] | None = None) -> list:
    """The rows of `submit_points`' futures in point order; `on_done` sees each as it ends."""
    rows: list = [None] * len(sweep.points)
    for future in as_completed(futures):
        i = futures[future]
        try:
            rows[i] = future.result()
        except Exception as exc:  # the worker died (killed, out of memory)
            rows[i] = failed_row(sweep, i, exc)
        if on_done:
            on_done(rows[i])
    return rows


EXECUTORS = ("local", "ray")


def run(
    sweep: Sweep,
    jobs: int | None = None,
    on_done: Callable[[dict], None] | None = None,
    catalog: Catalog | None = None,
    done: dict[int, dict] | None = None,
    executor: str = "local",
    ray_address: str | None = None,
) -> list[dict]:
    """Every point of `sweep`, in point order. The points in `done` (index -> row, from a
    journal) are not run again; the others run here one after another (`jobs` 1), in that
    many worker processes (`process_pool`), or as Ray tasks (`executor` "ray": on the
    cluster at `ray_address`, else on a local Ray instance of `jobs` CPUs). `on_done` sees
    each new row as it ends."""
    done = done or {}
    todo = [i for i in range(len(sweep.points)) if i not in done]
    if executor == "ray":
        from pdd_plan.stages.sweeping.sweep_ray import run_on_ray

        new = run_on_ray(sweep, todo, jobs or cpu_count(), on_done, ray_address)
    else:
        new = _run_local(sweep, todo, job_count(jobs, max(1, len(todo))), on_done, catalog)
    merged = {**done, **new}
    return [merged[i] for i in range(len(sweep.points))]


def _run_local(sweep: Sweep, todo: list[int], jobs: int, on_done, catalog) -> dict[int, dict]:
    if jobs == 1 or len(todo) <= 1:
        rows = {}
        for i in todo:
            rows[i] = run_point(sweep, i, catalog)
            if on_done:
                on_done(rows[i])
        return rows
    pool = process_pool(jobs)
    try:
        rows = collect(submit_points(pool, sweep, todo), sweep, on_done)
    except BaseException:  # an interrupt: the points running are stopped too
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return {i: rows[i] for i in todo}
