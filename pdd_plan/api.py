"""The Python API: the same calls as the CLI, returning the same JSON-ready dicts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.model.workload import DEFAULT_RESOLUTION
from pdd_plan.report.bom import bom_csv
from pdd_plan.report.deployment_json import plan_json
from pdd_plan.report.resolved import scenario_json


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


def solve_scenario(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> tuple[dict, SolveFiles]:
    """`pdd-plan solve`: the design.md §7 JSON of the best verified plan, and its files."""
    from pdd_plan.plan.solve import solve  # PuLP loads only for the commands that solve

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    result = solve(
        s,
        catalog.model(s.model),
        catalog.gpus,
        catalog.lines,
        architecture,
        resolution,
        time_limit_s,
    )
    out = {
        "scenario": s.name,
        "status": result.status,
        "plan": plan_json(result.deployment) if result.deployment else None,
        "metrics": result.metrics.to_json() if result.metrics else None,
        "solver": {
            "name": "HiGHS via PuLP",
            "objective": s.objective.kind,
            "sized_rate_rps": result.rate_rps,
            "wall_s": result.wall_s,
            "policies_tried": [
                {"rld_hit_threshold": a.policy.rld_hit_threshold, "handoff": a.policy.handoff,
                 "utilization_cap_frac": a.utilization_cap_frac, "outcome": a.outcome}
                for a in result.attempts
            ],
            "pruned_candidates": [
                {"candidate": c.key, "reason": c.pruned} for c in result.candidates if c.pruned
            ],
        },
    }  # fmt: skip
    prices = {
        t: s.wan.tier_price_usd_per_month.get(t, catalog.lines[t].price_usd_per_month)
        for t in catalog.lines
    }
    bom = bom_csv(out["plan"], s, prices) if out["plan"] else ""
    return out, SolveFiles(result.lp_text, bom, scenario_json(s))


@dataclass(frozen=True)
class SolveFiles:
    """What `solve` can write besides its JSON: the LP, the BOM and the resolved scenario."""

    lp_text: str
    bom_csv: str
    resolved_scenario: dict


def compare_architectures(
    scenario: str | Path | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> dict:
    """`pdd-plan compare`: every architecture the scenario allows, each optimised alone."""
    from pdd_plan.errors import InfeasibleError

    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    out = []
    for arch in s.architectures:
        try:
            result, _ = solve_scenario(path, arch, catalog, resolution, time_limit_s)
        except InfeasibleError as exc:
            result = {
                "scenario": s.name,
                "status": "infeasible",
                "plan": None,
                "metrics": None,
                "architecture": arch,
                "reason": str(exc),
            }
        result["architecture"] = arch
        out.append(result)
    return {"scenario": s.name, "architectures": out}
