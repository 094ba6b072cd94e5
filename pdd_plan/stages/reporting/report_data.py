"""The sizing report's data (`solve --report`, `report`): the plan, every architecture
compared, the sensitivity cases and explain, as plain dicts for report/markdown.py.

The plan reported on is solved once: its result and its own solve (SolveFiles.run) come
in, and explain starts from that solve. The cases and the architectures not solved yet
run side by side: in the report's pool when it has one (report_cases.py), else in
processes forked from this one (fork_pool.py). `api` re-exports these names.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pdd_plan import __version__
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import GBIT_BITS
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.variants import HIT_RATE_RULE, line_prices_usd_per_month, sensitivity_cases
from pdd_plan.report.assumption_scope import applicable
from pdd_plan.report.bom import header_facts
from pdd_plan.report.bom_items import bill
from pdd_plan.report.views import scenario_summary
from pdd_plan.stages.reporting.report_cases import (  # noqa: F401  (explanation: the API's name)
    CaseSolve,
    Pending,
    cases_and_explanation,
    explanation,
)

if TYPE_CHECKING:
    from pdd_plan.stages.solving.solve_service import Progress


def sensitivity(
    s: Scenario,
    architecture: str,
    catalog: Catalog,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    progress: Progress | None = None,
    jobs: int | None = None,
) -> list[dict]:
    """Each case of `sensitivity_cases` solved (side by side in `jobs` forked processes,
    default one a CPU): its status, plan and metrics."""
    from pdd_plan.stages import fork_pool
    from pdd_plan.stages.solving import solve_service

    cases = sensitivity_cases(s, catalog)
    if progress:
        progress(solve_service.CASES_STAGE, 0, len(cases))

    def done(n: int, _index: int) -> None:
        if progress:
            progress(solve_service.CASES_STAGE, n, len(cases))

    solve_case = CaseSolve(architecture, catalog, resolution, time_limit_s)
    return fork_pool.each(solve_case, cases, jobs, done)


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
    architecture: str | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved: dict | None = None,
    known: dict[str, dict] | None = None,
    progress: Progress | None = None,
    solved_run=None,
    pool=None,
    given_cases=None,
) -> tuple[Scenario, dict]:
    """Everything the sizing report shows, as plain dicts: the scenario summary, the
    solve result (`solved` if given, with `solved_run` its SolveFiles.run, else solved
    here; `architecture` None: chosen), every architecture compared (`known`: results
    already computed, by architecture), the sensitivity cases and the explanation (of the
    plan's architecture, starting from its solve). `pool` (an executor): the cases and the
    architectures not yet solved run there while this process explains (report_cases.py);
    `given_cases` (case name -> future of its entry): cases already submitted there."""
    from pdd_plan.stages.solving import solve_service
    from pdd_plan.stages.solving.kv_verdict import kv_layout_verdict

    catalog = catalog or Catalog()
    path = resolve_scenario_path(str(scenario) if scenario else None)
    s = load_scenario(path, catalog)
    known = dict(known or {})
    if solved is None and architecture is None:
        solved, files = solve_service.solve_choosing(s, catalog, resolution, time_limit_s, progress)
        known.update((r["architecture"], r) for r in files.solved_each)
        solved_run = files.run
    elif solved is None:
        solved, files = solve_service.solve_loaded(
            s, architecture, catalog, resolution, time_limit_s
        )
        solved_run = files.run
    if solved.get("plan"):
        architecture = solved["plan"]["architecture"]
    architecture = architecture or s.architectures[0]
    known[architecture] = {k: v for k, v in solved.items() if k != "architecture_choice"}
    if getattr(solved_run, "architecture", None) != architecture:
        solved_run = None  # not this plan's solve: explain solves it
    run = (resolution, time_limit_s)
    if pool is None:
        compared = solve_service.compare_architectures(path, catalog, *run, known=known)
        cases, explained = cases_and_explanation(s, architecture, catalog, run, solved_run,
                                                 progress)  # fmt: skip
    else:
        others = [a for a in s.architectures if a not in known]
        pending = Pending.submit(pool, s, architecture, catalog, *run, others, given_cases)
        explained = _explained(s, architecture, catalog, run, solved_run, progress)
        cases = pending.case_entries(
            (lambda done, n: progress(solve_service.CASES_STAGE, done, n)) if progress else None
        )
        compared = solve_service.compare_architectures(
            path, catalog, *run, known=known | pending.known()
        )
    data = {
        "version": __version__,
        "architecture": architecture,
        "summary": report_summary(s, catalog),
        "result": solved,
        "compare": compared,
        "sensitivity": {
            "hit_rate_rule": HIT_RATE_RULE,
            "cases": cases,
            "kv_layout": kv_layout_verdict(s, catalog, run),
        },
        "explanation": explained,
        "assumptions": applicable(s, catalog.model_for(s), architecture, solved, catalog.gpus),
        "bom_header": header_facts(s, catalog, architecture),
        "bom": bill(solved["plan"], s, catalog) if solved.get("plan") else None,
    }
    return s, data


def _explained(s, architecture, catalog, run, solved_run, progress) -> dict | None:
    from pdd_plan.stages.solving import solve_service

    if progress:
        progress(solve_service.EXPLAIN_STAGE, 0, 1)
    explained = explanation(s, architecture, catalog, *run, solved=solved_run)
    if progress:
        progress(solve_service.EXPLAIN_STAGE, 1, 1)
    return explained


def sizing_report(
    scenario: str | Path | None = None,
    architecture: str | None = None,
    catalog: Catalog | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    solved: dict | None = None,
    known: dict[str, dict] | None = None,
    progress: Progress | None = None,
    solved_run=None,
) -> str:
    """`pdd-plan solve --report`: the sizing report as Markdown (`solved_run`: the solve
    of `solved`, SolveFiles.run)."""
    from pdd_plan.report.markdown import render_report

    s, data = sizing_report_data(
        scenario, architecture, catalog, resolution, time_limit_s, solved, known, progress,
        solved_run,
    )  # fmt: skip
    return render_report(s, data)
