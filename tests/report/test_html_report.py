"""The HTML sizing report: built once (tiny scenario, coarse request classes), it holds
every Markdown section and table cell, its plots are inline, nothing is fetched, and it
renders in headless Chromium with no console error and a screenshot that is not blank."""

from __future__ import annotations

import html as htmllib
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pdd_plan.report.html import blocks_html, inline
from pdd_plan.report.markdown import SECTIONS
from pdd_plan.report.plots import pareto_front

TINY = Path(__file__).parent.parent / "sweep" / "tiny.yaml"
CHROMIUM = "/usr/bin/chromium"
# logs every console message's text, every resource the page loaded, and a resource that
# failed; the line PROBE-DONE shows the probe itself ran
PROBE = """<script>
window.addEventListener('error',
  e => console.error('resource error ' + (e.target.src || e.target.href || e.message)), true);
window.addEventListener('load', () => {
  for (const r of performance.getEntriesByType('resource')) console.log('RESOURCE ' + r.name);
  console.log('PROBE-DONE');
});
</script>"""


@pytest.fixture(scope="module")
def report():
    from pdd_plan.stages.reporting.report_build import build

    return build(str(TINY), "pdd", jobs=2, resolution=(2, 3, 8), hit_means=(0.5, 0.7, 0.9))


def text_of(page: str) -> str:
    page = re.sub(r"<(svg|style)\b.*?</\1>", " ", page, flags=re.S)
    page = re.sub(r"</(td|th|li|p|h\d|div|blockquote|figcaption)>|<br>", " ", page)
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", "", page)).split())


@pytest.mark.slow
def test_every_markdown_heading_is_an_html_heading(report):
    headings = re.findall(r"^## (.+)$", report.markdown, flags=re.M)
    assert headings == list(SECTIONS)
    for h in headings:
        assert re.search(rf"<h2 id=\"[a-z0-9-]+\">{re.escape(htmllib.escape(h, False))}</h2>",
                         report.html), h  # fmt: skip


@pytest.mark.slow
def test_every_markdown_table_cell_and_bullet_is_in_the_html(report):
    text = text_of(report.html)
    cells = 0
    for line in report.markdown.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            parts = re.split(r"(?<!\\)\|", line.strip()[1:-1])
        elif line.startswith("- "):
            parts = [line[2:]]
        else:
            continue
        for part in parts:
            plain = " ".join(part.replace("**", "").replace("`", "").replace("\\|", "|").split())
            assert plain in text, plain
            cells += 1
    assert cells > 100


@pytest.mark.slow
def test_the_plots_are_inline_svg_and_nothing_is_fetched(report):
    page = report.html
    assert page.count("<svg") == 4 == len(report.figures)
    lowered = page.lower()
    # a price source's address may be shown as text (provenance); nothing may load it
    for forbidden in ("<script", "<link", "<img", "<iframe", "<object", "@import", "src=",
                      "//fonts", "url(http", "url(//", "<a href=\"http"):  # fmt: skip
        assert forbidden not in lowered, forbidden
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', page))
    assert all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", page))
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # the SVGs' ids do not collide


@pytest.mark.slow
def test_the_first_screen_has_the_key_figures_and_the_bathtub(report):
    first = report.html[: report.html.index('<nav class="toc">')]
    for words in ("Sizing report: tiny", "/month", "req/s", "BCR", "SLA", "Rent", "<svg"):
        assert words in first, words
    assert 'id="fig-bathtub"' in first


def _chromium(page: Path, shot: Path, profile: Path) -> str:
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            f"--screenshot={shot}", "--window-size=1280,1600", page.as_uri()]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return done.stderr


def _console(stderr: str) -> list[str]:
    return re.findall(r':CONSOLE[^\]]*\] "(.*?)", source:', stderr)


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="no /usr/bin/chromium")
def test_headless_chromium_renders_it_without_console_errors(report, tmp_path):
    import matplotlib.image

    bad = tmp_path / "bad.html"  # the check itself can fail: a page with two errors
    bad.write_text(f"<!DOCTYPE html><html><head>{PROBE}</head><body><p>x</p>"
                   "<script>console.error('boom'); nope();</script></body></html>")  # fmt: skip
    messages = _console(_chromium(bad, tmp_path / "bad.png", tmp_path / "p1"))
    assert "boom" in messages and any("nope" in m for m in messages)

    page = tmp_path / "report.html"
    page.write_text(report.html.replace("<head>", "<head>" + PROBE, 1))
    shot = tmp_path / "report.png"
    messages = _console(_chromium(page, shot, tmp_path / "p2"))
    assert "PROBE-DONE" in messages  # the page loaded and the probe ran
    assert [m for m in messages if m != "PROBE-DONE"] == []  # no error, no resource
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1280)
    assert pixels.std() > 0.05  # not a blank page
    assert (pixels.mean(axis=2) < 0.5).mean() > 0.005  # some dark ink: text and lines


def test_pareto_front_matches_a_brute_force_definition():
    rng = np.random.default_rng(1)
    for _ in range(200):
        pts = [tuple(p) for p in rng.integers(0, 6, size=(rng.integers(1, 12), 2)).astype(float)]
        beaten = {p for p in pts if any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in pts)}
        expected = sorted(set(pts) - beaten)
        assert pareto_front(pts) == expected


def test_markdown_subset_converts():
    assert inline("**a** `b|<c>` d<e") == "<strong>a</strong> <code>b|&lt;c&gt;</code> d&lt;e"
    out = blocks_html(["| h1 | h2 |", "|---|---|", "| a \\| b | **c** |", "", "- x", "- y",
                       "", "> warning: w", "", "para", "more"])  # fmt: skip
    assert "<th>h1</th><th>h2</th>" in out
    assert "<td>a | b</td><td><strong>c</strong></td>" in out
    assert "<ul><li>x</li><li>y</li></ul>" in out
    assert "<blockquote>warning: w</blockquote>" in out
    assert "<p>para more</p>" in out


@pytest.mark.slow
def test_report_data_table_lists_every_case(report):
    text = text_of(report.html)
    assert "Data behind the plots" in text
    for r in report.rows:
        assert r["status"] in text
    assert len(report.rows) == 3 + 3 + 2 * 3  # hit means, IDC-PD at them, 3 prices x 2
