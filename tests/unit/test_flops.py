"""FLOPs of prefill chunks and decode tokens against hand calculations."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdd_plan.model.compute.attention import attended_entries, attended_entries_prefix_sum


def test_llama_decode_flops_by_hand(catalog):
    """Decode at context c: 2 x (linear params incl. LM head) + per layer 2 x heads x
    (k_dim + v_dim) x (c + 1) for QK^T and AV over c cached tokens and itself."""
    model = catalog.model("llama_3_1_70b")
    linears = model.params_total() - 128_256 * 8192 - (2 * 80 + 1) * 8192  # no input embedding
    for context in (0, 8191):
        attention = 80 * 2 * 64 * (128 + 128) * (context + 1)
        assert model.decode_flops(context) == pytest.approx(2 * linears + attention)


def test_llama_prefill_flops_by_hand(catalog):
    """Prefill of n new tokens after c cached: linears for n tokens (LM head once) +
    causal attention: sum over positions p = c+1..c+n of p keys = n c + n (n + 1) / 2."""
    model = catalog.model("llama_3_1_70b")
    lm_head = 128_256 * 8192
    linears = model.params_total() - 2 * lm_head - (2 * 80 + 1) * 8192
    n, c = 3000, 5000
    attention = 80 * 2 * 64 * 256 * (n * c + n * (n + 1) // 2)
    expected = 2 * linears * n + 2 * lm_head + attention
    assert model.prefill_flops(n, c) == pytest.approx(expected)


def test_prefill_chunks_add_up(catalog):
    """Prefilling 40K tokens at once costs the same attention as two chunks of 20K
    (only the LM head, run once per chunk, differs)."""
    for model_id in ("deepseek_v4_pro", "gpt_oss_120b", "qwen3_next_80b", "deepseek_v3_2"):
        model = catalog.model(model_id)
        lm_head = 2 * model.vocab_size * model.hidden_size
        whole = model.prefill_flops(40_000)
        split = model.prefill_flops(20_000) + model.prefill_flops(20_000, 20_000)
        assert split - lm_head == pytest.approx(whole, rel=1e-12)


def test_dsa_caps_attention_at_topk(catalog):
    """DeepSeek-V3.2 decode attends to at most index_topk = 2048 tokens: the attention part
    stops growing past 2,048 tokens of context, the indexer part keeps growing."""
    model = catalog.model("deepseek_v3_2")
    mla_per_entry = 61 * 2 * 128 * (2 * 512 + 64)
    indexer_per_entry = 61 * 2 * 64 * 128
    grow = model.decode_flops(200_000) - model.decode_flops(100_000)
    assert grow == pytest.approx(100_000 * indexer_per_entry)
    assert model.decode_flops(2047) - model.decode_flops(2046) == pytest.approx(
        mla_per_entry + indexer_per_entry
    )


def test_prefill_is_monotone_in_prompt_length(catalog):
    model = catalog.model("deepseek_v4_pro")
    values = [model.prefill_flops(n) for n in (1, 10, 1000, 64_000, 128_000)]
    assert values == sorted(values)


@given(st.integers(0, 5000), st.integers(1, 300), st.one_of(st.none(), st.integers(1, 200)))
def test_prefix_sum_matches_brute_force(n, ratio, cap):
    brute = sum(
        min(cap, math.ceil(p / ratio)) if cap else math.ceil(p / ratio) for p in range(1, n + 1)
    )
    assert attended_entries_prefix_sum(n, ratio, cap) == brute


@given(st.integers(1, 10**7), st.integers(1, 512), st.one_of(st.none(), st.integers(1, 4096)))
def test_prefix_sum_steps_by_one_query(p, ratio, cap):
    step = attended_entries_prefix_sum(p, ratio, cap) - attended_entries_prefix_sum(
        p - 1, ratio, cap
    )
    assert step == attended_entries(p, ratio, cap)
