"""The optimiser with mixed pools (issue #15 item 4, `policy.mixed_pools`): where the
cheapest decode type is capped, a mix beats the best single-type plan (each type solved
alone here); where nothing is capped and one type dominates, mixing changes nothing."""

from __future__ import annotations

import pytest

from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.evaluate import meets_sla, prepare
from pdd_plan.plan.solve import solve

# Main decode in dc_b on 1-GPU instances: H200 at $2.00/GPU-h or H20 at $2.20. An H200 has
# more HBM bandwidth (4.8 vs 4.0 TB/s) and more room for KV (141 vs 96 GB) at a lower
# price, so it dominates the H20; only a cap on H200s makes an H20 worth buying.
SCENARIO = """\
name: mixcap
model: llama_3_1_70b
kv_dtype: fp8
weight_dtype: fp8
datacenters:
  - id: dc_a
    roles: [prefill]
    gpus:
      - {gpu: h100_sxm, price_usd_per_gpu_hour: 3.0, gpus_per_instance: [2]}
  - id: dc_b
    roles: [main_decode]
    gpus:
%(offers)s
wan: {rtt_ms: 20, tiers: [wave_10g], per_connection_gbit_per_s: 4}
workload:
  arrival_rate_per_s: 45
  input_tokens: {kind: fixed, value: 2000}
  output_tokens: {kind: fixed, value: 300}
  prefix_hit_rate: {kind: fixed, value: 0.5}
sla: {ttft_p90_s: 5, tpot_p90_ms: 60}
objective: {kind: min_cost}
policy: {mixed_pools: %(mixed)s}
"""
H200 = "      - {gpu: h200_sxm, price_usd_per_gpu_hour: 2.0, gpus_per_instance: [1]%s}"
H20 = "      - {gpu: h20_96g, price_usd_per_gpu_hour: 2.2, gpus_per_instance: [1]}"
CAP = ", max_gpus: 2"
RESOLUTION = (1, 1, 1)


def _solve(catalog, tmp_path, offers, mixed, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(SCENARIO % {"offers": "\n".join(offers), "mixed": mixed})
    s = load_scenario(path, catalog)
    return s, solve(s, catalog.model_for(s), catalog.gpus, catalog.lines, "cdc_pd",
                    RESOLUTION, 60)  # fmt: skip


def _decode(result):
    return sorted((g.gpu, g.count) for g in result.deployment.role("main_decode"))


def test_with_h200s_capped_a_mix_beats_every_single_type(catalog, tmp_path):
    s, mixed = _solve(catalog, tmp_path, [H200 % CAP, H20], "true", "mixed")
    gpus = [g for g, _ in _decode(mixed)]
    assert sorted(gpus) == sorted(["h20_96g", "h200_sxm"]), _decode(mixed)
    # the best single-type plan, each type solved alone: two H200s cannot carry 45 req/s
    # (the search's bound refuses it), so the H20s alone are the best single type
    with pytest.raises(InfeasibleError):
        _solve(catalog, tmp_path, [H200 % CAP], "false", "h200_only")
    _, h20_only = _solve(catalog, tmp_path, [H20], "false", "h20_only")
    best_single = h20_only.metrics.cost_usd_per_hour
    assert mixed.metrics.cost_usd_per_hour < best_single
    # the mix's cost by hand: prefill H100s at $3, H200s at $2, H20s at $2.2, the lines
    line = catalog.lines["wave_10g"].price_usd_per_month / 730
    by_hand = sum(
        g.gpus * {"h100_sxm": 3.0, "h200_sxm": 2.0, "h20_96g": 2.2}[g.gpu]
        for g in mixed.deployment.instances
    ) + line * sum(x.count for x in mixed.deployment.lines)
    assert mixed.metrics.cost_usd_per_hour == pytest.approx(by_hand)
    # within the cap, verified by evaluate at the demand, and said to be outside the proof
    assert dict(_decode(mixed))["h200_sxm"] <= 2
    setup = prepare(s, mixed.deployment, catalog.model_for(s), catalog.gpus, catalog.lines,
                    RESOLUTION)  # fmt: skip
    assert meets_sla(setup, 45)
    assert any("mixes GPU types" in w for w in mixed.metrics.warnings)


def test_without_caps_mixing_changes_nothing(catalog, tmp_path):
    _, mixed = _solve(catalog, tmp_path, [H200 % "", H20], "true", "mixed")
    _, single = _solve(catalog, tmp_path, [H200 % "", H20], "false", "single")
    assert mixed.deployment == single.deployment
    assert mixed.metrics.cost_usd_per_hour == single.metrics.cost_usd_per_hour
    assert _decode(single) == [("h200_sxm", _decode(single)[0][1])]
    assert not any("mixes GPU types" in w for w in mixed.metrics.warnings)


def test_the_switch_is_validated_like_every_scenario_key(catalog, tmp_path):
    from pdd_plan.errors import InputError

    path = tmp_path / "bad.yaml"
    path.write_text(SCENARIO % {"offers": H20, "mixed": "'yes'"})
    with pytest.raises(InputError, match="policy.mixed_pools: found 'yes'; expected true or false"):
        load_scenario(path, catalog)
    path.write_text(
        (SCENARIO % {"offers": H20, "mixed": "true"}).replace("mixed_pools", "mixed_pool")
    )
    with pytest.raises(InputError, match="mixed_pools"):
        load_scenario(path, catalog)


def test_the_bom_lists_each_group_and_explain_shows_the_split(catalog, tmp_path):
    from pdd_plan.model.deployment_json import plan_json
    from pdd_plan.plan.explain import explain
    from pdd_plan.report.bom import bom_csv

    s, mixed = _solve(catalog, tmp_path, [H200 % CAP, H20], "true", "mixed")
    groups = dict(_decode(mixed))
    bom = bom_csv(plan_json(mixed.deployment), s, catalog)
    rows = [r for r in bom.splitlines() if "main_decode" in r]
    for gpu, count in groups.items():  # one GPU row per group, with its GPU count
        assert any(gpu in r and f",{count}," in r for r in rows), (gpu, rows)
    out = explain(s, catalog.model_for(s), catalog.gpus, catalog.lines, "cdc_pd", RESOLUTION,
                  60, solved=mixed)  # fmt: skip
    split = out["roles"]["decode_split"]
    assert {g["gpu"]: g["count"] for g in split} == groups
    assert sum(g["share_frac"] for g in split) == pytest.approx(1.0)
    # the H200 carries more per GPU (more bandwidth, more KV room): per instance, a larger
    # share than an H20 (both groups are 1-GPU instances)
    per = {g["gpu"]: g["share_frac"] / g["count"] for g in split}
    assert per["h200_sxm"] > per["h20_96g"]


def test_a_mix_serves_what_no_single_type_can(catalog, tmp_path):
    """H200s capped at 2 GPUs and H20s at 6: neither type alone carries 45 req/s (the
    capped test above needs 3 H200 or 9 H20 alone), together they do. One 100G line, so
    the line is far from its cap. (With H20s capped at 4, 2 H200 + 3 H20 would carry it,
    but the MILP's capacities under the 0.85 cap find no mix: the MILP, not the walk,
    decides which mixes are tried.)"""
    h20_capped = H20.replace("}", ", max_gpus: 6}")

    def solved(offers, mixed, name):
        path = tmp_path / f"{name}.yaml"
        text = SCENARIO % {"offers": "\n".join(offers), "mixed": mixed}
        path.write_text(text.replace("[wave_10g]", "[wave_100g]"))
        s = load_scenario(path, catalog)
        return solve(s, catalog.model_for(s), catalog.gpus, catalog.lines, "cdc_pd",
                     RESOLUTION, 60)  # fmt: skip

    for alone in (H200 % CAP, h20_capped):
        with pytest.raises(InfeasibleError):
            solved([alone], "false", "alone")
    mixed = solved([H200 % CAP, h20_capped], "true", "both")
    groups = dict(_decode(mixed))
    assert set(groups) == {"h200_sxm", "h20_96g"}
    assert groups["h200_sxm"] <= 2 and groups["h20_96g"] <= 6
    assert mixed.metrics.sla_met


def test_the_switch_is_on_by_default_and_the_resolved_scenario_says_when_it_is_off(
    catalog, tmp_path
):
    from pdd_plan.report.resolved import scenario_json

    path = tmp_path / "s.yaml"
    text = SCENARIO % {"offers": H20, "mixed": "true"}
    path.write_text(text.replace("policy: {mixed_pools: true}\n", ""))
    on = load_scenario(path, catalog)
    assert on.policy.mixed_pools is True
    assert "mixed_pools" not in scenario_json(on)["policy"]
    path.write_text(SCENARIO % {"offers": H20, "mixed": "false"})
    off = load_scenario(path, catalog)
    assert scenario_json(off)["policy"]["mixed_pools"] is False
