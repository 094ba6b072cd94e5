"""`schedule`'s answer as people read it: the hourly schedule as CSV (one row a period),
and the summary lines the command prints (the saving against sizing for the peak first)."""

from __future__ import annotations

import csv
import io

from pdd_plan.report.bom import spreadsheet_safe

PERCENTILES = ("p50", "p90", "p99")


def schedule_csv(result: dict) -> str:
    """period, start, length, rate, per role needed/reserved/on_demand/spot, $/h, TTFT and
    TPOT percentiles, SLA met."""
    rows = result["schedule"]
    roles = [r["role"] for r in rows[0]["roles"]]
    header = ["period", "start_h", "start_utc", "duration_h", "arrival_rate_per_s"]
    for role in roles:
        header += [f"{role}_{k}" for k in ("needed", "reserved", "on_demand", "spot")]
    header += ["cost_usd_per_hour"]
    header += [f"ttft_{p}_s" for p in PERCENTILES] + [f"tpot_{p}_ms" for p in PERCENTILES]
    header += ["sla_met"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        cells = [row["period"], _num(row["start_h"]), row.get("start", ""),
                 _num(row["duration_h"]), _num(row["arrival_rate_per_s"])]  # fmt: skip
        for r in row["roles"]:
            cells += [r["needed"], r["reserved"], r["on_demand"], r["spot"]]
        cells.append(f"{row['cost_usd_per_hour']:.2f}")
        cells += [_num(row["ttft_s"][p]) for p in PERCENTILES]
        cells += [_num(None if row["tpot_s"][p] is None else row["tpot_s"][p] * 1e3)
                  for p in PERCENTILES]  # fmt: skip
        cells.append(str(row["sla_met"]).lower())
        writer.writerow([spreadsheet_safe(c) for c in cells])
    return out.getvalue()


def _num(value) -> str:
    if value is None:
        return ""
    return f"{value:.6g}"


def summary_lines(result: dict) -> list[str]:
    """What `schedule` prints after its table: the cost, its split, the saving."""
    cost, base = result["cost"], result["baseline"]
    split = cost["split_per_month_usd"]
    lines = [
        f"expected cost ${cost['per_month_usd']:,.0f}/month (${cost['mean_usd_per_hour']:,.2f}/h "
        f"over the {cost['cycle_hours']:g} h cycle): reserved ${split['reserved']:,.0f}, "
        f"on-demand ${split['on_demand']:,.0f}, spot ${split['spot']:,.0f}, lines and cache "
        f"${split['committed_lines_and_cache']:,.0f}"
    ]
    if base.get("plan") is None:
        lines.append(f"sizing for the peak: not compared ({base.get('reason', '')})")
        return lines
    saved, frac, month = (base[k] for k in ("savings_per_month_usd", "savings_frac",
                                            "per_month_usd"))  # fmt: skip
    lines.append(
        f"against sizing for the peak ({base['peak_rate_per_s']:g} req/s, the single-rate "
        f"plan every hour): ${saved['all_reserved']:,.0f}/month less ({frac['all_reserved']:.0%})"
        f" than it all reserved (${month['all_reserved']:,.0f}), ${saved['all_on_demand']:,.0f}"
        f" less ({frac['all_on_demand']:.0%}) than it on demand (${month['all_on_demand']:,.0f})"
    )
    met = sum(1 for row in result["schedule"] if row["sla_met"])
    lines.append(f"SLA met in {met} of {len(result['schedule'])} periods (closed form)")
    return lines
