"""Colocated serving: the prefill pass emits a request's first token (every engine samples
it from the prompt's last position), so TTFT is the prefill queue and the prefill alone,
in the closed form and in the simulator alike; decode emits the other tokens."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from pdd_plan.loaders.plan_file import load_plan
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model import evaluate as ev
from pdd_plan.sim.run import SimConfig, simulate

FIFTY = {"kind": "fixed", "value": 50}


def _setup(tmp_path, catalog, output_tokens, rate: float = 0.02):
    scenario = {
        "name": "colocated_first_token",
        "model": "llama_3_1_70b",
        "datacenters": [{"id": "dc_a", "roles": ["colocated"],
                         "gpus": [{"gpu": "h100_sxm", "max_gpus": 64}]}],
        "workload": {
            "arrival_rate_per_s": rate,
            "input_tokens": {"kind": "fixed", "value": 2000},
            "output_tokens": output_tokens,
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 10, "tpot_p90_ms": 100},
    }  # fmt: skip
    plan = {"plan": {"architecture": "colocated", "instances": [
        {"role": "colocated", "datacenter": "dc_a", "gpu": "h100_sxm",
         "gpus_per_instance": 4, "count": 1}]}}  # fmt: skip
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(plan))
    s = load_scenario(tmp_path / "s.yaml", catalog)
    d = load_plan(tmp_path / "p.yaml", s, catalog)
    return ev.prepare(s, d, catalog.model_for(s), catalog.gpus, catalog.lines)


def test_closed_form_ttft_is_the_prefill_alone_when_nothing_waits(tmp_path, catalog):
    setup = _setup(tmp_path, catalog, FIFTY)
    prefill_s = float(setup.prefill.instance.prefill_time_s(2000, 0))
    snap = ev.snapshot(setup, 0.02)  # one request every 50 s: nothing queues
    assert snap.ttft_s["p50"] == pytest.approx(prefill_s, rel=2e-3)
    assert snap.ttft_s["p99"] < prefill_s + 0.5 * float(
        setup.decode.instance.decode_step_s(1, 2000)
    )


def test_simulated_first_token_is_the_prefill_end(tmp_path, catalog):
    setup = _setup(tmp_path, catalog, FIFTY)
    run = simulate(setup, SimConfig(400, 1, 0.1, rate_per_s=0.02))
    t = run.trace
    assert np.allclose(t.first_token_s, t.prefill.end_s)
    # the other 49 tokens take 49 decode steps at least, each at least a batch-1 step
    step = float(setup.decode.instance.decode_step_s(1, 2000))
    assert (t.done_s - t.first_token_s >= 49 * step * (1 - 1e-9)).all()


def test_a_one_token_answer_ends_with_its_prefill(tmp_path, catalog):
    setup = _setup(tmp_path, catalog, {"kind": "empirical", "values": [1, 50]})
    run = simulate(setup, SimConfig(200, 1, 0.1, rate_per_s=0.02))
    t = run.trace
    one = t.requests.output_tokens == 1
    assert one.any() and (~one).any()
    assert np.allclose(t.done_s[one], t.prefill.end_s[one])
    assert np.allclose(t.first_token_s, t.prefill.end_s)
