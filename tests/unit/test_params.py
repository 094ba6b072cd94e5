"""Parameter counts computed from the architectures vs the published totals (within 3 %).

Published figures are the model owners' (technical reports and model cards). "Active"
conventions differ between owners, so each case says which one it uses: `with_emb`
counts the input embedding and the LM head, `no_emb` counts neither, `lm_head` counts
only the LM head (OpenAI's gpt-oss convention).
"""

import pytest

TOLERANCE = 0.03
B = 1e9

# model id, published total, published active, active convention
PUBLISHED = [
    ("deepseek_v3", 671 * B, 37 * B, "with_emb"),  # DeepSeek-V3 technical report
    ("deepseek_r1", 671 * B, 37 * B, "with_emb"),
    ("deepseek_v4_pro", 1.6e12, 49 * B, "with_emb"),  # DeepSeek-V4 model card
    ("deepseek_v4_flash", 284 * B, None, None),  # "13B active" is rounded: we count 13.6B
    ("kimi_k2", 1.04e12, 32 * B, "with_emb"),  # Kimi K2 model card: 1T total, 32B activated
    ("llama_3_1_70b", 70.6 * B, 70.6 * B, "with_emb"),  # Llama 3.1 model card
    ("llama_3_1_405b", 405 * B, 405 * B, "with_emb"),
    ("qwen3_235b_a22b", 235 * B, 22 * B, "with_emb"),  # Qwen3 technical report
    ("qwen3_32b", 32.8 * B, 32.8 * B, "with_emb"),
    ("qwen3_coder_480b", 480 * B, 35 * B, "with_emb"),
    ("qwen3_5_397b", 397 * B, 17 * B, "with_emb"),
    ("qwen3_next_80b", 80 * B, None, None),  # "A3B" is a rounded name, not a count
    ("glm_4_7", 355 * B, 32 * B, "no_emb"),  # GLM-4.5 report (same dimensions)
    ("glm_5", 744 * B, 40 * B, "no_emb"),
    ("minimax_m1", 456 * B, None, None),  # active 45.9B: see test_minimax_m1_active_gap
    ("minimax_m2_5", 230 * B, 10 * B, "no_emb"),  # MiniMax-M2 README: 230B total, 10B active
    ("gpt_oss_120b", 116.8 * B, 5.13 * B, "lm_head"),  # gpt-oss model card
    ("mimo_v2_flash", 309 * B, 15 * B, "with_emb"),  # MiMo-V2-Flash report
]


def active(model, convention):
    if convention == "with_emb":
        return model.params_active()
    if convention == "no_emb":
        return model.params_active() - model.embedding_params()
    return model.params_active() - model.vocab_size * model.hidden_size  # input embedding out


@pytest.mark.parametrize(("model_id", "total", "active_params", "convention"), PUBLISHED)
def test_parameter_counts_match_published(catalog, model_id, total, active_params, convention):
    model = catalog.model(model_id)
    assert model.params_total() == pytest.approx(total, rel=TOLERANCE)
    if active_params is not None:
        assert active(model, convention) == pytest.approx(active_params, rel=TOLERANCE)


def test_dense_model_active_equals_total(catalog):
    model = catalog.model("llama_3_1_70b")
    assert model.params_active() == model.params_total()


def test_llama_70b_by_hand(catalog):
    """80 layers x (q 8192^2 + k,v 2 x 8192 x 1024 + o 8192^2 + MLP 3 x 8192 x 28672)
    + 2 x 128,256 x 8192 embeddings + norms (2 per layer + final) x 8192."""
    per_layer = 8192 * 8192 * 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672
    expected = 80 * per_layer + 2 * 128_256 * 8192 + (2 * 80 + 1) * 8192
    assert catalog.model("llama_3_1_70b").params_total() == expected


def test_minimax_m1_active_gap_is_known(catalog):
    """Our count of M1's active parameters is ~5.6 % over the published 45.9B: the lightning
    layers are counted with q, k, v, output gate and output projections; the published
    figure evidently counts less. Kept visible here rather than tuned away."""
    model = catalog.model("minimax_m1")
    assert 1.03 < model.params_active() / 45.9e9 < 1.08


def test_weight_bytes_follow_dtypes(catalog):
    """Llama-3.1-70B in BF16: all 70.6B parameters at 2 bytes; FP8 override: linears at 1 byte,
    embeddings and norms stay BF16."""
    model = catalog.model("llama_3_1_70b")
    assert model.weight_bytes() == pytest.approx(2 * model.params_total())
    emb = model.embedding_params() + (2 * 80 + 1) * 8192
    expected_fp8 = (model.params_total() - emb) * 1 + emb * 2
    assert model.weight_bytes("fp8") == pytest.approx(expected_fp8)


def test_expert_dtype_is_separate(catalog):
    """gpt-oss-120b: routed experts in MXFP4 (4.25 bits), the rest BF16."""
    model = catalog.model("gpt_oss_120b")
    experts = model.routed_expert_params()
    expected = experts * (0.5 + 1 / 32) + (model.params_total() - experts) * 2
    assert model.weight_bytes() == pytest.approx(expected)
    assert 55e9 < model.weight_bytes() < 70e9  # the published checkpoint is about 65 GB
