"""`pdd-plan compare SCENARIO`: colocated, IDC-PD, CDC-PD and PDD side by side."""

from __future__ import annotations

from collections import Counter

import typer

from pdd_plan.cli.bounds import time_limit_option
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, table
from pdd_plan.cli.prices_opt import prices_option, use_prices
from pdd_plan.report.md_format import ARCH_NAMES


def _gpus(plan: dict) -> str:
    counts = Counter()
    for g in plan["instances"]:
        counts[g["gpu"]] += g["gpus_per_instance"] * g["count"]
    return ", ".join(f"{n} {gpu}" for gpu, n in counts.items())


def compare(
    scenario: str = typer.Argument(None, help="a scenario file or shipped name"),
    time_limit: float = time_limit_option(),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    prices: str | None = prices_option(),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Optimise every architecture on the same scenario and print them side by side."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    use_prices(prices)  # checked first too; every scenario loaded takes its quotes
    from pdd_plan.api import compare_architectures

    result = compare_architectures(scenario, time_limit_s=time_limit)
    if format.structured:
        print_structured(result, format)
    else:
        _print_table(result)
    _refuse_if_none_has_a_plan(result)


def _refuse_if_none_has_a_plan(result: dict) -> None:
    """Exit as `solve` does when no architecture has a plan (after the table or JSON that
    shows each one's status): 3 when every one is proven infeasible, 5 when a search
    stopped first (not proven); never 0 for a comparison with nothing to compare."""
    from pdd_plan.errors import InfeasibleError, UnprovenError

    entries = result["architectures"]
    if not entries or any(r.get("metrics") for r in entries):
        return
    each = "; ".join(
        f"{ARCH_NAMES.get(r['architecture'], r['architecture'])}: "
        f"{r.get('reason') or r.get('status', 'no plan')}"
        for r in entries
    )
    unproven = any(r.get("status") == "unproven" for r in entries)
    error = UnprovenError if unproven else InfeasibleError
    raise error(f"no architecture the scenario allows has a plan: {each}")


def _print_table(result: dict) -> None:
    by_arch = {r["architecture"]: r for r in result["architectures"]}
    base = by_arch.get("idc_pd", {}).get("metrics") or {}
    rows = []
    for arch, r in by_arch.items():
        m = r.get("metrics")
        if not m:
            status = r.get("status", "infeasible")  # or unproven: stopped before a proof
            rows.append([ARCH_NAMES[arch], status, "-", "-", "-", "-", "-", "-", "-", "-"])
            continue
        ratio = (
            m["bcr_rps_per_usd_hour"] / base["bcr_rps_per_usd_hour"]
            if base.get("bcr_rps_per_usd_hour")
            else None
        )
        ttft = m["ttft_s"]
        rows.append(
            [
                ARCH_NAMES[arch],
                f"{m['cost_usd_per_hour']:,.2f}",
                f"{m['goodput_rps']:.3g}",
                f"{m['bcr_rps_per_usd_hour']:.4g}",
                "-" if ratio is None else f"{ratio:.3f}",
                " / ".join(f"{ttft[q]:.3g}" for q in ("p50", "p90", "p99")),
                f"{m['tpot_s']['p90'] * 1e3:.3g}",
                f"{m['wan']['mean_gbit_per_s']:.3g} ({m['wan']['utilization_frac']:.0%})",
                f"{m['rld_token_share_frac']:.1%}",
                _gpus(r["plan"]),
            ]
        )
    table(
        f"{result['scenario']}: each architecture optimised alone",
        [
            "architecture",
            "$/h",
            "goodput req/s",
            "BCR",
            "BCR / IDC-PD",
            "TTFT P50/P90/P99 s",
            "TPOT P90 ms",
            "WAN Gbit/s (line)",
            "RLD share",
            "GPUs",
        ],
        rows,
    )
    named = [r["solver"]["engine_profile"] for r in result["architectures"] if r.get("solver")]
    if named:
        from pdd_plan.loaders.engine_profile import profile_line  # the models: not at --help

        console.print(profile_line(named[0]), markup=False)
    if result.get("architecture_choice"):  # the verdict, as `solve` recommends
        from pdd_plan.report.choice_text import recommendation

        console.print(recommendation(result["architecture_choice"]), markup=False)
