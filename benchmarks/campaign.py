"""The generated agreement campaign (issue #22, point 2): random scenarios solved for their
architecture, the plan's closed forms held to the simulator at 50, 80 and 95 % of its
closed-form goodput and on the goodput itself (pdd_plan/stages/agreement_campaign.py).

    python benchmarks/campaign.py [--cases 60] [--jobs 2] [--requests 30000]
        [--goodput-requests 8000] [--no-goodput] [--seeds-from 0] [--out benchmarks/results]

Cases are drawn from seed 0 upward; a seed whose scenario has no plan (infeasible, a WAN
the KV cannot cross, or a solve that stops unproven within --time-limit) is listed as
skipped, with its reason, and the next seed is drawn until --cases have plans. Each load's
run lasts at least --requests requests and five times the longest decode-slot hold
(agreement.trial_requests), so decode queues fill. Writes campaign.csv (one row per
comparison) and campaign.md (the error distribution, per metric, load and architecture,
and every comparison outside its tolerance) under --out, and prints campaign.md.
"""

from __future__ import annotations

import argparse
import csv
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.stages.agreement_campaign import (
    LOADS,
    METRICS,
    Comparison,
    compare_goodput,
    compare_loads,
    solve_case,
)

REPO = Path(__file__).resolve().parent.parent
FIELDS = ("seed", "label", "load_frac", "metric", "closed", "simulated", "low", "high",
          "error_frac", "agrees")  # fmt: skip


def run_case(seed: int, requests: int, goodput_requests: int, goodput: bool, limit_s: float):
    """(seed, label, why skipped, comparisons, seconds) of one case."""
    start = time.perf_counter()
    catalog = Catalog()
    solved = solve_case(seed, catalog, limit_s)
    if solved.why_not:
        return seed, "", solved.why_not, [], time.perf_counter() - start
    rows = compare_loads(solved, catalog, requests)
    if goodput:
        rows.append(compare_goodput(solved, catalog, goodput_requests))
    label = rows[0].label if rows else ""
    return seed, label, "", rows, time.perf_counter() - start


def _quantiles(errors: list[float]) -> str:
    e = np.asarray(errors) * 100
    qs = np.percentile(e, [5, 25, 50, 75, 95])
    return " | ".join(f"{q:+.1f}" for q in qs)


def summary(rows: list[Comparison], skipped: list[tuple[int, str]], wall_s: float, args) -> str:
    ok = sum(r.agrees for r in rows)
    lines = [
        "# Generated agreement campaign",
        "",
        f"`python benchmarks/campaign.py --cases {args.cases} --requests {args.requests} "
        f"--goodput-requests {args.goodput_requests}`: {len({r.seed for r in rows})} "
        f"scenarios with plans ({len(skipped)} drawn seeds skipped, listed below), "
        f"{len(rows)} comparisons, {wall_s / 60:.0f} min of wall time on {args.jobs} "
        f"processes.",
        "",
        f"**{ok} of {len(rows)} comparisons ({ok / max(len(rows), 1):.1%}) within "
        f"tolerance** (TTFT and TPOT P90/P99 15 %, goodput 5 %).",
        "",
        "Signed error of the closed form against the simulator, percentiles over "
        "comparisons (in %):",
        "",
        "| metric | load | n | within | P5 | P25 | P50 | P75 | P95 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for metric in (*METRICS, "goodput"):
        for load in (*LOADS, 1.0):
            sel = [r for r in rows if r.metric == metric and r.load_frac == load]
            if sel:
                within = sum(r.agrees for r in sel) / len(sel)
                lines.append(f"| {metric} | {load:g} | {len(sel)} | {within:.0%} | "
                             f"{_quantiles([r.error_frac for r in sel])} |")  # fmt: skip
    lines += ["", "By architecture:", "", "| architecture | n | within |", "|---|---|---|"]
    for arch in sorted({r.label.split()[-1] for r in rows}):
        sel = [r for r in rows if r.label.endswith(arch)]
        lines.append(f"| {arch} | {len(sel)} | {sum(r.agrees for r in sel) / len(sel):.0%} |")
    lines += ["", "Outside tolerance:", "", "| seed | case | load | metric | closed | "
              "simulator [95 % CI; goodput: bracket] | error |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in sorted((r for r in rows if not r.agrees), key=lambda r: (r.seed, r.load_frac)):
        lines.append(f"| {r.seed} | {r.label} | {r.load_frac:g} | {r.metric} | "
                     f"{r.closed:.4g} | {r.simulated:.4g} [{r.low:.4g}, {r.high:.4g}] | "
                     f"{r.error_frac:+.1%} |")  # fmt: skip
    lines += ["", "Skipped seeds:", ""]
    lines += [f"- {seed}: {why}" for seed, why in skipped]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cases", type=int, default=60)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--requests", type=int, default=30_000)
    p.add_argument("--goodput-requests", type=int, default=8_000)
    p.add_argument("--no-goodput", action="store_true")
    p.add_argument("--seeds-from", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=20.0, help="each solve's, in seconds")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = p.parse_args()
    start = time.perf_counter()
    rows: list[Comparison] = []
    skipped: list[tuple[int, str]] = []
    seed, done = args.seeds_from, 0
    with ProcessPoolExecutor(args.jobs) as pool:
        while done < args.cases:
            batch = range(seed, seed + max(args.cases - done, args.jobs))
            seed = batch.stop
            job = (args.requests, args.goodput_requests, not args.no_goodput, args.time_limit)
            futures = [pool.submit(run_case, s, *job) for s in batch]
            for f in futures:
                s, label, why, case_rows, secs = f.result()
                if why:
                    skipped.append((s, why))
                    print(f"seed {s}: skipped ({why})", flush=True)
                elif done < args.cases:
                    done += 1
                    rows += case_rows
                    bad = sum(not r.agrees for r in case_rows)
                    print(f"seed {s}: {label}, {bad} of {len(case_rows)} outside, {secs:.0f} s",
                          flush=True)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "campaign.csv", "w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        w.writerow(FIELDS)
        for r in rows:
            w.writerow([r.seed, r.label, r.load_frac, r.metric, r.closed, r.simulated, r.low,
                        r.high, r.error_frac, r.agrees])  # fmt: skip
    text = summary(rows, skipped, time.perf_counter() - start, args)
    (args.out / "campaign.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
