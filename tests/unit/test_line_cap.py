"""The line is planned under the utilisation cap, as the GPU roles are (issue #14, item 3):
a plan whose line would run above `policy.utilization_cap_frac` at the rate it must carry
is never chosen, even where it is the cheapest plan that meets the SLA."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.unit.test_infeasibility import cross_dc

LLAMA_KV_BYTES_PER_TOKEN = 327_680  # 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B (bf16)
JUMBO_FRAME = (9000 - 52) / (9000 + 38)  # payload per wire byte: MTU 9000, IP+TCP, Ethernet
RATE_RPS = 0.83
TOKENS = 4000
CAP = 0.85


def scenario() -> dict:
    """CDC-PD, every request ships its whole prompt's KV over 10 Gbit/s lines: 0.83 req/s
    x 4000 x 327,680 B x 8 = 8.70 Gbit/s, 88 % of one line's 9.90 Gbit/s of payload. The
    SLA is loose: one line meets it, and is the cheapest plan, but runs above the cap."""
    data = cross_dc(
        workload__arrival_rate_per_s=RATE_RPS,
        sla__ttft_p90_s=60,
        policy={"utilization_cap_frac": CAP},
        objective={"kind": "min_cost"},
    )
    data["name"] = "cap"
    assert data["workload"]["input_tokens"] == {"kind": "fixed", "value": TOKENS}
    return data


def test_one_line_would_run_above_the_cap():
    """The premise, by hand: one line's load is above the cap, two lines' below."""
    load = RATE_RPS * TOKENS * LLAMA_KV_BYTES_PER_TOKEN * 8
    one_line = 10e9 * JUMBO_FRAME
    assert CAP < load / one_line < 0.9
    assert load / (2 * one_line) < CAP


@pytest.mark.slow
def test_the_plan_keeps_its_line_under_the_cap(run_cli, tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario()))
    result = run_cli("solve", "s.yaml", "--format", "json", "--time-limit", "10")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    capacity = sum(ln["capacity_gbit_per_s"] * ln["count"] for ln in answer["plan"]["lines"])
    load_gbit = RATE_RPS * TOKENS * LLAMA_KV_BYTES_PER_TOKEN * 8 / 1e9
    assert load_gbit / (capacity * JUMBO_FRAME) <= CAP
    assert answer["metrics"]["wan"]["utilization_frac"] <= CAP
    assert not any("WAN line" in w for w in answer["metrics"]["warnings"])
