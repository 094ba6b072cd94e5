"""The HTML sizing report's figures (bathtub, composition, price tornado, cost against
TTFT P99), their captions and the data behind them, from the rows and plans
`report_build.build` computed; and the price cases the tornado needs."""

from __future__ import annotations

import math

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.scenario import Scenario
from pdd_plan.plan.scenario_edit import ARCH_KEY, HIT_MEAN_KEY
from pdd_plan.plan.variants import line_prices_usd_per_month
from pdd_plan.report import plots
from pdd_plan.report.html import Figure
from pdd_plan.report.markdown import SECTIONS
from pdd_plan.report.md_format import ARCH_NAMES, cell, composition, md_text
from pdd_plan.report.sweep_files import gpu_groups, group_label

PRICE_FACTORS = (0.8, 1.2)
OBJECTIVE_METRIC = {"max_bcr": ("bcr_rps_per_usd_hour", "BCR"),
                    "min_cost": ("cost_usd_per_hour", "cost"),
                    "max_goodput": ("goodput_rps", "goodput")}  # fmt: skip
SECTION_COMPARE, SECTION_CASES = SECTIONS[5], SECTIONS[7]


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


def hit_rate_specs(s, result, rows, rdata, architecture) -> list[tuple]:
    """(name, the plots function's arguments, section) of the bathtub and the composition:
    they need only the hit-rate rows (price rows may be missing) and the comparison."""
    return _hit_rate_figures(s, result, rows, rdata, architecture)[0]


def _hit_rate_figures(s, result, rows, rdata, architecture):
    hit_rows = sorted((r for r in rows if HIT_MEAN_KEY in r["values"]
                       and ARCH_KEY not in r["values"]),
                      key=lambda r: r["values"][HIT_MEAN_KEY])  # fmt: skip
    base_mean = s.workload.prefix_hit_rate.mean()
    base_row = {"values": {HIT_MEAN_KEY: base_mean}, "status": result["status"],
                "plan": result["plan"], "metrics": result["metrics"]}  # fmt: skip
    along = sorted([*hit_rows, base_row], key=lambda r: r["values"][HIT_MEAN_KEY])
    hits = [r for r in rows if HIT_MEAN_KEY in r["values"]]
    series, ratio = _bathtub_series(architecture, along, hits, rdata, baseline(s, architecture))
    groups = sorted({g for r in along for g in gpu_groups(r["plan"])})
    specs = [
        ("bathtub", (series, base_mean, ratio), SECTION_CASES),
        ("composition", ([f"{r['values'][HIT_MEAN_KEY]:.2f}" for r in along],
                         {group_label(g): [gpu_groups(r["plan"])[g] for r in along]
                          for g in groups},
                         "mean prefix-hit rate"), SECTION_CASES),
    ]  # fmt: skip
    return specs, series, ratio


def tornado_spec(s, result, rows, catalog, architecture) -> tuple:
    """The tornado's (name, arguments, section): it needs the price rows alone."""
    metric, metric_name = OBJECTIVE_METRIC[s.objective.kind]
    return ("tornado", (_tornado_cases(s, result, rows, catalog, architecture, metric),
                        metric_name, "price x0.8", "price x1.2"), SECTION_CASES)  # fmt: skip


def pareto_points(plans: list[dict]) -> list[tuple[float, float, str, bool]]:
    """(TTFT P99 s, cost $/h, label, SLA met) of each evaluated plan: the one list both the
    cost/TTFT plot and its table (`plot_data`) read."""
    return [(p["metrics"]["ttft_s"]["p99"], p["metrics"]["cost_usd_per_hour"], p["label"],
             bool(p["metrics"]["sla_met"])) for p in plans]  # fmt: skip


def pareto_spec(plans: list[dict]) -> tuple:
    """The cost/TTFT plot's (name, arguments, section), from its evaluated plans."""
    return ("pareto", (pareto_points(plans), "this plan"), SECTION_COMPARE)


def report_figures(s, result, rows, plans, rdata, catalog, architecture, png=True,
                   pool=None, started=None) -> list:  # fmt: skip
    """[(Figure, PNG bytes or None where `png` is False)] of the four figures, drawn side
    by side in `pool` (an executor) when given. `started`: name -> (arguments, future) of
    figures already submitted (`draw_later`), used where their arguments are these."""
    hit_specs, series, ratio = _hit_rate_figures(s, result, rows, rdata, architecture)
    _, metric_name = OBJECTIVE_METRIC[s.objective.kind]
    # (name, the plots function's arguments, section): plain data, drawn by plots.draw
    specs = [
        *hit_specs,
        tornado_spec(s, result, rows, catalog, architecture),
        pareto_spec(plans),
    ]
    captions = _captions(series, ratio, metric_name, len(plans))
    drawn = _drawn([(name, args) for name, args, _ in specs], png, pool, started or {})
    return [(Figure(name, svg, captions[name], section), png_bytes)
            for (name, _, section), (svg, png_bytes) in zip(specs, drawn, strict=True)]  # fmt: skip


def draw_later(specs, png: bool, pool) -> dict:
    """name -> (arguments, future of its drawing in `pool`) of each (name, args, section):
    figures whose data is in, drawn while the rest is solved (`report_figures(started=)`)."""
    if pool is None:
        return {}
    return {name: (args, pool.submit(plots.draw, name, args, png)) for name, args, _ in specs}


def _drawn(specs, png: bool, pool, started=None) -> list[tuple[str, bytes | None]]:
    """(SVG, PNG) of each (name, arguments), in `pool` when given (or as `started` drew
    it, with the same arguments); one whose worker failed is drawn here (the same
    function: the same bytes)."""
    started = started or {}
    if pool is None:
        return [plots.draw(name, args, png) for name, args in specs]
    futures = [started[name][1] if name in started and started[name][0] == args
               else pool.submit(plots.draw, name, args, png) for name, args in specs]  # fmt: skip
    out = []
    for (name, args), future in zip(specs, futures, strict=True):
        try:
            out.append(future.result())
        except Exception:  # a worker that died: drawn here
            out.append(plots.draw(name, args, png))
    return out


def _g(value) -> str:
    return "-" if value is None else f"{value:.4g}"


def _md_row(cells) -> str:
    return "| " + " | ".join(cell(c) for c in cells) + " |"


def _front_cell(point, front) -> str:
    x, y, _, met = point
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in (x, y)):
        return "not drawn: no finite TTFT P99 (a queue saturates)"
    if not met:
        return "no: misses the SLA"
    return "yes" if (x, y) in front else "no"


def plot_data(rows: list[dict], plans: list[dict], objective: str) -> list[str]:
    """The points behind the figures, as Markdown lines (converted like the rest). The
    cost/TTFT table reads the plot's own points (`pareto_points`) and front (`sla_front`),
    with the objective `solve` ranks by beside them."""
    head = ["case", "status", "$/h", "goodput req/s", "BCR", "TTFT P99 s", "plan or error"]
    lines = ["Each hit-rate and price case solved for the figures of BCR against the hit "
             "rate, plan composition and price sensitivity:", "",
             _md_row(head), _md_row(["---"] * len(head))]  # fmt: skip
    for r in rows:
        m = r["metrics"] or {}
        case = ", ".join(f"`{k}` = {v:g}" if isinstance(v, float) else f"`{k}` = {v}"
                         for k, v in r["values"].items())  # fmt: skip
        outcome = md_text(r["error"]) if r["error"] else composition(r["plan"])
        lines.append(_md_row([case, r["status"], _g(m.get("cost_usd_per_hour")),
                              _g(m.get("goodput_rps")), _g(m.get("bcr_rps_per_usd_hour")),
                              _g((m.get("ttft_s") or {}).get("p99")), outcome]))  # fmt: skip
    key, name = OBJECTIVE_METRIC[objective]
    head = ["plan", "$/h", "TTFT P99 s", "SLA met", "on the Pareto front", name, "composition"]
    lines += ["", "The plans of the cost against TTFT P99 figure, each on this scenario at the "
              "offered rate:", "", _md_row(head), _md_row(["---"] * len(head))]  # fmt: skip
    points = pareto_points(plans)
    front = plots.sla_front(points)
    order = sorted(range(len(plans)), key=lambda i: plans[i]["metrics"]["cost_usd_per_hour"])
    for i in order:
        m, point = plans[i]["metrics"], points[i]
        lines.append(_md_row([point[2], _g(point[1]), _g(point[0]),
                              "yes" if point[3] else "no", _front_cell(point, front),
                              _g(m.get(key)), composition(plans[i]["plan"])]))  # fmt: skip
    return lines


def page_figures(figures) -> list[Figure]:
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
                   "(PDD technical report, Infinigence, WAIC 2026; docs/bathtub.md). "
                   if lows else "No point has a plan. ")  # fmt: skip
    return {
        "bathtub": "BCR (goodput req/s per $/h) of the optimal plan when the hit-rate "
        "distribution is moved to each mean (the rule of section 7), for "
        + (
            "this architecture and the IDC-PD baseline, and below their ratio (the benefit "
            "the published bathtub describes)"
            if ratio
            else "this architecture"
        )
        + "; a cross marks a mean where no plan was found (see the data behind the plots). "
        + valley_text,
        "composition": "GPUs of the optimal plan by role, GPU type and datacenter at each "
        "mean hit rate (the scenario's own mean included).",
        "tornado": f"The optimum's {metric_name}, re-optimised with one price at x0.8 and "
        "x1.2, as a change from this plan's; widest bar on top.",
        "pareto": f"Cost against TTFT P99 at the offered rate of {n_plans} distinct plans, each "
        "evaluated on this scenario: this plan, the other architectures' optima, the plans of "
        "the price cases, and this plan with one instance more or fewer in one role (or one "
        "line more). The step line is the Pareto front of the plans that meet the SLA: no "
        "such plan is both cheaper and faster; crosses mark plans that miss it, never on the "
        "front. This plan is the best by the objective (section 5), not by this trade-off: a "
        "cheaper plan on the front serves less per dollar, breaks the utilisation cap or "
        "misses the SLA at the rate or hit-rate mix the plan is sized for (the table behind "
        "the plots gives each plan's objective).",
    }
