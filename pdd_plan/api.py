"""The Python API: the same calls as the CLI, returning the same JSON-ready dicts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from pdd_plan import __version__
from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import profile_summary, transfer_notes
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.deployment_json import plan_json
from pdd_plan.model.evaluate import evaluate, prepare
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
from pdd_plan.report.views import scenario_summary
from pdd_plan.units import GBIT_BITS


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
    metrics, _ = evaluate(setup)
    out = {
        "scenario": s.name,
        "status": "evaluated",
        "plan": plan_json(deployment),
        "metrics": metrics.to_json(),
    }
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
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> tuple[dict, SolveFiles]:
    """`pdd-plan solve`: the design.md §7 JSON of the best verified plan, and its files."""
    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    return solve_loaded(s, architecture, catalog, resolution, time_limit_s)


def solve_loaded(
    s: Scenario,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> tuple[dict, SolveFiles]:
    """`solve_scenario` on a Scenario already loaded (or derived from one, as the report's
    sensitivity cases are)."""
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
    if out["metrics"]:
        out["metrics"]["warnings"] += coarsening_notes(s.workload, resolution)
    out["role_arithmetic"] = None
    if result.deployment is not None:
        setup = prepare(
            s, result.deployment, catalog.model_for(s), catalog.gpus, catalog.lines, resolution
        )
        out["role_arithmetic"] = role_arithmetic(setup, s.workload.arrival_rate_per_s)
    _name_profile(out, s, result.deployment)
    prices = line_prices_usd_per_month(s, catalog)
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
    known: dict[str, dict] | None = None,
) -> dict:
    """`pdd-plan compare`: every architecture the scenario allows, each optimised alone.

    `known` maps an architecture to a `solve_scenario` result already computed for the same
    scenario, resolution and time limit; it is used as is instead of solving again.
    """
    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    out = []
    for arch in s.architectures:
        if known and arch in known:
            out.append({**known[arch], "architecture": arch})
            continue
        try:
            result, _ = solve_loaded(s, arch, catalog, resolution, time_limit_s)
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


# --- the sizing report -----------------------------------------------------------------


def sensitivity(
    s: Scenario,
    architecture: str,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> list[dict]:
    """Each case of `sensitivity_cases` solved: its status, plan and metrics."""
    out = []
    for case, change, variant in sensitivity_cases(s, catalog):
        entry = {"case": case, "change": change}
        try:
            result, _ = solve_loaded(variant, architecture, catalog, resolution, time_limit_s)
            entry.update(status=result["status"], plan=result["plan"], metrics=result["metrics"])
            if result["status"] == "infeasible":
                entry["reason"] = no_plan_reason(result)
        except InfeasibleError as exc:
            entry.update(status="infeasible", plan=None, metrics=None, reason=str(exc))
        out.append(entry)
    return out


def policies_tried(result: dict) -> str:
    """The distinct outcomes of the policies an infeasible solve tried, `; `-joined."""
    return "; ".join(dict.fromkeys(a["outcome"] for a in result["solver"]["policies_tried"]))


def no_plan_reason(result: dict) -> str:
    tried = policies_tried(result)
    return "no plan meets the SLA" + (f" (policies tried: {tried})" if tried else "")


def explanation(
    s: Scenario,
    architecture: str,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> dict | None:
    """`pdd_plan.plan.explain.explain` for the report's explain section (which limits of
    the MILP bind and what relaxing each is worth, each by a re-solve)."""
    from pdd_plan.plan.explain import explain

    return explain(
        s, catalog.model_for(s), catalog.gpus, catalog.lines, architecture, resolution,
        time_limit_s,
    )  # fmt: skip


def report_summary(s: Scenario, catalog: Catalog) -> dict:
    """`scenario validate`'s summary plus what the report also shows: the kinds of the
    distributions and the price and capacity of every line tier that may be leased."""
    summary = scenario_summary(s, catalog)
    summary["input_tokens_kind"] = s.workload.input_tokens.kind
    summary["output_tokens_kind"] = s.workload.output_tokens.kind
    summary["prefix_hit_rate_kind"] = s.workload.prefix_hit_rate.kind
    summary["line_prices_usd_per_month"] = line_prices_usd_per_month(s, catalog)
    summary["line_capacity_gbit_per_s"] = {
        t: catalog.lines[t].capacity_bits_per_s / GBIT_BITS for t in s.wan.tiers
    }
    return summary


def sizing_report_data(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved: dict | None = None,
) -> tuple[Scenario, dict]:
    """Everything the sizing report shows, as plain dicts: the scenario summary, the
    solve result (`solved` if given, else solved here), every architecture compared, the
    sensitivity cases and the explanation."""
    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    if solved is None:
        solved, _ = solve_loaded(s, architecture, catalog, resolution, time_limit_s)
    data = {
        "version": __version__,
        "architecture": architecture,
        "summary": report_summary(s, catalog),
        "result": solved,
        "compare": compare_architectures(
            path, catalog, resolution, time_limit_s, known={architecture: solved}
        ),
        "sensitivity": {
            "hit_rate_rule": HIT_RATE_RULE,
            "cases": sensitivity(s, architecture, catalog, resolution, time_limit_s),
        },
        "explanation": explanation(s, architecture, catalog, resolution, time_limit_s),
    }
    return s, data


def sizing_report(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved: dict | None = None,
) -> str:
    """`pdd-plan solve --report`: the sizing report as Markdown."""
    from pdd_plan.report.markdown import render_report

    s, data = sizing_report_data(scenario, architecture, catalog, resolution, time_limit_s, solved)
    return render_report(s, data)


def explain_scenario(
    scenario: str | Path | None = None,
    architecture: str = "pdd",
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> dict:
    """`pdd-plan explain`: binding limits of the best plan, what relaxing each is worth,
    pruned candidates, the binding role. Raises InfeasibleError with the shortfall."""
    from pdd_plan.plan.explain import explain

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    model = catalog.model_for(s)
    return explain(s, model, catalog.gpus, catalog.lines, architecture, resolution, time_limit_s)


def infeasibility_reason(
    scenario: str | Path | None,
    architecture: str,
    solved: dict,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
) -> str:
    """Why `solve_scenario` found no plan (its `solved` result), as one line: the limit
    that cannot be met and by how much (elastic re-solve), else the policies tried."""
    from pdd_plan.plan.candidates import default_policy
    from pdd_plan.plan.elastic import infeasible_message
    from pdd_plan.plan.solve import Attempt

    catalog = catalog or Catalog()
    s = load_scenario(resolve_scenario_path(str(scenario) if scenario else None), catalog)
    base = default_policy(s)
    attempts = [
        Attempt(
            dataclasses.replace(
                base, rld_hit_threshold=a["rld_hit_threshold"], handoff=a["handoff"]
            ),
            a["utilization_cap_frac"],
            a["outcome"],
        )
        for a in solved["solver"]["policies_tried"]
    ]
    return infeasible_message(
        s, catalog.model_for(s), catalog.gpus, catalog.lines, architecture, attempts,
        resolution, time_limit_s,
    )  # fmt: skip
