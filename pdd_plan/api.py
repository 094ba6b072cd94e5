"""The Python API: the same calls as the CLI, returning the same JSON-ready dicts."""

from __future__ import annotations

from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.model.workload import DEFAULT_RESOLUTION
from pdd_plan.report.deployment_json import plan_json


def evaluate_plan(
    scenario: str | Path | None,
    plan: str | Path,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
) -> dict:
    """`pdd-plan evaluate SCENARIO PLAN`: the design.md §7 JSON of one deployment."""
    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    deployment = load_plan(plan, s, catalog)
    setup = prepare(s, deployment, catalog.model(s.model), catalog.gpus, catalog.lines, resolution)
    metrics, _ = evaluate(setup)
    return {
        "scenario": s.name,
        "status": "evaluated",
        "plan": plan_json(deployment),
        "metrics": metrics.to_json(),
    }
