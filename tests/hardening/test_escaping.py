"""Issue #10 items 5 and 13: user text escaped for each medium it reaches.

A scenario whose name and description hold HTML, a Markdown heading after a newline, an
ESC sequence, a carriage return before a fake `error:` line and rich markup must come out
as that text, literally: no `<script>` element in report.md or the HTML report, no heading
the template did not make, no ESC byte and no forged `error:` line on the terminal, and no
`[bold]` interpreted. The Markdown is checked with markdown-it (CommonMark + GFM tables,
installed with rich), a renderer independent of the report's own HTML converter.
"""

from __future__ import annotations

import csv
import html as html_lib
import io
import json
import re
import subprocess

import pytest
import yaml
from markdown_it import MarkdownIt

from pdd_plan.errors import Problem, visible
from pdd_plan.report.html import blocks_html, inline, render_html
from pdd_plan.report.markdown import SECTIONS
from pdd_plan.report.md_format import cell, md_code, md_text, table
from tests.hardening.conftest import (
    TINY,
    assert_no_traceback,
    assert_one_error_line,
    cli_command,
    cli_env,
)

HOSTILE = "<script>alert(1)</script>\n## Injected \x1b[2J \rerror: fake [bold red]x[/]"
NAME = "evil " + HOSTILE
DESCRIPTION = "desc " + HOSTILE
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")  # newline and tab apart


def write_scenario(folder, name=NAME, description=DESCRIPTION, file="evil.yaml"):
    path = folder / file
    path.write_text(yaml.safe_dump({**TINY, "name": name, "description": description}))
    return path


def commonmark(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(text)


def shown_text(html_text: str) -> str:
    """What a browser shows of an HTML fragment: tags dropped, entities decoded."""
    return html_lib.unescape(re.sub(r"<[^>]+>", "", html_text))


def folded(text: str) -> str:
    """The user text as the Markdown media must show it: each line break (as Python's
    splitlines sees them) a space, other controls as their escapes, ends stripped."""
    return visible(" ".join(text.splitlines())).strip()


def headings(html_text: str) -> list[str]:
    return re.findall(r"<h[1-6][ >]", html_text)


# --- errors.visible and Problem.line -------------------------------------------------


def test_visible_leaves_no_control_character_and_is_idempotent():
    every = "".join(map(chr, range(0x00, 0xA0))) + "\u2028\u2029\u202e\u2066"
    shown = visible(every)
    assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202e\u2066]", shown)
    assert "\\x1b" in shown and "\\n" in shown and "\\r" in shown and "\\u2028" in shown
    assert visible(shown) == shown
    assert visible("plain text, ümlaut, 价格") == "plain text, ümlaut, 价格"


def test_a_problem_with_hostile_fields_is_one_line_without_controls():
    line = Problem("a\nb.yaml", "name", HOSTILE, "text\x1b", "hint\r").line()
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line.startswith("a\\nb.yaml: name: found <script>")


# --- Markdown: md_text, md_code, cells -------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [HOSTILE, "# heading", "- item", "1. item", "> quote", "| a | b |", "**bold** _it_ `c`",
     "[link](javascript:alert(1))", "&amp; &lt;b&gt;", "back\\slash \\| pipe", "    indented",
     "===", "<img src=x onerror=alert(1)>", "a\u2028b"],
)  # fmt: skip
def test_md_text_is_shown_literally_by_commonmark(text):
    rendered = commonmark(f"{md_text(text)}\n")
    assert re.fullmatch(r"<p>.*</p>\n", rendered, re.S), rendered  # one paragraph
    assert "<script" not in rendered and "<img" not in rendered and "<a " not in rendered
    assert shown_text(rendered).strip() == folded(text)


def test_md_text_in_a_table_cell_and_a_heading_is_shown_literally():
    text = "x | y \\| <b>z</b> `q` **w**"
    rendered = commonmark("\n".join(table(["h"], [[md_text(text)]])) + "\n")
    cells = re.findall(r"<td>(.*?)</td>", rendered)
    assert [shown_text(c) for c in cells] == [text]
    head = commonmark(f"# Sizing report: {md_text(HOSTILE)}\n")
    assert headings(head) == ["<h1>"]
    assert shown_text(head).strip() == "Sizing report: " + folded(HOSTILE)


def test_md_code_keeps_plain_names_as_code_and_escapes_the_rest():
    assert md_code("evil.yaml") == "`evil.yaml`"
    for text in ("a`b", "<script>", "x & y"):
        rendered = commonmark(f"file {md_code(text)}\n")
        assert shown_text(rendered).strip() == f"file {text}"
        assert "<script" not in rendered


def test_cell_escapes_bars_once():
    assert cell("a|b") == "a\\|b"
    assert cell("a\\|b") == "a\\|b"  # already escaped
    assert cell("a\\\\|b") == "a\\\\\\|b"  # an escaped backslash, then a bar
    assert cell("a\nb") == "a b"


# --- HTML: the report's converter -----------------------------------------------------


def test_the_html_converter_shows_what_commonmark_shows():
    lines = [f"Scenario {md_code('n')} {md_text(HOSTILE)} **bold** `co|de`", "",
             *table(["name", "value"], [[md_text(HOSTILE), "`x`"], ["a \\| b", "**y**"]]),
             "", f"- {md_text('- item <i>')}", "", f"> warning: {md_text(HOSTILE)}"]  # fmt: skip
    ours = blocks_html(lines)
    theirs = commonmark("\n".join(lines) + "\n")
    assert "<script" not in ours and "<i>" not in ours
    assert headings(ours) == []

    def squash(fragment: str) -> str:  # tags as spaces: the two lay out cells differently
        return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())

    assert squash(ours) == squash(theirs)
    assert ours.count("<td>") == theirs.count("<td>") == 4
    assert ours.count("<strong>") == theirs.count("<strong>") == 2


def test_a_placeholder_like_text_is_shown_as_written():
    # the old converter swapped code spans out as "\x00<n>\x00": user text of that form
    # became a code span; NUL and digits are text like any other here
    text = "see `real` then \x000\x00 and \x001\x00"
    assert inline(text) == "see <code>real</code> then \x000\x00 and \x001\x00"
    escaped = md_text("\x000\x00 `real`")
    assert shown_text(inline(escaped)) == "\\x000\\x00 `real`"
    assert "<code>" not in inline(escaped)


def test_unpaired_bold_and_escapes_stay_literal():
    assert inline("a ** b") == "a ** b"
    assert inline("**a** and ** c") == "<strong>a</strong> and ** c"
    assert inline("\\*\\*a\\*\\*") == "**a**"
    assert inline("&lt;b&gt; &amp;amp; &bogus;") == "&lt;b&gt; &amp;amp; &amp;bogus;"


# --- the terminal and the files, end to end -----------------------------------------


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """One `solve --report --out --bom` of the hostile scenario."""
    folder = tmp_path_factory.mktemp("solve")
    write_scenario(folder)
    args = ["solve", "evil.yaml", "--time-limit", "5", "--report", "r.md", "--out", "out",
            "--bom", "b.csv"]  # fmt: skip
    result = subprocess.run([*cli_command(), *args], cwd=folder, env=cli_env(),
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    return folder, result


def assert_terminal_clean(result):
    for stream in (result.stdout, result.stderr):
        assert "\x1b" not in stream and "\r" not in stream
        assert not CONTROL.search(stream)
    forged = [x for x in (result.stdout + result.stderr).splitlines() if x.startswith("error:")]
    return forged


@pytest.mark.slow
def test_solve_prints_the_name_literally(solved):
    _, result = solved
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert assert_terminal_clean(result) == []
    # markup shown as written, the ESC and the line breaks as escapes, on one line
    flat = re.sub(r"\s", "", result.stdout)  # rich wraps long lines at spaces
    assert "[boldred]x[/]" in flat
    assert "\\x1b[2J" in flat and "\\n##Injected" in flat


def test_solve_report_has_the_template_headings_and_no_html(solved):
    folder, _ = solved
    for path in (folder / "r.md", folder / "out" / "report.md"):
        text = path.read_text()
        assert "<script" not in text and "\x1b" not in text
        rendered = commonmark(text)
        assert "<script" not in rendered
        assert headings(rendered).count("<h1>") == 1
        assert re.findall(r"<h2>([^<]*)</h2>", rendered) == list(SECTIONS)
        assert f"desc {folded(HOSTILE)}" in shown_text(rendered)


def test_the_solved_report_as_html_has_the_template_headings(solved):
    folder, _ = solved
    markdown = (folder / "r.md").read_text()
    result = json.loads((folder / "out" / "plan.json").read_text())
    extra = (("Data behind the plots", table(["case"], [[md_text(HOSTILE)]])),)
    page = render_html(markdown, result, [], None, extra)
    assert "<script" not in page.lower() and "\x1b" not in page
    titles = re.findall(r'<h2 id="[^"]*">([^<]*)</h2>', page)
    assert titles == [*SECTIONS, "Data behind the plots"]
    assert len(re.findall(r"<h1>", page)) == 1
    assert shown_text(re.search(r"<title>(.*?)</title>", page).group(1)) == (
        "Sizing report: " + folded(NAME)
    )
    assert f"desc {folded(HOSTILE)}" in shown_text(page)


def test_bom_csv_keeps_one_row_per_line(solved):
    folder, _ = solved
    rows = list(csv.reader(io.StringIO((folder / "b.csv").read_text())))
    assert len({len(r) for r in rows}) == 1  # every row as wide as the header
    assert all("\n" not in c and "\x1b" not in c for r in rows for c in r)


def test_report_html_has_the_template_headings_and_no_script(cli, tmp_path):
    write_scenario(tmp_path)
    result = cli("report", "evil.yaml", "-o", "r.html", "--markdown", "r.md", "--time-limit",
                 "5", "--hit-rates", "0.9", timeout=300)  # fmt: skip
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert assert_terminal_clean(result) == []
    page = (tmp_path / "r.html").read_text()
    assert "<script" not in page.lower()
    titles = re.findall(r'<h2 id="[^"]*">([^<]*)</h2>', page)
    assert titles == [*SECTIONS, "Data behind the plots"]
    assert len(re.findall(r"<h1>", page)) == 1
    title = re.search(r"<h1>(.*?)</h1>", page).group(1)
    assert shown_text(title) == "Sizing report: " + folded(NAME)
    assert "<script" not in (tmp_path / "r.md").read_text()


def test_validate_shows_markup_and_controls_as_text(cli, tmp_path):
    write_scenario(tmp_path)
    result = cli("scenario", "validate", "evil.yaml")
    assert result.returncode == 0, result.stderr
    assert assert_terminal_clean(result) == []
    first = result.stdout.splitlines()[0] + result.stdout.splitlines()[1]
    assert "[bold red]x[/]" in first


def test_a_hostile_file_name_stays_on_its_error_line(cli, tmp_path):
    name = "bad\rerror: fake\n\x1b[2Jx.yaml"
    (tmp_path / name).write_text("name: [unclosed\n")
    result = cli("scenario", "validate", name)
    line = assert_one_error_line(result, 2, "\\r", "\\n", "\\x1b[2J")
    assert "\x1b" not in result.stderr
    assert line.startswith("error: ")


@pytest.mark.slow
def test_a_hostile_scenario_argument_stays_on_its_error_line(cli):
    result = cli("solve", "nothing\x1b[2J\rerror: forged\nerror: again")
    assert_one_error_line(result, 2, "\\x1b[2J", "\\r", "\\n")


@pytest.mark.slow
def test_a_markup_like_output_folder_is_printed_as_written(cli, tmp_path):
    write_scenario(tmp_path, name="tiny")
    folder = "o[bold]x"  # a style tag to rich; no slash, so one folder
    result = cli("sweep", "evil.yaml", "--vary", "workload.arrival_rate_per_s=-1", "--jobs",
                 "1", "--out", folder)  # fmt: skip
    assert_no_traceback(result)
    assert result.returncode == 2  # its one point is bad input
    assert f"files in {folder}" in result.stdout
    assert (tmp_path / folder / "sweep.csv").is_file()
