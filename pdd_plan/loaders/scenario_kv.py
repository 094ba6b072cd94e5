"""A scenario's decode KV layout (`engine.kv_uncompressed_tokens`, model/compute/attention.py
`KvLayout`): read with its source, and checked against the model's window."""

from __future__ import annotations

from pdd_plan.errors import InputError
from pdd_plan.loaders.strict import Node
from pdd_plan.model import scenario as sc
from pdd_plan.model.compute.attention import KvLayout

# the keys before one KV layout drove both capacity and traffic (issue #23): a flat figure
# per token has no uncompressed/compressed split, so it maps onto no layout
RETIRED_ENGINE_KEYS = ("decode_kv_bytes_per_token", "decode_kv_source")
RETIRED_KV_TEXT = (
    "engine.kv_uncompressed_tokens instead (tokens kept uncompressed, or all, with "
    "kv_layout_source): one KV layout sets both the HBM a request holds and the KV a "
    "decode step reads"
)
ALL_TOKENS = "all"
MAX_CONTEXT_TOKENS = 10_000_000  # beyond any model's context window


def refuse_retired_kv_keys(f: dict[str, Node]) -> None:
    """One line for the retired pair, naming the key that replaces it."""
    retired = [f[key] for key in RETIRED_ENGINE_KEYS if not f[key].is_missing]
    if retired:
        retired[0].fail(RETIRED_KV_TEXT)


def kv_layout(f) -> KvLayout | None:
    """`engine.kv_uncompressed_tokens` (a whole number or `all`) with its source; None
    (the model's own layout) when absent. Its floor, the model's window, is checked
    against the model (`check_kv_layout`)."""
    node = f["kv_uncompressed_tokens"]
    if node.is_missing or node.value is None:  # null: the loader's default, as elsewhere
        return None
    value = node.value
    whole = isinstance(value, int) and not isinstance(value, bool)
    if value != ALL_TOKENS and not (whole and 1 <= value <= MAX_CONTEXT_TOKENS):
        node.fail(f"a whole number of tokens from 1 to {MAX_CONTEXT_TOKENS:,}, or {ALL_TOKENS}")
        return None
    tokens = None if value == ALL_TOKENS else int(value)
    if f["kv_layout_source"].is_missing:
        f["kv_layout_source"].fail("a source for kv_uncompressed_tokens")
    return KvLayout(tokens, f["kv_layout_source"].string(default="") or "")


def check_kv_layout(scenario: sc.Scenario, model, path) -> None:
    """Refuse a decode layout keeping fewer tokens uncompressed than the model attends."""
    layout, window = scenario.engine.kv_layout, model.largest_window_tokens()
    if layout is None or layout.uncompressed_tokens is None:
        return
    if layout.uncompressed_tokens < window:
        raise InputError.single(
            str(path), "engine.kv_uncompressed_tokens", str(layout.uncompressed_tokens),
            f"at least {window}, the window {model.id} attends to (or all)",
        )  # fmt: skip
