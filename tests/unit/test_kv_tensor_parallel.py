"""KV room and KV traffic under tensor parallelism (issue #22, point 3): t GPUs split a
cache by its KV heads, so t > heads holds each head t / heads times (vLLM and SGLang
replicate KV heads across TP ranks). Expectations are hand arithmetic from the published
configs: Qwen3-235B-A22B has 94 layers of 4 KV heads of 128 (K and V), Llama-3.1-70B 80
layers of 8 KV heads of 128, DeepSeek-V3 one 512 + 64 MLA latent per layer."""

from __future__ import annotations

import math

import pytest

from pdd_plan.model.compute.attention import tp_replication
from pdd_plan.model.compute.roofline import Instance

QWEN_FP8_BYTES_PER_TOKEN = 94 * 4 * (128 + 128) * 1  # 96,256
LLAMA_BF16_BYTES_PER_TOKEN = 80 * 8 * (128 + 128) * 2  # 327,680


@pytest.mark.parametrize(
    ("tp", "heads", "copies"),
    [(1, 8, 1.0), (4, 8, 1.0), (8, 8, 1.0), (8, 4, 2.0), (16, 8, 2.0), (8, 1, 8.0),
     (3, 8, 9 / 8)],  # 3 GPUs over 8 heads: 3, 3 and 2 heads, the widest sets the layout
)  # fmt: skip
def test_replication_is_tp_times_heads_per_gpu_over_heads(tp, heads, copies):
    assert tp_replication(tp, heads) == pytest.approx(copies)


def test_qwen3_235b_holds_each_kv_head_twice_under_tp8(catalog):
    model = catalog.model("qwen3_235b_a22b")
    assert model.kv_bytes(1000, "fp8") == QWEN_FP8_BYTES_PER_TOKEN * 1000
    assert model.kv_bytes(1000, "fp8", 8) == 2 * QWEN_FP8_BYTES_PER_TOKEN * 1000
    assert model.kv_bytes(1000, "fp8", 4) == QWEN_FP8_BYTES_PER_TOKEN * 1000


def test_tp8_max_batch_counts_the_replicated_heads(catalog):
    inst = Instance(catalog.model("qwen3_235b_a22b"), catalog.gpus["h200_sxm"], 8, "fp8",
                    parallelism="tp")  # fmt: skip
    tokens = 16_000
    expected = math.floor(inst.kv_capacity_bytes() / (2 * QWEN_FP8_BYTES_PER_TOKEN * tokens))
    assert inst.max_batch(tokens) == expected


def test_a_dense_tp16_step_reads_each_requests_kv_twice(catalog):
    inst = Instance(catalog.model("llama_3_1_70b"), catalog.gpus["h100_sxm"], 16, "bf16")
    assert inst.parallel_mode() == "tp"  # a dense model has no expert parallelism
    context = 8_000
    one = inst.decode_breakdown(1, context)["bytes"]
    two = inst.decode_breakdown(2, context)["bytes"]
    # dense weights are read once whatever the batch: the second request adds its KV,
    # held (and read) by two GPUs per KV head
    assert two - one == pytest.approx(2 * LLAMA_BF16_BYTES_PER_TOKEN * context, rel=1e-9)


def test_an_mla_moe_on_one_node_runs_dp_attention_rather_than_8_latent_copies(catalog):
    # TP8 would hold DeepSeek-V3's single latent on all 8 GPUs; DP attention + EP (the
    # engines' DeepSeek recipe on one node) holds each request's KV once
    model = catalog.model("deepseek_v3")
    auto = Instance(model, catalog.gpus["h200_sxm"], 8, "fp8")
    tp = Instance(model, catalog.gpus["h200_sxm"], 8, "fp8", parallelism="tp")
    assert model.kv_bytes(4096, "fp8", 8) == 8 * model.kv_bytes(4096, "fp8")
    assert auto.parallel_mode() == "ep" and auto.held_kv_bytes(4096) == model.kv_bytes(4096, "fp8")
    assert tp.held_kv_bytes(4096) == 8 * model.kv_bytes(4096, "fp8")
    assert auto.max_batch(32_000) > tp.max_batch(32_000)


def test_a_dense_model_within_its_kv_heads_is_unchanged(catalog):
    inst = Instance(catalog.model("llama_3_1_70b"), catalog.gpus["h100_sxm"], 8, "bf16")
    expected = math.floor(inst.kv_capacity_bytes() / (LLAMA_BF16_BYTES_PER_TOKEN * 8_000))
    assert inst.max_batch(8_000) == expected


def test_the_simulator_admits_by_the_same_replicated_bytes(catalog, tmp_path):
    """The simulator's KV need per request on a TP16 pool is what the closed form counts:
    twice the model's layout for Llama-3.1-70B (8 KV heads over 16 GPUs)."""
    import numpy as np

    from pdd_plan.model.setup import RolePool
    from pdd_plan.sim.decode_stage import _kv_need
    from pdd_plan.sim.sampling import Requests

    inst = Instance(catalog.model("llama_3_1_70b"), catalog.gpus["h100_sxm"], 16, "bf16")
    pool = RolePool(None, inst, None)
    zeros = np.zeros(2)
    req = Requests(zeros, np.array([1000.0, 3000.0]), np.array([100.0, 200.0]), zeros)

    class _Scenario:  # only what reserve_output_tokens reads: no reservation of the max
        engine = None

    need = _kv_need(pool, _Scenario(), req)
    # each request counts its input and half its output (decode_admission.reserved_tokens)
    assert need.tolist() == [2 * LLAMA_BF16_BYTES_PER_TOKEN * 1050,
                             2 * LLAMA_BF16_BYTES_PER_TOKEN * 3100]  # fmt: skip
