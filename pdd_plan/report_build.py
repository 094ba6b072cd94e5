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
the Markdown report's data.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pdd_plan import sweep as sw
from pdd_plan.errors import InfeasibleError, PddPlanError, visible
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import resolve_scenario_path
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease, RoutingPolicy
from pdd_plan.model.evaluate import evaluate, prepare
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload import DEFAULT_RESOLUTION
from pdd_plan.plan.scenario_edit import ARCH_KEY, HIT_MEAN_KEY, edited
from pdd_plan.plan.variants import line_prices_usd_per_month
from pdd_plan.report import plots
from pdd_plan.report.html import Figure, render_html
from pdd_plan.report.markdown import SECTIONS, render_report
from pdd_plan.report.md_format import ARCH_NAMES, cell, composition, md_text
from pdd_plan.report.sweep_files import gpu_groups, group_label

HIT_MEANS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98)
PRICE_FACTORS = (0.8, 1.2)
OBJECTIVE_METRIC = {"max_bcr": ("bcr_rps_per_usd_hour", "BCR"),
                    "min_cost": ("cost_usd_per_hour", "cost"),
                    "max_goodput": ("goodput_rps", "goodput")}  # fmt: skip
SECTION_COMPARE, SECTION_CASES = SECTIONS[5], SECTIONS[7]


@dataclass(frozen=True)
class Report:
    html: str
    markdown: str
    figures: dict[str, tuple[str, bytes]]  # name -> (SVG, PNG)
    rows: list[dict]  # the hit-rate and price points
    plans: list[dict]  # the plans of the cost/TTFT plot, with their metrics


# --- the points ----------------------------------------------------------------------


def price_keys(s: Scenario, catalog: Catalog, architecture: str) -> list[tuple[str, str, float]]:
    """(label, scenario key, price) of every price: each GPU offer, each line tier."""
    out = [
        (f"{o.gpu} in {dc.id}", f"datacenters.{i}.gpus.{j}.price_usd_per_gpu_hour",
         o.price_usd_per_gpu_hour)
        for i, dc in enumerate(s.datacenters) for j, o in enumerate(dc.gpus)
    ]  # fmt: skip
    if architecture in ("pdd", "cdc_pd"):
        for t, price in line_prices_usd_per_month(s, catalog).items():
            out.append((f"line {t}", f"wan.tier_prices_usd_per_month.{t}", price))
    return out


def baseline(s: Scenario, architecture: str) -> str | None:
    """The architecture the bathtub compares against: IDC-PD, when allowed and not the
    one planned."""
    return "idc_pd" if architecture != "idc_pd" and "idc_pd" in s.architectures else None


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

    result, _ = api.solve_loaded(s, architecture, catalog, resolution, time_limit_s)
    if result["status"] == "infeasible":
        raise InfeasibleError(
            f"{visible(s.name)}: no {architecture} plan meets the SLA, so there is nothing to "
            "report "
            f"(policies tried: {api.policies_tried(result) or 'none'}); `pdd-plan solve` "
            "explains why"
        )
    return result


def _choose(s: Scenario, catalog: Catalog, resolution, time_limit_s, progress):
    """`solve`'s choice of architecture, and every architecture's result by name."""
    from pdd_plan import api

    result, files = api.solve_choosing(s, catalog, resolution, time_limit_s, progress)
    if result["status"] == "infeasible":
        raise InfeasibleError(
            f"{visible(s.name)}: no architecture the scenario allows has a plan, so there is "
            "nothing to report; `pdd-plan solve` explains why"
        )
    return result, {r["architecture"]: r for r in files.solved_each}


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
) -> Report:
    """The HTML sizing report of `scenario` (module doc). `say` hears each stage as a
    line, or `progress(stage, done, total)` as it moves when given (then `say` hears only
    notes)."""
    from pdd_plan import api

    stage = _stages(say, progress)
    catalog = catalog or Catalog()
    path = resolve_scenario_path(scenario)
    data = load_yaml(path, "a pdd-plan scenario")
    s, _ = edited(data, {}, str(path), catalog)
    chosen, known = None, {}
    if architecture is None:  # the report of the architecture `solve` recommends
        stage("solving every architecture the scenario allows")
        chosen, known = _choose(s, catalog, resolution, time_limit_s, progress)
        architecture = chosen["plan"]["architecture"]
    points = extra_points(s, catalog, architecture, hit_means)
    sweep = sw.Sweep(str(path), data, points, architecture=architecture,
                     resolution=resolution, time_limit_s=time_limit_s)  # fmt: skip
    jobs, note = sw.job_plan(jobs, len(sweep.points))
    if note:
        say(f"note: {note}")
    pool = sw.process_pool(jobs)
    try:
        point_futures = sw.submit_points(pool, sweep)
        stage(f"solving {len(sweep.points)} hit-rate and price cases in {jobs} processes")
        _count_done(progress, f"report: plot cases ({jobs} processes)", point_futures)
        result = chosen or _solve_base(s, architecture, catalog, resolution, time_limit_s)
        stage("solving the Markdown report's cases (architectures, prices, explain)")
        s, rdata = api.sizing_report_data(path, architecture, catalog, resolution, time_limit_s,
                                          solved=result, known=known,
                                          progress=progress)  # fmt: skip
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
    except BaseException:  # an interrupt (or an infeasible scenario) ends the running cases
        sw.stop_pool(pool)
        raise
    finally:  # the cases not started are dropped
        pool.shutdown(wait=True, cancel_futures=True)
    stage("drawing the plots")
    if progress:
        progress(PLOTS_STAGE, 0, 1)
    markdown = render_report(s, rdata)
    figures = report_figures(s, result, rows, plans, rdata, catalog, architecture)
    if progress:
        progress(PLOTS_STAGE, 1, 1)
    extra = (("Data behind the plots", plot_data(rows, plans)),)
    html = render_html(markdown, result, _page_figures(figures), "bathtub", extra)
    return Report(html, markdown, {f.name: (f.svg, png) for f, png in figures}, rows, plans)


PLOTS_STAGE = "report: rendering the report and its plots"


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


# --- figures -------------------------------------------------------------------------


def _solved_bcr(r: dict) -> float | None:
    return r["metrics"]["bcr_rps_per_usd_hour"] if r["status"] in ("optimal", "feasible") else None


def _bathtub_series(architecture: str, along: list[dict], rows: list[dict], rdata: dict, base):
    """(series, ratio) of `plots.bathtub`: BCR of the planned architecture along the hit
    rate, and of the baseline (with its BCR at the scenario's own mean from `compare`)."""
    name = ARCH_NAMES.get(architecture, architecture)
    series = {name: [(r["values"][HIT_MEAN_KEY], _solved_bcr(r)) for r in along]}
    if base is None:
        return series, None
    mine = {r["values"][HIT_MEAN_KEY]: _solved_bcr(r) for r in along}
    theirs = {r["values"][HIT_MEAN_KEY]: _solved_bcr(r) for r in rows
              if r["values"].get(ARCH_KEY) == base}  # fmt: skip
    known = next((e for e in rdata["compare"]["architectures"] if e["architecture"] == base), {})
    if known.get("metrics"):
        theirs[along_mean(along)] = known["metrics"]["bcr_rps_per_usd_hour"]
    base_name = ARCH_NAMES.get(base, base)
    series[base_name] = sorted(theirs.items())
    ratio = [(m, mine[m] / theirs[m]) for m in sorted(mine)
             if mine[m] is not None and theirs.get(m)]  # fmt: skip
    return series, (f"BCR {name} / BCR {base_name}", ratio)


def along_mean(along: list[dict]) -> float:
    """The scenario's own mean: the point of `along` that is not a hit-rate case."""
    return next(r["values"][HIT_MEAN_KEY] for r in along if "index" not in r)


def report_figures(s, result, rows, plans, rdata, catalog, architecture) -> list:
    hit_rows = sorted((r for r in rows if HIT_MEAN_KEY in r["values"]
                       and ARCH_KEY not in r["values"]),
                      key=lambda r: r["values"][HIT_MEAN_KEY])  # fmt: skip
    base_mean = s.workload.prefix_hit_rate.mean()
    base_row = {"values": {HIT_MEAN_KEY: base_mean}, "status": result["status"],
                "plan": result["plan"], "metrics": result["metrics"]}  # fmt: skip
    along = sorted([*hit_rows, base_row], key=lambda r: r["values"][HIT_MEAN_KEY])
    series, ratio = _bathtub_series(architecture, along, rows, rdata, baseline(s, architecture))
    bathtub = plots.bathtub(series, base_mean, ratio)
    groups = sorted({g for r in along for g in gpu_groups(r["plan"])})
    composition = plots.composition(
        [f"{r['values'][HIT_MEAN_KEY]:.2f}" for r in along],
        {group_label(g): [gpu_groups(r["plan"])[g] for r in along] for g in groups},
        "mean prefix-hit rate",
    )
    metric, metric_name = OBJECTIVE_METRIC[s.objective.kind]
    tornado = plots.tornado(_tornado_cases(s, result, rows, catalog, architecture, metric),
                            metric_name, "price x0.8", "price x1.2")  # fmt: skip
    pareto = plots.pareto(
        [(p["metrics"]["ttft_s"]["p99"], p["metrics"]["cost_usd_per_hour"], p["label"])
         for p in plans],
        "this plan",
    )  # fmt: skip
    captions = _captions(series, ratio, metric_name, len(plans))
    out = []
    for name, fig, section in (("bathtub", bathtub, SECTION_CASES),
                               ("composition", composition, SECTION_CASES),
                               ("tornado", tornado, SECTION_CASES),
                               ("pareto", pareto, SECTION_COMPARE)):  # fmt: skip
        svg, png = plots.render(fig)
        out.append((Figure(name, svg, captions[name], section), png))
    return out


def _g(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def _md_row(cells) -> str:
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def plot_data(rows: list[dict], plans: list[dict]) -> list[str]:
    """The points behind the figures, as Markdown lines (converted like the rest)."""
    head = ["case", "status", "$/h", "goodput req/s", "BCR", "TTFT P99 s", "plan or error"]
    lines = ["Each hit-rate and price case solved for the figures (figures 1-3):", "",
             _md_row(head), _md_row(["---"] * len(head))]  # fmt: skip
    for r in rows:
        m = r["metrics"] or {}
        case = ", ".join(f"`{k}` = {v:g}" if isinstance(v, float) else f"`{k}` = {v}"
                         for k, v in r["values"].items())  # fmt: skip
        outcome = md_text(r["error"]) if r["error"] else composition(r["plan"])
        lines.append(_md_row([case, r["status"], _g(m.get("cost_usd_per_hour")),
                              _g(m.get("goodput_rps")), _g(m.get("bcr_rps_per_usd_hour")),
                              _g((m.get("ttft_s") or {}).get("p99")), outcome]))  # fmt: skip
    lines += ["", "The plans of the cost against TTFT P99 figure, each on this scenario:", "",
              _md_row(["plan", "$/h", "TTFT P99 s", "SLA met", "composition"]),
              _md_row(["---"] * 5)]  # fmt: skip
    for p in sorted(plans, key=lambda p: p["metrics"]["cost_usd_per_hour"]):
        m = p["metrics"]
        met = "yes" if m["sla_met"] else "no"
        lines.append(_md_row([p["label"], _g(m["cost_usd_per_hour"]), _g(m["ttft_s"]["p99"]),
                              met, composition(p["plan"])]))  # fmt: skip
    return lines


def _page_figures(figures) -> list[Figure]:
    return [f for f, _ in figures]


def _tornado_cases(s, result, rows, catalog, architecture, metric) -> list[tuple]:
    base = result["metrics"][metric]
    by_edit = {next(iter(r["values"].items())): r for r in rows if HIT_MEAN_KEY not in r["values"]}
    cases = []
    for label, key, price in price_keys(s, catalog, architecture):
        changes = []
        for f in PRICE_FACTORS:
            r = by_edit.get((key, round(f * price, 10)))
            m = r["metrics"] if r and r["status"] in ("optimal", "feasible") else None
            changes.append(m[metric] / base - 1.0 if m and base else None)
        cases.append((label, *changes))
    return cases


def _lowest(points) -> tuple[float, float] | None:
    ok = [(x, y) for x, y in points if y is not None]
    return min(ok, key=lambda p: p[1]) if ok else None


def _captions(series: dict, ratio, metric_name: str, n_plans: int) -> dict[str, str]:
    lows = [f"{label} BCR lowest at a mean of {low[0]:.2f}"
            for label, pts in series.items() if (low := _lowest(pts))]  # fmt: skip
    if ratio and (low := _lowest(ratio[1])):
        lows.append(f"the ratio ({ratio[0]}) lowest at {low[0]:.2f}")
    valley_text = ("In this model: " + "; ".join(lows) + ". The published valley is near 0.70 "
                   "(PDD technical report, Infinigence, WAIC 2026; README: the bathtub). "
                   if lows else "No point has a plan. ")  # fmt: skip
    return {
        "bathtub": "BCR (goodput req/s per $/h) of the optimal plan when the hit-rate "
        "distribution is moved to each mean (the rule of section 7), for this architecture "
        "and the IDC-PD baseline, and below their ratio (the benefit the published bathtub "
        "describes); a cross marks a mean where no plan was found (see the data behind the "
        "plots). " + valley_text,
        "composition": "GPUs of the optimal plan by role, GPU type and datacenter at each "
        "mean hit rate (the scenario's own mean included).",
        "tornado": f"The optimum's {metric_name}, re-optimised with one price at x0.8 and "
        "x1.2, as a change from this plan's; widest bar on top.",
        "pareto": f"Cost against TTFT P99 at the offered rate of {n_plans} distinct plans, each "
        "evaluated on this scenario: this plan, the other architectures' optima, the plans of "
        "the price cases, and this plan with one instance more or fewer in one role (or one "
        "line more). The step line is the Pareto front: no plan is both cheaper and faster.",
    }
