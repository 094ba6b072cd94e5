"""Per-family mappers from a Hugging Face config to catalog attention/FFN specs.

Each takes a `Config` reader and returns the attention types, FFN types, the per-layer
(attention, ffn) names and the MTP layer count.
"""

from __future__ import annotations

from pdd_plan.loaders.hf_layers import (
    LAYERS_KEY,
    at_most,
    layer_numbers,
    per_layer,
    positive_or_absent,
    sliding_layers,
    sparse_step_dense_layers,
)
from pdd_plan.loaders.hf_reader import MAX_LAYERS, Config, Ints


def _moe(
    c: Config, experts_key: str, topk_key: str, shared: int, inter_key="moe_intermediate_size"
) -> dict:
    experts, topk = c.req(experts_key), c.req(topk_key)
    at_most(c, topk_key, topk, experts_key, experts)
    spec = {
        "kind": "moe",
        "num_experts": experts,
        "experts_per_token": topk,
        "expert_intermediate_size": c.req(inter_key),
        "shared_intermediate_size": shared,
    }
    return spec


def _gqa(c: Config, prefix: str = "", window: int | None = None) -> dict:
    heads, kv_heads = c.req(prefix + "num_attention_heads"), c.req(prefix + "num_key_value_heads")
    at_most(c, prefix + "num_key_value_heads", kv_heads, prefix + "num_attention_heads", heads)
    head_dim = positive_or_absent(c, prefix + "head_dim")
    if head_dim is None:  # derived: hidden_size / heads, which must be at least 1
        at_most(c, prefix + "num_attention_heads", heads, "hidden_size", c.req("hidden_size"))
        head_dim = c.req("hidden_size") // max(heads, 1)
    spec = {
        "kind": "gqa",
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": head_dim,
        "v_head_dim": c.opt(prefix + "v_head_dim", head_dim),
    }
    if window:
        spec["window_tokens"] = window
    return spec


def _mla(c: Config, indexer: bool) -> dict:
    spec = {
        "kind": "mla",
        "num_heads": c.req("num_attention_heads"),
        "kv_lora_rank": c.req("kv_lora_rank"),
        "qk_rope_head_dim": c.req("qk_rope_head_dim"),
        "qk_nope_head_dim": c.req("qk_nope_head_dim"),
        "v_head_dim": c.req("v_head_dim"),
        "q_lora_rank": c.opt("q_lora_rank", kind=int),
    }
    if indexer:
        spec["indexer"] = {
            "num_heads": c.req("index_n_heads"),
            "head_dim": c.req("index_head_dim"),
            "topk": c.req("index_topk"),
        }
    return spec


def _deepseek_ffns(
    c: Config, n_layers: int, experts_key="n_routed_experts"
) -> tuple[dict, list[str]]:
    moe_inter = c.req("moe_intermediate_size")
    shared = c.opt("n_shared_experts", c.opt("num_shared_experts", 0)) * moe_inter
    ffns = {
        "dense": {"kind": "dense", "intermediate_size": c.req("intermediate_size")},
        "moe": _moe(c, experts_key, "num_experts_per_tok", shared),
    }
    first_dense = c.opt("first_k_dense_replace", 0)
    dense = sparse_step_dense_layers(c, "moe_layer_freq", n_layers, from_one=False)
    return ffns, ["dense" if i < first_dense or i in dense else "moe" for i in range(n_layers)]


def _map_deepseek_mla(c: Config) -> dict:
    n = c.req("num_hidden_layers", maximum=MAX_LAYERS)
    indexer = c.opt("index_head_dim") is not None
    ffns, per_layer_ffn = _deepseek_ffns(c, n)
    name = "mla_dsa" if indexer else "mla"
    return {
        "attention_types": {name: _mla(c, indexer)},
        "ffn_types": ffns,
        "per_layer": [(name, f) for f in per_layer_ffn],
        "mtp_layers": c.opt("num_nextn_predict_layers", 0),
    }


# DeepSeek-V4: layers with a small ratio are CSA (sparse, with the lightning indexer);
# heavily compressed (HCA) layers attend densely over their few entries.
_CSA_MAX_RATIO = 16


def _map_deepseek_v4(c: Config) -> dict:
    n = c.req("num_hidden_layers", maximum=MAX_LAYERS)
    ratios = c.req("compress_ratios", Ints)
    if len(ratios) < n:
        if ratios:  # an absent or malformed list is reported already
            c.missing.append(f"compress_ratios (has {len(ratios)} entries, needs {n})")
        ratios = [0] * n
    base = {
        "kind": "compressed",
        "num_heads": c.req("num_attention_heads"),
        "head_dim": c.req("head_dim"),
        "num_kv_heads": c.req("num_key_value_heads"),
        "window_tokens": c.req("sliding_window"),
        "q_lora_rank": c.req("q_lora_rank"),
        "o_lora_rank": c.req("o_lora_rank"),
        "o_groups": c.req("o_groups"),
    }
    indexer = {
        "num_heads": c.req("index_n_heads"),
        "head_dim": c.req("index_head_dim"),
        "topk": c.req("index_topk"),
    }
    attention_types, per_layer = {}, []
    for ratio in ratios[:n]:
        name = (
            "window_only"
            if ratio == 0
            else (f"csa{ratio}" if ratio <= _CSA_MAX_RATIO else f"hca{ratio}")
        )
        spec = dict(base, compress_ratio=ratio)
        if 0 < ratio <= _CSA_MAX_RATIO:
            spec["indexer"] = indexer
        attention_types[name] = spec
        per_layer.append((name, "moe"))
    shared = c.opt("n_shared_experts", 0) * c.req("moe_intermediate_size")
    return {
        "attention_types": attention_types,
        "ffn_types": {"moe": _moe(c, "n_routed_experts", "num_experts_per_tok", shared)},
        "per_layer": per_layer,
        "mtp_layers": c.opt("num_nextn_predict_layers", 0),
    }


def _gdn(c: Config, state_dtype: str) -> dict:
    return {
        "kind": "linear",
        "variant": "gated_deltanet",
        "num_heads": c.req("linear_num_value_heads"),
        "num_key_heads": c.req("linear_num_key_heads"),
        "key_head_dim": c.req("linear_key_head_dim"),
        "value_head_dim": c.req("linear_value_head_dim"),
        "conv_kernel": c.req("linear_conv_kernel_dim"),
        "state_dtype": state_dtype,
    }


def _map_qwen_hybrid(c: Config) -> dict:
    n = c.req(LAYERS_KEY, maximum=MAX_LAYERS)
    kinds = {"full_attention": "full", "linear_attention": "gdn"}
    per = per_layer(c, "layer_types", n, kinds, required=False)
    if per is None and "layer_types" not in c.data:
        interval = c.req("full_attention_interval")
        per = ["full" if (i + 1) % max(interval, 1) == 0 else "gdn" for i in range(n)]
    c.opt("full_attention_interval")
    ssm_dtype = c.opt("mamba_ssm_dtype", kind=str)
    state_dtype = {"float32": "fp32", "bfloat16": "bf16"}.get(ssm_dtype, "fp32")
    shared = c.opt("shared_expert_intermediate_size", 0)
    dense_layers = layer_numbers(c, "mlp_only_layers", n)
    dense_layers |= sparse_step_dense_layers(c, "decoder_sparse_step", n, from_one=True)
    layers = [(t, "dense" if i in dense_layers else "moe") for i, t in enumerate(per or [])]
    ffns = {"moe": _moe(c, "num_experts", "num_experts_per_tok", shared)}
    if dense_layers:
        ffns["dense"] = {"kind": "dense", "intermediate_size": c.req("intermediate_size")}
    return {
        "attention_types": {"full": _gqa(c), "gdn": _gdn(c, state_dtype)},
        "ffn_types": ffns,
        "per_layer": layers,
        "mtp_layers": c.opt("mtp_num_hidden_layers", 0),
    }


def _map_kimi_linear(c: Config) -> dict:
    n = c.req("num_hidden_layers", maximum=MAX_LAYERS)
    lin = Config(c.req("linear_attn_config", dict), c.file, c.prefix + "linear_attn_config.")
    full = layer_numbers(lin, "full_attn_layers", n, first=1)
    heads, head_dim = lin.opt("num_heads", kind=int), lin.opt("head_dim", kind=int)
    conv_kernel = lin.opt("short_conv_kernel_size", 0)
    c.wrong += lin.wrong
    if not (full and heads and head_dim) and not lin.wrong:  # a wrong one is named already
        c.missing.append("linear_attn_config.{full_attn_layers,num_heads,head_dim}")
    kda = {
        "kind": "linear",
        "variant": "kda",
        "num_heads": heads or 0,
        "num_key_heads": heads or 0,
        "key_head_dim": head_dim or 0,
        "value_head_dim": head_dim or 0,
        "conv_kernel": conv_kernel,
        "state_dtype": "fp32",
    }
    moe_inter = c.req("moe_intermediate_size")
    moe = _moe(
        c, "num_experts", "num_experts_per_token", c.opt("num_shared_experts", 0) * moe_inter
    )
    if c.opt("routed_expert_hidden_size", kind=int):
        moe["expert_hidden_size"] = c.opt("routed_expert_hidden_size", kind=int)
    first_dense = c.opt("first_k_dense_replace", 0)
    dense = sparse_step_dense_layers(c, "moe_layer_freq", n, from_one=False)  # as DeepSeek's
    ffn = ["dense" if i < first_dense or i in dense else "moe" for i in range(n)]
    per_layer = [("mla" if i + 1 in full else "kda", ffn[i]) for i in range(n)]
    return {
        "attention_types": {"mla": _mla(c, indexer=False), "kda": kda},
        "ffn_types": {
            "dense": {"kind": "dense", "intermediate_size": c.req("intermediate_size")},
            "moe": moe,
        },
        "per_layer": per_layer,
        "mtp_layers": c.opt("num_nextn_predict_layers", 0),
    }


def _map_minimax_m1(c: Config) -> dict:
    n = c.req(LAYERS_KEY, maximum=MAX_LAYERS)
    kinds = per_layer(c, "attn_type_list", n, {0: "lightning", 1: "full"}) or []
    heads, head_dim = c.req("num_attention_heads"), c.req("head_dim")
    lightning = {
        "kind": "linear",
        "variant": "lightning",
        "num_heads": heads,
        "num_key_heads": heads,
        "key_head_dim": head_dim,
        "value_head_dim": head_dim,
        "conv_kernel": 0,
        "state_dtype": "fp32",
    }
    shared = c.opt("shared_intermediate_size", 0)
    moe = _moe(c, "num_local_experts", "num_experts_per_tok", shared, "intermediate_size")
    return {
        "attention_types": {"full": _gqa(c), "lightning": lightning},
        "ffn_types": {"moe": moe},
        "per_layer": [(k, "moe") for k in kinds],
        "mtp_layers": 0,
    }


def _map_sliding_hybrid(c: Config) -> dict:
    """gpt-oss (`layer_types`) and MiMo-V2-Flash (`hybrid_layer_pattern`, `moe_layer_freq`)."""
    window = c.req("sliding_window")
    n = c.req(LAYERS_KEY, maximum=MAX_LAYERS)
    if "hybrid_layer_pattern" in c.data:
        kinds = per_layer(c, "hybrid_layer_pattern", n, {0: "full", 1: "swa"}) or []
        swa = _gqa(c, "swa_", window)
        swa["num_heads"] = c.opt("swa_num_attention_heads", swa["num_heads"])
        c.opt("sliding_window_size")
        c.opt("attention_chunk_size")
    else:
        sliding = {"full_attention": "full", "sliding_attention": "swa"}
        kinds = per_layer(c, "layer_types", n, sliding) or []
        swa = _gqa(c, "", window)
    moe_layers = [True] * len(kinds)
    if isinstance(c.opt("moe_layer_freq"), list):
        freq = per_layer(c, "moe_layer_freq", n, {0: False, 1: True})
        moe_layers = freq if freq is not None else moe_layers
    if c.opt("num_local_experts") is not None:
        moe = _moe(c, "num_local_experts", "num_experts_per_tok", 0, "intermediate_size")
    else:
        moe = _moe(
            c,
            "n_routed_experts",
            "num_experts_per_tok",
            (c.opt("n_shared_experts", kind=int) or 0) * c.req("moe_intermediate_size"),
        )
    ffns = {"moe": moe}
    if not all(moe_layers):
        ffns["dense"] = {"kind": "dense", "intermediate_size": c.req("intermediate_size")}
    return {
        "attention_types": {"full": _gqa(c), "swa": swa},
        "ffn_types": ffns,
        "per_layer": [
            (k, "moe" if m else "dense") for k, m in zip(kinds, moe_layers, strict=False)
        ],
        "mtp_layers": 0,
    }


def map_generic_gqa(c: Config) -> dict:
    """Llama, Qwen3 (dense and MoE), GLM-4.x, MiniMax-M2 and other plain GQA models."""
    n = c.req(LAYERS_KEY, maximum=MAX_LAYERS)
    experts_key = next(
        (k for k in ("num_experts", "num_local_experts", "n_routed_experts") if c.opt(k, kind=int)),
        None,
    )
    ffns: dict[str, dict] = {}
    per_layer_ffn = ["dense"] * n
    if experts_key:
        # absent (Mixtral's way): the experts are intermediate_size wide; a 0 is refused
        inter_key = (
            "moe_intermediate_size"
            if positive_or_absent(c, "moe_intermediate_size")
            else "intermediate_size"
        )
        shared = (
            c.opt("n_shared_experts", 0) * c.opt("moe_intermediate_size", 0)
            + c.opt("shared_expert_intermediate_size", 0)
            + c.opt("shared_intermediate_size", 0)
        )
        ffns["moe"] = _moe(c, experts_key, "num_experts_per_tok", shared, inter_key)
        first_dense = c.opt("first_k_dense_replace", 0)
        dense_layers = layer_numbers(c, "mlp_only_layers", n) | set(range(first_dense))
        dense_layers |= sparse_step_dense_layers(c, "decoder_sparse_step", n, from_one=True)
        per_layer_ffn = ["dense" if i in dense_layers else "moe" for i in range(n)]
    if "dense" in per_layer_ffn:
        ffns["dense"] = {"kind": "dense", "intermediate_size": c.req("intermediate_size")}
    for key in (
        "rotary_dim",
        "partial_rotary_factor",
        "use_qk_norm",
        "qk_norm_type",
        "use_routing_bias",
        "use_mtp",
        "mtp_transformer_layers",
    ):
        c.opt(key)
    sliding = sliding_layers(c, n) or [False] * n
    attention = {"full": _gqa(c)} if not all(sliding) else {}
    if any(sliding):  # as gpt-oss: the same GQA, over at most the window
        attention["swa"] = _gqa(c, "", c.opt("sliding_window", kind=int))
    return {
        "attention_types": attention,
        "ffn_types": ffns,
        "per_layer": [
            ("swa" if s else "full", f) for s, f in zip(sliding, per_layer_ffn, strict=True)
        ],
        "mtp_layers": c.opt("num_mtp_modules", 0) or c.opt("num_nextn_predict_layers", 0),
    }


MAPPERS = {
    "deepseek_v3": _map_deepseek_mla,
    "deepseek_v32": _map_deepseek_mla,
    "kimi_k2": _map_deepseek_mla,
    "glm_moe_dsa": _map_deepseek_mla,
    "deepseek_v4": _map_deepseek_v4,
    "qwen3_next": _map_qwen_hybrid,
    "qwen3_5_moe_text": _map_qwen_hybrid,
    "kimi_linear": _map_kimi_linear,
    "minimax_m1": _map_minimax_m1,
    "gpt_oss": _map_sliding_hybrid,
    "mimo_v2_flash": _map_sliding_hybrid,
}
# Families the generic GQA mapper handles exactly.
GENERIC_KNOWN = {
    "llama",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "glm4_moe",
    "minimax_m2",
    "mistral",
    "mixtral",
}
