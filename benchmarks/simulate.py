"""Wall time of `pdd-plan simulate` on the paper's scenario with its PDD plan.

    python benchmarks/simulate.py [--requests 100000]

Target: 100,000 requests in under 20 s (loading the scenario included).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args()
    start = time.perf_counter()
    from pdd_plan.sim.entry import simulate_plan

    metrics, _ = simulate_plan(
        "pdd-paper", REPO / "scenarios/plans/pdd-paper-pdd.yaml", args.requests, seed=1
    )
    wall = time.perf_counter() - start
    ttft = metrics["ttft_s"]
    print(f"{args.requests:,} requests of pdd-paper (PDD plan): {wall:.1f} s wall "
          f"(imports and loading included); TTFT P50/P90/P99 {ttft['p50']:.3g} / "
          f"{ttft['p90']:.3g} / {ttft['p99']:.3g} s")  # fmt: skip


if __name__ == "__main__":
    main()
