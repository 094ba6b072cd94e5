"""The schedule in the sizing report (`pdd-plan report` on a scenario with a load curve):
a Markdown section (the cost, the saving, the schedule as a table) and its chart (the
offered rate and the cost per hour over the cycle; per role, the reserved, on-demand and
spot instances running against those needed)."""

from __future__ import annotations

from pdd_plan.report import plots
from pdd_plan.report.md_format import md_text
from pdd_plan.report.schedule_view import summary_lines

SECTION = "Over the load curve"
CLASSES = (("reserved", "#1f77b4"), ("on_demand", "#ff7f0e"), ("spot", "#2ca02c"))


def schedule_markdown(result: dict) -> str:
    """`## Over the load curve`: what is committed, the cost and saving, the table."""
    plan, rows = result["plan"], result["schedule"]
    roles = rows[0]["roles"]
    out = [f"## {SECTION}", ""]
    lines = ", ".join(f"{x['count']} x {x['tier']}" for x in plan["lines"]) or "none"
    out.append(
        f"`pdd-plan schedule` plans this scenario's {len(rows)} periods "
        f"({result['status']}): {plan['architecture']}, lines {lines}; "
        + "; ".join(f"{md_text(r['role'])} on {r['gpus_per_instance']} x {md_text(r['gpu'])} "
                    f"in {md_text(r['datacenter'])}, {r['reserved']} reserved" for r in roles)
        + "."
    )  # fmt: skip
    out += ["", *(f"- {md_text(line)}" for line in summary_lines(result)), ""]
    header = ["start", "req/s", *(md_text(r["role"]) for r in roles), "$/h", "TTFT P90",
              "TPOT P90", "SLA"]  # fmt: skip
    out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        start = row.get("start") or f"{row['start_h']:g} h"
        cells = [start, f"{row['arrival_rate_per_s']:g}"]
        cells += [f"{g['needed']} ({g['reserved']}+{g['on_demand']}"
                  + (f"+{g['spot']})" if g["spot"] else ")") for g in row["roles"]]  # fmt: skip
        ttft, tpot = row["ttft_s"]["p90"], row["tpot_s"]["p90"]
        cells += [f"{row['cost_usd_per_hour']:,.2f}",
                  "-" if ttft is None else f"{ttft:.3g} s",
                  "-" if tpot is None else f"{tpot * 1e3:.3g} ms",
                  "yes" if row["sla_met"] else "**no**"]  # fmt: skip
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "Instances: needed (reserved + on-demand [+ spot, headroom included]).", ""]
    return "\n".join(out)


def schedule_figure(result: dict):
    """Rate and $/h on top; below, one panel a role: stacked reserved / on-demand / spot
    instances per period, and the instances needed as a line."""
    rows = result["schedule"]
    roles = rows[0]["roles"]
    plt = plots._pyplot()
    fig, axes = plt.subplots(len(roles) + 1, 1, sharex=True, layout="constrained",
                             figsize=(6.4, 1.9 * (len(roles) + 1)))  # fmt: skip
    starts = [r["start_h"] for r in rows]
    widths = [r["duration_h"] for r in rows]
    top = axes[0]
    top.step(starts + [starts[-1] + widths[-1]],
             [r["arrival_rate_per_s"] for r in rows] + [rows[-1]["arrival_rate_per_s"]],
             where="post", color="black", label="offered req/s")  # fmt: skip
    top.set_ylabel("req/s")
    cost = top.twinx()
    cost.step(starts + [starts[-1] + widths[-1]],
              [r["cost_usd_per_hour"] for r in rows] + [rows[-1]["cost_usd_per_hour"]],
              where="post", color="#d62728", label="$/h")  # fmt: skip
    cost.set_ylabel("$/h", color="#d62728")
    top.set_title("Schedule over the load curve")
    for ax, role in zip(axes[1:], roles, strict=True):
        _role_panel(ax, rows, role["role"], starts, widths)
    axes[-1].set_xlabel("hours from the curve's start")
    return fig


def _role_panel(ax, rows, role: str, starts, widths) -> None:
    mine = [next(g for g in r["roles"] if g["role"] == role) for r in rows]
    bottom = [0] * len(rows)
    for key, color in CLASSES:
        counts = [g[key] for g in mine]
        if any(counts):
            ax.bar(starts, counts, width=widths, bottom=bottom, align="edge", color=color,
                   alpha=0.8, label=key.replace("_", "-"))  # fmt: skip
            bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    ax.step(starts + [starts[-1] + widths[-1]], [g["needed"] for g in mine] + [mine[-1]["needed"]],
            where="post", color="black", lw=1.2, label="needed")  # fmt: skip
    ax.set_ylabel(f"{role}\ninstances")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def schedule_svg(result: dict) -> str:
    return plots.render(schedule_figure(result), png=False)[0]
