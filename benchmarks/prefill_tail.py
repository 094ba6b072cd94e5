"""The batched prefill pool's part of TTFT, simulator against closed form, decomposed.

    python benchmarks/prefill_tail.py "default pdd 0.9" [--requests N] [--seed S]

For one agreement case (pdd_plan/sim/agreement.py SUITE) it runs the simulator's prefill
pool alone (sim/prefill.py `batched_pool`, Poisson arrivals, classes drawn by weight; the
first 10 % dropped as warm-up) and prints, beside the closed form's (model/queueing/prefill_batch.py
`pool`): the wait before the first step, the request's own step time over its time alone
(the co-batched others' share), their sum, and the step lengths (mean, E[L²]/2E[L], the
residual a request arriving at random sees) against the closed form's S(b). Poisson only:
a case with another burstiness is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.queueing import prefill_batch as pb
from pdd_plan.sim.agreement import SUITE, case_setup
from pdd_plan.sim.prefill import ChunkTable, batched_pool

REPO = Path(__file__).resolve().parent.parent
QS = (0.5, 0.9, 0.99)


def _q(x) -> str:
    return " ".join(f"{v:.3g}" for v in np.quantile(x, QS))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    case = next(c for c in SUITE if c.name == args.case)
    setup = case_setup(case, REPO, Catalog())
    if setup.scenario.workload.burstiness_cv2 != 1.0:
        raise SystemExit("error: Poisson cases only (burstiness_cv2 1)")
    rate = setup.scenario.workload.arrival_rate_per_s
    inst, servers, cl = setup.prefill.instance, setup.prefill.group.count, setup.classes
    budget = pb.budget_tokens(inst, setup.scenario.engine.prefill_token_budget_per_gpu)
    mix = pb.prefill_mix(inst, cl, budget)
    pool = pb.pool(mix, rate, servers, 1.0, "prefill")
    rng = np.random.default_rng(args.seed)
    w = np.asarray(cl.weight, dtype=float) / np.sum(cl.weight)
    k = rng.choice(len(w), args.requests, p=w)
    arrival_s = np.cumsum(rng.exponential(1.0 / rate, args.requests))
    new, cached = np.asarray(cl.uncached_tokens)[k], np.asarray(cl.cached_tokens)[k]
    table = ChunkTable(inst, budget, float((new + cached).max()))
    run = batched_pool(arrival_s, new, cached, servers, budget, table.step_s)
    kept = slice(args.requests // 10, None)
    wait_s = (run.start_s - arrival_s)[kept]
    own_s = pool.service_s[k[kept]]
    others_s = (run.end_s - run.start_s)[kept] - own_s
    start, end, _ = run.steps
    length_s = end - start
    draw = rng.random(len(own_s)) < pool.wait.prob_wait
    decay_s = rng.exponential(1.0 / pool.wait.decay_rate_per_s, len(own_s))
    closed_wait_s = np.where(draw, decay_s, 0.0)
    print(f"{case.name}: {rate:.3g} req/s on {servers} instances, budget {budget} tokens, "
          f"b {pool.step_tokens:.0f} tokens, load {pool.utilization_frac:.3f}")  # fmt: skip
    print(f"sim wait: P(>0) {np.mean(wait_s > 0):.3f}, mean {wait_s.mean():.3g} s, "
          f"P50/90/99 {_q(wait_s)}")  # fmt: skip
    print(f"sim co-batched others' share: mean {others_s.mean():.3g} s, P50/90/99 {_q(others_s)}")
    print(f"sim wait + others: mean {(wait_s + others_s).mean():.3g} s, "
          f"P50/90/99 {_q(wait_s + others_s)}")  # fmt: skip
    print(f"closed wait (holds the others' share): P(>0) {pool.wait.prob_wait:.3f}, "
          f"mean {pool.wait.mean_s():.3g} s")  # fmt: skip
    print(f"prefill part of TTFT: sim P50/90/99 {_q((run.end_s - arrival_s)[kept])}, "
          f"closed {_q(own_s + closed_wait_s)}")  # fmt: skip
    residual_s = float((length_s**2).mean()) / 2 / length_s.mean()
    print(f"steps: sim mean {length_s.mean():.3g} s, sd {length_s.std():.3g} s, "
          f"E[L^2]/2E[L] {residual_s:.3g} s, mean tokens {run.steps[2].mean():.0f}; "
          f"closed S(b) {mix.step_s(pool.step_tokens):.3g} s")  # fmt: skip


if __name__ == "__main__":
    main()
