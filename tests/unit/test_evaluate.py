"""evaluate: hand-checkable pieces (cost, routing, RLD share, saturation) and the API."""

import json

import numpy as np
import pytest

from pdd_plan.api import evaluate_plan
from pdd_plan.errors import SaturatedError
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model import routing as rt
from pdd_plan.model.evaluate import goodput_rps, prepare, snapshot


@pytest.fixture(scope="module")
def paper(catalog):
    return load_scenario(resolve_scenario_path("pdd-paper"), catalog)


@pytest.fixture(scope="module")
def paper_hbm_bound(catalog, tmp_path_factory):
    """The paper scenario at the top of its decode KV range (the whole context
    uncompressed, 2.4 GB a request): IDC-PD's decode slots bind before its prefill."""
    text = resolve_scenario_path("pdd-paper").read_text()
    own = "kv_uncompressed_tokens: 128"
    assert own in text
    path = tmp_path_factory.mktemp("paper") / "paper.yaml"
    path.write_text(text.replace(own, "kv_uncompressed_tokens: all"))
    return load_scenario(path, catalog)


def setup_for(catalog, scenario, arch, resolution=(1, 12, 24)):
    plan = load_plan(_plan_path(arch), scenario, catalog)
    model = catalog.model_for(scenario)
    return prepare(scenario, plan, model, catalog.gpus, catalog.lines, resolution)


def _plan_path(arch):
    from pdd_plan.loaders.scenario import scenarios_dir

    return scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml"


def test_cost_by_hand(catalog, paper):
    """PDD plan: 10 x 32 + 24 H100 at $3.99, 16 x 16 H200 at $4.9875, 2 lines at $8,155/month."""
    setup = setup_for(catalog, paper, "pdd")
    expected = (320 + 24) * 3.99 + 256 * 4.9875 + 2 * 8155 / 730
    assert setup.cost_usd_per_hour == pytest.approx(expected)


def test_routing_threshold_splits_by_hit_rate(catalog, paper):
    setup = setup_for(catalog, paper, "pdd")
    c, path = setup.classes, setup.routes.path
    assert np.all(path[c.hit_rate < 0.95] == rt.RELAY)
    assert np.all(path[c.hit_rate >= 0.95] == rt.DIRECT)
    # every request still ships its KV to MD: P -> RLD-only is never chosen
    assert np.all(setup.routes.wan_payload_bytes > 0)


def test_wan_payload_is_the_missing_kv(catalog, paper):
    """A class with hit h ships (1 - h) x 65,536 tokens x 4,474 B plus the 128-token windows
    of 61 layers (61 x 128 x 512 B), at fp8 KV with fp4 indexer keys."""
    setup = setup_for(catalog, paper, "cdc_pd")
    c = setup.classes
    k = int(np.argmin(np.abs(c.hit_rate - 0.5)))
    missing = 65_536 - np.floor(c.hit_rate[k] * 65_536)
    expected = missing * 4474 + 61 * 128 * 512
    assert setup.routes.wan_payload_bytes[k] == pytest.approx(expected, rel=1e-3)


def test_lower_md_cache_means_more_wan_bytes(catalog, paper):
    c = setup_for(catalog, paper, "cdc_pd").classes
    model = catalog.model("deepseek_v4_pro")
    full = rt.route("cdc_pd", c, rt.RoutingPolicy(), paper.policy.short_output_cutoff, model, "fp8")
    half = rt.route(
        "cdc_pd",
        c,
        rt.RoutingPolicy(),
        paper.policy.short_output_cutoff,
        model,
        "fp8",
        md_cache=0.5,
    )
    assert np.all(half.wan_payload_bytes >= full.wan_payload_bytes)
    # a request whose prefix MD lacks (md_cache 0) ships its whole prompt
    none = rt.route("cdc_pd", c, rt.RoutingPolicy(), paper.policy.short_output_cutoff, model,
                    "fp8", md_cache=0.0)  # fmt: skip
    assert np.all(none.wan_payload_bytes >= half.wan_payload_bytes)
    assert none.wan_payload_bytes == pytest.approx(
        rt.kv_payload_bytes(model, "fp8", c.input_tokens, c.input_tokens)
    )


def test_pdd_beats_cdc_pd_on_ttft_tail_and_rld_share_is_small(catalog, paper):
    pdd = snapshot(setup_for(catalog, paper, "pdd"), 60)
    cdc = snapshot(setup_for(catalog, paper, "cdc_pd"), 60)
    assert pdd.ttft_s["p90"] <= 0.7 * cdc.ttft_s["p90"]
    assert pdd.ttft_s["p99"] <= 0.7 * cdc.ttft_s["p99"]
    assert 0.03 <= pdd.rld_token_share_frac <= 0.12  # published 6.2 %


def test_saturation_names_the_queue(catalog, paper):
    setup = setup_for(catalog, paper, "cdc_pd")
    with pytest.raises(SaturatedError) as err:
        snapshot(setup, 10_000)
    assert "offered load" in str(err.value) and "capacity" in str(err.value)


def test_goodput_meets_the_sla_and_just_above_does_not(catalog, paper):
    setup = setup_for(catalog, paper, "idc_pd")
    g = goodput_rps(setup)
    assert g > 0
    from pdd_plan.model.evaluate import meets_sla

    assert meets_sla(setup, g) and not meets_sla(setup, g * 1.01)


def test_cli_json_equals_api(run_cli):
    from pdd_plan.loaders.scenario import scenarios_dir

    plan = str(scenarios_dir() / "plans" / "pdd-paper-pdd.yaml")
    result = run_cli("evaluate", "pdd-paper", plan, "--format", "json")
    assert result.returncode == 0, result.stderr
    cli = json.loads(result.stdout)
    assert cli == json.loads(json.dumps(evaluate_plan("pdd-paper", plan)))
    assert cli["status"] == "evaluated" and cli["plan"]["architecture"] == "pdd"
    for key in (
        "offered_rps",
        "goodput_rps",
        "cost_usd_per_hour",
        "bcr_rps_per_usd_hour",
        "usd_per_million_output_tokens",
        "ttft_s",
        "tpot_s",
        "wan",
        "rld_token_share_frac",
        "sla_met",
    ):
        assert key in cli["metrics"]


def test_evaluate_warns_near_wan_capacity(catalog, paper):
    """At 95 % of the line the closed form is outside its regime and must say so."""
    from pdd_plan.model.evaluate import WAN_TRUST_LIMIT_FRAC, regime_warnings

    setup = setup_for(catalog, paper, "cdc_pd")
    low = snapshot(setup, 30)
    assert low.wan_utilization_frac < WAN_TRUST_LIMIT_FRAC and regime_warnings(low) == ()
    rate = 30 * 0.95 / low.wan_utilization_frac
    high = snapshot(setup, rate)
    assert high.wan_utilization_frac >= WAN_TRUST_LIMIT_FRAC
    assert "WAN line" in regime_warnings(high)[0]


def test_colocated_pauses_are_modelled_not_warned(catalog, paper):
    """Prefill pauses are now part of the TPOT and largest-gap distributions (model/decode/tpot.py):
    a colocated evaluation carries no blanket colocated warning."""
    import dataclasses

    from pdd_plan.model.evaluate import regime_warnings

    disaggregated = snapshot(setup_for(catalog, paper, "idc_pd"), 30)
    colocated = dataclasses.replace(disaggregated, utilization_frac={"colocated": 0.5})
    assert not any("colocated" in w for w in regime_warnings(colocated))


def test_evaluate_warns_near_decode_capacity_and_never_calls_itself_conservative(
    catalog, paper_hbm_bound
):
    """Long simulated runs put the slot wait above the closed form's near capacity: a
    snapshot at >= 95 % of the decode slots says so; one at a third of them does not; no
    warning claims the model is conservative (the finding was an artefact of short runs)."""
    from pdd_plan.model.evaluate import DECODE_TRUST_LIMIT_FRAC, regime_warnings

    setup = setup_for(catalog, paper_hbm_bound, "idc_pd")
    low = snapshot(setup, 20)
    assert low.utilization_frac["decode"] < DECODE_TRUST_LIMIT_FRAC
    assert not any("slot" in w for w in regime_warnings(low))
    high = snapshot(setup, 60)  # its decode saturates near 60.4 req/s (#23's upper layout)
    assert high.utilization_frac["decode"] >= DECODE_TRUST_LIMIT_FRAC
    warned = regime_warnings(high)
    assert any("slot" in w for w in warned)
    assert not any("conservative" in w for w in warned)
