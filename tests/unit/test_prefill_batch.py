"""Batched prefill (model/queueing/prefill_batch.py): one step over several chunks, the pool as a
batch-service queue, the planner's capacity and the scenario knob."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from pdd_plan.errors import InputError
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.queueing import prefill_batch as pb
from pdd_plan.model.queueing.queueing import ggc_wait
from pdd_plan.model.scenario import PREFILL_TOKEN_BUDGET_PER_GPU
from pdd_plan.model.workload.workload import RequestClasses
from pdd_plan.plan.bounds import BatchedPrefillBound, PrefillBound
from pdd_plan.report.resolved import scenario_json

TEMPLATE = Path(__file__).resolve().parents[2] / "scenarios" / "template.yaml"


def _classes(input_tokens, hit_rate, weight=None) -> RequestClasses:
    n = len(input_tokens)
    return RequestClasses(
        input_tokens=np.asarray(input_tokens, float),
        output_tokens=np.full(n, 100.0),
        hit_rate=np.asarray(hit_rate, float),
        weight=np.full(n, 1.0 / n) if weight is None else np.asarray(weight, float),
    )


@pytest.fixture(scope="module")
def qwen_1(catalog):
    """A dense model on one GPU: no communication, weights read whatever the tokens."""
    return Instance(catalog.model("qwen3_32b"), catalog.gpus["h200_sxm"], 1)


@pytest.mark.parametrize(
    ("model", "gpus", "profile"),
    [
        ("qwen3_32b", 1, None),
        ("llama_3_1_70b", 4, None),
        ("deepseek_v3", 32, None),  # "ep": replicated weights per GPU, all-to-alls
        (
            "llama_3_1_70b",
            4,
            EngineProfile(fixed_step_s=0.002, prefill_request_s=0.001, compute_efficiency_frac=0.8),
        ),  # fmt: skip
    ],
)
def test_one_chunk_is_the_roofline_prefill(catalog, model, gpus, profile):
    kw = {} if profile is None else {"engine_profile": profile}
    inst = Instance(catalog.model(model), catalog.gpus["h200_sxm"], gpus, **kw)
    for new, cached in [(1, 0), (512, 8000), (5000, 0), (16384, 20000)]:
        want = inst.prefill_time_s(new, cached)
        assert pb.batch_step_s(inst, [new], [cached]) == pytest.approx(want, rel=1e-12)


def test_sixteen_tail_chunks_read_the_weights_once(qwen_1):
    """16 chunks of 4 tokens after 4,000 cached, all memory-bound: batching saves 15 times
    the fixed part of a step (overheads + one weight read); each chunk's KV is still read."""
    inst, new, cached = qwen_1, 4, 4000
    compute_s, kv_bytes = pb.chunk_parts(inst, [new] * 16, [cached] * 16)
    bandwidth = inst.gpu.hbm_bytes_per_s * inst.gpu.hbm_efficiency_frac
    weights_s = inst.weight_read_bytes(64) / bandwidth  # dense: the same bytes at any tokens
    assert compute_s.sum() < weights_s  # memory-bound even batched: the hand formula holds
    fixed_s = inst.step_overhead_s + inst.layer_latency_s() + weights_s
    serial = 16 * inst.prefill_time_s(new, cached)
    batched = pb.batch_step_s(inst, [new] * 16, [cached] * 16)
    assert serial - batched == pytest.approx(15 * fixed_s, rel=1e-9)
    assert batched > inst.prefill_time_s(new, cached)  # the 16 KV reads are not free


def test_chunk_rows_split_a_long_prompt_by_the_budget():
    row_class, new, cached = pb.chunk_rows([10_000, 300, 0], [500, 0, 7], 4096)
    assert row_class.tolist() == [0, 0, 0, 1, 2]
    assert new.tolist() == [4096, 4096, 1808, 300, 0]
    assert cached.tolist() == [500, 4596, 8692, 0, 7]


def test_one_request_per_step_is_the_one_at_a_time_queue(qwen_1):
    """Identical requests and a budget of exactly one request: every step is one request,
    so the pool is today's G/G/c with the roofline prefill time (hand: ggc_wait)."""
    c = _classes([2048], [0.75])  # 512 uncached tokens after 1,536 cached
    service = qwen_1.prefill_time_s(512, 1536)
    for rate in (0.5, 5.0, 3.5 / service):
        got_s, wait, util = pb.prefill_queue(qwen_1, c, 4, rate, 1.5, 512, "pdd")
        want = ggc_wait(rate, service, 4, 1.5, 0.0)
        assert got_s[0] == pytest.approx(service, rel=1e-12)
        assert wait.mean_s() == pytest.approx(want.mean_s(), rel=1e-9)
        assert util == pytest.approx(rate * service / 4, rel=1e-9)
    off_s, off_wait, _ = pb.prefill_queue(qwen_1, c, 4, 5.0, 1.5, None, "pdd")
    assert off_s[0] == service and off_wait == ggc_wait(5.0, service, 4, 1.5, 0.0)


def test_capacity_never_falls_as_the_budget_grows(catalog):
    inst = Instance(catalog.model("llama_3_1_70b"), catalog.gpus["h100_sxm"], 4)
    c = _classes([1000, 8000, 32000, 100000], [0.0, 0.5, 0.9, 0.97])
    budgets = [256, 1024, 4096, 16384, 65536]
    caps = [pb.prefill_capacity_rps(inst, c, b, "pdd") for b in budgets]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(caps, caps[1:], strict=False)), caps


def test_small_tail_chunks_raise_capacity_by_the_hand_factor(qwen_1):
    """High hit rate: every request is 4 uncached tokens after 2,000 cached. A budget of
    16 x 4 tokens runs 16 requests per step, memory-bound, so capacity rises by
    16 (O + (W + kv) / bw) / (O + (W + 16 kv) / bw), O the fixed overheads, W the
    weights, kv one request's KV (cached read + new written)."""
    inst, new, cached = qwen_1, 4, 2000
    c = _classes([new + cached], [cached / (new + cached)])
    assert c.uncached_tokens[0] == new
    bandwidth = inst.gpu.hbm_bytes_per_s * inst.gpu.hbm_efficiency_frac
    overhead_s = inst.step_overhead_s + inst.layer_latency_s()
    weights = inst.weight_read_bytes(16 * new)
    kv = inst.model.kv_bytes(new + cached, inst.kv_dtype)
    compute_s, _ = pb.chunk_parts(inst, [new], [cached])
    assert 16 * compute_s[0] < (weights + 16 * kv) / bandwidth  # memory-bound
    factor = 16 * (overhead_s + (weights + kv) / bandwidth)
    factor /= overhead_s + (weights + 16 * kv) / bandwidth
    serial = pb.prefill_capacity_rps(inst, c, None, "pdd")
    batched = pb.prefill_capacity_rps(inst, c, 16 * new, "pdd")
    assert batched / serial == pytest.approx(factor, rel=1e-9)
    assert factor > 3  # the tail-chunk penalty mostly goes away


def test_the_pool_batches_more_as_the_load_grows(qwen_1):
    c = _classes([4096, 4096], [0.99, 0.995])  # 41 and 20 uncached tokens: memory-bound
    mix = pb.prefill_mix(qwen_1, c, 16 * 41)
    cap = mix.capacity_rps()
    last = None
    for frac in (0.05, 0.3, 0.6, 0.9):
        p = pb.pool(mix, frac * cap * 2, 2, 1.0, "prefill")
        assert p.utilization_frac == pytest.approx(frac)
        if last is not None:
            assert p.step_tokens >= last.step_tokens
            assert np.all(p.service_s >= last.service_s - 1e-15)
            assert p.wait.mean_s() >= last.wait.mean_s()
        last = p
    assert last.step_tokens > 4 * mix.mean_chunk_tokens  # batched near capacity
    with pytest.raises(Exception, match="saturated"):
        pb.pool(mix, 1.01 * cap * 2, 2, 1.0, "prefill")


def test_colocated_keeps_one_prefill_at_a_time(qwen_1):
    c = _classes([4096], [0.9])
    one = pb.prefill_queue(qwen_1, c, 2, 3.0, 1.0, 16384, "colocated")
    off = pb.prefill_queue(qwen_1, c, 2, 3.0, 1.0, None, "pdd")
    assert one[0][0] == off[0][0] and one[2] == off[2]


def test_planner_bound_agrees_with_the_pool(catalog, qwen_1):
    """The planner's prefill bound is evaluate's pool: the largest rate it allows for n
    instances sits below the pool's capacity and above the one-at-a-time capacity."""
    scenario = load_scenario(TEMPLATE, catalog)
    c = _classes([2000, 6000], [0.9, 0.95])
    bound = BatchedPrefillBound(qwen_1, c, scenario, "pdd")
    budget = pb.budget_tokens(qwen_1, scenario.engine.prefill_token_budget_per_gpu)
    cap = pb.prefill_mix(qwen_1, c, budget).capacity_rps()
    serial = pb.prefill_capacity_rps(qwen_1, c, None, "pdd")
    assert bound.max_rate(3) <= 3 * cap
    assert bound.max_rate(3) > PrefillBound(qwen_1, c, scenario).max_rate(3)
    assert bound.max_rate(3) > 3 * serial  # more than unbatched prefill could ever carry
    n = bound.min_count(0.9 * bound.max_rate(3))
    assert n is not None and n <= 3


def _scenario_with(tmp_path, engine_yaml: str):
    """The template with these keys in its `engine:` section (kept if it has one)."""
    data = yaml.safe_load(TEMPLATE.read_text())
    data["engine"] = {**(data.get("engine") or {}), **yaml.safe_load(engine_yaml)}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_scenario_budget_knob(tmp_path, catalog):
    assert load_scenario(TEMPLATE, catalog).engine.prefill_token_budget_per_gpu == (
        PREFILL_TOKEN_BUDGET_PER_GPU
    )
    s = load_scenario(_scenario_with(tmp_path, "  prefill_token_budget_per_gpu: 2048\n"), catalog)
    assert s.engine.prefill_token_budget_per_gpu == 2048
    s = load_scenario(_scenario_with(tmp_path, "  prefill_batching: false\n"), catalog)
    assert s.engine.prefill_token_budget_per_gpu is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("  prefill_token_budget_per_gpu: 0\n", "engine.prefill_token_budget_per_gpu"),
        ("  prefill_token_budget_per_gpu: many\n", "engine.prefill_token_budget_per_gpu"),
        ("  prefill_batching: sometimes\n", "engine.prefill_batching"),
        ("  prefill_token_budget: 2048\n", "prefill_token_budget_per_gpu"),  # did you mean
    ],
)
def test_scenario_budget_knob_refuses_bad_values(tmp_path, catalog, line, expected):
    with pytest.raises(InputError) as err:
        load_scenario(_scenario_with(tmp_path, line), catalog)
    assert expected in str(err.value)


@pytest.mark.parametrize(
    "line", ["  prefill_token_budget_per_gpu: 2048\n", "  prefill_batching: false\n"]
)
def test_the_resolved_scenario_keeps_the_budget(tmp_path, catalog, line):
    first = load_scenario(_scenario_with(tmp_path, line), catalog)
    written = tmp_path / "scenario.json"
    written.write_text(json.dumps(scenario_json(first)))
    again = load_scenario(written, catalog)
    assert again.engine.prefill_token_budget_per_gpu == first.engine.prefill_token_budget_per_gpu
