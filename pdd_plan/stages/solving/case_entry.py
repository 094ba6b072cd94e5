"""One variant of a scenario solved for a table row: its status, plan and metrics, or the
reason it has none. The report's sensitivity cases and the KV-layout verdict both solve
variants this way, in forked children (fork_pool.py) or in this process."""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.scenario import Scenario


def case_entry(
    case: str, change: str, variant: Scenario, architecture: str, catalog: Catalog,
    resolution, time_limit_s: float,
) -> dict:  # fmt: skip
    """One sensitivity case solved: its status, plan and metrics (the reason where none)."""
    from pdd_plan.stages.solving import solve_json

    entry = {"case": case, "change": change}
    try:
        result, _ = solve_json.solve_loaded(
            variant, architecture, catalog, resolution, time_limit_s, lean=True
        )  # an entry keeps status, plan and metrics
    except InfeasibleError as exc:
        return {**entry, "status": "infeasible", "plan": None, "metrics": None,
                "reason": str(exc)}  # fmt: skip
    entry.update(status=result["status"], plan=result["plan"], metrics=result["metrics"])
    if result["status"] == "infeasible":
        entry["reason"] = solve_json.no_plan_reason(result)
    return entry


@dataclass(frozen=True)
class CaseSolve:
    """`case_entry` of one (case, change, variant), as fork_pool.py's children call it."""

    architecture: str
    catalog: Catalog
    resolution: tuple[int, int, int]
    time_limit_s: float

    def __call__(self, case: tuple[str, str, Scenario]) -> dict:
        return case_entry(*case, self.architecture, self.catalog, self.resolution,
                          self.time_limit_s)  # fmt: skip
