"""The sizing report as one self-contained HTML file: the Markdown report's text, turned
into HTML line by line, with the plots as inline SVG, a key-figure strip and the CSS
inline. No script, no font, no image and no style sheet is fetched from anywhere.

The text is `report/markdown.py`'s own output, converted here (headings, tables, bullets,
block quotes, paragraphs, **bold** and `code`: the subset that module writes), so the HTML
says exactly what the Markdown says; nothing is computed twice.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.report.choice_text import WHAT, capped_note
from pdd_plan.report.md_format import ARCH_NAMES

CSS = """
:root { --ink: #1d2733; --muted: #5b6b7c; --line: #d9e0e7; --band: #f4f7fa; --ok: #1b7f3b;
        --bad: #b3261e; --accent: #1f5fa8; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.45;
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-top: 10px; border-top: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 8px; }
p.lead { color: var(--muted); margin: 4px 0 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 12px;
         margin: 16px 0; }
.card { background: var(--band); border: 1px solid var(--line); border-radius: 8px;
        padding: 12px 14px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
               letter-spacing: .04em; }
.card .value { font-size: 24px; font-weight: 650; margin-top: 2px; }
.card .note { color: var(--muted); font-size: 13px; }
.ok { color: var(--ok); } .bad { color: var(--bad); }
nav.toc { background: var(--band); border: 1px solid var(--line); border-radius: 8px;
          padding: 8px 16px; margin: 16px 0; font-size: 14px; }
nav.toc ul { margin: 6px 0; padding-left: 0; columns: 2; list-style: none; }
nav.toc a { color: var(--accent); text-decoration: none; }
.table-wrap { overflow-x: auto; margin: 10px 0; }
table { border-collapse: collapse; font-size: 13px; min-width: 40%; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--band); font-weight: 600; }
tr:nth-child(even) td { background: #fbfcfd; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.92em;
       background: var(--band); padding: 0 3px; border-radius: 3px; }
blockquote { margin: 8px 0; padding: 6px 12px; border-left: 4px solid #e0a800;
             background: #fff8e1; }
figure { margin: 18px 0; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; max-width: 900px; }
.first-screen { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 20px;
                align-items: start; }
@media (max-width: 900px) { .first-screen { grid-template-columns: 1fr; } }
footer { color: var(--muted); font-size: 12px; margin-top: 40px; }
"""


@dataclass(frozen=True)
class Figure:
    """A plot for the page: its inline SVG, a caption, and the Markdown section it
    follows (the section's `## ` title)."""

    name: str
    svg: str
    caption: str
    section: str


# --- inline Markdown -----------------------------------------------------------------
# A scan, not substitutions: backslash escapes, `code` spans, **bold** and entity
# references become tokens, so no placeholder can collide with the text (user text
# reaches the Markdown escaped by `md_format.md_text`, whose escapes are undone here).

_TOKEN = re.compile(
    r"\\([!-/:-@\[-`{-~])"  # a backslash escape of ASCII punctuation
    r"|`([^`]+)`"  # a code span
    r"|(\*\*)"  # one side of **bold**
    r"|&(#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]\w{1,31});"  # an entity reference
)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: 'text' (literal characters), 'code', or 'bold' (a `**`)."""
    out: list[tuple[str, str]] = []
    at = 0
    for m in _TOKEN.finditer(text):
        out.append(("text", text[at : m.start()]))
        escaped, code, bold, entity = m.groups()
        if code is not None:
            out.append(("code", code))
        elif bold is not None:
            out.append(("bold", bold))
        elif entity is not None:
            out.append(("text", html.unescape(m.group())))  # unknown names stay as written
        else:
            out.append(("text", escaped))
        at = m.end()
    out.append(("text", text[at:]))
    return out


def inline(text: str) -> str:
    """Inline Markdown as HTML: every character escaped, `code` and **bold** (a `**`
    without a partner after it stays literal)."""
    tokens = _tokens(text)
    pairs = sum(kind == "bold" for kind, _ in tokens) // 2 * 2
    out, seen = [], 0
    for kind, value in tokens:
        if kind == "code":
            out.append(f"<code>{html.escape(value)}</code>")
        elif kind == "bold" and seen < pairs:
            out.append("<strong>" if seen % 2 == 0 else "</strong>")
            seen += 1
        else:
            out.append(html.escape(value, quote=False))
    return "".join(out)


def plain(text: str) -> str:
    """Inline Markdown as plain text (a page title): escapes undone, no markup."""
    return "".join(value for _, value in _tokens(text))


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells, split at the bars no backslash escapes (a `\\\\`
    pair escapes itself); `\\|` then becomes a bar, as GFM does before inline parsing."""
    body = line.strip()[1:-1]
    cells, at = [], 0
    for m in re.finditer(r"\\.|\|", body):
        if m.group() == "|":
            cells.append(body[at : m.start()])
            at = m.end()
    cells.append(body[at:])
    return [c.strip().replace("\\|", "|") for c in cells]


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


# --- blocks --------------------------------------------------------------------------


def _table(lines: list[str]) -> str:
    header, rows = _cells(lines[0]), [_cells(x) for x in lines[2:]]
    head = "".join(f"<th>{inline(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in rows)
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="table-wrap">{table}</div>'


def _block(kind: str, lines: list[str]) -> str:
    if kind == "table":
        return _table(lines)
    if kind == "list":
        return "<ul>" + "".join(f"<li>{inline(x[2:])}</li>" for x in lines) + "</ul>"
    if kind == "quote":
        return "<blockquote>" + "<br>".join(inline(x.lstrip("> ")) for x in lines) + "</blockquote>"
    return "<p>" + " ".join(inline(x) for x in lines) + "</p>"


def _kind(line: str) -> str:
    if line.startswith("|"):
        return "table"
    if line.startswith("- "):
        return "list"
    if line.startswith(">"):
        return "quote"
    return "para"


def markdown_sections(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The Markdown report cut into (head lines, [(section title, lines)])."""
    head: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            head.append(line)
    return head, sections


def blocks_html(lines: list[str]) -> str:
    """Markdown lines (no `## ` heading) as HTML blocks."""
    out, kind, buf = [], None, []
    for line in [*lines, ""]:
        if line.startswith("### ") or not line.strip():
            if buf:
                out.append(_block(kind, buf))
            buf, kind = [], None
            if line.startswith("### "):
                out.append(f"<h3>{inline(line[4:])}</h3>")
            continue
        k = _kind(line)
        if buf and k != kind:
            out.append(_block(kind, buf))
            buf = []
        kind = k
        buf.append(line)
    return "\n".join(out)


# --- the page ------------------------------------------------------------------------


def _card(label: str, value: str, note: str = "", cls: str = "") -> str:
    return (f'<div class="card"><div class="label">{html.escape(label)}</div>'
            f'<div class="value {cls}">{html.escape(value)}</div>'
            f'<div class="note">{html.escape(note)}</div></div>')  # fmt: skip


def key_figures(result: dict) -> str:
    """The cards at the top: cost, goodput, BCR, SLA."""
    m = result["metrics"]
    cost = m["cost_usd_per_hour"]
    checks = m["sla_checks"]
    sla_note = ""
    if checks:
        name, worst = max(checks.items(), key=lambda kv: kv[1]["value"] / kv[1]["limit"])
        metric, pct = name.split("_")[:2]
        sla_note = (
            f"{metric.upper()} {pct.upper()} at {worst['value'] / worst['limit']:.0%} of its limit"
        )
    ratio = m["goodput_rps"] / m["offered_rps"]
    return '<div class="cards">' + "".join(
        [
            _architecture_card(result),
            _card("cost", f"${cost * HOURS_PER_MONTH:,.0f}/month", f"${cost:,.2f} per hour"),
            _card("goodput", f"{m['goodput_rps']:.3g} req/s",
                  f"{m['offered_rps']:.3g} req/s offered ({ratio:.2f}x)"),
            _card("BCR", f"{m['bcr_rps_per_usd_hour']:.4g}", "goodput req/s per $/h; "
                  f"${m['usd_per_million_output_tokens']:.2f} per million output tokens"),
            _card("SLA", "met" if m["sla_met"] else "NOT met", sla_note,
                  "ok" if m["sla_met"] else "bad"),
        ]
    ) + "</div>"  # fmt: skip


def _architecture_card(result: dict) -> str:
    """Which architecture: solve's choice over the runner-up (the Summary says why), or
    the one asked for."""
    arch = result["plan"]["architecture"]
    name = ARCH_NAMES.get(arch, arch)
    choice = result.get("architecture_choice")
    if not choice:
        return _card("architecture", name, "as asked (--architecture)")
    if not choice.get("runner_up") or choice.get("ratio") is None:
        return _card("architecture", name, "the only one with a plan")
    other = ARCH_NAMES.get(choice["runner_up"], choice["runner_up"])
    what = "cost" if choice["objective"] == "min_cost" else WHAT[choice["objective"]][4:]
    how = f"{other} costs {choice['ratio']:.3g}x" if what == "cost" else (
        f"{choice['ratio']:.3g}x the {what} of {other}")  # fmt: skip
    offered = (result.get("metrics") or {}).get("offered_rps")
    if capped_note(choice, offered):  # not the ratio of the table's full BCR
        how += ", as solve ranks (Summary)"
    return _card("architecture", f"{name} recommended", how)


def _figure_html(f: Figure, n: int) -> str:
    svg = _prefix_ids(re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", f.svg), f"f{n}-")
    return (f'<figure id="fig-{f.name}">{svg}<figcaption><strong>Figure {n}.</strong> '
            f"{inline(f.caption)}</figcaption></figure>")  # fmt: skip


def _prefix_ids(svg: str, prefix: str) -> str:
    """Ids made unique across the page's SVGs (`id=`, `href="#`, `url(#`)."""
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', svg)
    return re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", svg)


def _numbers(figures: list[Figure], titles: list[str], first: str | None) -> dict[str, int]:
    """Figure numbers in the order a reader meets them: the `first` beside the Summary,
    then each section's in turn."""
    shown = [f.name for f in figures if f.name == first]
    shown += [f.name for t in titles for f in figures if f.section == t and f.name != first]
    return {name: n for n, name in enumerate(shown, 1)}


def render_html(
    markdown: str,
    result: dict,
    figures: list[Figure],
    first: str | None = None,
    extra: tuple[tuple[str, list[str]], ...] = (),
) -> str:
    """The page: title and lead, key figures, the Summary beside the `first` figure, a
    table of contents, then every Markdown section with its figures after it, then the
    `extra` sections ((title, Markdown lines), e.g. the data behind the plots)."""
    head, sections = markdown_sections(markdown)
    title = head[0].lstrip("#").strip() if head else "Sizing report"
    lead = blocks_html(head[1:])
    sections += list(extra)
    numbered = _numbers(figures, [t for t, _ in sections], first)
    toc = "".join(f'<li><a href="#{slug(t)}">{inline(t)}</a></li>' for t, _ in sections)
    parts = [f"<h1>{inline(title)}</h1>", f'<div class="lead">{lead}</div>', key_figures(result)]
    for n, (t, lines) in enumerate(sections):
        body = blocks_html(lines)
        fig = next((f for f in figures if f.name == first), None) if n == 0 else None
        if fig is not None:
            side = _figure_html(fig, numbered[fig.name])
            body = f'<div class="first-screen"><div>{body}</div>{side}</div>'
        parts.append(f'<h2 id="{slug(t)}">{inline(t)}</h2>\n{body}')
        if n == 0:
            parts.append(f'<nav class="toc"><strong>Contents</strong><ul>{toc}</ul></nav>')
        parts += [
            _figure_html(f, numbered[f.name]) for f in figures if f.section == t and f.name != first
        ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(plain(title))}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        + "\n".join(parts)
        + "\n<footer>Self-contained: every figure is inline SVG; nothing is fetched.</footer>\n"
        "</main>\n</body>\n</html>\n"
    )
