"""Reading a Hugging Face config: typed access that remembers what was read and missed."""

from __future__ import annotations

import re
from typing import Any

from pdd_plan.errors import Problem
from pdd_plan.loaders.strict import describe
from pdd_plan.loaders.suggest import did_you_mean

ARCHITECTURE_KEY = re.compile(
    r"(attn|attention|linear|lora|compress|window|layer_types|layer_pattern|index_|expert|"
    r"conv|ssm|mamba|state|hybrid|full_attn|kda|rnn)",
    re.IGNORECASE,
)
# Architecture-looking keys that do not change KV, weights or FLOPs.
HARMLESS_KEYS = {
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
MAX_LAYERS = 10_000  # the largest layer-group `repeat` a catalog entry accepts


class Ints:
    """The `kind` of a list of whole numbers (layer numbers, compression ratios)."""


_EXPECTED = {
    Ints: "a list of whole numbers",
    list: "a list",
    dict: "an object",
    str: "a text",
    bool: "true or false",
}
_EMPTY = {int: int, list: list, dict: dict, Ints: list}


def _fits(value, kind, maximum: int = _MAX_INT, minimum: int = 0) -> bool:
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return ok and minimum <= value <= maximum
    if kind is Ints:
        return isinstance(value, list) and all(_fits(v, int) for v in value)
    return isinstance(value, kind)


class Config:
    """Reads config keys, remembering which were read, which were missing and which held
    a value of the wrong type (reported, and read as empty, never used)."""

    def __init__(self, data: dict[str, Any], file: str, prefix: str = ""):
        self.data, self.file, self.prefix = data, file, prefix
        self.used: set[str] = set()
        self.missing: list[str] = []
        self.wrong: list[Problem] = []

    def req(self, key: str, kind=int, maximum: int = _MAX_INT, minimum: int = 1):
        """A required key; a required size is at least 1 (a 0 would be silently replaced
        or divide by zero downstream) unless `minimum` says otherwise."""
        self.used.add(key)
        value = self.data.get(key)
        if value is None:
            self.missing.append(key)
        elif self._check(key, value, kind, maximum, minimum):
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

    def _check(self, key: str, value, kind, maximum: int = _MAX_INT, minimum: int = 0) -> bool:
        if _fits(value, kind, maximum, minimum):
            return True
        expected = (
            f"a whole number from {minimum} to {maximum:,}" if kind is int else _EXPECTED[kind]
        )
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


def run_length(per_layer: list[tuple[str, str]]) -> list[dict]:
    groups: list[dict] = []
    for attention, ffn in per_layer:
        if groups and groups[-1]["attention"] == attention and groups[-1]["ffn"] == ffn:
            groups[-1]["repeat"] += 1
        else:
            groups.append({"repeat": 1, "attention": attention, "ffn": ffn})
    return groups


def weight_dtypes(c: Config, text: dict) -> tuple[str, str]:
    """(dense, routed-expert) weight dtype from the quantisation config, else the
    checkpoint's dtype (checked either way)."""
    served = served_dtype(c)
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
    return served, expert or served


# A config's checkpoint dtype as torch names it -> what the weights serve in. Wider
# checkpoints serve in 16 bits (the catalog's bf16: vLLM's `auto` serves float32 in 16-bit),
# 8-bit float ones in fp8. Absent: bf16, the dtype of nearly every published checkpoint.
TORCH_DTYPES = {
    "bfloat16": "bf16",
    "float16": "bf16",
    "half": "bf16",
    "float32": "bf16",
    "float": "bf16",
    "float64": "bf16",
    "double": "bf16",
    "auto": "bf16",
    "float8_e4m3fn": "fp8",
    "float8_e4m3fnuz": "fp8",
    "float8_e5m2": "fp8",
    "float8_e5m2fnuz": "fp8",
}
DEFAULT_SERVED_DTYPE = "bf16"
DTYPE_KEYS = ("dtype", "torch_dtype")  # transformers 4.56 writes `dtype`, older `torch_dtype`


def served_dtype(c: Config) -> str:
    """The weights' dtype from `dtype` (which governs, as in transformers) or `torch_dtype`;
    bf16 when neither is given. A value torch does not name (`"abc"`, 0, -1; was read as
    bf16) is a problem naming the key."""
    found = []
    for key in DTYPE_KEYS:
        c.used.add(key)
        value = c.data.get(key)
        if value is None:
            continue
        name = value.removeprefix("torch.") if isinstance(value, str) else None
        if name in TORCH_DTYPES:
            found.append(TORCH_DTYPES[name])
            continue
        expected = f"a torch dtype ({', '.join(TORCH_DTYPES)}; absent: {DEFAULT_SERVED_DTYPE})"
        hint = did_you_mean(value, TORCH_DTYPES) if isinstance(value, str) else ""
        c.wrong.append(Problem(c.file, c.prefix + key, describe(value), expected, hint))
    return found[0] if found else DEFAULT_SERVED_DTYPE
