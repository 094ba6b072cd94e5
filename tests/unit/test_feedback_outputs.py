"""Outputs that feed back in (#14 item 8): `solve --out`'s plan.json is a plan file, its
scenario.json a scenario file (the tool refused both for keys it wrote itself)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario, scenarios_dir
from pdd_plan.report.resolved import scenario_json

TWO_DC = """\
name: tiny2
model: qwen3_32b
datacenters:
  - id: dc_a
    roles: [prefill]
    gpus:
      - {gpu: h100_sxm, max_gpus: 16}
  - id: dc_b
    roles: [main_decode]
    gpus:
      - {gpu: h20_96g, max_gpus: 16}
wan:
  rtt_ms: 10
  tiers: [wave_10g]
workload:
  arrival_rate_per_s: 1
  input_tokens: {kind: fixed, value: 2048}
  output_tokens: {kind: fixed, value: 100}
  prefix_hit_rate: {kind: fixed, value: 0.5}
sla: {ttft_p90_s: 5, tpot_p90_ms: 80}
"""

# every section and every kind of value the resolved form has to write back: distributions
# of each kind, per-pair links, mixes, prices, power, the engine's sourced figures
EVERY_KEY = """\
name: every_key
description: all the optional sections
model: qwen3_32b
kv_dtype: fp8
weight_dtype: bf16
datacenters:
  - id: dc_a
    name: Ashburn
    roles: [prefill, relay_decode]
    power_budget_kw: 1200
    budget_usd_per_hour: 900
    gpus:
      - {gpu: h100_sxm, price_usd_per_gpu_hour: 2.5, max_gpus: 64, gpus_per_instance: [1, 2]}
  - id: dc_b
    roles: [main_decode]
    gpus:
      - {gpu: h20_96g}
wan:
  rtt_ms: 35
  tiers: [wave_10g, wave_100g]
  tier_prices_usd_per_month: {wave_10g: 5000}
  per_connection_gbit_per_s: 0.5
  connection_pool_size: 32
  max_lines: 8
  links:
    - {between: [dc_b, dc_a], rtt_ms: 17.3}
workload:
  arrival_rate_per_s: 3.7
  burstiness_cv2: 2.5
  input_tokens: {kind: lognormal, median: 8000, sigma: 0.7, low: 512, high: 65536}
  output_tokens: {kind: empirical, values: [50, 300, 900], weights: [1, 2, 1]}
  prefix_hit_rate:
    kind: bins
    bins:
      - {low: 0.1, high: 0.5, share: 0.3}
      - {low: 0.5, high: 0.9, share: 0.7}
  prefix_hit_rate_alternatives:
    narrow: {kind: beta, alpha: 20, beta: 2.2, low: 0.0, high: 1.0}
    flat: {kind: fixed, value: 0.4}
  prefix_reuse:
    capacity_tokens: [1.0e6, 4.0e6, 1.6e7]
    resident_frac: [0.15, 0.48, 0.9]
    at_arrival_rate_per_s: 10
sla: {ttft_p90_s: 4, ttft_p99_s: 9.5, tpot_p50_ms: 35, tpot_p99.9_ms: 120}
objective: {kind: min_cost, demand_rps: 3}
policy:
  rld_hit_threshold: 0.8
  handoff: one_shot
  short_output_cutoff: {enabled: true, min_uncached_bytes_per_output_token: 2.0e5}
  utilization_cap_frac: 0.7
  decode_cache_capacity_tokens: 1.0e7
costs:
  include_power: true
  power_usd_per_kwh: 0.13
  pue: 1.4
  amortization_years: 5
  charge_whole_nodes: true
engine:
  kv_uncompressed_tokens: all
  kv_layout_source: a benchmark of ours
  handoff_fixed_ms: 235.6
  handoff_fixed_source: a measurement of ours
  reserve_max_output: true
architectures: [cdc_pd, pdd]
"""


def _resolved_round_trip(source: Path, tmp_path: Path):
    first = load_scenario(source)
    written = tmp_path / "scenario.json"
    written.write_text(json.dumps(scenario_json(first), indent=2))
    return first, load_scenario(written)


def _same(a, b) -> bool:
    return dataclasses.replace(a, source_file="") == dataclasses.replace(b, source_file="")


def test_the_resolved_form_of_every_key_reads_back_to_the_same_scenario(tmp_path):
    source = tmp_path / "every.yaml"
    source.write_text(EVERY_KEY)
    first, again = _resolved_round_trip(source, tmp_path)
    assert _same(first, again)
    # figures the loader scales (ms, kW, Gbit/s) survive exactly, not to the last ulp
    assert again.wan.link_rtt_s == {("dc_b", "dc_a"): pytest.approx(0.0173, rel=1e-12)}
    assert again.sla.tpot_s == {50.0: pytest.approx(0.035), 99.9: pytest.approx(0.12)}
    assert again.datacenters[0].power_budget_w == 1.2e6


@pytest.mark.parametrize("name", sorted(p.stem for p in scenarios_dir().glob("*.yaml")))
def test_the_resolved_form_of_each_shipped_scenario_reads_back(tmp_path, name):
    # a key added to the scenario format later and forgotten by the resolved form fails here
    first, again = _resolved_round_trip(scenarios_dir() / f"{name}.yaml", tmp_path)
    assert _same(first, again)


def test_the_resolved_form_has_no_empty_texts_or_lists(tmp_path):
    """A scenario file may not hold "" or [] (the loader refuses them): never written."""
    source = tmp_path / "s.yaml"
    source.write_text(TWO_DC)
    stack = [scenario_json(load_scenario(source))]
    while stack:
        item = stack.pop()
        values = item.values() if isinstance(item, dict) else item
        for value in values:
            assert value != "" and value != [], item
            if isinstance(value, dict | list):
                stack.append(value)


PLAN = {
    "architecture": "cdc_pd",
    "instances": [
        {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm",
         "gpus_per_instance": 1, "count": 2},
        {"role": "main_decode", "datacenter": "dc_b", "gpu": "h20_96g",
         "gpus_per_instance": 2, "count": 1},
    ],
    "lines": [{"tier": "wave_10g", "capacity_gbit_per_s": 10.0, "count": 1}],
}  # fmt: skip
RESULT = {
    "scenario": "tiny2", "status": "optimal", "plan": PLAN, "metrics": {"goodput_rps": 1.0},
    "solver": {"name": "HiGHS"}, "role_arithmetic": [{"role": "prefill"}],
    "architecture_choice": {"winner": "cdc_pd"},
}  # fmt: skip


def _plan(tmp_path: Path, document) -> object:
    scenario_path = tmp_path / "s.yaml"
    scenario_path.write_text(TWO_DC)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(document))
    return load_plan(plan_path, load_scenario(scenario_path))


# `solve --confidence` adds `confidence` to its result, a saturated `evaluate` `saturation`
# (both refused as unknown keys before issue #25)
MARGINED = {**RESULT, "confidence": {"text": "a margin"}, "saturation": {"first": "P is saturated"}}


@pytest.mark.parametrize(
    "document", [RESULT, MARGINED, {"plan": PLAN}, PLAN], ids=["result", "margined", "plan", "bare"]
)
def test_a_result_a_plan_file_and_a_bare_plan_give_the_same_deployment(tmp_path, document):
    d = _plan(tmp_path, document)
    assert d.architecture == "cdc_pd"
    assert [(g.role, g.gpu, g.gpus_per_instance, g.count) for g in d.instances] == [
        ("prefill", "h100_sxm", 1, 2),
        ("main_decode", "h20_96g", 2, 1),
    ]
    assert [(line.tier, line.count) for line in d.lines] == [("wave_10g", 1)]


@pytest.mark.parametrize(
    ("document", "key", "hint"),
    [
        ({**RESULT, "metrix": {}}, "metrix", "did you mean 'metrics'?"),
        ({**PLAN, "instance": []}, "instance", "did you mean 'instances'?"),
        ({**RESULT, "plan": None}, "plan", ""),
        ({"status": "infeasible"}, "plan", ""),
    ],
)
def test_keys_the_tool_never_writes_are_still_refused(tmp_path, document, key, hint):
    with pytest.raises(InputError) as caught:
        _plan(tmp_path, document)
    problems = caught.value.problems
    assert key in [p.key_path for p in problems]
    assert hint in next(p.hint for p in problems if p.key_path == key)


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("pdd-plan")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _ok(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_solve_out_feeds_every_command_that_reads_plans_and_scenarios(tmp_path):
    (tmp_path / "s.yaml").write_text(TWO_DC)
    first = _ok(_cli(tmp_path, "solve", "s.yaml", "--out", "d", "--format", "json"))
    assert first["status"] == "optimal"
    plan = json.loads((tmp_path / "d" / "plan.json").read_text())
    assert plan["plan"] == first["plan"]
    evaluated = _ok(_cli(tmp_path, "evaluate", "s.yaml", "d/plan.json", "--format", "json"))
    assert evaluated["plan"] == first["plan"]
    simulated = _cli(
        tmp_path, "simulate", "s.yaml", "d/plan.json", "--requests", "2300", "--format", "json"
    )
    assert _ok(simulated)["plan"] == first["plan"]
    swept = _cli(
        tmp_path, "sweep", "s.yaml", "--plan", "d/plan.json", "--jobs", "1",
        "--vary", "workload.arrival_rate_per_s=1,1.5", "--format", "json",
    )  # fmt: skip
    assert _ok(swept)["points_failed"] == 0
    validated = _cli(tmp_path, "scenario", "validate", "d/scenario.json")
    assert validated.returncode == 0, validated.stderr
    # the same scenario must give the same answer, whichever file it was read from
    again = _ok(_cli(tmp_path, "solve", "d/scenario.json", "--format", "json"))
    assert again["plan"] == first["plan"]
    assert again["metrics"]["cost_usd_per_hour"] == first["metrics"]["cost_usd_per_hour"]
