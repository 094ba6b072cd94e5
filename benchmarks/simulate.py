"""Wall time of `pdd-plan simulate` on the paper's scenario with its PDD plan, and the
published WAN benchmark (pdd-system.md §3) replayed by the simulator's WAN.

    python benchmarks/simulate.py [--requests 100000] [--wan]

Target: 100,000 requests in under 20 s (loading the scenario included).
With --wan: 20 Gbit/s line, 80 req/s, DeepSeek-V4-Pro 64K prompts, the link and the two
hit-rate mixes of tests/anchors/test_wan_benchmark.py (skewed 2-99 %, narrow uniform
85-95 %, both mean 0.90), payload (1 - hit) x kv_bytes(65,536, fp8): transfer P50/P99, mean
wait for a connection and pool utilisation.
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


SKEWED_BINS = ((0.02, 0.20, 0.02), (0.20, 0.50, 0.04), (0.50, 0.80, 0.06),
               (0.80, 0.95, None), (0.95, 0.98, 0.30), (0.98, 0.99, None))  # fmt: skip


def skewed_bins(mean_hit: float = 0.90):
    """The anchor test's skewed mix: the two open shares solve sum 1 and mean `mean_hit`."""
    fixed = [(lo, hi, s) for lo, hi, s in SKEWED_BINS if s is not None]
    (lo_a, hi_a, _), (lo_b, hi_b, _) = [b for b in SKEWED_BINS if b[2] is None]
    rest = 1.0 - sum(s for *_, s in fixed)
    fixed_hit = sum(s * (lo + hi) / 2 for lo, hi, s in fixed)
    mid_a, mid_b = (lo_a + hi_a) / 2, (lo_b + hi_b) / 2
    share_a = (mean_hit - fixed_hit - rest * mid_b) / (mid_a - mid_b)
    open_shares = iter((share_a, rest - share_a))
    return [(lo, hi, s if s is not None else next(open_shares)) for lo, hi, s in SKEWED_BINS]


def wan_benchmark(requests: int = 100_000) -> None:
    import numpy as np

    from pdd_plan.loaders.catalog import Catalog
    from pdd_plan.model.network.network import WanLink
    from pdd_plan.model.workload.workload import Bins
    from pdd_plan.sim.sampling import sample
    from pdd_plan.sim.wan import simulate_wan

    link = WanLink(20e9, 0.025, 220e6, 170, mtu_bytes=9000, initial_window_segments=10)
    kv_bytes = Catalog().model("deepseek_v4_pro").kv_bytes(65_536, "fp8")
    mixes = {"skewed": Bins(*zip(*skewed_bins(), strict=True)),
             "narrow": Bins((0.85,), (0.95,), (1.0,))}  # fmt: skip
    print("| 20 Gbit/s, 80 req/s | skewed | narrow | published skewed | published narrow |")
    print("|---|---|---|---|---|")
    rows: dict[str, list[str]] = {}
    for mix in mixes.values():
        rng = np.random.default_rng(1)
        ready = np.cumsum(rng.exponential(1 / 80.0, requests))
        bits = 8 * (1 - sample(mix, requests, rng)) * kv_bytes
        run = simulate_wan(link, ready, bits)
        keep = slice(requests // 10, None)
        latency = (run.done_s - ready)[keep]
        wait = (run.connect_s - ready)[keep]
        span = ready[-1] - ready[requests // 10]
        held = np.clip(np.minimum(run.done_s, ready[-1]) - np.maximum(run.connect_s,
                       ready[requests // 10]), 0, None).sum()  # fmt: skip
        line = bits[keep].sum() / span / link.goodput_bits_per_s
        rows.setdefault("transfer P50", []).append(f"{np.quantile(latency, 0.5):.3g} s")
        rows.setdefault("transfer P99", []).append(f"{np.quantile(latency, 0.99):.3g} s")
        rows.setdefault("mean wait for a connection", []).append(f"{wait.mean() * 1e3:.3g} ms")
        rows.setdefault("pool utilisation", []).append(f"{held / (170 * span):.1%}")
        rows.setdefault("line load", []).append(f"{line:.1%}")
    published = {"transfer P50": ("248 ms", "1,210 ms"), "transfer P99": ("18,883 ms", "25,542 ms"),
                 "mean wait for a connection": ("0.31 ms", "1,682 ms"),
                 "pool utilisation": ("63.1 %", "100 %"), "line load": ("-", "-")}  # fmt: skip
    for key, values in rows.items():
        print(f"| {key} | {values[0]} | {values[1]} | {published[key][0]} | {published[key][1]} |")


if __name__ == "__main__":
    import sys

    if "--wan" in sys.argv:
        wan_benchmark()
    else:
        main()
