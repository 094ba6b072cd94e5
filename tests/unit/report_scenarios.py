"""Scenarios the report's tests share."""

from pdd_plan.loaders.scenario import resolve_scenario_path


def fast_scenario_text() -> str:
    """The default scenario with its routing policy fixed (one policy to search instead of
    six) and three architectures: the whole report in about 10 s on 2 cores."""
    text = resolve_scenario_path("default").read_text()
    text = text.replace("rld_hit_threshold: auto", "rld_hit_threshold: 0.9")
    text = text.replace("handoff: auto", "handoff: catch_up").replace("name: default", "name: fast")
    assert "name: fast" in text and "handoff: catch_up" in text
    return text + "architectures: [pdd, idc_pd, cdc_pd]\n"
