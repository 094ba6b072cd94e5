"""`pdd-plan evaluate SCENARIO PLAN.yaml`: the metrics of one deployment."""

from __future__ import annotations

import typer

from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.cli.prices_opt import prices_option, use_prices


def _seconds(value) -> str:
    return "-" if value is None else f"{value:,.3g} s" if value >= 0.1 else f"{value * 1e3:,.3g} ms"


def evaluate(
    scenario: str = typer.Argument(..., help="a scenario file or shipped name"),
    plan: str = typer.Argument(..., help="a plan file (YAML with the `plan` keys)"),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    prices: str | None = prices_option(),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Predict TTFT/TPOT percentiles, goodput, cost and BCR of a given deployment."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    use_prices(prices)  # checked first too; every scenario loaded takes its quotes
    from pdd_plan.api import evaluate_plan  # the models load only for commands that need them

    result = evaluate_plan(scenario, plan)
    if not result["metrics"]["role_utilization_frac"]:  # saturated: say where and how much
        from pdd_plan.stages.solving.saturation import saturation_of_files

        result["saturation"] = saturation_of_files(scenario, plan,
                                                   result["metrics"]["goodput_rps"])  # fmt: skip
    if format.structured:
        print_structured(result, format)
        return
    print_result(result, verdict_first=True)


def verdict(result: dict) -> str:
    """One line: saturated (where, by how much), SLA missed (which limit) or met (#14)."""
    m, carried = result["metrics"], f"{result['metrics']['goodput_rps']:,.3g} req/s"
    offered = f"{m['offered_rps']:,.3g} req/s"
    if result.get("saturation"):
        first = result["saturation"]["first"].replace(" is saturated: ", ": ", 1)
        return (f"[red]SATURATED[/]: {safe(first)} at the offered {offered}; the plan carries "
                f"{carried} within the SLA")  # fmt: skip
    if not m["sla_met"]:
        missed = [f"{k} {_seconds(v['value'])} > limit {_seconds(v['limit'])}"
                  for k, v in m["sla_checks"].items() if v["value"] > v["limit"]]  # fmt: skip
        return (f"[red]SLA missed[/]: {', '.join(missed) or 'saturated'} at {offered}; the plan "
                f"carries {carried} within the SLA")  # fmt: skip
    checks = ", ".join(f"{k} {_seconds(v['value'])} (limit {_seconds(v['limit'])})"
                       for k, v in m["sla_checks"].items())  # fmt: skip
    return f"SLA met: {checks}"


def _instances_table(p: dict) -> None:
    table(
        "Instances",
        ["role", "datacenter", "GPU", "GPUs/instance", "count"],
        [
            [g["role"], g["datacenter"], g["gpu"], g["gpus_per_instance"], g["count"]]
            for g in p["instances"]
        ],
    )
    if p["lines"]:  # a line is not an instance: its own columns, capacity in its unit
        table(
            "Lines",
            ["tier", "Gbit/s each", "count"],
            [[x["tier"], f"{x['capacity_gbit_per_s']:g}", x["count"]] for x in p["lines"]],
        )
    cache = p.get("decode_cache")
    if cache:  # the decode-side cache tier the plan buys for its main decode (#12)
        size = (f"{cache['tb']:g} TB of {cache['tier']} for the main-decode instances "
                f"(${cache['price_usd_per_tb_month']:,.2f}/TB-month)")  # fmt: skip
        console.print("decode-side cache: " + (size if cache["tb"] else "none"))


def _latency_table(m: dict) -> None:
    gap = m.get("largest_gap_s") or {}
    rows = [
        ["TTFT"] + [_seconds(m["ttft_s"][q]) for q in ("p50", "p90", "p99")],
        ["TPOT"] + [_seconds(m["tpot_s"][q]) for q in ("p50", "p90", "p99")],
    ]
    if gap:  # a request's longest wait between two tokens (handoff stalls show here)
        rows.append(["largest gap"] + [_seconds(gap.get(q)) for q in ("p50", "p90", "p99")])
    table("Latency", ["metric", "P50", "P90", "P99"], rows)
    if m.get("max_inter_token_gap_s") is not None:
        console.print(f"largest inter-token gap: {_seconds(m['max_inter_token_gap_s'])}")


def _utilisation_line(result: dict) -> str:
    m, sat = result["metrics"], result.get("saturation")
    if sat and sat["role_load_frac"]:
        loads = ", ".join(f"{k} {v:,.0%}" for k, v in sat["role_load_frac"].items())
        return (f"load at the offered {m['offered_rps']:,.3g} req/s (utilisation at "
                f"{sat['reference_rps']:,.3g} req/s scaled by the rate): {loads}")  # fmt: skip
    util = ", ".join(f"{k} {v:.0%}" for k, v in m["role_utilization_frac"].items())
    return f"utilisation: {util or '-'}; binding: {m['binding_role'] or '-'}"


def print_result(result: dict, verdict_first: bool = False) -> None:
    """The plan and its metrics as tables and a few lines (evaluate and solve);
    `verdict_first` (evaluate) leads with the verdict instead of the SLA line."""
    m, p = result["metrics"], result["plan"]
    if verdict_first:
        console.print(verdict(result))
    console.print(
        f"[bold]{safe(result['scenario'])}[/]: {p['architecture']} plan, offered "
        f"{m['offered_rps']:,.3g} req/s"
    )
    _instances_table(p)
    _latency_table(m)
    if not verdict_first:
        checks = (
            ", ".join(
                f"{k} {_seconds(v['value'])} (limit {_seconds(v['limit'])})"
                for k, v in m["sla_checks"].items()
            )
            or "saturated at the offered rate"
        )
        console.print(f"SLA {'met' if m['sla_met'] else '[red]not met[/]'}: {checks}")
    console.print(
        f"goodput {m['goodput_rps']:,.3g} req/s; cost ${m['cost_usd_per_hour']:,.2f}/h; "
        f"BCR {m['bcr_rps_per_usd_hour']:,.4g} req/s per $/h; "
        f"${m['usd_per_million_output_tokens'] or 0:,.2f} per million output tokens"
    )
    wan = m["wan"]
    if wan["mean_gbit_per_s"]:
        console.print(
            f"WAN: {wan['mean_gbit_per_s']:,.3g} Gbit/s mean, line "
            f"{wan['utilization_frac']:.0%}, pool {wan['pool_utilization_frac']:.0%}, "
            f"transfer P50 {_seconds(wan['transfer_s']['p50'])} / P99 "
            f"{_seconds(wan['transfer_s']['p99'])}"
        )
    if p["architecture"] == "pdd":
        console.print(f"RLD share of output tokens {m['rld_token_share_frac']:.1%}")
    for warning in m["warnings"]:
        console.print(f"[yellow]warning[/]: {safe(warning)}")
    console.print(_utilisation_line(result))
    if m.get("engine_profile"):
        from pdd_plan.loaders.engine_profile import profile_line  # the models: not at --help

        console.print(profile_line(m["engine_profile"]), markup=False)
