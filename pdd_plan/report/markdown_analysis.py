"""The sizing report's analysis sections: explain (binding limits, what relaxing each is
worth, pruned candidates), other hit rates and prices, and the assumptions."""

from __future__ import annotations

from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.report import kv_layout_view
from pdd_plan.report.assumptions import ASSUMPTIONS
from pdd_plan.report.md_format import (
    composition,
    md_text,
    num,
    pct,
    rps,
    table,
    usd,
)


def explain_section(data: dict) -> list[str]:
    result = data["result"]
    m, solver = result["metrics"], result.get("solver") or {}
    util = sorted(m["role_utilization_frac"].items(), key=lambda kv: -kv[1])
    out = [
        f"- **Binds**: {m['binding_role'] or '-'}: the role with the highest utilisation at "
        "the offered rate, the first to run out as demand grows.",
        "- **Utilisations**: " + ", ".join(f"{k} {pct(v)}" for k, v in util) + ".",
        f"- **Headroom**: goodput {rps(m['goodput_rps'])} is "
        f"{num(m['goodput_rps'] / m['offered_rps'])}x the offered {rps(m['offered_rps'])}; "
        "instances and lines are bought whole, and the objective may buy room above the "
        "demand when it is cheap per request.",
    ]
    tried = solver.get("policies_tried") or []
    relays = data["architecture"] == "pdd"  # the threshold and handoff route to the relay
    if tried:
        out += ["", "Routing policies and utilisation caps tried:" if relays else
                "Utilisation caps tried (the relay's threshold and handoff apply to PDD only):",
                ""]  # fmt: skip
        out += table(
            ["hit-rate threshold", "handoff", "utilisation cap", "outcome"],
            [
                [f"{a['rld_hit_threshold']:g}" if relays else "-",
                 a["handoff"] if relays else "-", pct(a["utilization_cap_frac"]), a["outcome"]]
                for a in tried
            ],
        )  # fmt: skip
    pruned = solver.get("pruned_candidates") or []
    out += [""]
    if pruned:
        reasons: dict[str, list[str]] = {}
        for p in pruned:
            reasons.setdefault(p["reason"], []).append(p["candidate"])
        out += [f"Candidates pruned before the optimisation ({len(pruned)}):", ""]
        out += table(
            ["reason", "candidates (role_datacenter_GPU_xGPUs per instance)"],
            [[reason, ", ".join(f"`{c}`" for c in names)] for reason, names in reasons.items()],
        )
    else:
        out += ["No candidate was pruned."]
    out += [""]
    explanation = data.get("explanation")
    if isinstance(explanation, str) and explanation.strip():
        out += ["### From `pdd-plan explain`", "", explanation.rstrip()]
    elif isinstance(explanation, dict):
        out += ["### From `pdd-plan explain`", "", *_explain_dict(explanation)]
    else:
        out += [
            "What relaxing each binding constraint would be worth (one more GPU of a type, one "
            "more line, a looser SLA) is `pdd-plan explain`'s work, not available here."
        ]
    return out


def _objective_value(value, metric: str) -> str:
    if value is None:
        return "-"
    return f"{usd(value)}/h" if metric == "cost_usd_per_hour" else num(value, 4)


def _explain_dict(e: dict) -> list[str]:
    """`pdd_plan.plan.explain.explain`'s result: binding limits and relaxations."""
    constraints = e.get("constraints") or []
    binding = [c for c in constraints if c.get("binding")]
    out = [
        f"Limits of the winning MILP that bind ({len(binding)} of {len(constraints)}; the "
        "others have slack):",
        "",
    ]
    if binding:  # headroom 0: a capacity the MILP's linear estimate puts past its cap
        # (negative slack) binds as well; the verified plan carries it, so no minus sign
        out += table(
            ["constraint", "family", "headroom"],
            [[f"`{c['constraint']}`", c.get("family", ""),
              f"{num(max(c.get('slack') or 0.0, 0.0))} {c.get('unit', '')}".strip()]
             for c in binding],
        )  # fmt: skip
    else:
        out += ["None binds."]
    relaxations = e.get("relaxations") or []
    if relaxations:
        metric = relaxations[0].get("metric", "")
        out += ["", f"What relaxing each is worth, each re-solved and verified ({metric}):", ""]
        rows = []
        for r in relaxations:
            after = r.get("after") if r.get("status") == "optimal" else None
            cost = r.get("cost_change_usd_per_hour")
            rows.append(
                [
                    r.get("relaxation", r.get("constraint", "")),
                    _objective_value(r.get("before"), metric),
                    _objective_value(after, metric) if after is not None else r.get("status"),
                    "-" if r.get("change") is None else f"{r['change']:+.4g}",
                    "-" if cost is None else f"{'+' if cost >= 0 else '-'}{usd(abs(cost))}/h",
                    "; ".join(r.get("plan_changes") or []) or "no change",
                ]
            )
        out += table(
            ["relaxation", "before", "after", "change", "cost change", "plan changes"], rows
        )
    if e.get("milp", {}).get("reproduced") is False:
        out += [
            "",
            "Note: the rebuilt MILP gave a different plan of equal objective; slacks are "
            "those of the rebuilt one.",
        ]
    return out


def sensitivity_section(data: dict) -> list[str]:
    sens = data["sensitivity"]
    base = data["result"]
    base_cost = base["metrics"]["cost_usd_per_hour"]
    base_key = _plan_key(base["plan"])
    rows = [
        ["this plan", "-", base["status"], usd(base_cost),
         usd(base_cost * HOURS_PER_MONTH, False), num(base["metrics"]["goodput_rps"]),
         num(base["metrics"]["bcr_rps_per_usd_hour"], 4), "-", composition(base["plan"])]
    ]  # fmt: skip
    for case in sens["cases"]:
        m = case.get("metrics")
        if not m:
            rows.append([case["case"], case["change"], case["status"], "-", "-", "-", "-", "-",
                         md_text(case.get("reason", "no plan meets the SLA"))])  # fmt: skip
            continue
        cost = m["cost_usd_per_hour"]
        same = _plan_key(case["plan"]) == base_key
        rows.append(
            [
                case["case"],
                case["change"],
                case["status"],
                usd(cost),
                usd(cost * HOURS_PER_MONTH, False),
                num(m["goodput_rps"]),
                num(m["bcr_rps_per_usd_hour"], 4),
                f"{(cost / base_cost - 1) * 100:+.1f} %" if base_cost else "-",
                "same plan" if same else composition(case["plan"]),
            ]
        )
    out = [
        "The scenario solved again with one thing changed; the plan column shows what would "
        'be bought instead ("same plan": nothing changes, only its price).',
        "",
        f"Hit rates: {sens['hit_rate_rule']}",
        "",
    ]
    out += table(
        ["case", "change", "status", "$/h", "$/month", "goodput req/s", "BCR",
         "cost vs this plan", "plan"],
        rows,
    )  # fmt: skip
    return out + _kv_layout_lines(sens.get("kv_layout"))


def _kv_layout_lines(verdict: dict | None) -> list[str]:
    """How the architecture verdict moves across the decode KV layout (kv_verdict.py)."""
    if not verdict:
        return []
    out = ["", f"Decode KV layout: {verdict['rule']}", ""]
    out += table(kv_layout_view.headers(verdict), kv_layout_view.rows(verdict))
    return [*out, "", *(f"- {line}" for line in kv_layout_view.sentences(verdict))]


def _plan_key(plan: dict | None):
    if not plan:
        return None
    return (
        tuple(sorted(tuple(sorted(g.items())) for g in plan["instances"])),
        tuple(sorted((line["tier"], line["count"]) for line in plan["lines"])),
        tuple(sorted(plan["policy"].items())),
    )


def assumptions_section(rows=None) -> list[str]:
    """The assumptions that apply to the plan (`assumption_scope.applicable`; all when
    `rows` is None)."""
    rows = ASSUMPTIONS if rows is None else rows
    left_out = len(ASSUMPTIONS) - len(rows)
    note = (f" ({left_out} more, about models, architectures or mechanisms this plan does not "
            "use, or about the optimiser's internals that change no answer, are in the docs' "
            "assumptions table, docs/assumptions.md)" if left_out else "")  # fmt: skip
    return [
        "Each assumption of the models and the optimiser that applies to this plan, with the "
        f"direction it biases the figures above{note}:",
        "",
        *table(["assumption", "bias"], [list(a) for a in rows]),
    ]
