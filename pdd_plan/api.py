"""The Python API: the same calls as the CLI, returning the same JSON-ready dicts."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import profile_summary, transfer_notes
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.model.metrics import json_safe
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload import DEFAULT_RESOLUTION, coarsening_notes
from pdd_plan.plan.variants import (  # noqa: F401  (re-exported: the API's names)
    GPU_PRICE_FACTORS,
    HIT_RATE_MEANS,
    HIT_RATE_RULE,
    LINE_PRICE_FACTORS,
    hit_rate_mapper,
    line_prices_usd_per_month,
    sensitivity_cases,
    with_gpu_prices,
    with_hit_rate_mean,
    with_line_prices,
)
from pdd_plan.report.arithmetic import role_arithmetic
from pdd_plan.report.bom import bom_csv
from pdd_plan.report.resolved import scenario_json
from pdd_plan.report_data import (  # noqa: F401  (re-exported: the API's names)
    explanation,
    report_summary,
    sensitivity,
    sizing_report,
    sizing_report_data,
)
from pdd_plan.solve_memo import memoised

# `progress(stage, done, total)`: how far each long call is (the CLI draws a bar a stage)
Progress = Callable[[str, int, int], None]
SOLVE_STAGE = "solving each architecture"
CASES_STAGE = "report: sensitivity cases"
EXPLAIN_STAGE = "report: explain (binding limits, relaxations)"


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
    setup = prepare(s, deployment, catalog.model_for(s), catalog.gpus, catalog.lines, resolution)
    metrics, snap = evaluate(setup)
    out = {
        "scenario": s.name,
        "status": "evaluated",
        "plan": plan_json(deployment),
        "metrics": metrics.to_json(),
    }
    if snap is not None and snap.mixed:  # the router's split of a mixed decode role
        out["decode_split"] = [json_safe(dataclasses.asdict(g)) for g in snap.decode_groups]
    out["metrics"]["warnings"] += coarsening_notes(s.workload, resolution)
    _name_profile(out, s, deployment)
    return out


def _name_profile(out: dict, s: Scenario, deployment) -> None:
    """The engine profile the result was computed with, and a note for each GPU it was
    not fitted on (issue #13: a reader must know how far to trust absolute numbers)."""
    profile = s.engine.profile
    summary = profile_summary(profile)
    if "solver" in out:
        out["solver"]["engine_profile"] = summary
    if out.get("metrics"):
        out["metrics"]["engine_profile"] = summary
        gpus = [g.gpu for g in deployment.instances] if deployment else []
        out["metrics"]["warnings"] += transfer_notes(profile, gpus, s.model)


def solve_scenario(
    scenario: str | Path | None = None,
    architecture: str | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    progress: Progress | None = None,
    jobs: int | None = None,
) -> tuple[dict, SolveFiles]:
    """`pdd-plan solve`: the design.md §7 JSON of the best verified plan, and its files.
    `architecture` None: every architecture the scenario allows is solved (side by side in
    `jobs` processes, default one a CPU) and the best by the objective wins
    (`architecture_choice` says which, over what and why). `progress(stage, done, total)`
    hears each architecture solved."""
    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    if architecture is not None:
        return solve_loaded(s, architecture, catalog, resolution, time_limit_s)
    return solve_choosing(s, catalog, resolution, time_limit_s, progress, jobs)


def solve_choosing(
    s: Scenario,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    progress: Progress | None = None,
    jobs: int | None = None,
) -> tuple[dict, SolveFiles]:
    """The winner's result and files, with `architecture_choice`; when no architecture
    has a plan, an infeasible result whose `architecture_choice.candidates` say why each
    failed (the CLI names the shortfall)."""
    from pdd_plan import choose

    start = time.perf_counter()
    # one deadline for the command: architectures solved after others get what is left
    solved = solve_each(s, s.architectures, catalog, resolution, time_limit_s,
                        progress=progress, jobs=jobs, deadline=start + time_limit_s)  # fmt: skip
    results = [r for r, _ in solved]
    ranked = choose.rank(s, results)
    if not ranked:
        # an architecture whose search stopped first: nothing is proven (unproven.py)
        unproven = any(r["status"] == "unproven" for r in results)
        out = {
            "scenario": s.name,
            "status": "unproven" if unproven else "infeasible",
            "plan": None,
            "metrics": None,
            "architecture_choice": {
                "winner": None,
                "runner_up": None,
                "objective": s.objective.kind,
                "candidates": choose.candidates(s, results),
            },
        }
        return out, SolveFiles("", "", scenario_json(s), tuple(results))
    winner = ranked[0]
    files = next(f for r, f in solved if r is winner)
    out = {k: v for k, v in winner.items() if k != "architecture"}
    out["architecture_choice"] = choose.choice(s, results, catalog)
    # the answer took every architecture's solve: the wall time is theirs together
    out["solver"] = {**out["solver"], "wall_s": time.perf_counter() - start,
                     "architectures_solved": len(results)}  # fmt: skip
    return out, dataclasses.replace(files, solved_each=tuple(results))


def solve_each(
    s: Scenario,
    architectures,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    known: dict[str, dict] | None = None,
    progress: Progress | None = None,
    jobs: int | None = None,
    deadline: float | None = None,
) -> list[tuple[dict, SolveFiles | None]]:
    """Each architecture optimised alone (what `compare` shows and `solve` chooses from):
    its result with `architecture` set, and its files (None where it has no plan or was
    `known`). An architecture with no plan is an infeasible entry with the reason. They
    run side by side in `jobs` forked processes (default: one a CPU; fork_pool.py), each
    exactly as it would run alone. `deadline` (time.perf_counter(), the same clock in
    every process): when all must stop; default `time_limit_s` from each one's start."""
    from pdd_plan import fork_pool

    known = known or {}
    todo = [a for a in architectures if a not in known]
    if progress:
        progress(SOLVE_STAGE, 0, len(architectures))

    def done(n: int, _index: int = 0) -> None:
        if progress:
            progress(SOLVE_STAGE, len(architectures) - len(todo) + n, len(architectures))

    if len(todo) < len(architectures):
        done(0)
    if len(todo) > 1:  # the solver loads before the fork, once for every child
        import pdd_plan.plan.solve  # noqa: F401
    solve_one = ArchSolve(s, catalog, resolution, time_limit_s, deadline)
    solved = dict(zip(todo, fork_pool.each(solve_one, todo, jobs, done), strict=True))
    return [
        ({**known[a], "architecture": a}, None) if a in known else solved[a] for a in architectures
    ]


@dataclass(frozen=True)
class ArchSolve:
    """One architecture of `solve_each`: its result and files, or its infeasible entry
    (a picklable callable: the forked children of fork_pool.py call it)."""

    s: Scenario
    catalog: Catalog
    resolution: tuple[int, int, int]
    time_limit_s: float
    deadline: float | None = None

    def __call__(self, arch: str) -> tuple[dict, SolveFiles | None]:
        from pdd_plan.choose import infeasible_entry

        try:
            result, files = solve_loaded(
                self.s, arch, self.catalog, self.resolution, self.time_limit_s, self.deadline
            )
        except InfeasibleError as exc:
            return infeasible_entry(self.s, arch, exc), None
        result["architecture"] = arch
        if result["status"] == "infeasible":
            result["reason"] = no_plan_reason(result)
        elif result["status"] == "unproven":
            from pdd_plan.unproven import reason

            result["reason"] = reason(result)
        return result, files


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
    """`solve_scenario` on a Scenario already loaded (or derived from one, as the report's
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
    if not result.proven:  # what stopped the search before its proof (unproven.py)
        from pdd_plan.unproven import stop_json

        out["solver"]["stopped"] = stop_json(result, time_limit_s)
    if out["metrics"]:
        out["metrics"]["warnings"] += coarsening_notes(s.workload, resolution)
    out["role_arithmetic"] = None
    if result.deployment is not None and not lean:
        setup = prepare(
            s, result.deployment, catalog.model_for(s), catalog.gpus, catalog.lines, resolution
        )
        out["role_arithmetic"] = role_arithmetic(setup, s.workload.arrival_rate_per_s)
    _name_profile(out, s, result.deployment)
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


def compare_architectures(
    scenario: str | Path | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    known: dict[str, dict] | None = None,
) -> dict:
    """`pdd-plan compare`: every architecture the scenario allows, each optimised alone.

    `known` maps an architecture to a `solve_scenario` result already computed for the same
    scenario, resolution and time limit; it is used as is instead of solving again.
    """
    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    from pdd_plan import choose

    results = [
        r for r, _ in solve_each(s, s.architectures, catalog, resolution, time_limit_s, known)
    ]
    out = {"scenario": s.name, "architectures": results}
    if choose.rank(s, results):  # the verdict: what `solve` would recommend
        out["architecture_choice"] = choose.choice(s, results, catalog)
    return out


# --- the sizing report: report_data.py (its names re-exported here) ----------------------


def policies_tried(result: dict) -> str:
    """The distinct outcomes of the policies an infeasible solve tried, `; `-joined."""
    return "; ".join(dict.fromkeys(a["outcome"] for a in result["solver"]["policies_tried"]))


def no_plan_reason(result: dict) -> str:
    tried = policies_tried(result)
    return "no plan meets the SLA" + (f" (policies tried: {tried})" if tried else "")


def explain_scenario(
    scenario: str | Path | None = None,
    architecture: str | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> dict:
    """`pdd-plan explain`: binding limits of the best plan, what relaxing each is worth,
    pruned candidates, the binding role. Raises InfeasibleError with the shortfall.
    `architecture` None: the one `solve` recommends (its `architecture_choice` added);
    where none has a plan, the scenario's first, whose shortfall is then named."""
    from pdd_plan.plan.explain import explain

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    model = catalog.model_for(s)
    choice, run = None, None
    if architecture is None:
        chosen, files = solve_choosing(s, catalog, resolution, time_limit_s)
        choice = chosen.get("architecture_choice") if chosen.get("plan") else None
        architecture = chosen["plan"]["architecture"] if choice else s.architectures[0]
        run = files.run if choice else None  # the winner's solve: explain starts from it
    out = explain(s, model, catalog.gpus, catalog.lines, architecture, resolution, time_limit_s,
                  run)  # fmt: skip
    out["engine_profile"] = profile_summary(s.engine.profile)  # how far to trust it (#13)
    if choice is not None:
        out["architecture_choice"] = choice
    return out


def infeasibility_reason(
    scenario: str | Path | None,
    architecture: str,
    solved: dict,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> str:
    """Why `solve_scenario` found no plan (its `solved` result), as one line."""
    args = (scenario, architecture, solved, None, catalog, resolution, time_limit_s)
    return infeasible_answer(*args)["reason"]


def infeasible_answer(
    scenario: str | Path | None,
    architecture: str | None,
    solved: dict,
    files: SolveFiles | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> dict:
    """`solve`'s answer when there is no plan (infeasible.py): status, reason, shortfalls."""
    from pdd_plan.infeasible import answer

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    each = files.solved_each if files is not None else ()
    return answer(s, architecture, solved, each, catalog, resolution, time_limit_s)
