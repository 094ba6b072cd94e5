"""Per-layer lists and cross-key limits of a Hugging Face config, checked against the
config's own keys (a catalog key path in a message would name a file the user never saw).

A list that says what each layer is (`layer_types`, `attn_type_list`,
`hybrid_layer_pattern`, `moe_layer_freq`) must have one entry per layer: a short one
used to give a model of that many layers, a long one slipped past the layer cap.
"""

from __future__ import annotations

from pdd_plan.errors import Problem
from pdd_plan.loaders.hf_reader import Config, Ints
from pdd_plan.loaders.strict import describe

LAYERS_KEY = "num_hidden_layers"


def _wrong(c: Config, key: str, found: str, expected: str) -> None:
    c.wrong.append(Problem(c.file, c.prefix + key, found, expected))


def _known(value, kinds: dict) -> bool:
    # bool is an int to Python (True == 1): a `true` is not the layer kind 1
    return isinstance(value, str | int) and not isinstance(value, bool) and value in kinds


def per_layer(c: Config, key: str, n_layers: int, kinds: dict, *, required: bool = True):
    """The kind of each layer from the list at `key` (each entry a key of `kinds`), or
    None when the key is absent (optional) or refused (the problem is recorded). An
    `n_layers` of 0 (num_hidden_layers missing or refused, reported already) skips it."""
    values = c.req(key, list) if required else c.opt(key, kind=list)
    if not values or not n_layers:
        return None
    if len(values) != n_layers:
        _wrong(
            c,
            key,
            f"a list of {len(values):,} entries",
            f"one entry per layer ({n_layers:,}, the config's {c.prefix}{LAYERS_KEY})",
        )
        return None
    bad = next((v for v in values if not _known(v, kinds)), None)
    if bad is not None or any(v is None for v in values):
        _wrong(c, key, f"an entry {describe(bad)}", f"entries each one of {_listed(kinds)}")
        return None
    return [kinds[v] for v in values]


def _listed(kinds: dict) -> str:
    return ", ".join(repr(k) for k in kinds)


def at_most(c: Config, key: str, value: int, limit_key: str, limit: int) -> None:
    """`key` (e.g. experts per token) may not exceed `limit_key` (the expert count)."""
    if value and limit and value > limit:
        limit_text = f"{limit:,} (the config's {c.prefix}{limit_key})"
        _wrong(c, key, repr(value), f"a whole number from 1 to {limit_text}")


def positive_or_absent(c: Config, key: str) -> int | None:
    """An optional size (e.g. `head_dim`): absent is None (derived by the caller), a 0
    is refused, never silently replaced by the derived value."""
    value = c.opt(key, kind=int)
    if value == 0:
        _wrong(c, key, "0", "a whole number from 1 (or leave the key out to derive it)")
        return None
    return value


def sliding_layers(c: Config, n_layers: int) -> list[bool] | None:
    """Which layers of a plain GQA model attend over a sliding window, as transformers
    reads the config: `layer_types` when given; else, with a `sliding_window` and
    `use_sliding_window` not false, the layers from `max_window_layers` on (Qwen2/3;
    absent: every layer, as Mistral). None: no sliding layer."""
    types = per_layer(
        c,
        "layer_types",
        n_layers,
        {"full_attention": False, "sliding_attention": True},
        required=False,
    )
    window = c.opt("sliding_window", kind=int)
    use = c.opt("use_sliding_window", kind=bool)
    first = c.opt("max_window_layers", 0, kind=int)
    if types is None and "layer_types" in c.data:
        return None  # refused above
    if types is None:
        if window is None or use is False:
            return None
        types = [i >= first for i in range(n_layers)]
    if any(types) and not window:
        c.req("sliding_window")  # sliding layers need their window: reported missing or 0
    return types if any(types) else None


def layer_numbers(c: Config, key: str, n_layers: int, *, first: int = 0) -> set[int]:
    """A list of layer numbers (`mlp_only_layers` counts from 0, Kimi's
    `full_attn_layers` from 1): one outside the model was silently ignored."""
    numbers = c.opt(key, [], kind=Ints) or []
    last = n_layers - 1 + first
    outside = next((v for v in numbers if not first <= v <= last), None)
    if outside is not None and n_layers:
        _wrong(c, key, f"layer {outside}", f"layer numbers from {first} to {last:,}")
        return set()
    return set(numbers)


def sparse_step_dense_layers(c: Config, key: str, n_layers: int, *, from_one: bool) -> set[int]:
    """The layers a MoE-every-k-layers key leaves dense. Qwen2/3-MoE and Qwen3-Next
    (`decoder_sparse_step`) put experts where (layer + 1) % k == 0; DeepSeek-V2/V3's code,
    as vLLM runs it (`moe_layer_freq`), where layer % k == 0 (`from_one` False). k = 1,
    every published config's, makes every layer MoE; a k of 2 read as 1 doubled the experts."""
    step = c.opt(key)  # no kind: a wrong one is worded here, with the floor of 1
    step = 1 if step is None else step
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:  # 0 divides by zero
        _wrong(c, key, describe(step), "a whole number of at least 1 (1: every layer MoE)")
        return set()
    offset = 1 if from_one else 0
    return {i for i in range(n_layers) if (i + offset) % step != 0}
