"""Issue #22 point 8, the report's assumptions: exactly the rows of the plan's model,
architecture and mechanisms in use, and none that names a file or an internal of the
optimiser that changes no answer (those docs/assumptions.md keeps)."""

from __future__ import annotations

import copy
import re

import pytest

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.report.assumption_scope import applicable
from pdd_plan.report.assumptions import ASSUMPTIONS
from tests.report.issue22_plans import P_H100, group, plan


@pytest.fixture(scope="module")
def default(catalog):
    return load_scenario(resolve_scenario_path("default"), catalog)


# --- the assumptions the report lists -------------------------------------------------


def _starts(rows) -> set[str]:
    return {a for a, _ in rows}


def _has(rows, start: str) -> bool:
    return any(a.startswith(start) for a in _starts(rows))


def _scenario(tmp_path, catalog, model: str, **extra):
    text = resolve_scenario_path("default").read_text()
    text = text.replace("model: deepseek_v4_pro", f"model: {model}").replace("kv_dtype: fp8", "")
    path = tmp_path / f"{model}.yaml"
    path.write_text(text + "".join(f"{k}: {v}\n" for k, v in extra.items()))
    return load_scenario(path, catalog)


def test_a_qwen3_235b_plan_gets_no_other_models_attention_row(tmp_path, catalog):
    gate = "Gated attention output gates (Qwen3-Next, Qwen3.5)"
    assert any(a.startswith(gate) for a, _ in ASSUMPTIONS)  # the row the issue met
    s = _scenario(tmp_path, catalog, "qwen3_235b_a22b")  # plain GQA: no gate, bias or sink
    assert not _has(applicable(s, catalog.model_for(s), "cdc_pd"), gate)
    nxt = _scenario(tmp_path, catalog, "qwen3_next_80b")  # gated attention: the row is its
    assert _has(applicable(nxt, catalog.model_for(nxt), "cdc_pd"), gate)


def test_no_row_shown_names_a_file_or_changes_no_answer(catalog, default):
    # from the assumptions table (docs/assumptions.md): rows whose bias says they change no
    # answer, or that name a file of the repository
    hidden = {a for a, b in ASSUMPTIONS if b.startswith(("none on answers", "none (exact"))
              or re.search(r"tests/|\.py\b", a + b)}  # fmt: skip
    assert len(hidden) >= 4  # the four of the search, the verdict and HiGHS
    for name in ("default", "pdd-paper", "template"):
        s = load_scenario(resolve_scenario_path(name), catalog)
        for arch in ("pdd", "cdc_pd", "idc_pd", "colocated"):
            shown = _starts(applicable(s, catalog.model_for(s), arch))
            assert not shown & hidden, (name, arch)


def test_mechanism_rows_follow_the_plan(default, catalog):
    m = catalog.model_for(default)
    md = group("main_decode", "dc_b", "h20_96g", 8, 2)
    base = plan("pdd", P_H100, group("relay_decode", "dc_a", "h100_sxm", 8, 1), md,
                lines=[("wave_10g", 1)])  # fmt: skip

    def rows(**change):
        p = copy.deepcopy(base)
        p["policy"] |= change.pop("policy", {})
        p.update(change)
        return applicable(default, m, "pdd", {"plan": p}, catalog.gpus)

    cut = ("The cut-off's consistency cost", "Cut-off threshold", "The cut-off selects")
    cache = ("MD's decode-side cache", "One decode-side LRU", "The closed form and the planner")
    mixed = ("A mixed decode role is split", "Each group of a mixed role", "Each group's")
    catch_up = ("Catch-up's rounds", "Catch-up's absorbing steps")
    plain = rows()
    for start in (*cut, *cache, *mixed):  # none of these is in the plan
        assert not _has(plain, start), start
    assert all(_has(plain, s) for s in catch_up) and _has(plain, "Relay overflow")
    assert all(_has(rows(policy={"short_output_cutoff": True}), s) for s in cut)
    assert not any(_has(rows(policy={"handoff": "one_shot"}), s) for s in catch_up)
    bought = rows(decode_cache={"tier": "ssd", "tb": 8.0, "price_usd_per_tb_month": 74.5})
    assert all(_has(bought, s) for s in cache)
    two = rows(instances=[*base["instances"], group("main_decode", "dc_b", "h200_sxm", 8, 1)])
    assert all(_has(two, s) for s in mixed)


def test_price_rows_follow_where_the_plans_prices_come_from(catalog):
    s = load_scenario(resolve_scenario_path("pdd-paper"), catalog)  # sets H200 and line prices
    m = catalog.model_for(s)
    md = group("main_decode", "dc_b", "h200_sxm", 16, 9)
    mine = plan("cdc_pd", group("prefill", "dc_a", "h100_sxm", 24, 5), md,
                lines=[("wave_10g", 2)])  # fmt: skip
    rows = applicable(s, m, "cdc_pd", {"plan": mine}, catalog.gpus)
    assert _has(rows, "Rental prices are neocloud")  # H100 at the catalog's price
    assert not _has(rows, "Line prices are European")  # wave_10g priced by the scenario
    only_md = plan("cdc_pd", md, lines=[("wave_10g", 2)])
    assert not _has(applicable(s, m, "cdc_pd", {"plan": only_md}, catalog.gpus),
                    "Rental prices are neocloud")  # fmt: skip
