"""The sizing report: Markdown a procurement team can act on.

Formatting only. Every figure comes from the dicts `pdd_plan.api.sizing_report_data`
returns (the `solve` result in the shape of design.md §7, the `compare` result, the
sensitivity cases, the scenario summary, the bill of materials of `report/bom_items.py`)
or from the Scenario itself (prices, roles).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pdd_plan.loaders.engine_profile import profile_line
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.report.bom_items import HOURS_PER_YEAR, line_ends
from pdd_plan.report.choice_text import capped_note, recommendation
from pdd_plan.report.markdown_analysis import (
    assumptions_section,
    explain_section,
    sensitivity_section,
)
from pdd_plan.report.markdown_bom import bom_section, cost_table, header_line, order_line
from pdd_plan.report.md_format import (
    ARCH_NAMES,
    QUANTILES,
    composition,
    dur,
    md_code,
    md_text,
    num,
    pct,
    percentile_name,
    rps,
    table,
    tokens,
    usd,
)

SECTIONS = (
    "Summary",
    "1. Scenario",
    "2. The plan",
    "3. What each role carries",
    "4. SLA check",
    "5. Architectures compared",
    "6. Explain",
    "7. Other hit rates and prices",
    "8. Assumptions and the direction of their bias",
    "9. Bill of materials",
)

# --- sections ------------------------------------------------------------------------


def _summary(s: Scenario, data: dict) -> list[str]:
    result, summary = data["result"], data["summary"]
    plan, m = result["plan"], result["metrics"]
    gpus = Counter()
    for g in plan["instances"]:
        gpus[(g["datacenter"], g["gpu"])] += g["gpus_per_instance"] * g["count"]
    buy = [f"{n:,} x {gpu} in {dc}" for (dc, gpu), n in gpus.items()]
    ends = " and ".join(line_ends(plan, s))  # the two the line joins, as the BOM says
    buy += [
        f"{line['count']} x {line['tier']} line ({num(line['capacity_gbit_per_s'])} Gbit/s) "
        f"between {ends}"
        for line in plan["lines"]
    ]
    cost = m["cost_usd_per_hour"]
    offered = m["offered_rps"]
    checks = "; ".join(
        f"{percentile_name(k)} {dur(v['value'])} against {dur(v['limit'])}"
        for k, v in m["sla_checks"].items()
    )
    util = m["role_utilization_frac"]
    binding = m["binding_role"]
    return [
        f"- **Architecture**: {_architecture(result)}",
        f"- **Rent**: {'; '.join(buy)}.",
        f"- **Cost**: {usd(cost)}/h = {usd(cost * HOURS_PER_MONTH, False)}/month = "
        f"{usd(cost * HOURS_PER_YEAR, False)}/year.",
        *([order_line(data["bom"])] if data.get("bom") else []),
        f"- **Serves**: {rps(m['goodput_rps'])} within the SLA (goodput), against "
        f"{rps(offered)} offered ({num(m['goodput_rps'] / offered)}x); BCR "
        f"{num(m['bcr_rps_per_usd_hour'], 4)} req/s per $/h; "
        f"{usd(m['usd_per_million_output_tokens'])} per million output tokens.",
        f"- **SLA**: {'met' if m['sla_met'] else 'NOT met'} at the offered rate ({checks}).",
        f"- **Binding role**: {binding or '-'}"
        + (f" at {pct(util[binding])} utilisation." if binding else "."),
        f"- **Model**: {summary['model']}, {summary['kv_bytes_per_token']:,.0f} "
        f"bytes of KV per token ({summary['kv_dtype']}).",
    ]


def _architecture(result: dict) -> str:
    """Which architecture, and why: solve's choice, or the one asked for."""
    choice = result.get("architecture_choice")
    name = ARCH_NAMES.get(result["plan"]["architecture"], result["plan"]["architecture"])
    if not choice:
        return f"{name}, as asked (`--architecture`); section 5 compares the others."
    text = recommendation(choice).removeprefix("recommended: ").removeprefix(name + ", ")
    note = capped_note(choice, (result.get("metrics") or {}).get("offered_rps"))
    if not note:
        return f"**{name}** recommended: {md_text(text)}"
    # the ratio's own basis beside it: the table of section 5 counts all the goodput
    ratio, sep, why = text.partition(". Why: ")
    return f"**{name}** recommended: {md_text(ratio)} ({note}){md_text(sep + why)}"


def _scenario(s: Scenario, data: dict) -> list[str]:
    sm = data["summary"]
    sla = "; ".join(
        [f"TTFT {k.upper()} <= {dur(v)}" for k, v in sm["sla"]["ttft_s"].items()]
        + [f"TPOT {k.upper()} <= {dur(v)}" for k, v in sm["sla"]["tpot_s"].items()]
    )
    alternatives = ", ".join(
        f"{name} (mean {num(mean)})" for name, mean in sm["hit_rate_alternatives"].items()
    )
    rows = [
        ["model", f"{sm['model']}, KV cache {sm['kv_dtype']}"],
        ["KV bytes per token", f"{sm['kv_bytes_per_token']:,.0f} B (long-context limit)"],
        ["decode-side KV layout", md_text(sm["decode_kv_layout"])],
        ["demand", f"{rps(sm['arrival_rate_per_s'])} offered, burstiness (cv²) "
                   f"{num(sm['burstiness_cv2'])}"],
        ["input length", f"mean {tokens(sm['mean_input_tokens'])} tokens "
                         f"({sm['input_tokens_kind']})"],
        ["output length", f"mean {tokens(sm['mean_output_tokens'])} tokens "
                          f"({sm['output_tokens_kind']})"],
        ["prefix-hit rate", f"mean {num(sm['mean_prefix_hit_rate'])} "
                            f"({sm['prefix_hit_rate_kind']})"
                            + (f"; alternatives: {alternatives}" if alternatives else "")],
        ["SLA", sla],
        ["objective", sm["objective"]],
        ["architectures compared", ", ".join(ARCH_NAMES.get(a, a) for a in sm["architectures"])],
    ]  # fmt: skip
    source = f" (file {md_code(Path(sm['file']).name)})" if sm["file"] else ""
    out = [f"Scenario {md_code(sm['name'])}{source}.", ""]
    out += table(["item", "value"], rows)
    out += ["", "Datacenters, the GPUs they offer and their prices:", ""]
    dc_rows = []
    for dc in sm["datacenters"]:
        for offer in dc["gpus"]:
            available = offer["max_gpus"]
            dc_rows.append(
                [
                    dc["id"],
                    ", ".join(dc["roles"]),
                    offer["gpu"],
                    usd(offer["price_usd_per_gpu_hour"]),
                    "no limit" if available is None else f"{available:,}",
                ]
            )
    out += table(["datacenter", "roles", "GPU", "price $/GPU-hour", "GPUs available"], dc_rows)
    wan = sm["wan"]
    if len(sm["datacenters"]) > 1:
        out += [
            "",
            f"WAN: RTT {num(wan['rtt_ms'])} ms, {num(wan['per_connection_gbit_per_s'])} "
            f"Gbit/s per TCP connection, a pool of {wan['connection_pool_size']} connections. "
            "Line tiers that may be leased:",
            "",
        ]
        out += table(
            ["tier", "capacity Gbit/s", "price $/month"],
            [
                [t, num(sm["line_capacity_gbit_per_s"][t]), usd(price, False)]
                for t, price in sm["line_prices_usd_per_month"].items()
            ],
        )
    return out


def _plan(s: Scenario, data: dict) -> list[str]:
    plan = data["result"]["plan"]
    out = cost_table(data["bom"])
    p = plan["policy"]
    out += [""]
    if plan["architecture"] == "pdd":
        out += [
            f"Routing policy: a request whose KV missing on MD (MD's decode-side cache, not "
            f"P's) is at most what a mean-length prompt at a {p['rld_hit_threshold']:g} hit "
            f"rate would ship goes P -> MD over the line; the others go P -> RLD (RDMA) "
            f"and P -> MD (WAN) at once, RLD decoding until MD holds the KV, then a "
            f"`{p['handoff']}` handoff; short-output cut-off "
            + (
                "on (a request whose uncached input per output token takes longer to ship on "
                "one connection than its whole output takes to decode finishes on RLD and "
                "ships nothing; its conversation's next turn misses on MD)."
                if p["short_output_cutoff"]
                else "off."
            ),
        ]
    else:
        out += [f"Architecture {ARCH_NAMES.get(plan['architecture'], plan['architecture'])}."]
    out += [
        "",
        "The bill of materials (`--bom`, `bom.csv` in `--out`) has the same rows with annual "
        f"costs, their sources, the nodes to order and the one-time and purchase costs "
        f"(section 9); a month is {HOURS_PER_MONTH:g} h.",
    ]
    return out


def _arithmetic(data: dict) -> list[str]:
    result = data["result"]
    m, roles = result["metrics"], result.get("role_arithmetic")
    out = [f"At the offered {rps(m['offered_rps'])}, as `evaluate` computes it:", ""]
    if not roles:
        return out + ["A queue saturates at the offered rate: no per-role figures."]
    prefill = [r for r in roles if r["stage"] == "prefill"]
    decode = [r for r in roles if r["stage"] == "decode"]
    out += table(
        ["prefill role", "instances", "requests/s", "input tokens (cached / uncached)",
         "prefill time per request", "queue wait (mean)", "one instance carries",
         "busy time"],
        [[r["role"], f"{r['instances']} x {r['gpus_per_instance']} {r['gpu']}",
          num(r["requests_per_s"]),
          f"{tokens(r['mean_input_tokens'])} ({tokens(r['mean_cached_input_tokens'])} / "
          f"{tokens(r['mean_uncached_input_tokens'])})",
          dur(r["mean_prefill_s"]), dur(r["mean_queue_wait_s"]),
          rps(r["instance_capacity_rps"]), pct(r["utilization_frac"])]
         for r in prefill],
    )  # fmt: skip
    out += [""]
    out += table(
        ["decode role", "instances", "requests/s", "tokens per request", "tokens/s",
         "mean context tokens", "batch per instance", "batch that fits HBM",
         "batch at the TPOT limit", "step time", "HBM batch fill"],
        [[r["role"], f"{r['instances']} x {r['gpus_per_instance']} {r['gpu']}",
          num(r["requests_per_s"]), num(r["tokens_per_request"]), num(r["tokens_per_s"]),
          tokens(r["mean_context_tokens"]), num(r["batch_per_instance"]),
          f"{r['max_batch_hbm']:,}", f"{r['tpot_batch_limit']:,}",
          dur(r["step_s"]) + (f" ({dur(r['effective_step_s'])} with prefill)"
                               if "effective_step_s" in r else ""),
          pct(r["utilization_frac"], 1)]
         for r in decode],
    )  # fmt: skip
    out += [
        "",
        "Prefill utilisation is busy time (requests/s x prefill time / instances); decode "
        "utilisation is the batch over the batch that fits HBM; a decode step serves one token "
        "of every request in the batch, so the step time is the TPOT of a request decoded there.",
    ]
    wan = m["wan"]
    if wan["mean_gbit_per_s"]:
        out += [
            "",
            f"WAN line: {num(wan['mean_gbit_per_s'])} Gbit/s of KV on average, "
            f"{pct(wan['utilization_frac'])} of the leased capacity; connection pool "
            f"{pct(wan['pool_utilization_frac'])} busy; KV transfer (wait included) P50 "
            f"{dur(wan['transfer_s']['p50'])}, P99 {dur(wan['transfer_s']['p99'])}.",
        ]
    if result["plan"]["architecture"] == "pdd":
        out += ["", f"Relay decode emits {pct(m['rld_token_share_frac'], 1)} of output tokens."]
    solver = result.get("solver") or {}
    if solver.get("sized_rate_rps"):
        out += [
            "",
            f"The optimiser sized the plan for {rps(solver['sized_rate_rps'])} (objective "
            f"`{solver['objective']}`) and verified it with `evaluate` at that rate.",
        ]
    return out


def _sla(data: dict) -> list[str]:
    m = data["result"]["metrics"]
    rows = [
        [percentile_name(k), dur(v["limit"]), dur(v["value"]),
         "yes" if v["value"] <= v["limit"] else "**no**"]
        for k, v in m["sla_checks"].items()
    ]  # fmt: skip
    out = table(["percentile", "limit", "predicted", "met"], rows)
    out += [
        "",
        "All percentiles at the offered rate: TTFT "
        + " / ".join(dur(m["ttft_s"][q]) for q in QUANTILES)
        + " (P50 / P90 / P99); TPOT "
        + " / ".join(dur(m["tpot_s"][q]) for q in QUANTILES)
        + f"; largest inter-token gap {dur(m['max_inter_token_gap_s'])}.",
    ]
    out += ["", *(f"> warning: {md_text(w)}" for w in m["warnings"])] if m["warnings"] else []
    return out


def _ms(seconds: float | None) -> float | None:
    """Milliseconds; None (a percentile the queue does not reach: saturated) stays None."""
    return None if seconds is None else seconds * 1e3


def _compare(data: dict) -> list[str]:
    entries = data["compare"]["architectures"]
    by_arch = {e["architecture"]: e for e in entries}
    base = (by_arch.get("idc_pd") or {}).get("metrics") or {}
    rows = []
    for e in entries:
        name = ARCH_NAMES.get(e["architecture"], e["architecture"])
        if e["architecture"] == data["architecture"]:
            name = f"**{name}** (this plan)"
        m = e.get("metrics")
        if not m:
            reason = e.get("reason", "no plan meets the SLA")
            rows.append(
                [name, "infeasible: " + md_text(reason), "-", "-", "-", "-", "-", "-", "-", "-"]
            )
            continue
        ratio = (
            m["bcr_rps_per_usd_hour"] / base["bcr_rps_per_usd_hour"]
            if base.get("bcr_rps_per_usd_hour")
            else None
        )
        wan = m["wan"]
        rows.append(
            [
                name,
                usd(m["cost_usd_per_hour"]),
                num(m["goodput_rps"]),
                num(m["bcr_rps_per_usd_hour"], 4),
                "-" if ratio is None else f"{ratio:.3f}",
                " / ".join(num(m["ttft_s"][q]) for q in QUANTILES),
                " / ".join(num(_ms(m["tpot_s"][q])) for q in QUANTILES),
                f"{num(wan['mean_gbit_per_s'])} ({pct(wan['utilization_frac'])})"
                if wan["mean_gbit_per_s"]
                else "-",
                pct(m["rld_token_share_frac"], 1) if e["architecture"] == "pdd" else "-",
                composition(e["plan"]),
            ]
        )
    out = ["Each architecture the scenario allows, optimised alone on the same scenario:", ""]
    out += table(
        ["architecture", "$/h", "goodput req/s", "BCR req/s per $/h", "BCR / IDC-PD",
         "TTFT P50/P90/P99 s", "TPOT P50/P90/P99 ms", "WAN Gbit/s (line)", "RLD share",
         "plan"],
        rows,
    )  # fmt: skip
    choice = data["result"].get("architecture_choice")
    if choice and capped_note(choice, data["result"]["metrics"]["offered_rps"]):
        out += ["", "BCR here counts every request served within the SLA; the Summary's ratio "
                "is the one `solve` ranks by, which counts goodput only up to a multiple of the "
                "offered rate (docs/optimiser.md)."]  # fmt: skip
    return out


def render_report(s: Scenario, data: dict) -> str:
    """The sizing report of a solved scenario (`data` from `api.sizing_report_data`)."""
    result = data["result"]
    if result.get("plan") is None or result.get("metrics") is None:
        raise ValueError("the sizing report needs a solved plan")
    plan = result["plan"]
    head = [
        f"# Sizing report: {md_text(data['summary']['name'])}",
        "",
        *([md_text(s.description), ""] if s.description.strip() else []),
        f"pdd-plan {data['version']}: {ARCH_NAMES.get(plan['architecture'])} plan, objective "
        f"`{result['solver']['objective']}`, status **{result['status']}**. Figures are those "
        "of `pdd-plan solve --format json` and `pdd-plan compare`; prices are rental and "
        "lease prices in US dollars.",
        "",
        header_line(data["bom_header"]),
    ]
    profile = result["solver"].get("engine_profile")
    head += ["", md_text(profile_line(profile) + ".")] if profile else []
    bodies = (
        _summary(s, data),
        _scenario(s, data),
        _plan(s, data),
        _arithmetic(data),
        _sla(data),
        _compare(data),
        explain_section(data),
        sensitivity_section(data),
        assumptions_section(data.get("assumptions")),
        bom_section(data, s.costs.amortization_years),
    )
    lines = head
    for title, body in zip(SECTIONS, bodies, strict=True):
        lines += ["", f"## {title}", "", *body]
    return "\n".join(lines).rstrip() + "\n"
