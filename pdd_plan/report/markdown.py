"""The sizing report: Markdown a procurement team can act on.

Formatting only. Every figure comes from the dicts `pdd_plan.api.sizing_report_data`
returns (the `solve` result in the shape of design.md §7, the `compare` result, the
sensitivity cases, the scenario summary) or from the Scenario itself (prices, roles); the
one piece of arithmetic here is the bill of materials (`report/bom.py`: GPUs x price).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pdd_plan.model.scenario import Scenario
from pdd_plan.report.assumptions import ASSUMPTIONS
from pdd_plan.report.bom import HOURS_PER_YEAR, bom_rows
from pdd_plan.units import HOURS_PER_MONTH

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
)
ARCH_NAMES = {"pdd": "PDD", "cdc_pd": "CDC-PD", "idc_pd": "IDC-PD", "colocated": "colocated"}
ROLE_SHORT = {"prefill": "P", "relay_decode": "RLD", "main_decode": "MD", "decode": "D",
              "colocated": "colocated"}  # fmt: skip
QUANTILES = ("p50", "p90", "p99")


# --- formatting ----------------------------------------------------------------------


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(headers: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in headers) + " |"]
    out.append("|" + "|".join("---" for _ in headers) + "|")
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _num(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _usd(value, cents: bool = True) -> str:
    if value is None:
        return "-"
    return f"${value:,.2f}" if cents else f"${value:,.0f}"


def _dur(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds >= 0.1:
        return f"{_num(seconds)} s"
    return f"{_num(seconds * 1e3)} ms"


def _pct(frac, digits: int = 0) -> str:
    return "-" if frac is None else f"{frac * 100:.{digits}f} %"


def _tokens(value) -> str:
    return f"{value:,.0f}"


def _rps(value) -> str:
    return "-" if value is None else f"{_num(value)} req/s"


def _percentile_name(key: str) -> str:
    """'ttft_p90_s' -> 'TTFT P90'."""
    metric, pct, _ = key.split("_")
    return f"{metric.upper()} {pct.upper()}"


def composition(plan: dict | None) -> str:
    """A plan on one line: instances per role, lines, policy."""
    if not plan:
        return "-"
    parts = [
        f"{ROLE_SHORT.get(g['role'], g['role'])} {g['count']} x {g['gpus_per_instance']} "
        f"{g['gpu']} ({g['datacenter']})"
        for g in plan["instances"]
    ]
    parts += [f"line {line['count']} x {line['tier']}" for line in plan["lines"]]
    text = "; ".join(parts)
    if plan["architecture"] == "pdd":
        p = plan["policy"]
        text += f"; threshold {p['rld_hit_threshold']:g}, {p['handoff']}"
    return text


# --- sections ------------------------------------------------------------------------


def _summary(s: Scenario, data: dict) -> list[str]:
    result, summary = data["result"], data["summary"]
    plan, m = result["plan"], result["metrics"]
    gpus = Counter()
    for g in plan["instances"]:
        gpus[(g["datacenter"], g["gpu"])] += g["gpus_per_instance"] * g["count"]
    buy = [f"{n:,} x {gpu} in {dc}" for (dc, gpu), n in gpus.items()]
    ends = " and ".join(dc.id for dc in s.datacenters)
    buy += [
        f"{line['count']} x {line['tier']} line ({_num(line['capacity_gbit_per_s'])} Gbit/s) "
        f"between {ends}"
        for line in plan["lines"]
    ]
    cost = m["cost_usd_per_hour"]
    offered = m["offered_rps"]
    checks = "; ".join(
        f"{_percentile_name(k)} {_dur(v['value'])} against {_dur(v['limit'])}"
        for k, v in m["sla_checks"].items()
    )
    util = m["role_utilization_frac"]
    binding = m["binding_role"]
    return [
        f"- **Rent**: {'; '.join(buy)}.",
        f"- **Cost**: {_usd(cost)}/h = {_usd(cost * HOURS_PER_MONTH, False)}/month = "
        f"{_usd(cost * HOURS_PER_YEAR, False)}/year.",
        f"- **Serves**: {_rps(m['goodput_rps'])} within the SLA (goodput), against "
        f"{_rps(offered)} offered ({_num(m['goodput_rps'] / offered)}x); BCR "
        f"{_num(m['bcr_rps_per_usd_hour'], 4)} req/s per $/h; "
        f"{_usd(m['usd_per_million_output_tokens'])} per million output tokens.",
        f"- **SLA**: {'met' if m['sla_met'] else 'NOT met'} at the offered rate ({checks}).",
        f"- **Binding role**: {binding or '-'}"
        + (f" at {_pct(util[binding])} utilisation." if binding else "."),
        f"- **Model**: {summary['model']}, {summary['kv_bytes_per_token']:,.0f} "
        f"bytes of KV per token ({summary['kv_dtype']}).",
    ]


def _scenario(s: Scenario, data: dict) -> list[str]:
    sm = data["summary"]
    sla = "; ".join(
        [f"TTFT {k.upper()} <= {_dur(v)}" for k, v in sm["sla"]["ttft_s"].items()]
        + [f"TPOT {k.upper()} <= {_dur(v)}" for k, v in sm["sla"]["tpot_s"].items()]
    )
    alternatives = ", ".join(
        f"{name} (mean {_num(mean)})" for name, mean in sm["hit_rate_alternatives"].items()
    )
    rows = [
        ["model", f"{sm['model']}, KV cache {sm['kv_dtype']}"],
        ["KV bytes per token", f"{sm['kv_bytes_per_token']:,.0f} B (long-context limit)"],
        *(
            [["decode-side KV in HBM", f"{sm['decode_kv_bytes_per_token']:,.0f} B per token "
                                       f"of context ({sm['decode_kv_source']})"]]
            if sm["decode_kv_bytes_per_token"] else []
        ),
        ["demand", f"{_rps(sm['arrival_rate_per_s'])} offered, burstiness (cv²) "
                   f"{_num(sm['burstiness_cv2'])}"],
        ["input length", f"mean {_tokens(sm['mean_input_tokens'])} tokens "
                         f"({sm['input_tokens_kind']})"],
        ["output length", f"mean {_tokens(sm['mean_output_tokens'])} tokens "
                          f"({sm['output_tokens_kind']})"],
        ["prefix-hit rate", f"mean {_num(sm['mean_prefix_hit_rate'])} "
                            f"({sm['prefix_hit_rate_kind']})"
                            + (f"; alternatives: {alternatives}" if alternatives else "")],
        ["SLA", sla],
        ["objective", sm["objective"]],
        ["architectures compared", ", ".join(ARCH_NAMES.get(a, a) for a in sm["architectures"])],
    ]  # fmt: skip
    source = f" (file `{Path(sm['file']).name}`)" if sm["file"] else ""
    out = [f"Scenario `{sm['name']}`{source}.", ""]
    out += _table(["item", "value"], rows)
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
                    _usd(offer["price_usd_per_gpu_hour"]),
                    "no limit" if available is None else f"{available:,}",
                ]
            )
    out += _table(["datacenter", "roles", "GPU", "price $/GPU-hour", "GPUs available"], dc_rows)
    wan = sm["wan"]
    if len(sm["datacenters"]) > 1:
        out += [
            "",
            f"WAN: RTT {_num(wan['rtt_ms'])} ms, {_num(wan['per_connection_gbit_per_s'])} "
            f"Gbit/s per TCP connection, a pool of {wan['connection_pool_size']} connections. "
            "Line tiers that may be leased:",
            "",
        ]
        out += _table(
            ["tier", "capacity Gbit/s", "price $/month"],
            [
                [t, _num(sm["line_capacity_gbit_per_s"][t]), _usd(price, False)]
                for t, price in sm["line_prices_usd_per_month"].items()
            ],
        )
    return out


def _plan(s: Scenario, data: dict) -> list[str]:
    plan = data["result"]["plan"]
    rows = bom_rows(plan, s, data["summary"]["line_prices_usd_per_month"])
    table = []
    gpus_total = 0
    for r in rows:
        dc, role, item, kind, shape, instances, units = r[:7]
        if kind == "gpu":
            gpus_total += units
            table.append(
                [
                    role,
                    dc,
                    item,
                    shape,
                    instances,
                    f"{units:,} GPUs",
                    f"{_usd(r[8])}/GPU-hour",
                    _usd(r[10]),
                    _usd(r[11], False),
                ]
            )
        else:
            table.append(
                [
                    "WAN line",
                    dc,
                    item,
                    "-",
                    "-",
                    f"{units:,} line" + ("s" if units != 1 else ""),
                    f"{_usd(r[8], False)}/line-month",
                    _usd(r[10]),
                    _usd(r[11], False),
                ]
            )
    table.append(
        [
            "**total**",
            "",
            "",
            "",
            "",
            f"{gpus_total:,} GPUs",
            "",
            _usd(sum(r[10] for r in rows)),
            _usd(sum(r[11] for r in rows), False),
        ]
    )
    out = _table(
        ["role", "datacenter", "item", "GPUs per instance", "instances", "units", "unit price",
         "$/h", "$/month"],
        table,
    )  # fmt: skip
    p = plan["policy"]
    out += [""]
    if plan["architecture"] == "pdd":
        out += [
            f"Routing policy: requests with a prefix-hit rate at or above "
            f"{p['rld_hit_threshold']:g} go P -> MD over the line; the others go P -> RLD (RDMA) "
            f"and P -> MD (WAN) at once, RLD decoding until MD holds the KV, then a "
            f"`{p['handoff']}` handoff; short-output cut-off "
            f"{'on' if p['short_output_cutoff'] else 'off'}.",
        ]
    else:
        out += [f"Architecture {ARCH_NAMES.get(plan['architecture'], plan['architecture'])}."]
    out += [
        "",
        "The bill of materials (`--bom`, `bom.csv` in `--out`) has the same rows with annual "
        f"costs; a month is {HOURS_PER_MONTH:g} h.",
    ]
    return out


def _arithmetic(data: dict) -> list[str]:
    result = data["result"]
    m, roles = result["metrics"], result.get("role_arithmetic")
    out = [f"At the offered {_rps(m['offered_rps'])}, as `evaluate` computes it:", ""]
    if not roles:
        return out + ["A queue saturates at the offered rate: no per-role figures."]
    prefill = [r for r in roles if r["stage"] == "prefill"]
    decode = [r for r in roles if r["stage"] == "decode"]
    out += _table(
        ["prefill role", "instances", "requests/s", "input tokens (cached / uncached)",
         "prefill time per request", "queue wait (mean)", "one instance carries",
         "busy time"],
        [[r["role"], f"{r['instances']} x {r['gpus_per_instance']} {r['gpu']}",
          _num(r["requests_per_s"]),
          f"{_tokens(r['mean_input_tokens'])} ({_tokens(r['mean_cached_input_tokens'])} / "
          f"{_tokens(r['mean_uncached_input_tokens'])})",
          _dur(r["mean_prefill_s"]), _dur(r["mean_queue_wait_s"]),
          _rps(r["instance_capacity_rps"]), _pct(r["utilization_frac"])]
         for r in prefill],
    )  # fmt: skip
    out += [""]
    out += _table(
        ["decode role", "instances", "requests/s", "tokens per request", "tokens/s",
         "mean context tokens", "batch per instance", "batch that fits HBM",
         "batch at the TPOT limit", "step time", "HBM batch fill"],
        [[r["role"], f"{r['instances']} x {r['gpus_per_instance']} {r['gpu']}",
          _num(r["requests_per_s"]), _num(r["tokens_per_request"]), _num(r["tokens_per_s"]),
          _tokens(r["mean_context_tokens"]), _num(r["batch_per_instance"]),
          f"{r['max_batch_hbm']:,}", f"{r['tpot_batch_limit']:,}",
          _dur(r["step_s"]) + (f" ({_dur(r['effective_step_s'])} with prefill)"
                               if "effective_step_s" in r else ""),
          _pct(r["utilization_frac"], 1)]
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
            f"WAN line: {_num(wan['mean_gbit_per_s'])} Gbit/s of KV on average, "
            f"{_pct(wan['utilization_frac'])} of the leased capacity; connection pool "
            f"{_pct(wan['pool_utilization_frac'])} busy; KV transfer (wait included) P50 "
            f"{_dur(wan['transfer_s']['p50'])}, P99 {_dur(wan['transfer_s']['p99'])}.",
        ]
    if result["plan"]["architecture"] == "pdd":
        out += ["", f"Relay decode emits {_pct(m['rld_token_share_frac'], 1)} of output tokens."]
    solver = result.get("solver") or {}
    if solver.get("sized_rate_rps"):
        out += [
            "",
            f"The optimiser sized the plan for {_rps(solver['sized_rate_rps'])} (objective "
            f"`{solver['objective']}`) and verified it with `evaluate` at that rate.",
        ]
    return out


def _sla(data: dict) -> list[str]:
    m = data["result"]["metrics"]
    rows = [
        [_percentile_name(k), _dur(v["limit"]), _dur(v["value"]),
         "yes" if v["value"] <= v["limit"] else "**no**"]
        for k, v in m["sla_checks"].items()
    ]  # fmt: skip
    out = _table(["percentile", "limit", "predicted", "met"], rows)
    out += [
        "",
        "All percentiles at the offered rate: TTFT "
        + " / ".join(_dur(m["ttft_s"][q]) for q in QUANTILES)
        + " (P50 / P90 / P99); TPOT "
        + " / ".join(_dur(m["tpot_s"][q]) for q in QUANTILES)
        + f"; largest inter-token gap {_dur(m['max_inter_token_gap_s'])}.",
    ]
    out += ["", *(f"> warning: {w}" for w in m["warnings"])] if m["warnings"] else []
    return out


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
            rows.append([name, "infeasible: " + reason, "-", "-", "-", "-", "-", "-", "-", "-"])
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
                _usd(m["cost_usd_per_hour"]),
                _num(m["goodput_rps"]),
                _num(m["bcr_rps_per_usd_hour"], 4),
                "-" if ratio is None else f"{ratio:.3f}",
                " / ".join(_num(m["ttft_s"][q]) for q in QUANTILES),
                " / ".join(_num(m["tpot_s"][q] * 1e3) for q in QUANTILES),
                f"{_num(wan['mean_gbit_per_s'])} ({_pct(wan['utilization_frac'])})"
                if wan["mean_gbit_per_s"]
                else "-",
                _pct(m["rld_token_share_frac"], 1) if e["architecture"] == "pdd" else "-",
                composition(e["plan"]),
            ]
        )
    out = ["Each architecture the scenario allows, optimised alone on the same scenario:", ""]
    out += _table(
        ["architecture", "$/h", "goodput req/s", "BCR req/s per $/h", "BCR / IDC-PD",
         "TTFT P50/P90/P99 s", "TPOT P50/P90/P99 ms", "WAN Gbit/s (line)", "RLD share",
         "plan"],
        rows,
    )  # fmt: skip
    return out


def _explain(data: dict) -> list[str]:
    result = data["result"]
    m, solver = result["metrics"], result.get("solver") or {}
    util = sorted(m["role_utilization_frac"].items(), key=lambda kv: -kv[1])
    out = [
        f"- **Binds**: {m['binding_role'] or '-'}: the role with the highest utilisation at "
        "the offered rate, the first to run out as demand grows.",
        "- **Utilisations**: " + ", ".join(f"{k} {_pct(v)}" for k, v in util) + ".",
        f"- **Headroom**: goodput {_rps(m['goodput_rps'])} is "
        f"{_num(m['goodput_rps'] / m['offered_rps'])}x the offered {_rps(m['offered_rps'])}; "
        "instances and lines are bought whole, and the objective may buy room above the "
        "demand when it is cheap per request.",
    ]
    tried = solver.get("policies_tried") or []
    if tried:
        out += ["", "Routing policies and utilisation caps tried:", ""]
        out += _table(
            ["hit-rate threshold", "handoff", "utilisation cap", "outcome"],
            [
                [f"{a['rld_hit_threshold']:g}", a["handoff"], _pct(a["utilization_cap_frac"]),
                 a["outcome"]]
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
        out += _table(
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
    return f"{_usd(value)}/h" if metric == "cost_usd_per_hour" else _num(value, 4)


def _explain_dict(e: dict) -> list[str]:
    """`pdd_plan.plan.explain.explain`'s result: binding limits and relaxations."""
    constraints = e.get("constraints") or []
    binding = [c for c in constraints if c.get("binding")]
    out = [
        f"Limits of the winning MILP that bind ({len(binding)} of {len(constraints)}; the "
        "others have slack):",
        "",
    ]
    if binding:
        out += _table(
            ["constraint", "family", "slack"],
            [[f"`{c['constraint']}`", c.get("family", ""),
              f"{_num(c.get('slack'))} {c.get('unit', '')}".strip()] for c in binding],
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
                    "-" if cost is None else f"{'+' if cost >= 0 else '-'}{_usd(abs(cost))}/h",
                    "; ".join(r.get("plan_changes") or []) or "no change",
                ]
            )
        out += _table(
            ["relaxation", "before", "after", "change", "cost change", "plan changes"], rows
        )
    if e.get("milp", {}).get("reproduced") is False:
        out += [
            "",
            "Note: the rebuilt MILP gave a different plan of equal objective; slacks are "
            "those of the rebuilt one.",
        ]
    return out


def _sensitivity(data: dict) -> list[str]:
    sens = data["sensitivity"]
    base = data["result"]
    base_cost = base["metrics"]["cost_usd_per_hour"]
    base_key = _plan_key(base["plan"])
    rows = [
        ["this plan", "-", base["status"], _usd(base_cost),
         _usd(base_cost * HOURS_PER_MONTH, False), _num(base["metrics"]["goodput_rps"]),
         _num(base["metrics"]["bcr_rps_per_usd_hour"], 4), "-", composition(base["plan"])]
    ]  # fmt: skip
    for case in sens["cases"]:
        m = case.get("metrics")
        if not m:
            rows.append([case["case"], case["change"], case["status"], "-", "-", "-", "-", "-",
                         case.get("reason", "no plan meets the SLA")])  # fmt: skip
            continue
        cost = m["cost_usd_per_hour"]
        same = _plan_key(case["plan"]) == base_key
        rows.append(
            [
                case["case"],
                case["change"],
                case["status"],
                _usd(cost),
                _usd(cost * HOURS_PER_MONTH, False),
                _num(m["goodput_rps"]),
                _num(m["bcr_rps_per_usd_hour"], 4),
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
    out += _table(
        ["case", "change", "status", "$/h", "$/month", "goodput req/s", "BCR",
         "cost vs this plan", "plan"],
        rows,
    )  # fmt: skip
    return out


def _plan_key(plan: dict | None):
    if not plan:
        return None
    return (
        tuple(sorted(tuple(sorted(g.items())) for g in plan["instances"])),
        tuple(sorted((line["tier"], line["count"]) for line in plan["lines"])),
        tuple(sorted(plan["policy"].items())),
    )


def _assumptions() -> list[str]:
    return [
        "Each assumption of the models and the optimiser, with the direction it biases the "
        "figures above:",
        "",
        *_table(["assumption", "bias"], [list(a) for a in ASSUMPTIONS]),
    ]


def render_report(s: Scenario, data: dict) -> str:
    """The sizing report of a solved scenario (`data` from `api.sizing_report_data`)."""
    result = data["result"]
    if result.get("plan") is None or result.get("metrics") is None:
        raise ValueError("the sizing report needs a solved plan")
    plan = result["plan"]
    head = [
        f"# Sizing report: {data['summary']['name']}",
        "",
        *([s.description.strip(), ""] if s.description else []),
        f"pdd-plan {data['version']}: {ARCH_NAMES.get(plan['architecture'])} plan, objective "
        f"`{result['solver']['objective']}`, status **{result['status']}**. Figures are those "
        "of `pdd-plan solve --format json` and `pdd-plan compare`; prices are rental and "
        "lease prices in US dollars.",
    ]
    bodies = (
        _summary(s, data),
        _scenario(s, data),
        _plan(s, data),
        _arithmetic(data),
        _sla(data),
        _compare(data),
        _explain(data),
        _sensitivity(data),
        _assumptions(),
    )
    lines = head
    for title, body in zip(SECTIONS, bodies, strict=True):
        lines += ["", f"## {title}", "", *body]
    return "\n".join(lines).rstrip() + "\n"
