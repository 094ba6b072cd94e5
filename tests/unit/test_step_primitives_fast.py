"""The step primitives' fast paths (issue #15): prepared collectives, the engine profile's
plain-float adjustment, the roofline's hoisted token terms and the model's memoised totals.

Each fast path is checked against an expectation derived apart from it: the collective
formulas written out here by hand, the numpy path of the same function (a different
code path: arrays, np.where, np.maximum) on a table of edge values, and memo keys by
asking with one key part changed.
"""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from pdd_plan.model.compute import engine_profile as ep
from pdd_plan.model.compute.hardware import Gpu
from pdd_plan.model.compute.kernels import (
    ALLREDUCE_BASE_LATENCY_S,
    ALLREDUCE_STEP_LATENCY_S,
    EP_ALLTOALL_LATENCY_S,
    EP_LOAD_IMBALANCE,
    AllReduce,
    AllToAll,
    allreduce_time_s,
    alltoall_time_s,
    experts_touched,
)
from pdd_plan.model.compute.roofline import Instance

# a hand-made GPU with round figures: 8 per domain, 100 GB/s fabric x 0.5, 400 Gbit/s NIC
GPU = Gpu(
    id="toy", name="toy", vendor="x", bf16_flop_per_s=1e15, fp8_flop_per_s=2e15,
    fp4_flop_per_s=None, hbm_bytes=80e9, hbm_bytes_per_s=4e12, scale_up_bytes_per_s=100e9,
    scale_up_domain_gpus=8, scale_out_bits_per_s=400e9, gpus_per_node=8, tdp_w=700,
    rental_usd_per_gpu_hour=2.0, purchase_usd_per_gpu=None, bf16_mfu_frac=0.7,
    fp8_mfu_frac=0.6, hbm_efficiency_frac=0.8, scale_up_efficiency_frac=0.5,
    usable_memory_frac=0.9,
)  # fmt: skip
FABRIC = 50e9  # 100 GB/s x 0.5
NIC = 50e9  # 400 Gbit/s / 8


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


# ---- collectives -------------------------------------------------------------------------
@pytest.mark.parametrize("gpus", [2, 4, 8, 16, 24, 72])
@pytest.mark.parametrize("message", [0.0, 1.0, 14_336.0, 3e7])
def test_allreduce_matches_the_hand_formula(gpus, message):
    """Ring inside a domain of g = min(N, 8); beyond, a ring across D = ceil(N / 8) domains
    on each GPU's 1/g shard over its NIC; + 4.5 us + 1.6 us x (N - 1)."""
    g = min(gpus, 8)
    want = 2 * (g - 1) / g * message / FABRIC
    if gpus > 8:
        domains = math.ceil(gpus / 8)
        want += 2 * (domains - 1) / domains * message / g / NIC
    want += ALLREDUCE_BASE_LATENCY_S + ALLREDUCE_STEP_LATENCY_S * (gpus - 1)
    assert _rel(allreduce_time_s(GPU, gpus, message), want) < 1e-12
    assert _rel(AllReduce.of(GPU, gpus).time_s(message), want) < 1e-12


@pytest.mark.parametrize("gpus", [2, 8, 9, 32, 144])
@pytest.mark.parametrize("send", [0.0, 1.0, 7_340_032.0, 1e9])
def test_alltoall_matches_the_hand_formula(gpus, send):
    """(g - 1) / N of the bytes over the fabric and (N - g) / N over the NIC, at once."""
    g = min(gpus, 8)
    want = max(send * (g - 1) / gpus / FABRIC, send * (gpus - g) / gpus / NIC)
    want += EP_ALLTOALL_LATENCY_S
    assert _rel(alltoall_time_s(GPU, gpus, send), want) < 1e-12
    assert _rel(AllToAll.of(GPU, gpus).time_s(send), want) < 1e-12


@pytest.mark.parametrize("kind", [AllReduce, AllToAll])
@pytest.mark.parametrize("gpus", [1, 2, 8, 16, 72])
def test_prepared_collectives_give_floats_equal_to_arrays(kind, gpus):
    """A float stays a float, an array an array, with the same value element by element;
    one GPU communicates nothing (and a non-finite size stays non-finite)."""
    prepared = kind.of(GPU, gpus)
    sizes = [0.0, 1.0, 2.5, 1e6, 3e9, math.inf]
    with np.errstate(invalid="ignore"):  # inf x 0 on one GPU
        many = prepared.time_s(np.array(sizes))
    for i, size in enumerate(sizes):
        one = prepared.time_s(size)
        assert isinstance(one, float)
        assert one == many[i] or (math.isnan(one) and math.isnan(many[i]))
    if gpus == 1:
        assert prepared.time_s(1e9) == 0.0 and math.isnan(prepared.time_s(math.inf))


def test_experts_touched_float_equals_array_and_the_closed_form():
    """E (1 - (1 - k/E)^T): the float path (its log(1 - k/E) memoised per (E, k)) equals the
    array path bit for bit and the plain power to 1e-12."""
    for experts, top_k in ((256, 8), (64, 6), (128, 1), (8, 2)):
        tokens = np.array([0.0, 1.0, 2.0, 3.5, 100.0, 4096.0, 1e6])
        many = experts_touched(experts, top_k, tokens)
        for i, t in enumerate(tokens):
            one = experts_touched(experts, top_k, float(t))
            assert isinstance(one, float) and one == many[i]
            want = experts * (1 - (1 - top_k / experts) ** t)
            assert abs(one - want) <= 1e-12 * experts
    assert experts_touched(8, 8, 5.0) == 8.0 and experts_touched(8, 8, 0.0) == 0.0


# ---- the engine profile's plain-float path ------------------------------------------------
def _profile(rng: random.Random) -> ep.EngineProfile:
    values = {k: rng.uniform(low, min(high, 2.0)) for k, (_, low, high) in ep.PARAMETERS.items()}
    values["comm_overlap_frac"] = rng.uniform(0.0, 0.9)
    return ep.EngineProfile(name="random", **values)


EDGE_COUNTS = [
    (0.0, 0.0, 0.0),  # no tokens
    (0.0, 1.0, 1.0),  # one prompt token
    (0.0, 3.0, 600.0),  # a prefill batch (eager on one group: 1,800 > 512)
    (64.0, 0.0, 0.0),  # decode only
    (12.0, 1.0, 500.0),  # mixed, at the CUDA-graph edge (512)
    (7.5, 0.25, 3.5),  # fractional means
    (1e6, 4.0, 1e6),  # huge
]


@pytest.mark.parametrize("seed", range(4))
def test_profile_float_path_equals_the_numpy_path(seed):
    """`adjust` of Python numbers (plain floats) equals `step_parts` over one-element arrays
    (np.where, np.maximum) exactly, for random profiles, edge counts, given eager flags,
    and parts that are 0, large or NaN."""
    rng = random.Random(seed)
    profiles = [ep.IDENTITY] + [_profile(rng) for _ in range(5)]
    parts_table = [
        {"compute_s": 0.01, "memory_s": 0.02, "comm_s": 0.003},
        {"compute_s": 0.0, "memory_s": 0.0, "comm_s": 0.0},
        {"compute_s": 5.0, "memory_s": 0.1, "comm_s": 2.0},
        {"compute_s": math.nan, "memory_s": 0.1, "comm_s": 0.0},
    ]
    for profile in profiles:
        for parts in parts_table:
            parts = {**parts, "step_overhead_s": rng.choice((0.0, 1e-3)), "layer_s": 0.004}
            for decode, prompts, new in EDGE_COUNTS:
                for groups in (1, 8):
                    counts = {"decode_requests": decode, "prompts": prompts, "new_tokens": new,
                              "groups": groups}  # fmt: skip
                    for extra in ({}, {"eager": 1.0}, {"eager": 0.0}):
                        _check_adjust(profile, parts, {**counts, **extra})


def _check_adjust(profile, parts, counts):
    fast = profile.adjust(parts, counts)
    arrays = {k: np.array([v], dtype=float) for k, v in counts.items() if k != "groups"}
    slow = ep.step_parts(profile.vector(), parts, {**arrays, "groups": counts["groups"]})
    for a, b in zip(fast, slow, strict=True):
        assert isinstance(a, float)
        b = float(np.asarray(b).reshape(-1)[0])
        assert a == b or (math.isnan(a) and math.isnan(b)), (profile.name, parts, counts)


def test_profile_parameters_follow_a_replaced_profile():
    """The plain-float parameters are the profile's own: a replaced profile (a fit's trial)
    carries its new values, not its parent's."""
    base = ep.EngineProfile(name="a", fixed_step_s=0.001)
    moved = dataclasses.replace(base, fixed_step_s=0.002)
    parts = {"compute_s": 0.0, "memory_s": 0.0, "comm_s": 0.0, "step_overhead_s": 0.0,
             "layer_s": 0.0}  # fmt: skip
    counts = {"decode_requests": 1.0, "prompts": 0.0, "new_tokens": 0.0, "groups": 1}
    assert base.adjust(parts, counts)[3] == 0.001
    assert moved.adjust(parts, counts)[3] == 0.002
    assert moved.with_vector(base.vector()).adjust(parts, counts)[3] == 0.001


# ---- the roofline's token terms -------------------------------------------------------------
def _instances(catalog):
    dsv3, llama = catalog.model("deepseek_v3"), catalog.model("llama_3_1_70b")
    h200 = catalog.gpus["h200_sxm"]
    return [
        Instance(dsv3, h200, 8),  # tp (auto, one domain)
        Instance(dsv3, h200, 32),  # ep (auto, beyond one domain)
        Instance(dsv3, h200, 16, parallelism="tp"),  # tp across two domains
        Instance(dsv3, h200, 8, parallelism="ep", weight_dtype="fp8"),  # ep inside one
        Instance(llama, h200, 1),
        Instance(llama, h200, 4),
    ]


TOKENS = [0.0, 1.0, 2.0, 2.5, 511.0, 512.0, 16_384.0, 524_288.0, 1e9]


def test_token_terms_float_equals_array(catalog):
    """The communication and weight-read terms of a float token count equal the same
    count inside an array, bit for bit, on tp and ep instances (a dense model's weight
    reads do not depend on the tokens: one float for an array too)."""
    shape = (len(TOKENS),)
    for inst in _instances(catalog):
        many_comm = inst._comm_s(np.array(TOKENS))
        many_read = np.broadcast_to(inst.weight_read_bytes(np.array(TOKENS)), shape)
        many_ep = np.broadcast_to(inst.ep_weight_read_bytes_per_gpu(np.array(TOKENS)), shape)
        for i, t in enumerate(TOKENS):
            assert inst._comm_s(t) == many_comm[i]
            assert inst.weight_read_bytes(t) == many_read[i]
            assert inst.ep_weight_read_bytes_per_gpu(t) == many_ep[i]


def test_ep_communication_matches_the_hand_count(catalog):
    """DeepSeek-V3 on 32 H200 in "ep": 58 MoE layers x (an FP8 dispatch + a BF16 combine)
    of the busiest GPU's 1.2 x T / 32 tokens x top-8 x 7,168 wide."""
    inst = Instance(catalog.model("deepseek_v3"), catalog.gpus["h200_sxm"], 32)
    assert inst.parallel_mode() == "ep" and inst.compute_dtype() == "fp8"
    tokens = 16_384.0
    copies = EP_LOAD_IMBALANCE * tokens / 32 * 8 * 7168
    gpu = inst.gpu
    want = 58 * (alltoall_time_s(gpu, 32, copies * 1.0) + alltoall_time_s(gpu, 32, copies * 2.0))
    assert _rel(inst._comm_s(tokens), want) < 1e-12
    tp = Instance(catalog.model("llama_3_1_70b"), gpu, 4)
    want_tp = 2 * 80 * allreduce_time_s(gpu, 4, tokens * 8192 * 2.0)
    assert _rel(tp._comm_s(tokens), want_tp) < 1e-12


def test_parallelism_is_fixed_at_construction_and_follows_every_field(catalog):
    """The parallelism an instance remembers is `parallel_mode()`'s, for every shape."""
    model, gpu = catalog.model("deepseek_v3"), catalog.gpus["h200_sxm"]
    for gpus in (1, 8, 9, 16, 32):
        for mode in ("tp", "ep", "auto"):
            inst = Instance(model, gpu, gpus, parallelism=mode)
            assert inst._ep() == (inst.parallel_mode() == "ep")
            # auto: EP beyond 8 GPUs, and on 8 where TP would hold V3's one latent 8 times
            # and EP fits (18.97 GB + 653.9 / 8 GB of experts per 136 GB H200); not on 1
            assert inst._ep() == (mode == "ep" or (mode == "auto" and gpus >= 8))
    dense = Instance(catalog.model("llama_3_1_70b"), gpu, 32)
    assert not dense._ep()


# ---- the model's memoised totals -------------------------------------------------------------
def test_model_memo_is_keyed_by_arguments_and_keywords(catalog):
    """weight_bytes per dtype (positional, keyword or default) equals its formula from the
    parameter counts; num_layers equals the sum of the layer groups, also after a replaced
    spec with its own cache."""
    model = catalog.model("deepseek_v3")
    experts = model.routed_expert_params()
    unquantised = model.embedding_params() + (2 * model.num_layers + 1) * model.hidden_size
    dense = model.params_total() - experts - unquantised
    native = dense * 1.0 + experts * 1.0 + unquantised * 2.0  # FP8 linears, BF16 the rest
    as_bf16 = (dense + experts + unquantised) * 2.0
    assert _rel(model.weight_bytes(), native) < 1e-12
    assert _rel(model.weight_bytes("bf16"), as_bf16) < 1e-12
    assert _rel(model.weight_bytes(weight_dtype="bf16"), as_bf16) < 1e-12
    assert _rel(model.weight_bytes(None), native) < 1e-12
    assert model.num_layers == sum(g.repeat for g in model.layer_groups) == 61
    fewer = dataclasses.replace(model, layer_groups=model.layer_groups[:1], _cache={})
    assert fewer.num_layers == model.layer_groups[0].repeat
    assert model.num_layers == 61


# ---- per-count figures over arrays: the dict and memo paths of per_unique ------------------
def test_per_unique_paths_agree_and_the_memo_is_keyed_by_name_shape_and_values():
    """The dict path (small arrays), np.unique (large) and the memo give fn of each tuple;
    a change of any element, of the shape or of the function's name is a different entry;
    a memoised result cannot be written into."""
    from pdd_plan.model.compute import kernels

    calls = []

    def square_plus(a: int, b: int) -> float:
        calls.append((a, b))
        return a * a + 0.5 * b

    a = np.array([3, 1, 3, 7, 0], dtype=np.int64)
    b = np.array([2, 2, 2, 5, 9], dtype=np.int64)
    want = np.array([x * x + 0.5 * y for x, y in zip(a.tolist(), b.tolist(), strict=True)])
    assert np.array_equal(kernels.per_unique(square_plus, a, b), want)
    assert len(calls) == 4  # (3, 2) once
    big_a = np.tile(a, 1000)  # above PER_UNIQUE_DICT_MAX: np.unique
    assert big_a.size > kernels.PER_UNIQUE_DICT_MAX
    assert np.array_equal(
        kernels.per_unique(square_plus, big_a, np.tile(b, 1000)), np.tile(want, 1000)
    )
    memo: dict = {}
    first = kernels.per_unique(square_plus, a, b, memo=memo)
    assert np.array_equal(first, want) and not first.flags.writeable
    calls.clear()
    assert kernels.per_unique(square_plus, a.copy(), b.copy(), memo=memo) is first
    assert calls == []  # answered from the memo
    changed = a.copy()
    changed[4] = 1
    assert kernels.per_unique(square_plus, changed, b, memo=memo)[4] == 1 + 4.5
    column = kernels.per_unique(square_plus, a[:, None], b[:, None], memo=memo)
    assert column.shape == (5, 1) and np.array_equal(column[:, 0], want)

    def other(a: int, b: int) -> float:
        return -1.0

    assert np.all(kernels.per_unique(other, a, b, memo=memo) == -1.0)
    assert len(memo) == 4


def test_kv_bytes_int_path_equals_the_numpy_path(catalog):
    """`kv_bytes` of a Python int (plain numbers) equals the numpy path's element exactly
    for every catalog model and KV dtype, at 0, 1, window and compression-ratio edges and
    huge counts; negatives are refused either way."""
    counts = [0, 1, 2, 3, 4, 5, 127, 128, 129, 511, 512, 513, 4096, 131_071, 1_000_000, 2**39]
    for model_id in catalog.model_ids():
        model = catalog.model(model_id)
        for kv in ("bf16", "fp8"):
            many = model.kv_bytes(np.array(counts, dtype=np.int64), kv)
            for i, n in enumerate(counts):
                one = model.kv_bytes(n, kv)
                assert isinstance(one, float) and one == many[i], (model_id, kv, n)
            assert model.kv_bytes(2**41, kv) == float(model.kv_bytes(np.array([2**41]), kv)[0])
            with pytest.raises(ValueError):
                model.kv_bytes(-1, kv)


def test_roofline_kv_of_small_arrays_equals_the_model(catalog):
    """The roofline's per-count KV memo over a small array (and a 0-d one) gives the model's
    own vectorised figures; a negative count is still refused."""
    inst = Instance(catalog.model("deepseek_v4_flash"), catalog.gpus["h200_sxm"], 8)
    tokens = np.array([0.0, 1.0, 128.0, 129.0, 5000.0, 5000.0, 70_000.0])
    want = inst.model.kv_bytes(tokens.astype(np.int64), inst.kv_dtype)
    assert np.array_equal(inst._kv_bytes(tokens), want)
    assert np.array_equal(inst._kv_bytes(tokens), want)  # memoised
    assert inst._kv_bytes(np.array(129.0)) == want[3]
    with pytest.raises(ValueError):
        inst._kv_bytes(np.array([5.0, -1.0]))


# ---- the vectorised entry: prefill step times for many token counts -----------------------
EDGE_TOKENS = [0.0, 1.0, 2.0, 0.5, 1.5, 2.5, 511.0, 512.0, 513.0, 8192.0, 16_384.0, 1e6, 3e7]


@pytest.mark.parametrize("gpus", [1, 8, 32])
def test_prefill_times_for_an_array_equal_the_scalar_calls(catalog, gpus):
    """`prefill_time_s` over an array of token counts (the entry for many counts at once)
    equals one scalar call per count, bit for bit, at 0, 1, half-token roundings (half to
    even), the CUDA-graph edge and huge counts, after 0 or some cached tokens and with
    several prompts; 0 tokens cost 0; a non-finite count is refused either way."""
    model = catalog.model("deepseek_v3" if gpus > 1 else "qwen3_32b")
    inst = Instance(model, catalog.gpus["h200_sxm"], gpus)
    tokens = np.array(EDGE_TOKENS)
    for cached, prompts in ((0, 1), (4096, 1), (0, 3)):
        many = inst.prefill_time_s(tokens, cached, prompts)
        assert many.shape == tokens.shape
        for i, n in enumerate(EDGE_TOKENS):
            one = inst.prefill_time_s(n, cached, prompts)
            assert isinstance(one, float) and one == many[i], (n, cached, prompts)
        assert many[0] == 0.0 and many[1] > 0.0
        assert many[3] == many[0] and many[5] == many[4]  # 0.5 -> 0, 2.5 -> 2
    for bad in (math.inf, math.nan):
        with pytest.raises(ValueError), np.errstate(invalid="ignore"):
            inst.prefill_time_s(bad)
        with pytest.raises(ValueError), np.errstate(invalid="ignore"):
            inst.prefill_time_s(np.array([1.0, bad]))


def test_kv_bytes_array_memo_is_keyed_and_cannot_be_corrupted(catalog):
    """A repeated array gets the figures its elements have one by one (plain-number path),
    whatever a caller wrote into an earlier result; another dtype, another count or
    another shape is its own entry; negative counts are refused every time."""
    model = catalog.model("gpt_oss_120b")  # a window (128) and a full cache
    counts = np.array([0, 1, 127, 128, 129, 9000], dtype=np.int64)
    for kv in ("bf16", "fp8"):
        want = [model.kv_bytes(int(n), kv) for n in counts]
        first = model.kv_bytes(counts, kv)
        assert first.tolist() == want
        first[:] = -1.0
        assert model.kv_bytes(counts.copy(), kv).tolist() == want
    assert model.kv_bytes(counts, "fp8")[-1] < model.kv_bytes(counts, "bf16")[-1]
    moved = counts.copy()
    moved[-1] = 9001
    assert model.kv_bytes(moved, "bf16")[-1] == model.kv_bytes(9001, "bf16")
    assert model.kv_bytes(counts[:, None], "bf16").shape == (6, 1)
    for _ in range(2):
        with pytest.raises(ValueError):
            model.kv_bytes(np.array([5, -1]), "bf16")
