"""`pdd-plan estimate --concurrency N | --rate R`: one instance served the way a
benchmark drives it (sim/aggregated.py), its TTFT and TPOT percentiles and throughput."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdd_plan.cli.output import console, table
from pdd_plan.errors import InputError
from pdd_plan.model.units import MS_S

if TYPE_CHECKING:
    from pdd_plan.model.compute.roofline import Instance
    from pdd_plan.sim.aggregated import Load

MAX_SERVING_REQUESTS = 100_000  # a closed loop of 100,000 requests takes a few seconds
MAX_RATE_PER_S = 1e6
DEFAULT_OPEN_REQUESTS = 1000
MIN_DEFAULT_REQUESTS = 100  # the default of 10 x N never falls below this


def serving_load(
    isl: int, osl: int, concurrency, rate, requests, seed: int, budget: int
) -> Load | None:
    """The benchmark run the options ask for (None: neither --concurrency nor --rate)."""
    from pdd_plan.sim.aggregated import Load  # the simulator: not at `--help`

    if concurrency is not None and rate is not None:
        raise InputError.single(
            "command line", "--rate", repr(rate), "either --concurrency or --rate, not both"
        )
    if concurrency is None and rate is None:
        if requests is not None:
            raise InputError.single(
                "command line", "--requests", repr(requests), "--concurrency or --rate with it"
            )
        return None
    if requests is None:
        closed = max(10 * concurrency, MIN_DEFAULT_REQUESTS) if concurrency else 0
        requests = min(closed or DEFAULT_OPEN_REQUESTS, MAX_SERVING_REQUESTS)
    return Load(isl, osl, requests, concurrency, rate, seed, max_batched_tokens=budget)


def serving_data(inst: Instance, load: Load) -> dict:
    """The JSON `serving` section: the run asked for and its results."""
    from pdd_plan.sim.aggregated import running_cap, serve

    cap = running_cap(inst, load)
    if cap < 1:
        raise InputError.single(
            "command line", "--isl", str(load.isl_tokens),
            "a request whose KV fits the instance",
            f"the KV cache cannot hold one request of {load.isl_tokens + load.osl_tokens:,} "
            "tokens next to the weights",
        )  # fmt: skip
    result = serve(inst, load)
    return {
        "mode": "closed loop" if load.concurrency else "open loop (Poisson)",
        "concurrency": load.concurrency,
        "rate_per_s": load.rate_per_s,
        "seed": load.seed if load.rate_per_s else None,
        "requests": load.requests,
        "isl": load.isl_tokens,
        "osl": load.osl_tokens,
        "max_batched_tokens": load.max_batched_tokens,
        "max_running": cap,
        **result.summary(),
    }


def print_serving(d: dict) -> None:
    from pdd_plan.sim.aggregated import PERCENTILES

    what = (
        f"{d['concurrency']:,} clients (closed loop)"
        if d["concurrency"]
        else f"{d['rate_per_s']:,g} req/s Poisson (seed {d['seed']})"
    )
    rows = []
    for name, label in (("ttft", "TTFT"), ("tpot", "TPOT")):
        cells = [d[f"{name}_{k}_s"] for k in ("mean", *(f"p{q}" for q in PERCENTILES))]
        rows.append([label, *("-" if v is None else f"{v / MS_S:,.2f}" for v in cells)])
    table(
        f"Serving {d['requests']:,} requests of {d['isl']:,} -> {d['osl']:,} tokens, {what}",
        ["metric (ms)", "mean", *(f"P{q}" for q in PERCENTILES)],
        rows,
        caption=f"chunked prefill, {d['max_batched_tokens']:,} tokens per iteration, "
        f"at most {d['max_running']:,} running",
    )
    console.print(
        f"{d['request_throughput_per_s']:,.3f} req/s, "
        f"{d['output_throughput_tokens_per_s']:,.1f} output tokens/s, "
        f"mean decode batch {d['mean_batch']:,.1f}, run of {d['duration_s']:,.1f} s",
        markup=False,
    )
