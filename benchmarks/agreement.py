"""The closed forms against the simulator on the agreement suite (pdd_plan/sim/agreement.py).

    python benchmarks/agreement.py [--requests N] [--goodput-requests N] [--no-goodput]
        [--only TEXT] [--exclude NAMES] [--part i/n] [--seeds K]

Prints a Markdown table, scenario x metric: closed form, simulator [95 % interval],
difference, within tolerance (TTFT and TPOT P50/P90/P99 and the largest-gap P90 15 %,
goodput 5 %; "n/a" where the interval is too wide to judge). Each goodput trial runs at
least --goodput-requests requests and five times the longest decode-slot hold, and counts
a decode role at 98 % of its slots as saturated (pdd_plan/sim/agreement.py). With
--seeds K each case runs K independent seeds and each metric is their median with the
union of their intervals (near saturation a tail percentile is set by a few long queue
episodes and one run's interval understates the spread between runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model import evaluate as ev
from pdd_plan.sim.agreement import (
    METRICS,
    SUITE,
    TOLERANCE,
    case_setup,
    compare,
    simulated_goodput_rps,
    verdict,
)
from pdd_plan.sim.stats import Estimate

REPO = Path(__file__).resolve().parent.parent


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--goodput-requests", type=int, default=8_000)
    parser.add_argument("--no-goodput", action="store_true")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument(
        "--part",
        default="1/1",
        help="i/n: every n-th group of cases that share a goodput, from the i-th",
    )
    parser.add_argument("--exclude", default="", help="comma-separated case names to leave out")
    parser.add_argument("--seeds", type=int, default=1,
                        help="independent runs per case: each metric is the median of their "
                             "values with the union of their intervals")  # fmt: skip
    args = parser.parse_args()
    catalog = Catalog()
    metrics = list(METRICS)
    if not args.no_goodput:
        metrics.append("goodput")
    print(f"requests per case: {args.requests:,} x {args.seeds} seed(s) (goodput: "
          f"bisection, at least {args.goodput_requests:,} requests and 5 longest slot "
          f"holds per trial)\n")  # fmt: skip
    print("| case | rate req/s | metric | closed form | simulator [95 % CI] | diff | ok |")
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    i, n = (int(x) for x in args.part.split("/"))
    groups: dict = {}  # cases that differ only in their load share one goodput search
    for c in SUITE:
        groups.setdefault(dataclasses.replace(c, name="", load_frac=0.0), []).append(c)
    mine = [c for g in list(groups.values())[i - 1 :: n] for c in g]
    excluded = set(args.exclude.split(","))
    goodputs: dict = {}
    for case in (c for c in mine if args.only in c.name and c.name not in excluded):
        row = compare(case, REPO, args.requests, catalog=catalog, seeds=args.seeds)
        closed, simulated = dict(row.closed), dict(row.simulated)
        if not args.no_goodput:
            key = dataclasses.replace(case, name="", load_frac=0.0)
            if key not in goodputs:
                setup = case_setup(case, REPO, catalog)
                closed_g = ev.goodput_rps(setup, 1e-2)
                g = simulated_goodput_rps(setup, closed_g, args.goodput_requests)
                goodputs[key] = (closed_g, g)
            closed["goodput"], g = goodputs[key]
            simulated["goodput"] = Estimate(g, g, g)
        for k in metrics:
            e, c = simulated[k], closed[k]
            diff = (c / e.value - 1) * 100 if e.value else float("nan")
            ci = f"{_fmt(e.value)} [{_fmt(e.low)}, {_fmt(e.high)}]"
            print(f"| {case.name} | {row.rate_rps:.3g} | {k} | {_fmt(c)} | {ci} | "
                  f"{diff:+.1f} % | {verdict(c, e, TOLERANCE[k])} |", flush=True)  # fmt: skip
        over_c, over_s = row.closed["overflow"], row.simulated["overflow"].value
        if over_c > 0 or over_s > 0:
            print(f"| {case.name} | {row.rate_rps:.3g} | relay overflow share | {over_c:.3f} | "
                  f"{over_s:.3f} | | |", flush=True)  # fmt: skip
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
