"""Did-you-mean (#14 item 10): case and separators aside, then a prefix, then spelling;
a hint, never a silent correction, wherever an id is read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.loaders.suggest import did_you_mean, suggestions

GPUS = ["h100_sxm", "h200_sxm", "h20_96g", "l20", "b200"]
MODELS = ["qwen3_32b", "qwen3_8b", "qwen3_235b_a22b", "llama_3_1_70b"]
TIERS = ["wave_10g", "wave_100g", "cloud_10g"]
EST = ("--isl", "1024", "--osl", "128")


@pytest.mark.parametrize(
    ("typed", "choices", "meant"),
    [
        ("h20", GPUS, "h20_96g"),  # a whole leading part beats `h200_sxm`
        ("qwen3-32b", MODELS, "qwen3_32b"),  # separators
        ("wave_10G", TIERS, "wave_10g"),  # case
        ("H100.SXM", GPUS, "h100_sxm"),  # both at once
        ("Llama 3.1 70B", MODELS, "llama_3_1_70b"),  # spaces
        ("h100_sxn", GPUS, "h100_sxm"),  # a typo: spelling
    ],
)
def test_the_meant_id_is_the_only_suggestion(typed, choices, meant):
    assert suggestions(typed, choices) == [meant]
    assert did_you_mean(typed, choices) == f"did you mean {meant!r}?"


def test_several_prefix_matches_are_all_listed():
    hint = did_you_mean("qwen3", MODELS)
    for model in ("qwen3_32b", "qwen3_8b", "qwen3_235b_a22b"):
        assert repr(model) in hint
    assert "llama" not in hint and hint.startswith("did you mean one of ")


def test_a_long_list_of_prefix_matches_is_cut_and_counted():
    many = [f"gpu_{n}" for n in range(8)]
    hint = did_you_mean("gpu", many)
    assert hint.count("'gpu_") == 5 and "(and 3 more)" in hint


@pytest.mark.parametrize("typed", ["zzzz", "mi300x_ultra_max", "", "   ", "q"])
def test_a_far_or_empty_name_gets_no_guess(typed):
    assert did_you_mean(typed, MODELS) == ""


def test_a_non_text_value_is_compared_as_text():
    assert did_you_mean(90, ["90.0", "50.0"]) == "did you mean '90.0'?"
    assert did_you_mean(None, GPUS) == ""


SCENARIO = """\
name: tiny
model: {model}
datacenters:
  - id: dc_a
    roles: [prefill, decode, colocated]
    gpus:
      - {{gpu: {gpu}, max_gpus: 64}}
  - id: dc_b
    roles: [main_decode]
    gpus:
      - {{gpu: h200_sxm, max_gpus: 64}}
wan:
  rtt_ms: 20
  tiers: [{tier}]
workload:
  arrival_rate_per_s: 2
  input_tokens: {{kind: fixed, value: 4096}}
  output_tokens: {{kind: fixed, value: 200}}
  prefix_hit_rate: {{kind: fixed, value: 0.5}}
sla: {{ttft_p90_s: 10, tpot_p90_ms: 50}}
architectures: [{arch}]
"""


def _problems(tmp_path: Path, **ids) -> list:
    values = {"model": "qwen3_32b", "gpu": "h100_sxm", "tier": "wave_10g", "arch": "cdc_pd"}
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(**{**values, **ids}))
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    return caught.value.problems


@pytest.mark.parametrize(
    ("ids", "key", "meant"),
    [
        ({"model": "qwen3-32b"}, "model", "qwen3_32b"),
        ({"gpu": "h20"}, "datacenters[0].gpus[0].gpu", "h20_96g"),
        ({"tier": "wave_10G"}, "wan.tiers[0]", "wave_10g"),
        ({"arch": "CDC-PD"}, "architectures[0]", "cdc_pd"),
    ],
)
def test_scenario_ids_are_refused_with_the_meant_one(tmp_path, ids, key, meant):
    problems = _problems(tmp_path, **ids)
    assert [p.key_path for p in problems] == [key]
    assert problems[0].hint == f"did you mean {meant!r}?"


def test_a_mistyped_role_gets_a_hint(tmp_path):
    path = tmp_path / "s.yaml"
    text = SCENARIO.format(model="qwen3_32b", gpu="h100_sxm", tier="wave_10g", arch="cdc_pd")
    path.write_text(text.replace("roles: [main_decode]", "roles: [main-decode]"))
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert caught.value.problems[0].hint == "did you mean 'main_decode'?"


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("pdd-plan")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]
    return subprocess.run(
        [*command, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "meant"),
    [
        (("catalog", "show", "h20"), "h20_96g"),
        (("catalog", "show", "WAVE_10G"), "wave_10g"),
        (("model", "show", "qwen3-32b"), "qwen3_32b"),
        (("estimate", "--model", "qwen3-32b", "--gpu", "h100_sxm", *EST), "qwen3_32b"),
        (("estimate", "--model", "qwen3_32b", "--gpu", "h20", *EST), "h20_96g"),
        (("explain", "--architecture", "CDC-PD"), "cdc_pd"),
    ],
)
def test_command_line_ids_are_refused_with_the_meant_one(tmp_path, args, meant):
    result = _cli(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert f"did you mean {meant!r}?" in lines[0]


def test_a_plan_file_gpu_gets_a_hint_among_what_its_datacenter_offers(tmp_path):
    from pdd_plan.loaders.plan_file import load_plan

    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        SCENARIO.format(model="qwen3_32b", gpu="h100_sxm", tier="wave_10g", arch="cdc_pd")
    )
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "plan:\n  architecture: cdc_pd\n  instances:\n"
        "    - {role: prefill, datacenter: dc_a, gpu: H100-SXM, gpus_per_instance: 1, count: 1}\n"
        "    - {role: main_decode, datacenter: dc_b, gpu: h200, gpus_per_instance: 1, count: 1}\n"
        "  lines: [{tier: wave_10g, count: 1}]\n"
    )
    with pytest.raises(InputError) as caught:
        load_plan(plan, load_scenario(scenario))
    hints = {p.key_path: p.hint for p in caught.value.problems}
    assert hints == {
        "plan.instances[0].gpu": "did you mean 'h100_sxm'?",
        "plan.instances[1].gpu": "did you mean 'h200_sxm'?",
    }
