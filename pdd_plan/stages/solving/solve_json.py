"""One architecture's solve as the CLI's JSON (design.md §7) and the files `solve` can
write beside it (the LP, the BOM, the resolved scenario): `solve_loaded`, `SolveFiles`, and
the one-line reason of a solve with no plan. The API (api.py) re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import profile_summary, transfer_notes
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.model.evaluate import prepare
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION, coarsening_notes
from pdd_plan.report.arithmetic import role_arithmetic
from pdd_plan.report.bom import bom_csv
from pdd_plan.report.resolved import scenario_json
from pdd_plan.stages.solving.solve_memo import memoised


@memoised  # a report task asking twice for one variant solves it once (solve_memo.py)
def solve_loaded(
    s: Scenario,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    deadline: float | None = None,
    lean: bool = False,
) -> tuple[dict, SolveFiles]:
    """`api.solve_scenario` on a Scenario already loaded (or derived from one, as the report's
    sensitivity cases are). `lean`: for callers that keep only the status, plan, metrics
    and solver sections (a sweep row, a report case): no role arithmetic (None), BOM or
    resolved scenario, about a tenth of a default solve's CPU."""
    from pdd_plan.plan.solve import solve  # PuLP loads only for the commands that solve

    catalog = catalog or Catalog()
    result = solve(
        s,
        catalog.model_for(s),
        catalog.gpus,
        catalog.lines,
        architecture,
        resolution,
        time_limit_s,
        deadline,
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
    if result.shortfalls:  # no plan: the limit the plans come closest to (plan/nearest.py)
        out["reason"], out["shortfalls"] = result.reason, result.shortfalls
    if not result.proven:  # what stopped the search before its proof (unproven.py)
        from pdd_plan.stages.solving.unproven import stop_json

        out["solver"]["stopped"] = stop_json(result, time_limit_s)
    if out["metrics"]:
        out["metrics"]["warnings"] += coarsening_notes(s.workload, resolution)
    out["role_arithmetic"] = None
    if result.deployment is not None and not lean:
        setup = prepare(
            s, result.deployment, catalog.model_for(s), catalog.gpus, catalog.lines, resolution
        )
        out["role_arithmetic"] = role_arithmetic(setup, s.workload.arrival_rate_per_s)
    name_profile(out, s, result.deployment)
    if lean:
        return out, SolveFiles(result.lp_text, "", {}, run=result)
    bom = bom_csv(out["plan"], s, catalog) if out["plan"] else ""
    return out, SolveFiles(result.lp_text, bom, scenario_json(s), run=result)


@dataclass(frozen=True)
class SolveFiles:
    """What `solve` can write besides its JSON: the LP, the BOM and the resolved scenario."""

    lp_text: str
    bom_csv: str
    resolved_scenario: dict
    # solve choosing the architecture: every architecture's result (the report's compare)
    solved_each: tuple[dict, ...] = ()
    # the solver's own result (plan.solve.SolveResult): explain starts from it (the report)
    run: object | None = None


def name_profile(out: dict, s: Scenario, deployment) -> None:
    """The engine profile the result was computed with, and a note for each GPU it was
    not fitted on (issue #13: a reader must know how far to trust absolute numbers)."""
    profile = s.engine.profile
    gpus = [g.gpu for g in deployment.instances] if deployment else []
    summary = profile_summary(profile, gpus)  # a profile set: per GPU type, the member used
    if "solver" in out:
        out["solver"]["engine_profile"] = summary
    if out.get("metrics"):
        out["metrics"]["engine_profile"] = summary
        out["metrics"]["warnings"] += transfer_notes(profile, gpus, s.model)


def policies_tried(result: dict) -> str:
    """The distinct outcomes of the policies an infeasible solve tried, `; `-joined."""
    tried = result.get("solver", {}).get("policies_tried", [])
    return "; ".join(dict.fromkeys(a["outcome"] for a in tried))


def no_plan_reason(result: dict) -> str:
    if result.get("reason"):  # the limit and by how much, where the solve found them
        return result["reason"]
    tried = policies_tried(result)
    return "no plan meets the SLA" + (f" (policies tried: {tried})" if tried else "")
