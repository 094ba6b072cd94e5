"""Scenarios and Markdown readers the report's tests share."""

import re

from pdd_plan.loaders.scenario import resolve_scenario_path


def fast_scenario_text() -> str:
    """The default scenario with its routing policy fixed (one policy to search instead of
    six) and three architectures: the whole report in about 10 s on 2 cores."""
    text = resolve_scenario_path("default").read_text()
    text = text.replace("rld_hit_threshold: auto", "rld_hit_threshold: 0.9")
    text = text.replace("handoff: auto", "handoff: catch_up").replace("name: default", "name: fast")
    assert "name: fast" in text and "handoff: catch_up" in text
    return text + "architectures: [pdd, idc_pd, cdc_pd]\n"


def section(text: str, title: str) -> str:
    body = text.split(f"\n## {title}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of every Markdown table in `text`, cells stripped."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows
