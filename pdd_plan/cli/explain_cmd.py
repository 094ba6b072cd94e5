"""`pdd-plan explain [SCENARIO]`: why the best plan is what it is, and what relaxing each
binding limit would be worth."""

from __future__ import annotations

from collections import defaultdict

import typer
from rich.text import Text

from pdd_plan.cli.bounds import time_limit_option
from pdd_plan.cli.output import (
    FORMAT_HELP,
    Format,
    check_architecture,
    console,
    print_structured,
    safe,
    table,
)
from pdd_plan.cli.prices_opt import prices_option, use_prices

MAX_EXAMPLES = 3  # pruned candidates named per reason in the table


def explain(
    scenario: str = typer.Argument(None, help="a scenario file or shipped name (default: default)"),
    architecture: str = typer.Option(
        None,
        "--architecture",
        help="pdd, cdc_pd, idc_pd or colocated (default: the one `solve` recommends)",
    ),
    time_limit: float = time_limit_option(),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the scenario's)"
    ),
    prices: str | None = prices_option(),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:
    """Binding constraints, what relaxing each is worth, pruned candidates, binding role."""
    from pdd_plan.loaders.engine_profile import use_engine_profile

    use_engine_profile(engine_profile)  # checked first; every scenario loaded takes it
    use_prices(prices)  # checked first too; every scenario loaded takes its quotes
    from pdd_plan.api import explain_scenario

    if architecture is not None:  # else the one `solve` recommends
        check_architecture(architecture)
    result = explain_scenario(scenario, architecture, time_limit_s=time_limit)
    if format.structured:
        print_structured(result, format)
        return
    print_explanation(result)


def _headroom(c: dict) -> str:
    """What is left before the limit: a binding limit reads 0. A capacity the MILP's
    linear estimate puts past its cap (negative slack) binds too: the verified plan
    carries it (`evaluate`), so no minus sign suggests a violation."""
    if c["binding"] or c["slack"] <= 0:
        return "0"
    return _amount(c["slack"], c["unit"])


def _limit(c: dict) -> str:
    """The right-hand side: the demand a capacity must carry, or the limit."""
    if c.get("limit") is None:
        return "-"
    amount = _amount(c["limit"], c["unit"])
    return f"needs {amount}" if c.get("cover") else amount


def _amount(value, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "$/h":
        return f"${value:,.2f}/h"
    return f"{value:,.3g} {unit}"


def _objective(value, metric: str) -> str:
    if value is None:
        return "-"
    if metric == "cost_usd_per_hour":
        return f"${value:,.2f}/h"
    return f"{value:,.4g}"


def print_explanation(result: dict) -> None:
    from pdd_plan.loaders.engine_profile import profile_line

    obj = result["objective"]
    if "engine_profile" in result:
        console.print(profile_line(result["engine_profile"]), markup=False)
    if result.get("architecture_choice"):
        console.print(
            f"explaining {result['architecture']}, the architecture `solve` recommends "
            "(`--architecture` explains another)",
            markup=False,
        )
    console.print(
        f"[bold]{safe(result['scenario'])}[/]: {result['architecture']} plan, objective "
        f"{obj['kind']} ({obj['metric']} {_objective(obj['value'], obj['metric'])}); sized "
        f"for {result['milp']['rate_rps']:.3g} req/s"
    )
    table(
        f"Limits of the MILP at the plan (capacities at utilisation cap "
        f"{result['milp']['utilization_cap_frac']:.2f})",
        ["constraint", "family", "headroom", "limit", "binds"],
        [
            [
                c["constraint"],
                c["family"],
                _headroom(c),
                _limit(c),
                Text("yes", style="bold") if c["binding"] else "no",
            ]
            for c in result["constraints"]
        ],  # fmt: skip
    )
    rows = []
    for r in result["relaxations"]:
        after = r["after"] if r["status"] == "optimal" else None
        change = "-" if r["change"] is None else f"{r['change']:+,.4g}"
        rows.append(
            [
                r["relaxation"],
                _objective(r["before"], r["metric"]),
                _objective(after, r["metric"]) if after is not None else r["status"],
                change,
                "; ".join(r["plan_changes"]) or "no change",
            ]
        )
    table(
        f"What relaxing each binding limit is worth (re-solved; {obj['metric']})",
        ["relaxation", "before", "after", "change", "plan changes"],
        rows,
    )
    response = result.get("cache_response")
    if response:
        console.print(f"Decode-side cache: {response['sentence']}", markup=False)
    roles = result["roles"]
    table(
        f"Utilisation of the verified plan (binding: {roles['binding_role']})",
        ["role", "utilisation"],
        [[role, f"{u:.1%}"] for role, u in roles["utilization_frac"].items() if u is not None],
    )
    if roles.get("decode_split"):  # a mixed decode role (model/decode/mixed_pool.py)
        table(
            "How the router splits the mixed decode role (by capacity at the TPOT batch)",
            ["group", "share", "batch/instance", "utilisation", "slot wait"],
            [_split_row(g) for g in roles["decode_split"]],
        )
    _print_kv_layouts(result.get("kv_layout_sensitivity"))
    by_reason = defaultdict(list)
    for c in result["pruned_candidates"]:
        by_reason[c["reason"]].append(c["candidate"])
    if by_reason:
        table(
            f"Pruned candidates ({len(result['pruned_candidates'])})",
            ["reason", "candidates", "for example"],
            [
                [
                    reason,
                    len(keys),
                    ", ".join(keys[:MAX_EXAMPLES]) + (", ..." if len(keys) > MAX_EXAMPLES else ""),
                ]
                for reason, keys in by_reason.items()
            ],  # fmt: skip
            caption="`--format json` lists every pruned candidate",
        )


def _print_kv_layouts(verdict: dict | None) -> None:
    """How the architecture verdict moves across the decode KV layout (kv_verdict.py)."""
    if not verdict:
        return
    from pdd_plan.report import kv_layout_view as view

    table("Architecture verdict across the decode KV layout (a sensitivity: each solved again)",
          view.headers(verdict), view.rows(verdict))  # fmt: skip
    for line in view.sentences(verdict):
        console.print(line, markup=False)


def _split_row(g: dict) -> list[str]:
    nan = float("nan")
    return [
        f"{g['count']} x {g['gpus_per_instance']} {g['gpu']}",
        f"{g['share_frac']:.1%}",
        f"{g.get('batch', nan):.1f}",
        f"{g.get('utilization_frac', nan):.1%}",
        f"{g.get('slot_wait_s', nan):.3g} s",
    ]
