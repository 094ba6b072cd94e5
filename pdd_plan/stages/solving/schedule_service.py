"""`pdd-plan schedule`: the plan over a scenario's load curve (plan/schedule.py) as the
command's JSON, with the files it can write (the hourly schedule as CSV, the committed
BOM, the resolved scenario).

The answer: the committed base (`plan`: the reserved instances, the lines, the policy, in
the shape of a solve's plan), the schedule period by period (each role's needs and their
reserved / on-demand / spot split, the period's cost, its predicted TTFT and TPOT
percentiles and whether the SLA holds), the expected monthly cost and its split, and the
saving against sizing for the peak (schedule_parts.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.deployment import Deployment, InstanceGroup
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.model.metrics import json_safe
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.report.curve_view import curve_summary
from pdd_plan.report.resolved import scenario_json
from pdd_plan.report.schedule_view import schedule_csv
from pdd_plan.stages.solving import schedule_parts as parts

SOLVER = "branch and bound over structures; each period sized by the exact single-rate search"


@dataclass(frozen=True)
class ScheduleFiles:
    schedule_csv: str
    bom_csv: str
    resolved_scenario: dict
    run: object | None = None  # plan.schedule.ScheduleResult: the replay starts from it


def curve_scenario(scenario: str | Path | None, catalog: Catalog) -> Scenario:
    """The scenario, refused (exit 2) without a load curve."""
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    if s.workload.load_curve is None:
        raise InputError.single(
            str(path),
            "workload.load_curve",
            "nothing",
            "a load curve to plan over (docs/load-curves.md); one rate: pdd-plan solve",
        )
    return s


def schedule_scenario(
    scenario: str | Path | None = None,
    architecture: str | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 60.0,
) -> tuple[dict, ScheduleFiles | None]:
    """The plan over the scenario's load curve; files None when there is no plan."""
    from pdd_plan.plan.schedule import plan_schedule  # the solver: only for this command

    catalog = catalog or Catalog()
    s = curve_scenario(scenario, catalog)
    archs = (architecture,) if architecture else None
    r = plan_schedule(s, catalog.model_for(s), catalog.gpus, catalog.lines, archs, resolution,
                      time_limit_s)  # fmt: skip
    out = {"scenario": s.name, "status": r.status, "solver": _solver(r, time_limit_s)}
    if r.structure is None:
        out["reason"] = parts.no_plan_reason(r, s, catalog, resolution, time_limit_s)
        return json_safe(out), None
    base = committed_base(r)
    out["plan"] = plan_json(base)
    out["capacity_classes"] = parts.classes_json(s, r)
    out["schedule"] = parts.periods_json(s, r, catalog, resolution)
    out["cost"] = parts.cost_json(r)
    out["baseline"] = parts.baseline_json(s, r, catalog, resolution, time_limit_s)
    out["curve"] = curve_summary(r.curve)
    out = json_safe(out)  # JSON has no infinity: an unbounded figure is null
    files = ScheduleFiles(schedule_csv(out), parts.committed_bom(out["plan"], s, r, catalog),
                          scenario_json(s), r)  # fmt: skip
    return out, files


def committed_base(r) -> Deployment:
    """The reserved instances (roles with none left out) and the lines: what is bought for
    the whole horizon."""
    d = r.deployments[0]
    groups = tuple(
        InstanceGroup(p.role, p.datacenter, p.gpu, p.gpus_per_instance, p.split.reserved)
        for p in r.roles
        if p.split.reserved
    )
    return dataclasses.replace(d, instances=groups)


def _solver(r, time_limit_s: float) -> dict:
    months = HOURS_PER_MONTH / r.curve.horizon_hours
    return {
        "name": SOLVER,
        "objective": "min_expected_cost",
        "wall_s": r.wall_s,
        "structures": r.structures,
        "structures_sized": r.checked,
        "cost_at_least_usd_per_month": r.bound_usd * months,
        "stopped_by": r.stopped_by,
        "time_limit_s": time_limit_s,
    }
