"""`pdd-plan simulate SCENARIO PLAN.yaml`: replay a deployment request by request."""

from __future__ import annotations

import typer

from pdd_plan.cli.bounds import MAX_REQUESTS, MAX_SEED, MAX_WARMUP_FRAC, bounded
from pdd_plan.cli.evaluate_cmd import _seconds
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.cli.output_formats import CSV_ONLY
from pdd_plan.cli.output_paths import check_outputs
from pdd_plan.cli.progress import bars, progress_option, step


def simulate(
    scenario: str = typer.Argument(..., help="a scenario file or shipped name"),
    plan: str = typer.Argument(
        None, help="a plan file (YAML with the `plan` keys); none with --schedule"
    ),
    requests: int = bounded(
        20_000, "--requests", low=1, high=MAX_REQUESTS, help="requests to simulate"
    ),
    seed: int = bounded(
        0, "--seed", low=0, high=MAX_SEED, help="random seed (same seed, same run)"
    ),
    warmup_frac: float = bounded(
        0.1,
        "--warmup-frac",
        low=0.0,
        high=MAX_WARMUP_FRAC,
        help="share of the first requests left out of the statistics",
    ),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
    trace_out: str | None = typer.Option(
        None, "--trace-out", help="write a per-request CSV, .csv (times of every stage)"
    ),
    progress: bool = progress_option(),
    schedule: bool = typer.Option(
        False,
        "--schedule",
        help="replay the plan `pdd-plan schedule` makes for the scenario's load curve, "
        "each period from its boundary (docs/load-curves.md)",
    ),
    lag_min: float = bounded(
        10.0,
        "--lag-min",
        low=0,
        high=1440,
        help="with --schedule: minutes an instance ordered at a boundary takes to serve",
    ),  # fmt: skip
    settle_min: float = bounded(
        5.0,
        "--settle-min",
        low=0.5,
        high=1440,
        help="with --schedule: minutes measured after the lag",
    ),  # fmt: skip
    order_ahead: bool = typer.Option(
        False, "--order-ahead", help="with --schedule: order a period's new instances a lag early"
    ),
) -> None:
    """Simulate a deployment request by request: the metrics of `evaluate`, with 95 %
    confidence intervals, from a seeded discrete-event run."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    if schedule or plan is None:
        from pdd_plan.cli.replay_cmd import replay

        replay(scenario, plan, schedule, lag_min, settle_min, order_ahead, seed, format)
        return
    from pdd_plan.model.deployment_json import plan_json
    from pdd_plan.report.streamed import streamed_text
    from pdd_plan.sim.entry import simulate_plan
    from pdd_plan.sim.trace_csv import write_trace_csv

    check_outputs([scenario, plan], {"--trace-out": trace_out}, formats={"--trace-out": CSV_ONLY})
    with bars(progress, format.structured) as shown:
        metrics, run = simulate_plan(scenario, plan, requests, seed, warmup_frac, progress=shown)
        if trace_out:  # streamed to a file beside the target, renamed when whole

            def write() -> None:
                with streamed_text(trace_out) as handle:
                    write_trace_csv(run, handle)

            step(shown, "writing the trace", write)
    result = {
        "scenario": run.setup.scenario.name,
        "status": "simulated",
        "plan": plan_json(run.setup.deployment),
        "metrics": metrics,
    }
    if format.structured:
        print_structured(result, format)
        return
    print_result(result)


def _with_ci(entry: dict) -> str:
    if entry is None or entry.get("value") is None:
        return "-"
    low, high = _seconds(entry["ci95_low"]), _seconds(entry["ci95_high"])
    return f"{_seconds(entry['value'])} [{low}, {high}]"


def print_result(result: dict) -> None:
    m, p = result["metrics"], result["plan"]
    sim = m["simulation"]
    console.print(
        f"[bold]{safe(result['scenario'])}[/]: {p['architecture']} plan simulated at "
        f"{m['offered_rps']:,.3g} req/s, {sim['measured_requests']:,} requests measured "
        f"(seed {sim['seed']}, warm-up {sim['warmup_frac']:.0%} left out)"
    )
    ci = m["confidence_intervals"]
    table(
        "Latency (95 % confidence intervals)",
        ["metric", "P50", "P90", "P99"],
        [
            ["TTFT"] + [_with_ci(ci["ttft_s"][q]) for q in ("p50", "p90", "p99")],
            ["TPOT"] + [_with_ci(ci["tpot_s"][q]) for q in ("p50", "p90", "p99")],
        ],
    )
    checks = ", ".join(
        f"{k} {_seconds(v['value'])} (limit {_seconds(v['limit'])}; "
        f"{v['attainment_frac']:.1%} of requests within)"
        for k, v in m["sla_checks"].items()
    )
    console.print(f"SLA {'met' if m['sla_met'] else '[red]not met[/]'}: {checks}")
    console.print(
        f"cost ${m['cost_usd_per_hour']:,.2f}/h; largest inter-token gap "
        f"{_seconds(m['max_inter_token_gap_s'])}"
    )
    wan = m["wan"]
    if wan["mean_gbit_per_s"]:
        console.print(
            f"WAN: {wan['mean_gbit_per_s']:,.3g} Gbit/s mean, line "
            f"{wan['utilization_frac']:.0%}, pool {wan['pool_utilization_frac']:.0%} "
            f"(mean wait {_seconds(wan['pool_mean_wait_s'])}), transfer P50 "
            f"{_seconds(wan['transfer_s']['p50'])} / P99 {_seconds(wan['transfer_s']['p99'])}"
        )
    if p["architecture"] == "pdd":
        console.print(f"RLD share of output tokens {m['rld_token_share_frac']:.1%}")
    util = ", ".join(f"{k} {v:.0%}" for k, v in m["role_utilization_frac"].items())
    console.print(f"utilisation: {util}; binding: {m['binding_role'] or '-'}")
    if m.get("engine_profile"):
        from pdd_plan.loaders.engine_profile import profile_line  # the models: not at --help

        console.print(profile_line(m["engine_profile"]), markup=False)
