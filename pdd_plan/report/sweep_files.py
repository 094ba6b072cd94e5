"""A sweep's results as files: CSV (one row a point, units in the headers, cells safe for a
spreadsheet) and JSON (every point's plan and metrics in the design.md §7 shapes)."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

from pdd_plan.report.bom import spreadsheet_safe
from pdd_plan.report.md_format import ROLE_SHORT, composition

# (header, metrics getter); headers carry their units
METRIC_COLUMNS = (
    ("offered_rps", lambda m: m["offered_rps"]),
    ("goodput_rps", lambda m: m["goodput_rps"]),
    ("cost_usd_per_hour", lambda m: m["cost_usd_per_hour"]),
    ("bcr_rps_per_usd_hour", lambda m: m["bcr_rps_per_usd_hour"]),
    ("usd_per_million_output_tokens", lambda m: m["usd_per_million_output_tokens"]),
    ("ttft_p50_s", lambda m: m["ttft_s"]["p50"]),
    ("ttft_p90_s", lambda m: m["ttft_s"]["p90"]),
    ("ttft_p99_s", lambda m: m["ttft_s"]["p99"]),
    ("tpot_p50_s", lambda m: m["tpot_s"]["p50"]),
    ("tpot_p90_s", lambda m: m["tpot_s"]["p90"]),
    ("tpot_p99_s", lambda m: m["tpot_s"]["p99"]),
    ("wan_mean_gbit_per_s", lambda m: m["wan"]["mean_gbit_per_s"]),
    ("wan_utilization_frac", lambda m: m["wan"]["utilization_frac"]),
    ("rld_token_share_frac", lambda m: m["rld_token_share_frac"]),
    ("sla_met", lambda m: m["sla_met"]),
)


def gpu_groups(plan: dict | None) -> Counter:
    """GPUs of a plan by (role, GPU type, datacenter)."""
    out: Counter = Counter()
    for g in (plan or {}).get("instances", []):
        out[(g["role"], g["gpu"], g["datacenter"])] += g["gpus_per_instance"] * g["count"]
    return out


def group_label(group: tuple[str, str, str]) -> str:
    role, gpu, dc = group
    return f"{ROLE_SHORT.get(role, role)} {gpu} ({dc})"


def _plan_columns(rows: list[dict]) -> tuple[list[tuple], list[str]]:
    groups = sorted({k for r in rows for k in gpu_groups(r["plan"])})
    tiers = sorted({line["tier"] for r in rows for line in (r["plan"] or {}).get("lines", [])})
    return groups, tiers


def csv_text(rows: list[dict], keys: list[str]) -> str:
    """One row a point: the swept values (headed by their key paths, which carry the
    scenario's units), status, error, the metrics, GPUs per (role, type, datacenter),
    lines per tier, the routing policy and the plan on one line."""
    groups, tiers = _plan_columns(rows)
    header = ["point", *keys, "status", "error", *(h for h, _ in METRIC_COLUMNS), "gpus_total",
              *(f"gpus_{r}_{g}_{d}" for r, g, d in groups), *(f"lines_{t}" for t in tiers),
              "rld_hit_threshold_frac", "handoff", "plan", "wall_s"]  # fmt: skip
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([spreadsheet_safe(h) for h in header])  # a key path is user text too
    for r in rows:
        m, plan = r["metrics"], r["plan"]
        gpus = gpu_groups(plan)
        lines = Counter({x["tier"]: x["count"] for x in (plan or {}).get("lines", [])})
        policy = (plan or {}).get("policy") or {}
        cells = [r["index"], *(r["values"].get(k) for k in keys), r["status"], r["error"] or ""]
        cells += [getter(m) if m else "" for _, getter in METRIC_COLUMNS]
        cells += [sum(gpus.values()) if plan else "", *(gpus[g] if plan else "" for g in groups)]
        cells += [lines[t] if plan else "" for t in tiers]
        cells += [policy.get("rld_hit_threshold", ""), policy.get("handoff", "")]
        cells += [composition(plan) if plan else "", "" if r["wall_s"] is None else r["wall_s"]]
        writer.writerow([spreadsheet_safe(_cell(c)) for c in cells])
    return buf.getvalue()


def _cell(value):
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return ""
    return value


def json_text(summary: dict, rows: list[dict]) -> str:
    return json.dumps({**summary, "points": rows}, indent=2) + "\n"
