"""`model import` of configs it used to mis-model silently (#10 C, item 20): each is one
line naming the config's own key, exit 2; a Llama-family config with sliding layers is
honoured (its KV is bounded by the window, checked by hand). Not test_hf_import.py: pytest
imports test files by their base name, and tests/unit has one."""

from __future__ import annotations

import json

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.hf_config import import_hf_config
from pdd_plan.loaders.model_file import model_from_dict
from tests.hardening.conftest import assert_one_error_line

# Small configs, written here (not the published ones): every number is easy to check.
LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 4096,
    "vocab_size": 32000,
    "torch_dtype": "bfloat16",
}
GPT_OSS = {
    **LLAMA,
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "head_dim": 64,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 2,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}
MINIMAX_M1 = {
    **LLAMA,
    "architectures": ["MiniMaxM1ForCausalLM"],
    "model_type": "minimax_m1",
    "head_dim": 128,
    "attn_type_list": [0, 0, 0, 1],
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}
QWEN3_MOE = {
    **LLAMA,
    "model_type": "qwen3_moe",
    "num_experts": 16,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 512,
}


def _with(base: dict, **changes) -> dict:
    return {**base, **changes}


CASES = [
    # (id, config, key named, fragments)
    (
        "layer_types_short",
        _with(GPT_OSS, layer_types=["sliding_attention", "full_attention", "full_attention"]),
        "layer_types",
        ("a list of 3 entries", "one entry per layer (4"),
    ),
    (
        "layer_types_long",
        _with(GPT_OSS, layer_types=["full_attention"] * 9),
        "layer_types",
        ("a list of 9 entries",),
    ),
    (
        "layer_types_unknown_kind",
        _with(GPT_OSS, layer_types=["sliding_attention", "chunked_attention"] * 2),
        "layer_types",
        ("'chunked_attention'",),
    ),
    (
        "attn_type_list_9999",  # past the layer cap of a catalog entry, under the file's
        _with(MINIMAX_M1, attn_type_list=[1] * 9_999),
        "attn_type_list",
        ("a list of 9,999 entries", "(4, the config's num_hidden_layers)"),
    ),
    (
        "head_dim_0",
        _with(LLAMA, head_dim=0),
        "head_dim",
        ("found 0", "from 1"),
    ),
    (
        "topk_above_experts",
        _with(QWEN3_MOE, num_experts_per_tok=17),
        "num_experts_per_tok",
        ("found 17", "from 1 to 16 (the config's num_experts)"),
    ),
    (
        "topk_above_local_experts",
        _with(GPT_OSS, num_experts_per_tok=9),
        "num_experts_per_tok",
        ("to 8 (the config's num_local_experts)",),
    ),
    (
        "kv_heads_above_heads",
        _with(LLAMA, num_key_value_heads=9),
        "num_key_value_heads",
        ("found 9", "to 8 (the config's num_attention_heads)"),
    ),
    (
        "mlp_only_layer_outside",  # counted from 0: layer 4 of 4 layers was ignored
        _with(QWEN3_MOE, mlp_only_layers=[4]),
        "mlp_only_layers",
        ("found layer 4", "from 0 to 3"),
    ),
    (
        "llama_sliding_layers_without_window",
        _with(LLAMA, layer_types=["sliding_attention", "full_attention"] * 2),
        "sliding_window",
        ("found nothing",),
    ),
    (
        "llama_layer_types_short",
        _with(LLAMA, sliding_window=64, layer_types=["sliding_attention"]),
        "layer_types",
        ("a list of 1 entries",),
    ),
]


@pytest.mark.parametrize(
    "config, key, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_model_import_refuses_with_the_configs_key(cli, tmp_path, config, key, fragments):
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = cli("model", "import", "config.json")
    assert_one_error_line(result, 2, f"config.json: {key}: found", *fragments)
    assert result.stdout == ""


@pytest.mark.slow
def test_attn_type_list_of_200000_is_one_line(cli, tmp_path):
    """Through the CLI the file reader's list cap answers first; through the importer,
    the per-layer check names the key. Either way one line, never a 200,000-layer model."""
    config = _with(MINIMAX_M1, attn_type_list=[1] * 200_000)
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert_one_error_line(cli("model", "import", "config.json"), 2, "config.json")
    with pytest.raises(Exception) as raised:
        import_hf_config(config, "config.json", "m", "M", "test")
    lines = str(raised.value).splitlines()
    assert len(lines) == 1 and "config.json: attn_type_list: found a list of 200,000" in lines[0]


def _kv_per_layer_token_bytes(config: dict) -> int:
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return config["num_key_value_heads"] * 2 * head_dim * 2  # K and V, BF16


def test_llama_layer_types_and_sliding_window_are_honoured():
    """Two sliding layers (window 64) and two full ones: at 1,000 tokens of context the
    KV is 2 x 64 + 2 x 1,000 layer-tokens, by hand, not 4 x 1,000."""
    config = _with(
        LLAMA,
        sliding_window=64,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    )
    model = model_from_dict(import_hf_config(config, "c", "m", "M", "test"), "c")
    per = _kv_per_layer_token_bytes(config)  # 2 x 2 x 128 x 2 = 1,024 B
    assert model.kv_bytes(1000) == pytest.approx(per * (2 * 64 + 2 * 1000))
    assert model.kv_bytes(10) == pytest.approx(per * 4 * 10)  # inside the window: all alike


def test_sliding_window_without_layer_types_slides_every_layer_from_max_window_layers():
    """As transformers reads Mistral and Qwen2/3: no layer_types, a sliding_window, and
    max_window_layers 1 (use_sliding_window true): layers 1..3 slide, layer 0 is full."""
    config = _with(LLAMA, sliding_window=32, use_sliding_window=True, max_window_layers=1)
    model = model_from_dict(import_hf_config(config, "c", "m", "M", "test"), "c")
    per = _kv_per_layer_token_bytes(config)
    assert model.kv_bytes(500) == pytest.approx(per * (500 + 3 * 32))
    off = _with(config, use_sliding_window=False)
    model = model_from_dict(import_hf_config(off, "c", "m", "M", "test"), "c")
    assert model.kv_bytes(500) == pytest.approx(per * 4 * 500)


def test_a_plain_llama_imports_as_before():
    model = model_from_dict(import_hf_config(LLAMA, "c", "m", "M", "test"), "c")
    assert model.kv_bytes(100) == pytest.approx(_kv_per_layer_token_bytes(LLAMA) * 4 * 100)


def test_kimi_full_attention_layer_outside_the_model_is_named():
    """Kimi counts its full-attention layers from 1: layer 5 of 4 was silently dropped."""
    config = _with(
        LLAMA,
        model_type="kimi_linear",
        linear_attn_config={"full_attn_layers": [2, 5], "num_heads": 8, "head_dim": 128},
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        moe_intermediate_size=512,
        num_experts=16,
        num_experts_per_token=4,
    )
    import_hf_config(dict(config, linear_attn_config={**config["linear_attn_config"],
                     "full_attn_layers": [2, 4]}), "c", "m", "M", "t")  # fmt: skip
    with pytest.raises(InputError) as raised:
        import_hf_config(config, "config.json", "m", "M", "test")
    lines = str(raised.value).splitlines()
    assert lines == [
        "config.json: linear_attn_config.full_attn_layers: found layer 5; "
        "expected layer numbers from 1 to 4"
    ], lines
