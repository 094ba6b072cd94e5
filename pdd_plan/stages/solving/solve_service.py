"""Solving, evaluating and explaining scenarios: the calls behind `solve`, `compare`,
`evaluate` and `explain`, returning JSON-ready dicts. The public face is `pdd_plan.api`,
which re-exports these with the report's calls; the stages below it import this module,
never the face, so no import runs in a circle."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pdd_plan.errors import InfeasibleError, naming_file
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import profile_summary
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.model.metrics import json_safe
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION, coarsening_notes
from pdd_plan.report.resolved import scenario_json
from pdd_plan.stages.solving.solve_json import (
    SolveFiles,
    name_profile,
    no_plan_reason,
    solve_loaded,
)

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
    with naming_file("plan", str(plan)):  # the model's refusals of a plan name its file
        setup = prepare(s, deployment, catalog.model_for(s), catalog.gpus, catalog.lines,
                        resolution)  # fmt: skip
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
    name_profile(out, s, deployment)
    return out


def solve_scenario(
    scenario: str | Path | None = None,
    architecture: str | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    progress: Progress | None = None,
    jobs: int | None = None,
    confidence: float | None = None,
) -> tuple[dict, SolveFiles]:
    """`pdd-plan solve`: the design.md §7 JSON of the best verified plan, and its files.
    `architecture` None: every architecture the scenario allows is solved (side by side in
    `jobs` processes, default one a CPU) and the best by the objective wins
    (`architecture_choice` says which, over what and why). `progress(stage, done, total)`
    hears each architecture solved. `confidence` P: sized with the engine profile's
    held-out error at P as a margin, the plan without it solved too (confidence.py)."""
    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    if confidence is None:
        return _solve_loaded_any(s, architecture, catalog, resolution, time_limit_s,
                                 progress, jobs)  # fmt: skip
    from pdd_plan.stages.solving import confidence as conf

    m = conf.margin(s.engine.profile, confidence)
    out, files = _solve_loaded_any(conf.with_margin(s, m), architecture, catalog, resolution,
                                   time_limit_s, progress, jobs)  # fmt: skip
    without, _ = _solve_loaded_any(s, architecture, catalog, resolution, time_limit_s,
                                   progress, jobs)  # fmt: skip
    out["confidence"] = conf.confidence_json(m, out, without)
    bom = conf.bom_with_margin(files.bom_csv, out["confidence"]["text"])
    return out, dataclasses.replace(files, bom_csv=bom)


def _solve_loaded_any(s, architecture, catalog, resolution, time_limit_s, progress, jobs):
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
    from pdd_plan.stages.solving import choose

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
    open_rivals = [(r, f) for r, f in solved if r is not winner and _may_beat(s, winner, r, f)]
    if out["status"] == "optimal" and open_rivals:
        out["status"] = "feasible"  # the winner is proven best in its architecture only
        out["solver"]["stopped"] = _rivals_stopped(open_rivals, time_limit_s)
    return out, dataclasses.replace(files, solved_each=tuple(results))


def _may_beat(s: Scenario, winner: dict, rival: dict, files: SolveFiles | None) -> bool:
    """Whether an architecture whose search stopped before its proof could still hold a
    plan that beats (or ties) the winner: its search's bound on any plan's objective
    value (plan/search.py's Outcome.bound; -cost for min_cost) against the winner's."""
    from pdd_plan.stages.solving import choose

    if rival["status"] not in ("feasible", "unproven"):
        return False  # proven: its best plan, or no plan, is known
    bound = getattr(files.run if files else None, "bound", float("inf"))
    value = choose.objective_value(s, winner["metrics"])
    return bound >= value - choose.TIE_REL_TOL * abs(value)


def _rivals_stopped(rivals: list, time_limit_s: float) -> dict:
    """`solver.stopped` of a choice left unproven by other architectures' searches."""
    runs = [(r["architecture"], f.run if f else None) for r, f in rivals]
    return {
        "proven": False,
        "stopped_by": "; ".join(
            f"{getattr(run, 'stopped_by', '') or 'a limit'} of the {arch} search"
            for arch, run in runs
        ),
        "time_limit_s": time_limit_s,
        "evaluations": sum(getattr(run, "evaluations", 0) for _, run in runs),
        "cost_at_least_usd_per_hour": None,
    }


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
    from pdd_plan.stages import fork_pool

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
        from pdd_plan.stages.solving.choose import infeasible_entry

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
            from pdd_plan.stages.solving.unproven import reason

            result["reason"] = reason(result)
        return result, files


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
    from pdd_plan.stages.solving import choose

    results = [
        r for r, _ in solve_each(s, s.architectures, catalog, resolution, time_limit_s, known)
    ]
    out = {"scenario": s.name, "architectures": results}
    if choose.rank(s, results):  # the verdict: what `solve` would recommend
        out["architecture_choice"] = choose.choice(s, results, catalog)
    return out


# --- explain and the answer without a plan (the sizing report: report_data.py) -----------


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
    from pdd_plan.stages.solving.kv_verdict import (
        kv_layout_verdict,  # the decode KV layout's range (#23)
    )

    verdict = kv_layout_verdict(s, catalog, (resolution, time_limit_s))
    if verdict is not None:
        out["kv_layout_sensitivity"] = verdict
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
    from pdd_plan.stages.solving.infeasible import answer

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    each = files.solved_each if files is not None else ()
    return answer(s, architecture, solved, each, catalog, resolution, time_limit_s)
