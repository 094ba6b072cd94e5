"""The decode engine's KV layout as a sensitivity: the range of plausible layouts of a
scenario's model, from the architecture's own (its window uncompressed, the rest as the
architecture compresses it) to the whole context uncompressed, as scenario variants.

An engine's layout is rarely published; it moves the HBM a decoding request holds and the
KV each decode step reads together (model/compute/llm.py `resident_kv_bytes`), so the planner shows
how the architecture verdict moves across the range instead of picking a point in it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pdd_plan.model.compute.attention import KvLayout
from pdd_plan.model.scenario import Scenario

if TYPE_CHECKING:  # numpy: not for commands that only read the catalog
    from pdd_plan.model.compute.llm import ModelSpec

# uncompressed windows between the model's own and the whole context: x8 steps (a
# few cases, each a factor 8 apart, bracket a flip within 8x)
WINDOW_STEP = 8


def layout_label(tokens: int | None) -> str:
    return "whole context uncompressed" if tokens is None else f"last {tokens:,} uncompressed"


def short_label(tokens: int | None) -> str:
    """Tokens kept uncompressed, as a case names them."""
    return "all" if tokens is None else f"{tokens:,}"


def context_tokens(s: Scenario) -> int:
    """The context the range's bytes are quoted at: the mean prompt plus the mean output."""
    w = s.workload
    return max(round(w.input_tokens.mean() + w.output_tokens.mean()), 1)


def per_request_bytes(model: ModelSpec, s: Scenario, tokens: int | None) -> float:
    """HBM one request of the scenario's mean context holds with `tokens` uncompressed."""
    layout = KvLayout(tokens)
    spec = dataclasses.replace(model, decode_kv_layout=layout, _cache={})
    return float(spec.resident_kv_bytes(context_tokens(s), s.kv_dtype))


def kv_layout_text(s: Scenario, model: ModelSpec) -> str:
    """The scenario's decode layout in words, with the bytes of a mean-context request."""
    layout = s.engine.kv_layout
    own = layout is None
    tokens = model.largest_window_tokens() if own else layout.uncompressed_tokens
    label = "the model's own layout" if own else layout_label(tokens)
    if own and tokens:
        label += f" ({layout_label(tokens)})"
    held = float(model.resident_kv_bytes(context_tokens(s), s.kv_dtype))
    text = f"{label}: {held / 1e9:.3g} GB per request of {context_tokens(s):,} tokens"
    return text if own or not layout.source else f"{text} ({layout.source})"


def window_range(model: ModelSpec, s: Scenario) -> list[int | None]:
    """Uncompressed tokens from the model's window to the whole context (None), in
    WINDOW_STEP steps up to a step below the scenario's mean context; empty where the model has no
    window (every layer already keeps every token: nothing to vary)."""
    window = model.largest_window_tokens()
    if not window:
        return []
    out, tokens, context = [], window, context_tokens(s)
    while tokens * WINDOW_STEP <= context:  # the next step up would hold it all anyway
        out.append(tokens)
        tokens *= WINDOW_STEP
    return [*out, None]


def with_kv_layout(s: Scenario, tokens: int | None, source: str) -> Scenario:
    engine = dataclasses.replace(s.engine, kv_layout=KvLayout(tokens, source))
    return dataclasses.replace(s, engine=engine)


def kv_layout_cases(s: Scenario, model: ModelSpec) -> list[tuple[str, str, Scenario]]:
    """(case, what changed, scenario) across `window_range`, as `sensitivity_cases`."""
    own = model.largest_window_tokens()
    return [
        (
            short_label(tokens) + (" (own)" if tokens == own else ""),
            f"decode KV {per_request_bytes(model, s, tokens) / 1e9:.3g} GB a request",
            with_kv_layout(s, tokens, "sensitivity case"),
        )
        for tokens in window_range(model, s)
    ]
