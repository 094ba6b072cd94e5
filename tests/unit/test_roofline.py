"""The roofline of one instance, checked against numbers worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from roofline_figures import H200_HBM_BYTES, H200_READ_BYTES_PER_S

from pdd_plan.model.compute.kernels import allreduce_time_s, experts_touched
from pdd_plan.model.compute.roofline import Instance

# Llama-3.1-70B by hand from its config: 80 layers, hidden 8192, 64 q / 8 kv heads of 128,
# MLP 28672, vocabulary 128,256, untied embeddings.
LLAMA_LAYER_PARAMS = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
LLAMA_EMBEDDING_PARAMS = 128256 * 8192
LLAMA_PARAMS = 80 * LLAMA_LAYER_PARAMS + 2 * LLAMA_EMBEDDING_PARAMS + 8192  # 70.55 G
LLAMA_KV_BYTES_PER_TOKEN = 80 * 8 * (128 + 128) * 2  # 327,680 B in BF16
# Kernel latencies of one forward pass (constants of roofline.py): per layer 4 GEMMs at
# 4.5 us (BF16) or 14 us (FP8), one attention kernel at 10 us, 3 memory ops at 3 us.
LLAMA_LATENCY_BF16_S = 80 * (4 * 4.5e-6 + 10e-6 + 3 * 3e-6)  # 2.96 ms
LLAMA_LATENCY_FP8_S = 80 * (4 * 14e-6 + 10e-6 + 3 * 3e-6)  # 6.0 ms


@pytest.fixture(scope="module")
def llama(catalog):
    return catalog.model("llama_3_1_70b")


@pytest.fixture(scope="module")
def h200(catalog):
    return catalog.gpus["h200_sxm"]


def test_llama_weights_by_hand(llama, h200):
    inst = Instance(llama, h200, 1)
    assert llama.params_total() == LLAMA_PARAMS
    assert inst.weight_bytes_per_gpu() == 2 * LLAMA_PARAMS
    assert Instance(llama, h200, 4).weight_bytes_per_gpu() == 2 * LLAMA_PARAMS / 4


def test_llama_decode_at_batch_one_reads_the_weights_once(llama, h200):
    """Batch 1 at 1,000 tokens: weights (less the input embedding table, of which a step
    gathers one row) + the request's KV, at 4.8 TB/s x 0.843, + kernel latencies."""
    inst = Instance(llama, h200, 1)
    read = 2 * (LLAMA_PARAMS - LLAMA_EMBEDDING_PARAMS) + 1000 * LLAMA_KV_BYTES_PER_TOKEN
    by_hand = read / H200_READ_BYTES_PER_S + LLAMA_LATENCY_BF16_S
    assert inst.decode_step_s(1, 1000) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(0.0374, abs=0.0005)  # 34.4 ms of reads + 2.96 ms
    parts = inst.decode_breakdown(1, 1000)
    assert parts["bound"] == "memory"
    assert parts["comm_s"] == 0.0
    assert parts["overhead_s"] == pytest.approx(LLAMA_LATENCY_BF16_S)
    assert parts["total_s"] == pytest.approx(by_hand)


def test_llama_does_not_fit_one_h200_but_fits_two(llama, h200):
    """141 GiB x 0.9 = 136.3 GB < 141.1 GB of BF16 weights; two GPUs leave 131.4 GB, which
    holds 97 requests of 4,096 tokens (1.342 GB each)."""
    one = Instance(llama, h200, 1)
    assert one.kv_capacity_bytes() == pytest.approx(H200_HBM_BYTES * 0.9 - 2 * LLAMA_PARAMS)
    assert not one.fits()
    assert one.max_batch(4096) == 0
    two = Instance(llama, h200, 2)
    capacity = 2 * H200_HBM_BYTES * 0.9 - 2 * LLAMA_PARAMS
    assert two.kv_capacity_bytes() == pytest.approx(capacity)
    assert two.max_batch(4096) == int(capacity // (4096 * LLAMA_KV_BYTES_PER_TOKEN)) == 97
    # FP8 weights fit on one GPU
    fp8 = Instance(llama, h200, 1, weight_dtype="fp8")
    assert fp8.fits() and fp8.max_batch(4096) > 0


def test_prefill_of_8k_tokens_is_compute_bound(llama, h200):
    inst = Instance(llama, h200, 1)
    parts = inst.prefill_breakdown(8192)
    assert parts["bound"] == "compute"
    linears = 2 * (LLAMA_PARAMS - LLAMA_EMBEDDING_PARAMS) * 8192  # ~1.12 PFLOP
    assert parts["compute_s"] > linears / (989e12 * 0.815)
    assert parts["compute_s"] < 1.2 * linears / (989e12 * 0.815)  # + causal attention
    assert parts["memory_s"] < 0.05 * parts["compute_s"]


def test_a_small_tail_chunk_is_weight_bound(llama, h200):
    """A chunk cannot be faster than reading the weights once: per token a 100-token chunk
    costs about twice an 8,192-token one on H200 BF16 (the ridge is about 200 tokens), a
    16-token chunk over ten times."""
    inst = Instance(llama, h200, 1)
    per_token = {n: inst.prefill_time_s(n) / n for n in (16, 100, 8192)}
    assert inst.prefill_breakdown(100)["bound"] == "memory"
    assert inst.prefill_breakdown(100)["memory_s"] >= 2 * LLAMA_PARAMS * 0.98 / (
        H200_READ_BYTES_PER_S
    )
    assert per_token[100] > 1.8 * per_token[8192]
    assert per_token[16] > 10 * per_token[8192]


def test_cached_tokens_cost_their_kv_read_and_attention(llama, h200):
    inst = Instance(llama, h200, 2)
    assert inst.prefill_time_s(1000, 30_000) > inst.prefill_time_s(1000, 0)
    parts = inst.prefill_breakdown(1000, 30_000)
    assert parts["bytes"] >= 31_000 * LLAMA_KV_BYTES_PER_TOKEN


def test_moe_expert_touch_formula():
    assert experts_touched(256, 8, 0) == 0.0
    assert experts_touched(256, 8, 1) == pytest.approx(8.0)
    assert experts_touched(256, 8, 2) == pytest.approx(2 * 8 - 8 * 8 / 256)  # E(1-(1-k/E)^2)
    assert experts_touched(256, 8, 1e6) == pytest.approx(256.0)
    many = experts_touched(256, 8, np.array([1, 10, 100, 1000]))
    assert np.all(np.diff(many) > 0) and many[-1] < 256
    assert experts_touched(8, 8, 3) == 8.0


def test_moe_decode_reads_only_the_touched_experts(catalog, h200):
    """Qwen3-235B-A22B: 94 MoE layers of 128 experts, top 8, each expert 3 x 4096 x 1536."""
    model = catalog.model("qwen3_235b_a22b")
    inst = Instance(model, h200, 8)
    expert_bytes = 3 * 4096 * 1536 * 2
    layers = sum(n for n, _ in model.moe_layout())
    assert layers == 94
    embedding = model.vocab_size * model.hidden_size * 2
    dense = inst.weight_bytes() - model.routed_expert_params() * 2 - embedding
    assert inst.weight_read_bytes(1) == pytest.approx(dense + layers * 8 * expert_bytes)
    assert inst.weight_read_bytes(1e9) == pytest.approx(inst.weight_bytes() - embedding)
    assert inst.decode_step_s(1, 1000) < inst.decode_step_s(64, 1000)


def test_tensor_parallel_all_reduces_by_hand(llama, h200):
    """TP 8 on one HGX board: 2 per layer of B x 8192 x 2 bytes, ring 2 (7/8) bytes / 450 GB/s
    + 4.5 + 1.6 x 7 us."""
    inst = Instance(llama, h200, 8)
    message = 32 * 8192 * 2
    one = 2 * 7 / 8 * message / 450e9 + 4.5e-6 + 1.6e-6 * 7
    assert inst.decode_breakdown(32, 2000)["comm_s"] == pytest.approx(160 * one)
    assert float(allreduce_time_s(h200, 1, 1e9)) == 0.0


def test_beyond_one_board_the_all_reduce_crosses_the_nics(h200):
    """16 GPUs: a ring in each board, then across 2 boards on 1/8 shards at 50 GB/s per NIC."""
    message = 100e6
    inside = 2 * 7 / 8 * message / 450e9
    across = 2 * 1 / 2 * message / 8 / 50e9
    latency = 4.5e-6 + 1.6e-6 * 15
    assert float(allreduce_time_s(h200, 16, message)) == pytest.approx(inside + across + latency)


def test_compute_dtype(catalog, llama, h200):
    a100 = catalog.gpus["a100_80g_sxm"]
    assert Instance(llama, h200, 1).compute_dtype() == "bf16"
    assert Instance(llama, h200, 1, weight_dtype="fp8").compute_dtype() == "fp8"
    assert Instance(llama, h200, 1, weight_dtype="fp4").compute_dtype() == "fp8"
    assert Instance(llama, a100, 2, weight_dtype="fp8").compute_dtype() == "bf16"
    assert Instance(catalog.model("deepseek_v4_pro"), h200, 16).compute_dtype() == "fp8"
    # BF16 attention with MXFP4 experts runs as BF16 compute (weight-only quantisation)
    assert Instance(catalog.model("gpt_oss_120b"), h200, 1).compute_dtype() == "bf16"


def test_extend_decode(llama, h200):
    """m handed-off tokens ride on a decode step: nearly free while the step is memory-bound,
    and the two limits are a decode step and a prefill chunk."""
    inst = Instance(llama, h200, 4)
    decode = inst.decode_step_s(64, 4096)
    assert inst.extend_decode_s(64, 0, 4096) == pytest.approx(decode)
    assert inst.extend_decode_s(0, 500, 4096) == pytest.approx(inst.prefill_time_s(500, 4096))
    assert decode < inst.extend_decode_s(64, 16, 4096) < 1.1 * decode
    assert inst.extend_decode_s(64, 4000, 4096) > 2 * decode


def test_vectorised_calls_match_scalar_ones(llama, h200):
    inst = Instance(llama, h200, 2)
    new = np.array([1, 100, 2000, 8192])
    cached = np.array([0, 5000, 0, 100])
    vector = inst.prefill_time_s(new, cached)
    assert vector.shape == (4,)
    for i in range(4):
        assert vector[i] == pytest.approx(inst.prefill_time_s(int(new[i]), int(cached[i])))
    batches = np.array([1, 8, 64, 256])
    steps = inst.decode_step_s(batches, 3000)
    assert steps == pytest.approx([inst.decode_step_s(int(b), 3000) for b in batches])
    assert isinstance(inst.decode_step_s(8, 3000), float)
    assert inst.decode_step_s(0, 3000) == 0.0


def test_max_batch_for_tpot_finds_the_edge(llama, h200):
    inst = Instance(llama, h200, 4)
    context = 6000
    cap = inst.max_batch(context)
    assert inst.max_batch_for_tpot(1e-4, context) == 0
    assert inst.max_batch_for_tpot(10.0, context) == cap
    tpot = 0.025
    b = inst.max_batch_for_tpot(tpot, context)
    assert 0 < b < cap
    assert inst.decode_step_s(b, context) <= tpot < inst.decode_step_s(b + 1, context)
    assert Instance(llama, h200, 1).max_batch_for_tpot(10.0, context) == 0  # does not fit


def test_published_decode_step_nim_llama_70b_fp8_tp2(catalog):
    """NVIDIA NIM 1.8.0, Llama-3.3-70B-Instruct FP8 on 2 x H100 TP2, 5,000 in / 500 out,
    concurrency 1: ITL 18.58 ms, TTFT 406.77 ms (hardware-reference.md 4C; docs.nvidia.com
    nim/benchmarking/llm/1.0.0/performance.md). FP8 KV assumed. The decode step is the
    independent check of the kernel latencies (STEP_OVERHEAD_S = 0 rests on it): within
    10 %. TTFT adds HTTP, tokenisation and queueing the roofline does not see: within 15 %.
    """
    inst = Instance(catalog.model("llama_3_3_70b"), catalog.gpus["h100_sxm"], 2, "fp8", "fp8")
    parts = inst.decode_breakdown(1, 5000 + 250)
    assert parts["overhead_s"] == pytest.approx(LLAMA_LATENCY_FP8_S)
    assert parts["total_s"] == pytest.approx(18.58e-3, rel=0.10)
    ttft = inst.prefill_time_s(5000) + inst.decode_step_s(1, 5000)
    assert ttft == pytest.approx(406.77e-3, rel=0.15)


def test_bad_instances_are_refused(llama, h200):
    with pytest.raises(ValueError):
        Instance(llama, h200, 0)
    with pytest.raises(KeyError):
        Instance(llama, h200, 1, kv_dtype="fp7")
    with pytest.raises(ValueError):
        Instance(llama, h200, 1).prefill_time_s(-1)


def test_extend_decode_is_vectorised(llama, h200):
    inst = Instance(llama, h200, 4)
    handed = np.array([1, 50, 400])
    context = np.array([1000, 8000, 30000])
    vector = inst.extend_decode_s(12.5, handed, context)
    assert vector == pytest.approx(
        [inst.extend_decode_s(12.5, int(m), int(c)) for m, c in zip(handed, context, strict=True)]
    )
    assert isinstance(inst.extend_decode_s(3, 10, 1000), float)
