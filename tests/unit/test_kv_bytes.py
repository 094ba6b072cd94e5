"""KV bytes per token against hand calculations written here (formula in each docstring).

b = bytes per element (BF16 = 2). GQA: layers x kv_heads x (k_dim + v_dim) x b.
MLA: layers x (kv_lora_rank + qk_rope_head_dim) x b. Indexer keys: layers x index_head_dim x b.
"""

import math

import pytest

BF16, FP8 = 2, 1


def per_token(catalog, model_id, kv_dtype="bf16"):
    return catalog.model(model_id).kv_bytes_per_token(kv_dtype)


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("llama_3_1_70b", 80 * 8 * (128 + 128) * BF16),  # 327,680
        ("llama_3_3_70b", 80 * 8 * (128 + 128) * BF16),
        ("llama_3_1_405b", 126 * 8 * (128 + 128) * BF16),  # 516,096
        ("deepseek_v3", 61 * (512 + 64) * BF16),  # 70,272
        ("deepseek_r1", 61 * (512 + 64) * BF16),
        ("kimi_k2", 61 * (512 + 64) * BF16),
        ("kimi_k2_5", 61 * (512 + 64) * BF16),
        ("qwen3_235b_a22b", 94 * 4 * (128 + 128) * BF16),  # 192,512
        ("qwen3_32b", 64 * 8 * (128 + 128) * BF16),  # 262,144
        ("qwen3_coder_480b", 62 * 8 * (128 + 128) * BF16),  # 253,952
        ("glm_4_7", 92 * 8 * (128 + 128) * BF16),  # 376,832
        ("minimax_m2_5", 62 * 8 * (128 + 128) * BF16),  # 253,952
        ("minimax_m1", 10 * 8 * (128 + 128) * BF16),  # 10 softmax layers of 80: 40,960
        ("qwen3_next_80b", 12 * 2 * (256 + 256) * BF16),  # 12 full layers of 48: 24,576
        ("qwen3_5_397b", 15 * 2 * (256 + 256) * BF16),  # 15 full of 60: 30,720
        ("gpt_oss_120b", 18 * 8 * (64 + 64) * BF16),  # 18 full layers: 36,864
        ("mimo_v2_flash", 9 * 4 * (192 + 128) * BF16),  # 9 full layers, K 192 / V 128: 23,040
        ("kimi_k3", 24 * (512 + 64) * BF16),  # 24 MLA layers of 93: 27,648
    ],
)
def test_growing_bytes_per_token_bf16(catalog, model_id, expected):
    assert per_token(catalog, model_id) == pytest.approx(expected)


def test_published_examples_of_the_issue(catalog):
    assert per_token(catalog, "llama_3_1_70b") == 327_680
    assert per_token(catalog, "deepseek_v3") == 70_272


def test_dsa_indexer_keys_are_added(catalog):
    """DeepSeek-V3.2 and GLM-5 keep a 128-dim indexer key per layer and token."""
    assert per_token(catalog, "deepseek_v3_2") == 61 * (512 + 64) * BF16 + 61 * 128 * BF16
    assert per_token(catalog, "glm_5") == 78 * (512 + 64) * BF16 + 78 * 128 * BF16


def test_fp8_halves_attention_kv(catalog):
    assert per_token(catalog, "llama_3_1_70b", "fp8") == 80 * 8 * 256 * FP8


def test_hybrid_linear_model_at_two_lengths(catalog):
    """Qwen3-Next: 36 Gated-DeltaNet layers hold a fixed state, 12 full layers grow.

    State per GDN layer: 32 value heads x 128 x 128 x 4 B (fp32 recurrent state)
    + (conv kernel 4 - 1) x (2 x 16 x 128 + 32 x 128) channels x 2 B (bf16 conv state).
    """
    model = catalog.model("qwen3_next_80b")
    fixed = 36 * (32 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 32 * 128) * 2)
    growing = 12 * 2 * 512 * BF16
    for length in (1_000, 100_000):
        assert model.kv_bytes(length) == pytest.approx(fixed + growing * length)


def test_minimax_m1_lightning_state_at_two_lengths(catalog):
    """MiniMax-M1: 70 lightning layers, 64 heads x 128 x 128 fp32 state, no conv."""
    model = catalog.model("minimax_m1")
    fixed = 70 * 64 * 128 * 128 * 4
    for length in (2_048, 1_000_000):
        assert model.kv_bytes(length) == pytest.approx(fixed + 40_960 * length)


def test_sliding_window_is_bounded(catalog):
    """gpt-oss-120b: 18 sliding layers keep at most 128 tokens of 8 x 128 x 2 B."""
    model = catalog.model("gpt_oss_120b")
    window_layer = 8 * (64 + 64) * BF16
    assert model.kv_bytes(100) == pytest.approx(100 * (36_864 + 18 * window_layer))
    assert model.kv_bytes(10_000) == pytest.approx(10_000 * 36_864 + 128 * 18 * window_layer)


def test_mimo_windowed_layers_use_their_own_kv_heads(catalog):
    """MiMo-V2-Flash: 39 SWA-128 layers with 8 KV heads, 9 full layers with 4."""
    model = catalog.model("mimo_v2_flash")
    swa = 39 * 8 * (192 + 128) * BF16
    assert model.kv_bytes(50_000) == pytest.approx(50_000 * 23_040 + 128 * swa)


def test_deepseek_v4_pro_compressed_layers(catalog):
    """DeepSeek-V4-Pro: 30 CSA layers (ratio 4, indexer), 31 HCA layers (ratio 128).

    A request of L tokens keeps, per CSA layer, ceil(L/4) entries of 512 x b and
    ceil(L/4) indexer keys of 128 x b_idx; per HCA layer ceil(L/128) entries of 512 x b;
    every layer the last 128 tokens of 512 x b. FP8 KV, FP4 indexer (0.5 B + 1/32 scale).
    """
    model = catalog.model("deepseek_v4_pro")
    b, b_idx = 1.0, 0.5 + 1 / 32

    def hand(length):
        csa = 30 * math.ceil(length / 4) * (512 * b + 128 * b_idx)
        hca = 31 * math.ceil(length / 128) * 512 * b
        window = 61 * min(length, 128) * 512 * b
        return csa + hca + window

    for length in (100, 65_536, 65_537):
        assert model.kv_bytes(length, "fp8") == pytest.approx(hand(length))
    # the published check: about 23 GB for 80 concurrent 64K-token requests
    total_gb = 80 * model.kv_bytes(65_536, "fp8") / 1e9
    assert 23 * 0.95 < total_gb < 23 * 1.10


def test_kv_bytes_is_vectorised(catalog):
    import numpy as np

    model = catalog.model("qwen3_next_80b")
    lengths = np.array([0, 1, 10, 1000])
    expected = [model.kv_bytes(int(n)) for n in lengths]
    assert model.kv_bytes(lengths) == pytest.approx(expected)
    assert model.kv_bytes(0) == 0


def test_shipped_override(catalog):
    import dataclasses

    model = dataclasses.replace(
        catalog.model("deepseek_v3"), shipped_kv_bytes_per_token=46_490.0, _cache={}
    )
    assert model.shipped_bytes_per_token() == 46_490.0
    assert catalog.model("deepseek_v3").shipped_bytes_per_token() == 70_272
