"""Model catalog entries (YAML dicts) -> ModelSpec, strictly checked."""

from __future__ import annotations

from pdd_plan.loaders.strict import Node, Problems
from pdd_plan.model.compute.attention import (
    CompressedAttention,
    GqaAttention,
    Indexer,
    LinearAttention,
    MlaAttention,
)
from pdd_plan.model.compute.ffn import DenseFfn, MoeFfn
from pdd_plan.model.compute.llm import LayerGroup, ModelSpec
from pdd_plan.model.units import DTYPE_BYTES

_DIM = {"minimum": 1, "maximum": 10_000_000}
_ATTENTION_FIELDS = {
    "gqa": (("num_heads", "num_kv_heads", "head_dim", "v_head_dim"), ("window_tokens",)),
    "mla": (
        ("num_heads", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"),
        ("q_lora_rank", "indexer", "window_tokens"),
    ),
    "compressed": (
        (
            "num_heads",
            "head_dim",
            "num_kv_heads",
            "compress_ratio",
            "window_tokens",
            "q_lora_rank",
            "o_lora_rank",
            "o_groups",
        ),
        ("indexer",),
    ),
    "linear": (
        ("variant", "num_heads", "num_key_heads", "key_head_dim", "value_head_dim", "conv_kernel"),
        ("state_dtype",),
    ),
}
_INT_OR_ZERO = {"compress_ratio", "conv_kernel"}


def _indexer(node: Node) -> Indexer | None:
    if node.is_missing or node.value is None:
        return None
    f = node.mapping(required=("num_heads", "head_dim", "topk"))
    if f is None:
        return None
    values = [f[k].integer(required=True, **_DIM) for k in ("num_heads", "head_dim", "topk")]
    return None if None in values else Indexer(*values)


def _attention(node: Node):
    spec = node.mapping(
        required=("kind",),
        optional=tuple(k for req, opt in _ATTENTION_FIELDS.values() for k in req + opt),
    )
    if spec is None:
        return None
    kind = spec["kind"].choice(tuple(_ATTENTION_FIELDS), required=True)
    if kind is None:
        return None
    required, optional = _ATTENTION_FIELDS[kind]
    node.mapping(required=("kind",) + required, optional=optional)  # reports foreign keys
    args = {}
    for key in required + optional:
        child = spec[key]
        if key == "indexer":
            args[key] = _indexer(child)
        elif key == "variant":
            args[key] = child.string(required=True)
        elif key == "state_dtype":
            args[key] = child.choice(tuple(DTYPE_BYTES), default="fp32")
        elif key in _INT_OR_ZERO:
            args[key] = child.integer(minimum=0, maximum=1_000_000, required=True)
        elif key in optional:
            args[key] = child.integer(default=None, **_DIM)
        else:
            args[key] = child.integer(required=True, **_DIM)
    if any(args[k] is None for k in required):
        return None
    cls = {
        "gqa": GqaAttention,
        "mla": MlaAttention,
        "compressed": CompressedAttention,
        "linear": LinearAttention,
    }[kind]
    return cls(**args)


def _ffn(node: Node):
    spec = node.mapping(
        required=("kind",),
        optional=(
            "intermediate_size",
            "num_experts",
            "experts_per_token",
            "expert_intermediate_size",
            "shared_intermediate_size",
            "expert_hidden_size",
        ),
    )
    if spec is None:
        return None
    kind = spec["kind"].choice(("dense", "moe"), required=True)
    if kind == "dense":
        size = spec["intermediate_size"].integer(required=True, **_DIM)
        return DenseFfn(size) if size else None
    if kind == "moe":
        experts = spec["num_experts"].integer(required=True, **_DIM)
        topk = spec["experts_per_token"].integer(required=True, **_DIM)
        inter = spec["expert_intermediate_size"].integer(required=True, **_DIM)
        shared = spec["shared_intermediate_size"].integer(default=0, minimum=0, maximum=10_000_000)
        hidden = spec["expert_hidden_size"].integer(default=None, **_DIM)
        if None in (experts, topk, inter):
            return None
        if topk > experts:
            spec["experts_per_token"].fail(f"a whole number <= num_experts ({experts})")
            return None
        return MoeFfn(experts, topk, inter, shared or 0, hidden)
    return None


def _named(node: Node, parse) -> dict:
    if not isinstance(node.value, dict) or not node.value:
        node.fail("a mapping of names to layer specs")
        return {}
    out = {}
    for name in node.value:
        child = Node(node.value[name], f"{node.path}.{name}", node.problems)
        parsed = parse(child)
        if parsed is not None:
            out[str(name)] = parsed
    return out


def _declared(node: Node) -> set[str]:
    return {str(name) for name in node.value} if isinstance(node.value, dict) else set()


def model_from_dict(data, file: str) -> ModelSpec | None:
    """Check a model entry and build its ModelSpec; problems are raised together."""
    problems = Problems(file)
    spec = _model(Node(data, "", problems))
    problems.raise_if_any()
    return spec


def _model(root: Node) -> ModelSpec | None:
    f = root.mapping(
        required=(
            "id",
            "name",
            "architecture",
            "source",
            "hidden_size",
            "vocab_size",
            "weight_dtype",
            "expert_weight_dtype",
            "attention_types",
            "ffn_types",
            "layers",
        ),
        optional=(
            "tie_word_embeddings",
            "mtp_layers",
            "indexer_dtype",
            "shipped_kv_bytes_per_token",
            "shipped_kv_source",
            "notes",
            "published",
        ),
    )
    if f is None:
        return None
    dtypes = tuple(DTYPE_BYTES)
    attention_types = _named(f["attention_types"], _attention)
    ffn_types = _named(f["ffn_types"], _ffn)
    # a layer may name any type the file declares: one whose spec is wrong is reported
    # there, once, not again at every layer that names it
    declared_attention, declared_ffn = _declared(f["attention_types"]), _declared(f["ffn_types"])
    groups = []
    for item in f["layers"].items(min_items=1) or []:
        g = item.mapping(required=("repeat", "attention", "ffn"))
        if g is None:
            continue
        repeat = g["repeat"].integer(required=True, minimum=1, maximum=10_000)
        attention = g["attention"].reference(declared_attention, "attention type")
        ffn = g["ffn"].reference(declared_ffn, "ffn type")
        # a declared type whose spec failed is reported there: no group of it is built
        if repeat is not None and attention in attention_types and ffn in ffn_types:
            groups.append(LayerGroup(repeat, attention, ffn))
    shipped = f["shipped_kv_bytes_per_token"].number(minimum=0, exclusive_minimum=True, maximum=1e9)
    if shipped is not None and f["shipped_kv_source"].is_missing:
        f["shipped_kv_source"].fail("a source for shipped_kv_bytes_per_token")
    _published(f["published"])
    values = dict(
        id=f["id"].identifier(required=True),
        name=f["name"].string(required=True),
        architecture=f["architecture"].string(required=True),
        source=f["source"].string(required=True),
        hidden_size=f["hidden_size"].integer(required=True, **_DIM),
        vocab_size=f["vocab_size"].integer(required=True, **_DIM),
        tie_word_embeddings=f["tie_word_embeddings"].boolean(default=False),
        weight_dtype=f["weight_dtype"].choice(dtypes, required=True),
        expert_weight_dtype=f["expert_weight_dtype"].choice(dtypes, required=True),
        mtp_layers=f["mtp_layers"].integer(default=0, minimum=0, maximum=100),
        indexer_dtype=f["indexer_dtype"].choice(dtypes, default=None),
        shipped_kv_bytes_per_token=shipped,
        shipped_kv_source=f["shipped_kv_source"].string(default=None),
        notes=f["notes"].string(default=""),
    )
    if root.problems.items:
        return None
    return ModelSpec(
        attention_types=attention_types, ffn_types=ffn_types, layer_groups=tuple(groups), **values
    )


def _published(node: Node) -> None:
    """Published parameter totals (informational, shown beside the computed ones)."""
    if node.is_missing:
        return
    f = node.mapping(required=("source",), optional=("total_params_b", "active_params_b"))
    if f:
        f["source"].string(required=True)
        f["total_params_b"].number(minimum=0, exclusive_minimum=True, maximum=1e5)
        f["active_params_b"].number(minimum=0, exclusive_minimum=True, maximum=1e5)


def published_params(data: dict) -> dict:
    return dict(data.get("published") or {})
