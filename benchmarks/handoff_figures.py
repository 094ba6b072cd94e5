"""The published handoff figures (pdd-system.md §5, issue #11 "Done when") re-measured on
`pdd-paper` with its PDD plan, closed form and simulator side by side.

    python benchmarks/handoff_figures.py [--requests N] [--rate R] [--stream] [--stripes N]
        [--pool-hold transfer_end|handoff_end] [--workload published|paper|both]

--workload: `published` is the workload the published figures were measured on ("the
64K-input, 90 %-hit, 1K-output workload", pdd-system.md §5): pdd-paper with every output
1,000 tokens (its prompts and hit mix, mean 90 %, unchanged); `paper` is pdd-paper as it
stands (its binned output mix: 30 % under 100 tokens end on RLD before any handoff);
`both` (the default) prints one table for each.

- one-shot: the visible gap of a handed-off request (MD's first token - RLD's last),
  P50/P90/max, over handed-off requests with outputs of 500-2,000 tokens (published: under
  0.5 s for 1K-token outputs); the closed form's largest-gap P90;
- catch-up against one-shot: RLD's output over all requests and per handed-off request
  (published: about 10 % more, accepted 7-13 %);
- eager tokens (RLD's output) as a share of all output tokens (published 6.2 %, accepted
  +/- 2 points);
- the mechanism that sets them: a relayed request's WAN transfer (prefill end -> MD holds
  its KV), RLD's mean step, and the handoff (RTT + fixed engine cost): eager tokens per
  relayed request ~ (transfer + handoff) / RLD step, and catch-up adds ~ handoff / step.
Both runs use the same seed, so the same requests take the same routes. --stream,
--stripes and --pool-hold set the line's engine knobs (scenario `wan`; pdd-paper leaves
them at their defaults: no streaming, one connection per transfer, released at its end).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model import evaluate as ev
from pdd_plan.model import routing as rt
from pdd_plan.model.decode_side import engine_fixed_s
from pdd_plan.model.workload.workload import Fixed
from pdd_plan.sim.gaps import measured_gaps_s
from pdd_plan.sim.measure import measure
from pdd_plan.sim.run import SimConfig, simulate

PLAN = Path(__file__).resolve().parent.parent / "scenarios" / "plans" / "pdd-paper-pdd.yaml"
PUBLISHED_OUTPUT_TOKENS = 1000.0  # "1K-output" (pdd-system.md §5, eager output tokens)


def _with_handoff(setup, mode: str):
    d = setup.deployment
    d = dataclasses.replace(d, policy=dataclasses.replace(d.policy, handoff=mode))
    return dataclasses.replace(setup, deployment=d)


def _setup(catalog: Catalog, stream: bool, stripes: int | None, pool_hold: str | None,
           workload: str = "paper"):  # fmt: skip
    s = load_scenario(resolve_scenario_path("pdd-paper"), catalog)
    if workload == "published":
        out = Fixed(PUBLISHED_OUTPUT_TOKENS)
        s = dataclasses.replace(s, workload=dataclasses.replace(s.workload, output_tokens=out))
    knobs = {"stream_during_prefill": stream or None, "stripes_per_transfer": stripes,
             "pool_hold": pool_hold}  # fmt: skip
    wan = dataclasses.replace(s.wan, **{k: v for k, v in knobs.items() if v is not None})
    s = dataclasses.replace(s, wan=wan)
    print(f"line: streaming {wan.stream_during_prefill}, {wan.stripes_per_transfer} "
          f"stripe(s), pool held to {wan.pool_hold}")  # fmt: skip
    return ev.prepare(s, load_plan(PLAN, s, catalog), catalog.model_for(s), catalog.gpus,
                      catalog.lines)  # fmt: skip


def _mean_step_s(run, role: str = "relay_decode") -> float:
    """RLD's step time, averaged over the time its instances are busy."""
    total, busy = 0.0, 0.0
    for _, t0, _, d, batch in run.segments.get(role, []):
        live = batch[:-1] > 0
        span = np.diff(t0)[live]
        total, busy = total + float(span.sum()), busy + float((span / d[:-1][live]).sum())
    return total / busy if busy else float("nan")


def _sim(setup, mode: str, requests: int, rate: float):
    run = simulate(_with_handoff(setup, mode), SimConfig(requests, 1, 0.1, rate_per_s=rate))
    return run, measure(run)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--stripes", type=int, default=None)
    parser.add_argument("--pool-hold", default=None)
    parser.add_argument("--workload", choices=("published", "paper", "both"), default="both")
    args = parser.parse_args()
    catalog = Catalog()
    names = ("published", "paper") if args.workload == "both" else (args.workload,)
    for name in names:
        print(f"\n## workload: {name}")
        setup = _setup(catalog, args.stream, args.stripes, args.pool_hold, name)
        _table(setup, args.requests, args.rate)


def _table(setup, requests: int, rate: float) -> None:
    closed = {m: ev.snapshot(_with_handoff(setup, m), rate) for m in ("one_shot", "catch_up")}
    runs = {m: _sim(setup, m, requests, rate) for m in ("one_shot", "catch_up")}
    handoff_s = setup.link.rtt_s + engine_fixed_s(setup)
    print(f"pdd-paper, PDD plan, {rate:g} req/s; simulator {requests:,} requests "
          f"(seed 1, first 10 % warm-up); handoff RTT + fixed = "
          f"{handoff_s * 1e3:.1f} ms\n")  # fmt: skip
    print("| figure | closed form | simulator | published |")
    print("|---|---|---|---|")
    (r1, m1), (rc, mc) = runs["one_shot"], runs["catch_up"]
    t1, tc = r1.trace, rc.trace
    out = t1.requests.output_tokens
    both1 = (t1.local_tokens > 0) & (t1.main_tokens > 0)
    gap = (t1.main_first_s - t1.local_last_s)[both1 & (out >= 500) & (out <= 2000)]
    print(f"| one-shot visible gap, outputs 500-2,000: P50 / P90 / max (s) | largest-gap P90 "
          f"{closed['one_shot'].largest_gap_s['p90']:.3f} | {np.percentile(gap, 50):.3f} / "
          f"{np.percentile(gap, 90):.3f} / {gap.max():.3f} | < 0.5 |")  # fmt: skip
    c1, cc = closed["one_shot"].rld_token_share_frac, closed["catch_up"].rld_token_share_frac
    s1, sc = m1.rld_token_share_frac, mc.rld_token_share_frac
    print(f"| eager tokens / all output, one-shot | {c1:.2%} | {s1:.2%} | 6.2 % +/- 2 |")
    print(f"| eager tokens / all output, catch-up | {cc:.2%} | {sc:.2%} | 6.2 % +/- 2 |")
    print(f"| catch-up RLD output over one-shot, all | {cc / c1 - 1:+.1%} | {sc / s1 - 1:+.1%} "
          f"| +10 % (7-13 %) |")  # fmt: skip
    handed = both1 & (tc.local_tokens > 0) & (tc.main_tokens > 0)
    per = tc.local_tokens[handed].sum() / t1.local_tokens[handed].sum() - 1
    print(f"| catch-up RLD output over one-shot, per handed-off request | | {per:+.1%} | |")
    switch = (tc.main_first_s - tc.local_last_s)[handed]
    print(f"| catch-up largest gap P90 (s); simulator: switch RLD -> MD P50 / P90 | "
          f"{closed['catch_up'].largest_gap_s['p90']:.3f} | "
          f"{np.quantile(measured_gaps_s(rc), 0.9):.3f}; {np.percentile(switch, 50):.3f} / "
          f"{np.percentile(switch, 90):.3f} | no visible stall |")  # fmt: skip
    relayed = (t1.path == rt.RELAY) & ~t1.overflowed
    transfer = (t1.wan.done_s - t1.prefill.end_s)[relayed]
    step = _mean_step_s(r1)
    print(f"\nmechanism (one-shot run): relayed share {relayed.mean():.1%}, handed off "
          f"{both1.mean():.1%}; relayed WAN transfer mean {transfer.mean():.2f} s, P50 "
          f"{np.median(transfer):.2f} s; RLD mean step {step * 1e3:.1f} ms; RLD tokens per "
          f"handed-off request {t1.local_tokens[both1].mean():.0f} one-shot, "
          f"{tc.local_tokens[handed].mean():.0f} catch-up; (transfer + handoff) / step = "
          f"{(transfer.mean() + handoff_s) / step:.0f}, handoff / step = "
          f"{handoff_s / step:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
