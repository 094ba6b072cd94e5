"""One sweep point run: its scenario edited, solved (or its plan evaluated), and its row.

What the local process pool (sweep.py) and the Ray executor (sweep_ray.py) both run for a
point, so that neither imports the other. A point never raises: its error is its row's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pdd_plan.errors import InputError, PddPlanError, SaturatedError, SolverError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.scenario_edit import ARCH_KEY, edited
from pdd_plan.stages.sweeping.sweep_evaluate import evaluate_loaded

_catalog: Catalog | None = None


@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple


@dataclass(frozen=True)
class Sweep:
    """What every point needs: the parsed scenario (objective override applied), how to
    solve, and the points (key -> value edits), in order."""

    label: str
    data: dict
    points: tuple[dict, ...]
    axes: tuple[Axis, ...] = ()
    architecture: str = "pdd"
    plan_path: str | None = None
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION
    time_limit_s: float = 30.0
    extra: dict = field(default_factory=dict)


def _status_of(exc: Exception) -> str:
    if isinstance(exc, InputError):
        return "bad_value"
    if isinstance(exc, SaturatedError):
        return "saturated"
    if isinstance(exc, SolverError):
        return "solver_error"
    if isinstance(exc, PddPlanError):
        return "infeasible"
    return "error"


def _solve_or_evaluate(sweep: Sweep, edits: dict, catalog: Catalog) -> dict:
    from pdd_plan.stages.solving import solve_json

    s, _ = edited(sweep.data, edits, sweep.label, catalog)
    if sweep.plan_path is None:
        architecture = edits.get(ARCH_KEY, sweep.architecture)
        result, _ = solve_json.solve_loaded(
            s, architecture, catalog, sweep.resolution, sweep.time_limit_s, lean=True
        )  # a row keeps status, plan and metrics
        if result["status"] == "infeasible":
            result["error"] = solve_json.no_plan_reason(result)
        elif result["status"] == "unproven":  # stopped at --time-limit: nothing proven
            from pdd_plan.stages.solving.unproven import reason

            result["error"] = reason(result)
        return result
    return evaluate_loaded(s, sweep.plan_path, catalog, sweep.resolution)


def run_point(sweep: Sweep, index: int, catalog: Catalog | None = None) -> dict:
    """Point `index` of the sweep: its values, status, error (None when it ran), the plan
    and metrics in the design.md §7 shapes, and its wall time. Never raises for a point."""
    edits = sweep.points[index]
    start = time.perf_counter()
    row: dict[str, Any] = {"index": index, "values": dict(edits), "status": None, "error": None,
                           "plan": None, "metrics": None}  # fmt: skip
    try:
        result = _solve_or_evaluate(sweep, edits, catalog or worker_catalog())
        row.update(status=result["status"], plan=result["plan"], metrics=result["metrics"],
                   error=result.get("error"))  # fmt: skip
    except Exception as exc:  # a point never aborts the sweep
        text = " ".join(str(exc).split()) or type(exc).__name__
        row.update(status=_status_of(exc), error=text if isinstance(exc, PddPlanError) else
                   f"{type(exc).__name__}: {text}")  # fmt: skip
    row["wall_s"] = time.perf_counter() - start
    return row


def worker_catalog() -> Catalog:
    """The catalog of this process, loaded once."""
    global _catalog
    if _catalog is None:
        _catalog = Catalog()
    return _catalog


def failed_row(sweep: Sweep, i: int, exc: BaseException) -> dict:
    """The row of point `i` whose worker died (killed, out of memory, a lost node)."""
    return {"index": i, "values": dict(sweep.points[i]), "status": "error",
            "error": f"worker failed: {type(exc).__name__}: {exc}", "plan": None,
            "metrics": None, "wall_s": None}  # fmt: skip
