"""Hugging Face `config.json` -> a model catalog entry (a plain dict, YAML-ready).

Each known family has a mapper. An unknown `model_type` goes through the generic
GQA mapper, which refuses the config if it carries architecture keys it cannot map
(linear-attention, compression, layer-type lists...), naming them: a planner must never
silently treat a hybrid model as a dense one.
"""

from __future__ import annotations

import re
from typing import Any

from pdd_plan.errors import InputError, Problem
from pdd_plan.loaders.strict import describe

# Keys that change what a layer stores or computes. A generic import that leaves one of
# these unread would mis-model the architecture, so it is refused instead.
_ARCHITECTURE_KEY = re.compile(
    r"(attn|attention|linear|lora|compress|window|layer_types|layer_pattern|index_|expert|"
    r"conv|ssm|mamba|state|hybrid|full_attn|kda|rnn)",
    re.IGNORECASE,
)
# Architecture-looking keys that do not change KV, weights or FLOPs.
_HARMLESS_KEYS = {
    "attention_dropout",
    "attention_bias",
    "use_sliding_window",
    "output_router_logits",
    "router_aux_loss_coef",
    "norm_topk_prob",
    "num_experts_per_tok",
    "max_window_layers",
    "sliding_window",
    "add_full_attention_sink_bias",
    "add_swa_attention_sink_bias",
    "attention_value_scale",
    "attn_logit_softcapping",
    "router_jitter_noise",
}


_MAX_INT = 10_000_000  # the largest dimension a catalog entry accepts
_MAX_LAYERS = 10_000  # the largest layer-group `repeat` a catalog entry accepts


class _Ints:
    """The `kind` of a list of whole numbers (layer numbers, compression ratios)."""


_EXPECTED = {
    _Ints: "a list of whole numbers",
    list: "a list",
    dict: "an object",
    str: "a text",
    bool: "true or false",
}
_EMPTY = {int: int, list: list, dict: dict, _Ints: list}


def _fits(value, kind, maximum: int = _MAX_INT) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= maximum
    if kind is _Ints:
        return isinstance(value, list) and all(_fits(v, int) for v in value)
    return isinstance(value, kind)


class _Config:
    """Reads config keys, remembering which were read, which were missing and which held
    a value of the wrong type (reported, and read as empty, never used)."""

    def __init__(self, data: dict[str, Any], file: str, prefix: str = ""):
        self.data, self.file, self.prefix = data, file, prefix
        self.used: set[str] = set()
        self.missing: list[str] = []
        self.wrong: list[Problem] = []

    def req(self, key: str, kind=int, maximum: int = _MAX_INT):
        self.used.add(key)
        value = self.data.get(key)
        if value is None:
            self.missing.append(key)
        elif self._check(key, value, kind, maximum):
            return value
        return _EMPTY[kind]() if kind in _EMPTY else None

    def opt(self, key: str, default=None, kind=None):
        """An optional key; its type (`kind`, else the default's) is checked if known."""
        self.used.add(key)
        value = self.data.get(key)
        if value is None:
            return default
        kind = kind or (None if default is None else type(default))
        return value if kind is None or self._check(key, value, kind) else default

    def _check(self, key: str, value, kind, maximum: int = _MAX_INT) -> bool:
        if _fits(value, kind, maximum):
            return True
        expected = f"a whole number from 0 to {maximum:,}" if kind is int else _EXPECTED[kind]
        self.wrong.append(Problem(self.file, self.prefix + key, describe(value), expected))
        return False

    def problems(self) -> list[Problem]:
        missing = [
            Problem(self.file, self.prefix + k, "nothing", "this key for the model's architecture")
            for k in self.missing
        ]
        first: dict[str, Problem] = {}  # a key read twice is reported once
        for problem in self.wrong + missing:
            first.setdefault(problem.key_path, problem)
        return list(first.values())


def _run_length(per_layer: list[tuple[str, str]]) -> list[dict]:
    groups: list[dict] = []
    for attention, ffn in per_layer:
        if groups and groups[-1]["attention"] == attention and groups[-1]["ffn"] == ffn:
            groups[-1]["repeat"] += 1
        else:
            groups.append({"repeat": 1, "attention": attention, "ffn": ffn})
    return groups


def _weight_dtypes(c: _Config, text: dict) -> tuple[str, str]:
    """(dense, routed-expert) weight dtype from the quantisation config."""
    q = c.opt("quantization_config", kind=dict) or {}
    method = q.get("quant_method")
    expert = c.opt("expert_dtype", kind=str)
    if method == "fp8":
        return "fp8", expert or "fp8"
    if method == "mxfp4":
        return "bf16", "mxfp4"  # gpt-oss: experts in MXFP4, attention and router in BF16
    if method == "compressed-tensors":
        groups = q.get("config_groups")
        group = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
        weights = group.get("weights") if isinstance(group, dict) else None
        weights = weights if isinstance(weights, dict) else {}
        quant = (
            "mxfp4" if "mxfp4" in str(q.get("format", "")) else f"int{weights.get('num_bits', 4)}"
        )
        ignore = q.get("ignore")
        ignored = " ".join(map(str, ignore)) if isinstance(ignore, list) else ""
        dense = "bf16" if "self_attn" in ignored else quant
        return dense, quant
    c.opt("torch_dtype")
    c.opt("dtype")
    return "bf16", expert or "bf16"


def _moe(c: _Config, experts_key: str, topk_key: str, shared: int) -> dict:
    spec = {
        "kind": "moe",
        "num_experts": c.req(experts_key),
        "experts_per_token": c.req(topk_key),
        "expert_intermediate_size": c.req("moe_intermediate_size"),
        "shared_intermediate_size": shared,
    }
    return spec


def _gqa(c: _Config, prefix: str = "", window: int | None = None) -> dict:
    heads = c.req(prefix + "num_attention_heads")
    head_dim = c.opt(prefix + "head_dim", kind=int) or c.req("hidden_size") // max(heads, 1)
    spec = {
        "kind": "gqa",
        "num_heads": heads,
        "num_kv_heads": c.req(prefix + "num_key_value_heads"),
        "head_dim": head_dim,
        "v_head_dim": c.opt(prefix + "v_head_dim", head_dim),
    }
    if window:
        spec["window_tokens"] = window
    return spec


def _mla(c: _Config, indexer: bool) -> dict:
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
    c: _Config, n_layers: int, experts_key="n_routed_experts"
) -> tuple[dict, list[str]]:
    moe_inter = c.req("moe_intermediate_size")
    shared = c.opt("n_shared_experts", c.opt("num_shared_experts", 0)) * moe_inter
    ffns = {
        "dense": {"kind": "dense", "intermediate_size": c.req("intermediate_size")},
        "moe": _moe(c, experts_key, "num_experts_per_tok", shared),
    }
    first_dense = c.opt("first_k_dense_replace", 0)
    return ffns, ["dense" if i < first_dense else "moe" for i in range(n_layers)]


def _map_deepseek_mla(c: _Config) -> dict:
    n = c.req("num_hidden_layers", maximum=_MAX_LAYERS)
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


def _map_deepseek_v4(c: _Config) -> dict:
    n = c.req("num_hidden_layers", maximum=_MAX_LAYERS)
    ratios = c.req("compress_ratios", _Ints)
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


def _gdn(c: _Config, state_dtype: str) -> dict:
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


def _map_qwen_hybrid(c: _Config) -> dict:
    n = c.req("num_hidden_layers", maximum=_MAX_LAYERS)
    layer_types = c.opt("layer_types", kind=list)
    if layer_types is None:
        interval = c.req("full_attention_interval")
        layer_types = [
            "full_attention" if (i + 1) % max(interval, 1) == 0 else "linear_attention"
            for i in range(n)
        ]
    c.opt("full_attention_interval")
    ssm_dtype = c.opt("mamba_ssm_dtype", kind=str)
    state_dtype = {"float32": "fp32", "bfloat16": "bf16"}.get(ssm_dtype, "fp32")
    shared = c.opt("shared_expert_intermediate_size", 0)
    dense_layers = set(c.opt("mlp_only_layers", [], kind=_Ints))
    c.opt("decoder_sparse_step")
    per_layer = [
        ("full" if t == "full_attention" else "gdn", "dense" if i in dense_layers else "moe")
        for i, t in enumerate(layer_types)
    ]
    ffns = {"moe": _moe(c, "num_experts", "num_experts_per_tok", shared)}
    if dense_layers:
        ffns["dense"] = {"kind": "dense", "intermediate_size": c.req("intermediate_size")}
    return {
        "attention_types": {"full": _gqa(c), "gdn": _gdn(c, state_dtype)},
        "ffn_types": ffns,
        "per_layer": per_layer,
        "mtp_layers": c.opt("mtp_num_hidden_layers", 0),
    }


def _map_kimi_linear(c: _Config) -> dict:
    n = c.req("num_hidden_layers", maximum=_MAX_LAYERS)
    lin = _Config(c.req("linear_attn_config", dict), c.file, c.prefix + "linear_attn_config.")
    full = set(lin.opt("full_attn_layers", kind=_Ints) or [])  # 1-based layer numbers
    heads, head_dim = lin.opt("num_heads", kind=int), lin.opt("head_dim", kind=int)
    conv_kernel = lin.opt("short_conv_kernel_size", 0)
    c.wrong += lin.wrong
    if not (full and heads and head_dim):
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
    per_layer = [
        ("mla" if i + 1 in full else "kda", "dense" if i < first_dense else "moe") for i in range(n)
    ]
    return {
        "attention_types": {"mla": _mla(c, indexer=False), "kda": kda},
        "ffn_types": {
            "dense": {"kind": "dense", "intermediate_size": c.req("intermediate_size")},
            "moe": moe,
        },
        "per_layer": per_layer,
        "mtp_layers": c.opt("num_nextn_predict_layers", 0),
    }


def _map_minimax_m1(c: _Config) -> dict:
    types = c.req("attn_type_list", list)
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
    moe = {
        "kind": "moe",
        "num_experts": c.req("num_local_experts"),
        "experts_per_token": c.req("num_experts_per_tok"),
        "expert_intermediate_size": c.req("intermediate_size"),
        "shared_intermediate_size": shared,
    }
    return {
        "attention_types": {"full": _gqa(c), "lightning": lightning},
        "ffn_types": {"moe": moe},
        "per_layer": [("full" if t == 1 else "lightning", "moe") for t in types],
        "mtp_layers": 0,
    }


def _map_sliding_hybrid(c: _Config) -> dict:
    """gpt-oss (`layer_types`) and MiMo-V2-Flash (`hybrid_layer_pattern`, `moe_layer_freq`)."""
    window = c.req("sliding_window")
    pattern = c.opt("hybrid_layer_pattern", kind=list)
    if pattern is not None:
        kinds = ["swa" if t == 1 else "full" for t in pattern]
        swa = _gqa(c, "swa_", window)
        swa["num_heads"] = c.opt("swa_num_attention_heads", swa["num_heads"])
        c.opt("sliding_window_size")
        c.opt("attention_chunk_size")
    else:
        kinds = ["swa" if t == "sliding_attention" else "full" for t in c.req("layer_types", list)]
        swa = _gqa(c, "", window)
    freq = c.opt("moe_layer_freq")
    moe_layers = [bool(f) for f in freq] if isinstance(freq, list) else [True] * len(kinds)
    if c.opt("num_local_experts") is not None:
        moe = {
            "kind": "moe",
            "num_experts": c.req("num_local_experts"),
            "experts_per_token": c.req("num_experts_per_tok"),
            "expert_intermediate_size": c.req("intermediate_size"),
            "shared_intermediate_size": 0,
        }
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


def _map_generic_gqa(c: _Config) -> dict:
    """Llama, Qwen3 (dense and MoE), GLM-4.x, MiniMax-M2 and other plain GQA models."""
    n = c.req("num_hidden_layers", maximum=_MAX_LAYERS)
    experts = (
        c.opt("num_experts", kind=int)
        or c.opt("num_local_experts", kind=int)
        or c.opt("n_routed_experts", kind=int)
    )
    ffns: dict[str, dict] = {}
    per_layer_ffn = ["dense"] * n
    if experts:
        topk_key = "num_experts_per_tok"
        inter_key = (
            "moe_intermediate_size" if c.opt("moe_intermediate_size", 0) else "intermediate_size"
        )
        shared = (
            c.opt("n_shared_experts", 0) * c.opt("moe_intermediate_size", 0)
            + c.opt("shared_expert_intermediate_size", 0)
            + c.opt("shared_intermediate_size", 0)
        )
        ffns["moe"] = {
            "kind": "moe",
            "num_experts": experts,
            "experts_per_token": c.req(topk_key),
            "expert_intermediate_size": c.req(inter_key),
            "shared_intermediate_size": shared,
        }
        first_dense = c.opt("first_k_dense_replace", 0)
        dense_layers = set(c.opt("mlp_only_layers", [], kind=_Ints)) | set(range(first_dense))
        per_layer_ffn = ["dense" if i in dense_layers else "moe" for i in range(n)]
        c.opt("decoder_sparse_step")
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
    return {
        "attention_types": {"full": _gqa(c)},
        "ffn_types": ffns,
        "per_layer": [("full", f) for f in per_layer_ffn],
        "mtp_layers": c.opt("num_mtp_modules", 0) or c.opt("num_nextn_predict_layers", 0),
    }


_MAPPERS = {
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
_GENERIC_KNOWN = {
    "llama",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "glm4_moe",
    "minimax_m2",
    "mistral",
    "mixtral",
}


def _text_config(config: dict) -> tuple[dict, str]:
    """Vision-language wrappers keep the language model under `text_config`."""
    if isinstance(config.get("text_config"), dict):
        return config["text_config"], "text_config."
    return config, ""


def _architecture(text: dict, config: dict, model_type: str) -> str:
    """The first `architectures` entry (e.g. LlamaForCausalLM), else the model type."""
    for names in (text.get("architectures"), config.get("architectures")):
        if isinstance(names, list) and names and isinstance(names[0], str):
            return names[0]
    return model_type


def import_hf_config(config: Any, file: str, model_id: str, name: str, source: str) -> dict:
    """Map a parsed `config.json` to a catalog entry dict; InputError names what failed."""
    if not isinstance(config, dict):
        raise InputError.single(file, "", describe(config), "a JSON object (a config.json)")
    text, prefix = _text_config(config)
    c = _Config(text, file, prefix)
    model_type = str(text.get("model_type") or config.get("model_type") or "")
    c.used.update({"model_type", "architectures"})
    mapper = _MAPPERS.get(model_type, _map_generic_gqa)
    mapped = mapper(c)
    hidden, vocab = c.req("hidden_size"), c.req("vocab_size")
    tie = bool(c.opt("tie_word_embeddings", config.get("tie_word_embeddings") is True, bool))
    dense_dtype, expert_dtype = _weight_dtypes(c, text)
    problems = c.problems()
    if model_type not in _MAPPERS and model_type not in _GENERIC_KNOWN:
        unmapped = sorted(
            k
            for k in text
            if k not in c.used and k not in _HARMLESS_KEYS and _ARCHITECTURE_KEY.search(k)
        )
        if unmapped:
            problems.append(
                Problem(
                    file,
                    prefix + "model_type",
                    repr(model_type or None),
                    "an architecture pdd-plan can map",
                    f"could not map: {', '.join(prefix + k for k in unmapped)}",
                )
            )
    if problems:
        raise InputError(problems)
    return {
        "id": model_id,
        "name": name,
        "architecture": _architecture(text, config, model_type),
        "source": source,
        "hidden_size": hidden,
        "vocab_size": vocab,
        "tie_word_embeddings": tie,
        "weight_dtype": dense_dtype,
        "expert_weight_dtype": expert_dtype,
        "mtp_layers": int(mapped["mtp_layers"] or 0),
        "attention_types": mapped["attention_types"],
        "ffn_types": mapped["ffn_types"],
        "layers": _run_length(mapped["per_layer"]),
    }
