"""`pdd-plan report`: the sizing report as HTML, with the plots it needs computed.

Besides the Markdown report's own solves (the plan, the other architectures, the price and
hit-rate cases, explain), the HTML report solves:
- the scenario at each mean hit rate of `hit_means` (moved by `api.HIT_RATE_RULE`): the
  bathtub plot and the plan composition along the hit rate;
- the scenario with each price alone at x0.8 and x1.2 (every GPU offer of every
  datacenter, every line tier when the architecture leases lines): the tornado chart;
and evaluates on the scenario itself every distinct plan met on the way (the optimum, the
other architectures, the plans of the price cases, the optimum with one instance more or
fewer in one role or one line more): the cost against TTFT P99 plot.

The extra solves and the evaluations run in a process pool while this process computes
the Markdown report's data. A variant both need (the sensitivity table's hit-rate cases
are bathtub points) is one task there, solved once (`_submit_points`). The figures are
drawn there too, side by side (the pool's fork server loads matplotlib while this process
solves the architectures).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from pdd_plan import sweep as sw
from pdd_plan.errors import InfeasibleError, PddPlanError, visible
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease, RoutingPolicy
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.scenario_edit import ARCH_KEY, HIT_MEAN_KEY, edited
from pdd_plan.plan.variants import case_edits, sensitivity_cases
from pdd_plan.report.html import render_html
from pdd_plan.report.html_figures import (
    PRICE_FACTORS,
    baseline,
    page_figures,
    plot_data,
    price_keys,
    report_figures,
)
from pdd_plan.report.markdown import render_report
from pdd_plan.report.md_format import ARCH_NAMES

HIT_MEANS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)
# what the pool's fork server imports besides the solver: the workers draw the figures
DRAW_PRELOAD = ("matplotlib.pyplot",)


@dataclass(frozen=True)
class Report:
    html: str
    markdown: str
    figures: dict[str, tuple[str, bytes | None]]  # name -> (SVG, PNG; None: not asked for)
    rows: list[dict]  # the hit-rate and price points
    plans: list[dict]  # the plans of the cost/TTFT plot, with their metrics


# --- the points ----------------------------------------------------------------------


def extra_points(s: Scenario, catalog: Catalog, architecture: str, hit_means) -> tuple[dict, ...]:
    points = [{HIT_MEAN_KEY: m} for m in hit_means]
    base = baseline(s, architecture)
    if base:
        points += [{HIT_MEAN_KEY: m, ARCH_KEY: base} for m in hit_means]
    points += [
        {key: round(f * price, 10)}
        for _, key, price in price_keys(s, catalog, architecture)
        for f in PRICE_FACTORS
    ]
    return tuple(points)


# --- plans evaluated on the scenario itself ------------------------------------------


def deployment_from_json(plan: dict, catalog: Catalog) -> Deployment:
    """The inverse of `report.deployment_json.plan_json` for a plan this tool wrote."""
    p = plan["policy"]
    return Deployment(
        plan["architecture"],
        tuple(InstanceGroup(g["role"], g["datacenter"], g["gpu"], g["gpus_per_instance"],
                            g["count"]) for g in plan["instances"]),
        tuple(LineLease(x["tier"], catalog.lines[x["tier"]].capacity_bits_per_s, x["count"])
              for x in plan["lines"]),
        RoutingPolicy(p["rld_hit_threshold"], p["handoff"], p["short_output_cutoff"]),
    )  # fmt: skip


def evaluate_plan(data: dict, label: str, plan: dict, resolution) -> dict | None:
    """The metrics of `plan` on the scenario `data`; None when a queue saturates. Runs in
    a worker process."""
    catalog = sw.worker_catalog()
    s, _ = edited(data, {}, label, catalog)
    model = catalog.model_for(s)
    try:
        setup = prepare(s, deployment_from_json(plan, catalog), model, catalog.gpus,
                        catalog.lines, resolution)  # fmt: skip
        metrics, _ = evaluate(setup)
    except PddPlanError:
        return None
    return metrics.to_json()


def neighbours(plan: dict) -> list[tuple[str, dict]]:
    """The plan with one instance more or fewer in one group, or one line more."""
    out = []
    for i, g in enumerate(plan["instances"]):
        for step in (1, -1):
            if g["count"] + step < 1:
                continue
            instances = [dict(x) for x in plan["instances"]]
            instances[i]["count"] += step
            out.append((f"{g['role']} {step:+d}", {**plan, "instances": instances}))
    for i, line in enumerate(plan["lines"]):
        lines = [dict(x) for x in plan["lines"]]
        lines[i]["count"] += 1
        out.append((f"line {line['tier']} +1", {**plan, "lines": lines}))
    return out


def plan_key(plan: dict) -> str:
    return json.dumps(plan, sort_keys=True)


# --- the build -----------------------------------------------------------------------


def _solve_base(s: Scenario, architecture: str, catalog: Catalog, resolution, time_limit_s):
    from pdd_plan import api

    result, files = api.solve_loaded(s, architecture, catalog, resolution, time_limit_s)
    if result["status"] == "infeasible":
        raise InfeasibleError(
            f"{visible(s.name)}: no {architecture} plan meets the SLA, so there is nothing to "
            "report "
            f"(policies tried: {api.policies_tried(result) or 'none'}); `pdd-plan solve` "
            "explains why"
        )
    return result, files.run


def _choose(s: Scenario, catalog: Catalog, resolution, time_limit_s, progress):
    """`solve`'s choice of architecture, every architecture's result by name, and the
    chosen plan's own solve (explain starts from it)."""
    from pdd_plan import api

    result, files = api.solve_choosing(s, catalog, resolution, time_limit_s, progress)
    if result["status"] == "infeasible":
        raise InfeasibleError(
            f"{visible(s.name)}: no architecture the scenario allows has a plan, so there is "
            "nothing to report; `pdd-plan solve` explains why"
        )
    return result, {r["architecture"]: r for r in files.solved_each}, files.run


def build(
    scenario: str | None = None,
    architecture: str | None = None,
    jobs: int | None = None,
    resolution: tuple[int, int, int] = DEFAULT_RESOLUTION,
    time_limit_s: float = 30.0,
    hit_means=HIT_MEANS,
    catalog: Catalog | None = None,
    say: Callable[[str], None] = lambda _: None,
    progress: Callable[[str, int, int], None] | None = None,
    png: bool = True,
) -> Report:
    """The HTML sizing report of `scenario` (module doc). `say` hears each stage as a
    line, or `progress(stage, done, total)` as it moves when given (then `say` hears only
    notes). `png` False: the figures without their PNG (the HTML inlines the SVG)."""
    from pdd_plan import api

    stage = _stages(say, progress)
    catalog = catalog or Catalog()
    path = resolve_scenario_path(scenario)
    data = load_yaml(path, "a pdd-plan scenario")
    s, _ = edited(data, {}, str(path), catalog)
    sw.warm_pool_server(DRAW_PRELOAD)  # it imports while this process solves (no wait later)
    chosen, known, run = None, {}, None
    if architecture is None:  # the report of the architecture `solve` recommends
        stage("solving every architecture the scenario allows")
        chosen, known, run = _choose(s, catalog, resolution, time_limit_s, progress)
        architecture = chosen["plan"]["architecture"]
    points = extra_points(s, catalog, architecture, hit_means)
    sweep = sw.Sweep(str(path), data, points, architecture=architecture,
                     resolution=resolution, time_limit_s=time_limit_s)  # fmt: skip
    jobs, note = sw.job_plan(jobs, len(sweep.points))
    if note:
        say(f"note: {note}")
    pool = sw.process_pool(jobs)
    try:
        point_futures, given_cases = _submit_points(pool, sweep, path, catalog)
        stage(f"solving {len(sweep.points)} hit-rate and price cases in {jobs} processes")
        _count_done(progress, f"report: plot cases ({jobs} processes)", point_futures)
        if chosen is None:  # solved once: the report, compare and explain reuse it
            chosen, run = _solve_base(s, architecture, catalog, resolution, time_limit_s)
        result = chosen
        stage("solving the Markdown report's cases (architectures, prices, explain)")
        # its cases and the other architectures join the plot cases in the pool
        s, rdata = api.sizing_report_data(path, architecture, catalog, resolution, time_limit_s,
                                          solved=result, known=known, progress=progress,
                                          solved_run=run, pool=pool,
                                          given_cases=given_cases)  # fmt: skip
        evaluator = _Evaluator(pool, data, str(path), resolution)
        evaluator.add_known("this plan", result)
        for e in rdata["compare"]["architectures"]:
            evaluator.add_known(ARCH_NAMES.get(e["architecture"], e["architecture"]), e)
        for label, plan in neighbours(result["plan"]):
            evaluator.submit(label, plan)
        for case in rdata["sensitivity"]["cases"]:
            if case.get("plan") and not case["case"].startswith("hit rate"):
                evaluator.submit(case["case"], case["plan"])
        rows = sw.collect(point_futures, sweep)
        for r in rows:
            if r["plan"] and HIT_MEAN_KEY not in r["values"]:
                evaluator.submit(_price_label(r), r["plan"])
        stage("evaluating the plans met on the way on the scenario itself")
        _count_done(
            progress,
            "report: plans evaluated for the cost/TTFT plot",
            [e["future"] for e in evaluator.entries.values() if "future" in e],
        )
        plans = evaluator.results()
        stage("drawing the plots")
        if progress:
            progress(PLOTS_STAGE, 0, 1)
        # side by side in the pool, whose fork server has matplotlib loaded (DRAW_PRELOAD)
        figures = report_figures(s, result, rows, plans, rdata, catalog, architecture, png,
                                 pool)  # fmt: skip
        markdown = render_report(s, rdata)
        if progress:
            progress(PLOTS_STAGE, 1, 1)
    except BaseException:  # an interrupt (or an infeasible scenario) ends the running cases
        sw.stop_pool(pool)
        raise
    finally:  # the cases not started are dropped
        pool.shutdown(wait=True, cancel_futures=True)
    extra = (("Data behind the plots", plot_data(rows, plans)),)
    html = render_html(markdown, result, page_figures(figures), "bathtub", extra)
    return Report(html, markdown, {f.name: (f.svg, png) for f, png in figures}, rows, plans)


PLOTS_STAGE = "report: rendering the report and its plots"


def _submit_points(pool, sweep: sw.Sweep, path, catalog: Catalog) -> tuple[dict, dict]:
    """The plot points in the pool (future of the row -> point index), and the sensitivity
    cases that are plot points too (case name -> future of its entry): such a pair is one
    task, so its variant is solved once (report_cases.point_and_case)."""
    from pdd_plan.report_cases import point_and_case

    s = load_scenario(path, catalog)  # as sizing_report_data loads it: the cases' base
    cases = {c[0]: c for c in sensitivity_cases(s, catalog)}
    paired = {sweep.points.index(edit): cases[name] for name, edit in case_edits().items()
              if edit in sweep.points and name in cases}  # fmt: skip
    rows, entries = {}, {}
    for i in range(len(sweep.points)):
        if i in paired:
            row, entries[paired[i][0]] = _parts(pool.submit(point_and_case, sweep, i, paired[i]))
        else:
            row = pool.submit(sw.run_point, sweep, i)
        rows[row] = i
    return rows, entries


def _parts(future: Future) -> tuple[Future, Future]:
    """Two futures, of the first and the second item of `future`'s (row, entry) answer;
    its exception (a worker that died, a cancelled task) is each one's."""
    parts = (Future(), Future())

    def done(f: Future) -> None:
        try:
            answer = f.result()
        except BaseException as exc:  # passed on, as the pool would
            for part in parts:
                part.set_exception(exc)
            return
        for part, value in zip(parts, answer, strict=True):
            part.set_result(value)

    future.add_done_callback(done)
    return parts


def _stages(say, progress) -> Callable[[str], None]:
    """A stage's line for `say`, unless bars show the stages."""
    return (lambda _: None) if progress else say


def _count_done(progress, stage: str, futures) -> None:
    """A bar over `futures`, moved as each ends (in the pool's thread)."""
    if not progress:
        return
    futures = list(futures)
    done = [0]
    lock = threading.Lock()
    progress(stage, 0, len(futures))

    def tick(_future) -> None:
        with lock:
            done[0] += 1
            progress(stage, done[0], len(futures))

    for f in futures:
        f.add_done_callback(tick)


def _price_label(row: dict) -> str:
    ((key, value),) = row["values"].items()
    return f"{key} = {value:g}"


class _Evaluator:
    """Distinct plans evaluated once each, in the pool; plans already evaluated on the
    scenario (the optimum, the other architectures) are taken as they are."""

    def __init__(self, pool, data: dict, label: str, resolution):
        self.pool, self.data, self.label, self.resolution = pool, data, label, resolution
        self.entries: dict[str, dict] = {}

    def add_known(self, label: str, result: dict) -> None:
        if result.get("plan") and result.get("metrics"):
            key = plan_key(result["plan"])
            self.entries.setdefault(key, {"label": label, "plan": result["plan"],
                                          "metrics": result["metrics"]})  # fmt: skip

    def submit(self, label: str, plan: dict) -> None:
        key = plan_key(plan)
        if key not in self.entries:
            future = self.pool.submit(evaluate_plan, self.data, self.label, plan, self.resolution)
            self.entries[key] = {"label": label, "plan": plan, "future": future}

    def results(self) -> list[dict]:
        out = []
        for e in self.entries.values():
            if "future" in e:
                try:
                    e = {**e, "metrics": e.pop("future").result()}
                except Exception:  # a worker that died: the plan is left out of the plot
                    continue
            if e["metrics"] is not None:
                out.append(e)
        return out
