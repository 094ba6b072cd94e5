"""`pdd-plan report`: the sizing report as HTML, with the plots it needs computed.

Besides the Markdown report's own solves (the plan, the other architectures, the price and
hit-rate cases, explain), the HTML report solves:
- the scenario at each mean hit rate of `hit_means` (moved by `variants.HIT_RATE_RULE`): the
  bathtub plot and the plan composition along the hit rate;
- the scenario with each price alone at x0.8 and x1.2 (every GPU offer of every
  datacenter, every line tier when the architecture leases lines): the tornado chart;
and evaluates on the scenario itself every distinct plan met on the way (the optimum, the
other architectures, the plans of the price cases, the optimum with one instance more or
fewer in one role or one line more): the cost against TTFT P99 plot.

The architectures' solves, the extra solves and the evaluations run in a pool of workers
forked from this process (report_pool.py) while this process computes the Markdown
report's data; the longest are given first (report_pool.submission_order). A variant
both need (the sensitivity table's hit-rate cases are bathtub points) is one task there,
solved once (`_submit_points`). The figures are drawn in a worker of their own, which
loaded matplotlib at the start, each as soon as its data is in: the bathtub and the
composition while the price cases are solved, the tornado when they are, the cost/TTFT
plot when its plans are evaluated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from pdd_plan.errors import InfeasibleError, visible
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.scenario_edit import ARCH_KEY, HIT_MEAN_KEY, edited
from pdd_plan.plan.variants import case_edits, sensitivity_cases
from pdd_plan.report.html import render_html
from pdd_plan.report.html_figures import (
    PRICE_FACTORS,
    baseline,
    draw_later,
    hit_rate_specs,
    page_figures,
    pareto_spec,
    plot_data,
    price_keys,
    report_figures,
    tornado_spec,
)
from pdd_plan.report.markdown import render_report
from pdd_plan.report.md_format import ARCH_NAMES
from pdd_plan.stages.reporting import report_pool
from pdd_plan.stages.reporting.report_plans import Evaluator, neighbours
from pdd_plan.stages.reporting.report_schedule import with_schedule
from pdd_plan.stages.sweeping import sweep as sw

HIT_MEANS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)


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


# --- the build -----------------------------------------------------------------------


def _solve_base(s: Scenario, architecture: str, catalog: Catalog, resolution, time_limit_s):
    from pdd_plan.stages.solving import solve_service
    from pdd_plan.stages.solving.infeasible import answer

    result, files = solve_service.solve_loaded(s, architecture, catalog, resolution, time_limit_s)
    if result["status"] == "infeasible":  # the limit and by how much, as `solve` says it
        why = answer(s, architecture, result, (), catalog, resolution, time_limit_s)["reason"]
        raise InfeasibleError(f"{visible(s.name)}: nothing to report: {why}")
    return result, files.run


def _choose(s: Scenario, catalog: Catalog, resolution, time_limit_s, progress):
    """`solve`'s choice of architecture, every architecture's result by name, and the
    chosen plan's own solve (explain starts from it)."""
    from pdd_plan.stages.solving import solve_service
    from pdd_plan.stages.solving.infeasible import answer

    result, files = solve_service.solve_choosing(s, catalog, resolution, time_limit_s, progress)
    if result["status"] == "infeasible":  # the limit and by how much, as `solve` says it
        each = files.solved_each
        why = answer(s, None, result, each, catalog, resolution, time_limit_s)["reason"]
        raise InfeasibleError(f"{visible(s.name)}: nothing to report: {why}")
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
    drawer = report_pool.drawer()  # forked (importing matplotlib) before the solvers
    pools = [drawer]
    try:  # from here a bad input, like an interrupt, ends the drawer at once
        catalog = catalog or Catalog()
        path = resolve_scenario_path(scenario)
        data = load_yaml(path, "a pdd-plan scenario")
        s, _ = edited(data, {}, str(path), catalog)
        jobs, note = sw.job_plan(jobs, _most_points(s, catalog, architecture, hit_means))
        pools.append(report_pool.solvers(jobs))
        run = _Run(s, data, path, catalog, resolution, time_limit_s, jobs, pools[1], drawer)
        return _built(run, architecture, hit_means, note, say, progress, png)
    except BaseException:  # an interrupt (or an infeasible scenario) ends the running tasks
        for pool in pools:
            if pool is not None:
                sw.stop_pool(pool)
        raise
    finally:  # the tasks not started are dropped
        for pool in pools:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class _Run:
    """What every stage of one build shares: the scenario, its inputs and the pools."""

    s: Scenario
    data: dict
    path: object
    catalog: Catalog
    resolution: tuple[int, int, int]
    time_limit_s: float
    jobs: int
    pool: object  # the solvers
    drawer: object | None  # the drawer (None: figures drawn here)


def _built(run: _Run, architecture, hit_means, note, say, progress, png) -> Report:
    from pdd_plan.stages import fork_pool
    from pdd_plan.stages.reporting import report_data

    stage = _stages(say, progress)
    s, catalog, pool = run.s, run.catalog, run.pool
    chosen, known, solved_run = None, {}, None
    if architecture is None:  # the report of the architecture `solve` recommends
        stage("solving every architecture the scenario allows")
        with fork_pool.sharing(pool):  # in the solver workers, where the cases go next
            chosen, known, solved_run = _choose(s, catalog, run.resolution, run.time_limit_s,
                                                progress)  # fmt: skip
        architecture = chosen["plan"]["architecture"]
    points = extra_points(s, catalog, architecture, hit_means)
    sweep = sw.Sweep(str(run.path), run.data, points, architecture=architecture,
                     resolution=run.resolution, time_limit_s=run.time_limit_s)  # fmt: skip
    if note:
        say(f"note: {note}")
    order = report_pool.submission_order(sweep.points, HIT_MEAN_KEY)
    hits = [i for i in order if HIT_MEAN_KEY in sweep.points[i]]
    evaluator = Evaluator(pool, run.data, str(run.path), run.resolution)
    given = _submit_archs(pool, s, catalog, architecture, known, run)
    hit_futures, cases = _submit_points(pool, sweep, run.path, catalog, hits)
    given.update(cases)
    started: dict = {}  # figures submitted to the drawer: name -> (arguments, future)
    early = _draw_hit_figures_early(run, hit_futures, sweep, chosen, known, architecture, png,
                                    started)  # fmt: skip
    if chosen is not None:  # its neighbours evaluated before the price points
        _prefetch_neighbours(evaluator, chosen)
    price_futures = _submit_points(pool, sweep, run.path, catalog, order[len(hits) :])[0]
    stage(f"solving {len(sweep.points)} hit-rate and price cases in {run.jobs} processes")
    _count_done(progress, f"report: plot cases ({run.jobs} processes)",
                [*hit_futures, *price_futures])  # fmt: skip
    if chosen is None:  # solved once: the report, compare and explain reuse it
        chosen, solved_run = _solve_base(s, architecture, catalog, run.resolution,
                                         run.time_limit_s)  # fmt: skip
        _prefetch_neighbours(evaluator, chosen)
    result = chosen
    stage("solving the Markdown report's cases (architectures, prices, explain)")
    s, rdata = report_data.sizing_report_data(run.path, architecture, catalog, run.resolution,
                                      run.time_limit_s, solved=result, known=known,
                                      progress=progress, solved_run=solved_run, pool=pool,
                                      given_cases=given)  # fmt: skip
    for case in rdata["sensitivity"]["cases"]:
        if case.get("plan") and not case["case"].startswith("hit rate"):
            evaluator.prefetch(case["plan"])
    rows = sw.collect(hit_futures, sweep)
    hit_rows = [r for r in rows if r is not None]
    early.wait()  # drawn already, or being drawn, unless the comparison was not known
    if "bathtub" not in started:  # drawn while the price cases are solved
        started |= draw_later(hit_rate_specs(s, result, hit_rows, rdata, architecture), png,
                              run.drawer)  # fmt: skip

    # the cost/TTFT plot too, with the plans known so far: a price case seldom brings a
    # new plan, and if one does the figure is drawn again (`report_figures` compares)
    started |= draw_later([pareto_spec(_plans_in_order(evaluator, result, rdata, hit_rows))],
                          png, run.drawer)  # fmt: skip

    def price_done(row: dict) -> None:  # its plan evaluated as soon as it is known
        if row["plan"]:
            evaluator.prefetch(row["plan"])

    priced = sw.collect(price_futures, sweep, price_done)
    rows = [r if r is not None else p for r, p in zip(rows, priced, strict=True)]
    started |= draw_later([tornado_spec(s, result, rows, catalog, architecture)], png,
                          run.drawer)  # fmt: skip
    markdown = render_report(s, rdata)  # while the last plans are evaluated and drawn
    markdown, curve_figures = with_schedule(markdown, s, run.path, catalog, run.resolution,
                                            run.time_limit_s)  # fmt: skip
    plans = _plans(evaluator, result, rdata, rows, progress, stage)
    stage("drawing the plots")
    if progress:
        progress(PLOTS_STAGE, 0, 1)
    figures = report_figures(s, result, rows, plans, rdata, catalog, architecture, png,
                             run.drawer, started)  # fmt: skip
    if progress:
        progress(PLOTS_STAGE, 1, 1)
    extra = (("Data behind the plots", plot_data(rows, plans, s.objective.kind)),)
    html = render_html(markdown, result, page_figures(figures) + curve_figures, "bathtub", extra)
    return Report(html, markdown, {f.name: (f.svg, png) for f, png in figures}, rows, plans)


def _plans(evaluator, result, rdata, rows, progress, stage) -> list[dict]:
    """The plans of the cost/TTFT plot (`_plans_in_order`), a bar over their evaluation."""
    _plans_in_order(evaluator, result, rdata, rows, wait=False)
    stage("evaluating the plans met on the way on the scenario itself")
    _count_done(
        progress,
        "report: plans evaluated for the cost/TTFT plot",
        [e["future"] for e in evaluator.entries.values() if "future" in e],
    )
    return evaluator.results()


def _plans_in_order(evaluator, result, rdata, rows, wait=True) -> list[dict] | None:
    """The plans of the cost/TTFT plot met in `rows` and `rdata`, in the order they are
    labelled: this plan, the other architectures', its neighbours, the cases', the price
    rows'. Asked again with more rows, the plans already there keep their place."""
    evaluator.add_known("this plan", result)
    for e in rdata["compare"]["architectures"]:
        evaluator.add_known(ARCH_NAMES.get(e["architecture"], e["architecture"]), e)
    for label, plan in neighbours(result["plan"]):
        evaluator.submit(label, plan)
    for case in rdata["sensitivity"]["cases"]:
        if case.get("plan") and not case["case"].startswith("hit rate"):
            evaluator.submit(case["case"], case["plan"])
    for r in rows:
        if r["plan"] and HIT_MEAN_KEY not in r["values"]:
            evaluator.submit(_price_label(r), r["plan"])
    return evaluator.results() if wait else None


def _draw_hit_figures_early(run: _Run, hit_futures, sweep, chosen, known, architecture, png,
                            started: dict):  # fmt: skip
    """The bathtub and the composition, submitted to the drawer as soon as the last
    hit-rate point ends, while this process explains the plan. They need the comparison,
    known here when `solve`'s choice solved every architecture: from it, as
    `compare_architectures` lists it (the figures are drawn again if their arguments
    differ at the end). The event: set once submitted (or given up)."""
    if chosen is None or run.drawer is None:
        return report_pool.when_all_done([], lambda: None)
    compare = {"compare": {"architectures": [{**r, "architecture": a} for a, r in known.items()]}}

    def draw() -> None:
        rows = [f.result() for f in hit_futures]
        specs = hit_rate_specs(run.s, chosen, rows, compare, architecture)
        started.update(draw_later(specs, png, run.drawer))

    return report_pool.when_all_done(hit_futures, draw)


def _prefetch_neighbours(evaluator, result: dict) -> None:
    evaluator.add_known("this plan", result)  # first, as `_plans` labels it: never evaluated
    for _, plan in neighbours(result["plan"]):
        evaluator.prefetch(plan)


def _most_points(s: Scenario, catalog: Catalog, architecture, hit_means) -> int:
    """The plot points of `architecture`, or of the allowed one with the most (the pool
    is forked before the choice)."""
    archs = [architecture] if architecture else s.architectures
    return max(len(extra_points(s, catalog, a, hit_means)) for a in archs)


def _submit_archs(pool, s, catalog, architecture, known, run: _Run) -> dict:
    """The architectures `compare` still needs (all but the one planned, when it was
    given): submitted first, the longest solves (report_cases.Pending takes them)."""
    from pdd_plan.stages.reporting.report_cases import submit_arch

    s_loaded = load_scenario(run.path, catalog)  # as sizing_report_data loads it
    others = [a for a in s_loaded.architectures if a not in known and a != architecture]
    return {a: submit_arch(pool, s_loaded, a, run.resolution, run.time_limit_s)
            for a in others}  # fmt: skip


PLOTS_STAGE = "report: rendering the report and its plots"


def _submit_points(pool, sweep: sw.Sweep, path, catalog: Catalog, indices) -> tuple[dict, dict]:
    """The plot points `indices` in the pool, in that order (future of the row -> point
    index), and the sensitivity cases (case name -> future of its entry): one that is a
    plot point too is one task with it, so its variant is solved once
    (report_cases.point_and_case); the others follow the points when the indices hold
    the hit-rate points (the price points come after them: see report_pool.py)."""
    from pdd_plan.stages.reporting.report_cases import point_and_case, submit_case

    s = load_scenario(path, catalog)  # as sizing_report_data loads it: the cases' base
    cases = {c[0]: c for c in sensitivity_cases(s, catalog)}
    paired = {sweep.points.index(edit): cases[name] for name, edit in case_edits().items()
              if edit in sweep.points and name in cases}  # fmt: skip
    rows, entries = {}, {}
    for i in indices:
        if i in paired:
            row, entries[paired[i][0]] = _parts(pool.submit(point_and_case, sweep, i, paired[i]))
        else:
            row = pool.submit(sw.run_point, sweep, i)
        rows[row] = i
    if any(HIT_MEAN_KEY in sweep.points[i] for i in indices):
        for name, case in cases.items():
            if name not in entries:
                entries[name] = submit_case(pool, case, sweep.architecture, sweep.resolution,
                                            sweep.time_limit_s)  # fmt: skip
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
