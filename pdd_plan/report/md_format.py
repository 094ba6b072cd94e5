"""Formatting shared by the Markdown sizing report's sections: numbers, durations, money,
tables, plan composition."""

from __future__ import annotations

import re

from pdd_plan.errors import visible

ARCH_NAMES = {"pdd": "PDD", "cdc_pd": "CDC-PD", "idc_pd": "IDC-PD", "colocated": "colocated"}
ROLE_SHORT = {"prefill": "P", "relay_decode": "RLD", "main_decode": "MD", "decode": "D",
              "colocated": "colocated"}  # fmt: skip
QUANTILES = ("p50", "p90", "p99")


# --- user text -----------------------------------------------------------------------
# Text from a scenario, a catalog or the command line goes into the Markdown through
# `md_text` (or `md_code`): one line, no HTML and no Markdown of its own, so a name can
# neither add a heading nor a script to report.md or the HTML report built from it.

_BREAKS = re.compile("[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_HTML_ACTIVE = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# backslash-escaped: emphasis, code, links, tables, headings, strikethrough; `_` only
# where it could open or close emphasis (intraword it cannot, so ids stay as written)
_MD_ACTIVE = re.compile(r"[\\`*\[\]|#~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"^([-+=]|\d+(?=[.)]))")  # a list item, a setext underline


def md_text(value) -> str:
    """User text as literal Markdown inline text: newlines folded into spaces, other
    control characters shown as escapes, `& < >` as entities, Markdown syntax escaped."""
    text = visible(_BREAKS.sub(" ", str(value))).strip()
    text = "".join(_HTML_ACTIVE.get(c, c) for c in text)
    text = _MD_ACTIVE.sub(lambda m: "\\" + m.group(), text)
    return _LINE_START.sub(lambda m: m.group() + "\\" if m.group()[0].isdigit() else
                           "\\" + m.group(), text)  # fmt: skip


def md_code(value) -> str:
    """User text as a code span (shown as written), or as `md_text` when it holds a
    backtick (it would end the span) or `< > &` (a viewer that ignores spans must not
    see raw HTML either)."""
    text = visible(_BREAKS.sub(" ", str(value))).strip()
    return f"`{text}`" if text and not set(text) & set("`<>&") else md_text(text)


# --- formatting ----------------------------------------------------------------------

_BARS = re.compile(r"\\.|\|")  # an escaped character, or a bar that would end a cell


def cell(value) -> str:
    """A table cell: one line, every unescaped `|` escaped (GFM's table rule)."""
    text = _BREAKS.sub(" ", str(value))
    return _BARS.sub(lambda m: "\\|" if m.group() == "|" else m.group(), text)


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
