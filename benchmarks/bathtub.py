"""The bathtub study (issue #12 item 8): the BCR of PDD, IDC-PD and CDC-PD on `pdd-paper`
against the mean prefix hit rate, each architecture solved alone (max BCR) at each point.

    python benchmarks/bathtub.py [--means 0.3,0.4,...] [--jobs N] [--out DIR]
        [--stream] [--stripes N] [--max-lines N] [--decode-cache TIER,...] [--tag NAME]

The family of hit-rate distributions: `pdd-paper`'s own (five uniform bins, mean 0.902)
moved to each mean m by the sizing report's rule (pdd_plan.plan.variants.HIT_RATE_RULE,
the same map as `pdd-plan sweep --vary workload.prefix_hit_rate.mean=...`): to raise the
mean every request's miss rate 1 - h is scaled by (1 - m) / (1 - mu), to lower it every hit
rate is scaled by m / mu (mu = 0.902). The map is linear in h, so the mean lands on m
exactly, the order of requests by hit rate is kept, and the shape (the skew towards the top
bin) is kept. Nothing else moves: the context lengths, the outputs, the rate, the prices.

Each point is a `pdd-plan sweep` point
(pdd_plan.stages.sweeping.sweep_points.run_point: the solve with every
mechanism the code has), so what moves BCR is whatever the planner models at that hit
rate. Writes, under --out (default benchmarks/results/): bathtub.csv (one row per point
and architecture: status, BCR, goodput, cost and its parts by role and line, the binding
role and each role's utilisation, the policy, the line's load) and bathtub.png (the
sweep's bathtub plot: BCR against the mean hit rate, PDD / IDC-PD below). Prints a
Markdown table and, per architecture, whether BCR has an interior minimum.

The line's engine knobs are the scenario's (pdd-paper: no streaming, one connection per
transfer, at most 4 lines) unless --stream, --stripes or --max-lines set them for every
point; --decode-cache makes MD's decode-side cache a priced decision (policy.decode_cache:
those catalog tiers, sizes `auto`; pdd-paper leaves it out: an unlimited cache at no cost,
so MD hits as P does); --tag names such a variant's files (bathtub-TAG.csv, .png).
"""

from __future__ import annotations

import argparse
import csv
import io
import time
from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.scenario import Scenario
from pdd_plan.plan.scenario_edit import ARCH_KEY, HIT_MEAN_KEY
from pdd_plan.plan.variants import line_prices_usd_per_month, with_hit_rate_mean
from pdd_plan.report.plots import render
from pdd_plan.report.sweep_plots import bathtub_figure
from pdd_plan.stages.sweeping import sweep as sw

REPO = Path(__file__).resolve().parent.parent
SCENARIO = "pdd-paper"
MEANS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.97)
ARCHITECTURES = ("pdd", "idc_pd", "cdc_pd")
HOURS_PER_MONTH = 730.0  # 8,760 h / 12: the month the catalog's line prices are quoted for
KNOBS = ("stream_during_prefill", "stripes_per_transfer", "pool_hold", "max_lines")
ROLES = ("prefill", "relay_decode", "decode", "main_decode", "colocated")


def family(s: Scenario, means) -> list[tuple[float, Scenario]]:
    """(m, `s` with its hit-rate distribution moved to mean m) for each m (HIT_RATE_RULE)."""
    return [(float(m), with_hit_rate_mean(s, float(m))) for m in means]


def gpu_price_usd_per_hour(s: Scenario, datacenter: str, gpu: str) -> float:
    dc = next(d for d in s.datacenters if d.id == datacenter)
    return float(next(o.price_usd_per_gpu_hour for o in dc.gpus if o.gpu == gpu))


def cost_parts_usd_per_hour(plan: dict, s: Scenario, catalog: Catalog) -> dict[str, float]:
    """The plan's hourly cost by role (instances x GPUs x the GPU's price) and for the
    lines (count x monthly tier price / HOURS_PER_MONTH)."""
    parts = dict.fromkeys((*ROLES, "line"), 0.0)
    for g in plan["instances"]:
        price = gpu_price_usd_per_hour(s, g["datacenter"], g["gpu"])
        parts[g["role"]] += g["count"] * g["gpus_per_instance"] * price
    tier_prices = line_prices_usd_per_month(s, catalog)
    for line in plan["lines"]:
        parts["line"] += line["count"] * tier_prices[line["tier"]] / HOURS_PER_MONTH
    return parts


def interior_minimum(xs, ys) -> tuple[float, float, float] | None:
    """(x at the lowest y, rise of y from there to the left end, to the right end, as
    fractions) when the lowest y lies strictly inside the range; None when it is at an
    end (no valley). Points with y None are left out."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    if len(pts) < 3:
        return None
    i = min(range(len(pts)), key=lambda j: pts[j][1])
    if i in (0, len(pts) - 1):
        return None
    low = pts[i][1]
    return pts[i][0], pts[0][1] / low - 1.0, pts[-1][1] / low - 1.0


def _row(r: dict, s: Scenario, catalog: Catalog) -> dict:
    mean, arch = r["values"][HIT_MEAN_KEY], r["values"][ARCH_KEY]
    out = {"mean_hit_rate": mean, "architecture": arch, "status": r["status"],
           "error": r["error"] or ""}  # fmt: skip
    m = r["metrics"]
    if m is None or r["plan"] is None:
        return out
    parts = cost_parts_usd_per_hour(r["plan"], s, catalog)
    out |= {
        "bcr_rps_per_usd_hour": m["bcr_rps_per_usd_hour"],
        "goodput_rps": m["goodput_rps"],
        "cost_usd_per_hour": m["cost_usd_per_hour"],
        **{f"cost_{k}_usd_per_hour": v for k, v in parts.items()},
        # what the solve charges beyond GPUs and lines (a cache tier, when one is priced)
        "cost_other_usd_per_hour": m["cost_usd_per_hour"] - sum(parts.values()),
        "binding_role": m["binding_role"],
        **{f"util_{k}_frac": v for k, v in m["role_utilization_frac"].items()},
        "wan_gbit_per_s": (m.get("wan") or {}).get("mean_gbit_per_s", 0.0),
        "rld_token_share_frac": m["rld_token_share_frac"],
        "relay_overflow_frac": m["relay_overflow_frac"],
        "ttft_p90_s": m["ttft_s"]["p90"],
        **{f"gpus_{g['role']}": g["count"] * g["gpus_per_instance"]
           for g in r["plan"]["instances"]},
        "lines": sum(line["count"] for line in r["plan"]["lines"]),
        **{f"policy_{k}": v for k, v in r["plan"]["policy"].items()},
    }  # fmt: skip
    return out


def csv_text(rows: list[dict]) -> str:
    header: list[str] = []
    for r in rows:
        header += [k for k in r if k not in header]
    buf = io.StringIO()
    w = csv.DictWriter(buf, header, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _bcr(table: list[dict], arch: str, mean: float) -> float | None:
    r = next(r for r in table if r["architecture"] == arch and r["mean_hit_rate"] == mean)
    return r.get("bcr_rps_per_usd_hour")


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3f}" if a is not None and b else "-"


def print_table(table: list[dict], means) -> None:
    print("| mean hit | BCR PDD | BCR IDC-PD | BCR CDC-PD | PDD / IDC-PD | CDC-PD / IDC-PD "
          "| PDD binding | PDD $/h: P, RLD, MD, line |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for m in means:
        b = {a: _bcr(table, a, m) for a in ARCHITECTURES}
        pdd = next(r for r in table if r["architecture"] == "pdd" and r["mean_hit_rate"] == m)
        parts = ", ".join(f"{pdd.get(f'cost_{k}_usd_per_hour', 0.0):.0f}"
                          for k in ("prefill", "relay_decode", "main_decode", "line"))  # fmt: skip
        cells = " | ".join(f"{b[a]:.4f}" if b[a] is not None else "-" for a in ARCHITECTURES)
        print(f"| {m:g} | {cells} | {_ratio(b['pdd'], b['idc_pd'])} | "
              f"{_ratio(b['cdc_pd'], b['idc_pd'])} | {pdd.get('binding_role', pdd['status'])} "
              f"| {parts} |")  # fmt: skip
    for a in ARCHITECTURES:
        v = interior_minimum(means, [_bcr(table, a, m) for m in means])
        print(f"{a}: " + ("no interior minimum (lowest BCR at an end)" if v is None else
              f"lowest BCR at mean hit {v[0]:g}, {v[1]:+.1%} to the left end, "
              f"{v[2]:+.1%} to the right end"))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--means", default=",".join(f"{m:g}" for m in MEANS))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    parser.add_argument("--stream", action="store_true", help="wan.stream_during_prefill")
    parser.add_argument("--stripes", type=int, help="wan.stripes_per_transfer")
    parser.add_argument("--max-lines", type=int, help="wan.max_lines")
    parser.add_argument("--decode-cache", default="", help="cache tiers MD may buy")
    parser.add_argument("--tag", default="", help="suffix of the output files")
    args = parser.parse_args()
    means = [float(x) for x in args.means.split(",")]
    catalog = Catalog()
    specs = [f"{HIT_MEAN_KEY}={','.join(f'{m:g}' for m in means)}",
             f"{ARCH_KEY}={','.join(ARCHITECTURES)}"]  # fmt: skip
    sweep = sw.prepare(SCENARIO, specs, catalog=catalog)
    wan = sweep.data["wan"]  # the line's knobs for every point (the scenario's otherwise)
    knobs = {"stream_during_prefill": args.stream or None,
             "stripes_per_transfer": args.stripes, "max_lines": args.max_lines}  # fmt: skip
    for key, value in knobs.items():
        if value is not None:
            wan[key] = value
    if args.decode_cache:
        tiers = args.decode_cache.split(",")
        sweep.data.setdefault("policy", {})["decode_cache"] = {"tiers": tiers, "tb_total": "auto"}
    s = load_scenario(resolve_scenario_path(SCENARIO), catalog)
    shown = ", ".join(f"{k} {wan.get(k, 'default')}" for k in KNOBS)
    print(f"line knobs: {shown}; decode cache: {args.decode_cache or 'unlimited, free'}")
    start = time.perf_counter()
    rows = sw.run(sweep, jobs=args.jobs, catalog=catalog)
    print(f"{len(rows)} solves in {time.perf_counter() - start:.0f} s "
          f"(scenario mean hit {s.workload.prefix_hit_rate.mean():.4f})\n")  # fmt: skip
    table = [_row(r, s, catalog) for r in rows]
    print_table(table, means)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"bathtub-{args.tag}" if args.tag else "bathtub"
    (out / f"{name}.csv").write_text(csv_text(table))
    fig = bathtub_figure(rows, [HIT_MEAN_KEY, ARCH_KEY], s.workload.prefix_hit_rate.mean())
    (out / f"{name}.png").write_bytes(render(fig)[1])
    print(f"\nwrote {out / (name + '.csv')} and {out / (name + '.png')}")


if __name__ == "__main__":
    main()
