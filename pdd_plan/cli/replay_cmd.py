"""`pdd-plan simulate SCENARIO --schedule`: the scenario's schedule replayed period by
period (stages/solving/schedule_replay.py), each period from its boundary with the
instances ordered there arriving `--lag-min` late."""

from __future__ import annotations

from rich.table import Table

from pdd_plan.cli.output import Format, console, print_structured
from pdd_plan.errors import InfeasibleError, InputError, UnprovenError


def replay(scenario, plan, schedule: bool, lag_min: float, settle_min: float, ahead: bool,
           seed: int, format: Format) -> None:  # fmt: skip
    if plan is not None:
        raise InputError.single(
            "command line", "--schedule", f"a plan file too ({plan})",
            "a plan file or --schedule (the scenario's own schedule), not both",
        )  # fmt: skip
    if not schedule:
        raise InputError.single(
            "command line", "PLAN", "nothing",
            "a plan file, or --schedule to replay the scenario's load-curve schedule",
        )  # fmt: skip
    from pdd_plan.stages.solving.schedule_replay import replay_schedule

    result = replay_schedule(scenario, lag_s=lag_min * 60, settle_s=settle_min * 60, seed=seed,
                             ahead=ahead)  # fmt: skip
    if "replay" not in result:
        if format.structured:
            print_structured(result, format)
        error = InfeasibleError if result["status"] == "infeasible" else UnprovenError
        raise error(result["reason"])
    if format.structured:
        print_structured(result, format)
        return
    print_replay(result)


def print_replay(result: dict) -> None:
    rp = result["replay"]
    rows = rp["periods"]
    when = "ordered a lag ahead" if rp["ordered_ahead"] else "ordered at the boundary"
    table = Table(
        title=f"Replay from each boundary: new instances {when}, {rp['lag_s'] / 60:g} min lag"
    )
    roles = list(rows[0]["counts_after"])
    for name in ("start", "req/s", *roles, "measured", "TTFT p90", "TPOT p90", "SLA"):
        table.add_column(name, justify="right")
    for row in rows:
        ttft, tpot = row["ttft_s"]["p90"], row["tpot_s"]["p90"]
        table.add_row(
            row.get("start") or f"{row['start_h']:g} h",
            f"{row['arrival_rate_per_s']:g}",
            *(f"{row['counts_before'][r]} -> {row['counts_after'][r]}" for r in roles),
            f"{row['requests']:,}",
            "-" if ttft is None else f"{ttft:.3g} s",
            "-" if tpot is None else f"{tpot * 1e3:.3g} ms",
            "yes" if row["sla_met"] else "NO",
        )
    console.print(table)
    missed = [r.get("start") or f"{r['start_h']:g} h" for r in rows if not r["sla_met"]]
    line = f"SLA met in {rp['sla_met_periods']} of {len(rows)} periods in the replay"
    if missed:
        line += f"; missed from {', '.join(missed)} (order ahead: --order-ahead)"
    if rp["ordered_ahead"]:
        line += f"; ordering ahead costs ${rp['order_ahead_usd_per_month']:,.0f}/month more"
    console.print(line, markup=False)
    console.print(
        f"each period measured from its boundary over the lag and {rp['settle_s'] / 60:g} min "
        f"more (seed {rp['seed']}); scale-down at the end of in-flight work; spot "
        "interruptions not replayed",
        markup=False,
    )
