"""Formatting shared by the Markdown sizing report's sections: numbers, durations, money,
tables, plan composition."""

from __future__ import annotations

ARCH_NAMES = {"pdd": "PDD", "cdc_pd": "CDC-PD", "idc_pd": "IDC-PD", "colocated": "colocated"}
ROLE_SHORT = {"prefill": "P", "relay_decode": "RLD", "main_decode": "MD", "decode": "D",
              "colocated": "colocated"}  # fmt: skip
QUANTILES = ("p50", "p90", "p99")


# --- formatting ----------------------------------------------------------------------


def cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(headers: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(cell(h) for h in headers) + " |"]
    out.append("|" + "|".join("---" for _ in headers) + "|")
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def num(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def usd(value, cents: bool = True) -> str:
    if value is None:
        return "-"
    return f"${value:,.2f}" if cents else f"${value:,.0f}"


def dur(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds >= 0.1:
        return f"{num(seconds)} s"
    return f"{num(seconds * 1e3)} ms"


def pct(frac, digits: int = 0) -> str:
    return "-" if frac is None else f"{frac * 100:.{digits}f} %"


def tokens(value) -> str:
    return f"{value:,.0f}"


def rps(value) -> str:
    return "-" if value is None else f"{num(value)} req/s"


def percentile_name(key: str) -> str:
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
