"""The closed forms against the simulator on the agreement suite (pdd_plan/sim/agreement.py).

    python benchmarks/agreement.py [--requests N] [--goodput-requests N] [--no-goodput]

Prints a Markdown table, scenario x metric: closed form, simulator [95 % interval],
difference, within tolerance (TTFT P50/P90/P99 and TPOT P90 15 %, goodput 10 %; "n/a" where
the interval is too wide to judge).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model import evaluate as ev
from pdd_plan.sim.agreement import (
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
    args = parser.parse_args()
    catalog = Catalog()
    metrics = ["ttft_p50", "ttft_p90", "ttft_p99", "tpot_p90"]
    if not args.no_goodput:
        metrics.append("goodput")
    print(f"requests per case: {args.requests:,} (goodput: bisection, "
          f"{args.goodput_requests:,} requests per trial)\n")  # fmt: skip
    print("| case | rate req/s | metric | closed form | simulator [95 % CI] | diff | ok |")
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for case in SUITE:
        row = compare(case, REPO, args.requests, catalog=catalog)
        closed, simulated = dict(row.closed), dict(row.simulated)
        if not args.no_goodput:
            setup = case_setup(case, REPO, catalog)
            closed["goodput"] = ev.goodput_rps(setup, 1e-2)
            g = simulated_goodput_rps(setup, closed["goodput"], args.goodput_requests)
            simulated["goodput"] = Estimate(g, g, g)
        for k in metrics:
            e, c = simulated[k], closed[k]
            diff = (c / e.value - 1) * 100 if e.value else float("nan")
            ci = f"{_fmt(e.value)} [{_fmt(e.low)}, {_fmt(e.high)}]"
            print(f"| {case.name} | {row.rate_rps:.3g} | {k} | {_fmt(c)} | {ci} | "
                  f"{diff:+.1f} % | {verdict(c, e, TOLERANCE[k])} |")  # fmt: skip
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
