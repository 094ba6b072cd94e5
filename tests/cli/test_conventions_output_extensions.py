"""Issue #24 item 4: an output's extension chooses its format, or it is refused.

`solve --report x.html` writes HTML (it wrote Markdown whatever the name), `x.md`
Markdown; a name whose extension its option does not write is one `error:` line naming
the option, the path and the extensions taken, exit 2, before any work and with nothing
written. A name without an extension, and `-`, keep the option's one format (Markdown for
the report), as before. Expectations: what an HTML page and a Markdown document are
(html.parser finds the document's elements; Markdown starts with its `#` title, no tag),
and the options' own promises in their help.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pdd_plan.cli.output_formats import (
    CATALOG_ENTRY,
    CSV_ONLY,
    HTML,
    HTML_ONLY,
    LP_ONLY,
    MARKDOWN,
    MARKDOWN_ONLY,
    REPORT,
    YAML_ONLY,
    output_format,
)
from tests.hardening.test_hf_import_refusals import LLAMA
from tests.hardening.test_outputs import tiny_scenario

REPO = Path(__file__).resolve().parents[2]
PLAN = str(REPO / "scenarios" / "plans" / "pdd-paper-idc_pd.yaml")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)

    def handle_data(self, data) -> None:
        self.text.append(data)


def _parsed(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    return parser


def test_report_html_is_a_page_with_the_markdown_reports_sections(run_cli, tmp_path):
    """One solve writes both: the HTML page holds every section title of the Markdown."""
    tiny_scenario(tmp_path)
    done = run_cli("solve", "tiny.yaml", "--report", "r.html", "--out", "run")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text()
    markdown = (tmp_path / "run" / "report.md").read_text()
    assert page.lstrip().lower().startswith("<!doctype html>")
    tags = _parsed(page)
    assert {"html", "head", "body", "h1", "h2", "table"} <= set(tags.tags)
    sections = [line[3:].strip() for line in markdown.splitlines() if line.startswith("## ")]
    assert sections
    shown = " ".join(" ".join(tags.text).split())
    for title in sections:
        assert " ".join(title.replace("`", "").replace("**", "").split()) in shown, title
    assert "<" not in markdown.split("\n", 1)[0] and markdown.startswith("# ")


@pytest.mark.slow
def test_report_md_is_markdown(run_cli, tmp_path):
    tiny_scenario(tmp_path)
    done = run_cli("solve", "tiny.yaml", "--report", "r.md")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "r.md").read_text()
    assert text.startswith("# ") and "\n## " in text and "<html" not in text.lower()


@pytest.mark.parametrize(
    "path, expected",
    [("r.md", MARKDOWN), ("r.MARKDOWN", MARKDOWN), ("dir.v2/report", MARKDOWN), ("-", MARKDOWN),
     (".report", MARKDOWN), ("R.HTM", HTML), ("x/r.html", HTML)],
)  # fmt: skip
def test_the_report_format_by_name(path, expected):
    """Case aside, the extension decides; none (a dot in a folder's name or leading a
    hidden file's is not one, nor is `-`) keeps Markdown, as before."""
    assert output_format("--report", path, REPORT) == expected


# option -> a command line writing it with `{}` for the path, and its Formats
REFUSED = {
    "solve --report": (["solve", "--report", "{}"], "--report", REPORT),
    "solve --bom": (["solve", "--bom", "{}"], "--bom", CSV_ONLY),
    "solve --dump-lp": (["solve", "--dump-lp", "{}"], "--dump-lp", LP_ONLY),
    "report --output": (["report", "-o", "{}"], "--output", HTML_ONLY),
    "report --markdown": (
        ["report", "-o", "r.html", "--markdown", "{}"],
        "--markdown",
        MARKDOWN_ONLY,
    ),
    "simulate --trace-out": (
        ["simulate", "pdd-paper", PLAN, "--trace-out", "{}"],
        "--trace-out",
        CSV_ONLY,
    ),  # fmt: skip
    "trace --workload-out": (
        ["trace", "analyze", "t.jsonl", "--workload-out", "{}"],
        "--workload-out",
        YAML_ONLY,
    ),  # fmt: skip
    "trace --scenario-out": (
        ["trace", "analyze", "t.jsonl", "--scenario-out", "{}"],
        "--scenario-out",
        YAML_ONLY,
    ),  # fmt: skip
    "calibrate steps --out": (["calibrate", "steps", "x.csv", "-o", "{}"], "--out", YAML_ONLY),
    "calibrate serving --out": (["calibrate", "serving", "x.csv", "-o", "{}"], "--out", YAML_ONLY),
    "model import --output": (
        ["model", "import", "cfg.json", "-o", "{}"],
        "--output",
        CATALOG_ENTRY,
    ),  # fmt: skip
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(REFUSED))
@pytest.mark.parametrize("name", ["out.txt", "out.pdf"])
def test_an_extension_the_option_does_not_write_is_refused_before_any_work(
    run_cli, tmp_path, case, name
):
    (tmp_path / "cfg.json").write_text(json.dumps(LLAMA))
    (tmp_path / "t.jsonl").write_text('{"timestamp": 0, "input_length": 10, "output_length": 2}\n')
    (tmp_path / "x.csv").write_text("not read: the output is refused first\n")
    args, option, formats = REFUSED[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    done = run_cli(*[name if a == "{}" else a for a in args])
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    line = done.stderr
    assert line.startswith(f"error: {name}: {option}: found the extension .{name[4:]}")
    for extensions in formats.extensions.values():
        assert all(ext in line for ext in extensions)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_model_import_writes_json_for_json_and_refuses_a_contradicting_format(run_cli, tmp_path):
    (tmp_path / "cfg.json").write_text(json.dumps(LLAMA))
    done = run_cli("model", "import", "cfg.json", "--id", "tiny", "-o", "e.json")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "e.json").read_text())["id"] == "tiny"
    refused = run_cli("model", "import", "cfg.json", "--id", "t", "-o", "e.yaml", "--format",
                      "json")  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "e.yaml" in refused.stderr and "--format json" in refused.stderr
    assert not (tmp_path / "e.yaml").exists()


@pytest.mark.slow
def test_each_output_options_help_names_its_extension(run_cli):
    helps = {
        ("solve",): (".md", ".html", ".csv"),
        ("report",): (".html", ".md"),
        ("simulate",): (".csv",),
        ("calibrate", "steps"): (".yaml",),
        ("model", "import"): (".yaml", ".json"),
    }
    for command, extensions in helps.items():
        text = run_cli(*command, "--help").stdout
        assert all(ext in text for ext in extensions), command
