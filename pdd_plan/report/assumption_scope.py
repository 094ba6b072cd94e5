"""Which rows of the assumptions table apply to one plan (#14 item 14): the sizing report
lists only those, so a dense GQA model planned as IDC-PD is not told about DeepSeek-V4's
indexer, relay overflow or the WAN.

Each scoped row is found by the start of its text (assumptions.py keeps the README's
wording); a row with no rule here applies to every plan. tests check that every rule
still finds its row, so rewording a row cannot silently widen the report.
"""

from __future__ import annotations

from collections.abc import Callable

from pdd_plan.report.assumptions import ASSUMPTIONS

LINE_ARCHITECTURES = ("pdd", "cdc_pd")  # the architectures that lease a WAN line


def _kinds(model) -> set[str]:
    return {a.kind for a, _ in model.layers()}


def _mixing(scenario, architecture: str) -> bool:
    return scenario.policy.mixed_pools and architecture != "colocated"


def _moe(model) -> bool:
    return model.routed_expert_params() > 0


# (start of the row, does it apply: (scenario, model, architecture) -> bool)
RULES: tuple[tuple[str, Callable], ...] = (
    # rope dims kept apart exist in MLA-style caches only; the bias is an FP8 one
    ("KV dtype applies to every attention cache",
     lambda s, m, a: s.kv_dtype == "fp8" and bool(_kinds(m) & {"mla", "compressed"})),
    ("DeepSeek-V4 indexer keys", lambda s, m, a: m.id.startswith("deepseek_v4")),
    ("DeepSeek-V4 CSA/HCA parameters", lambda s, m, a: "compressed" in _kinds(m)),
    ("MTP layers are excluded", lambda s, m, a: m.mtp_layers > 0),
    ("Linear-attention recurrent states", lambda s, m, a: "linear" in _kinds(m)),
    ("Embeddings, LM head and norms stay BF16",
     lambda s, m, a: m.weight_dtype != "bf16" or m.expert_weight_dtype != "bf16"),
    ("MiniMax-M1 lightning layers", lambda s, m, a: m.id.startswith("minimax_m1")),
    ("Line prices are European", lambda s, m, a: a in LINE_ARCHITECTURES),
    ("The WAN is in steady state", lambda s, m, a: a in LINE_ARCHITECTURES),
    ("MD's decode-side cache", lambda s, m, a: a in LINE_ARCHITECTURES),
    ("The closed form and the planner read the decode-side cache curve",
     lambda s, m, a: a in LINE_ARCHITECTURES),
    ("One decode-side LRU", lambda s, m, a: a in LINE_ARCHITECTURES),
    ("Cache tier prices", lambda s, m, a: a in LINE_ARCHITECTURES),
    ("The cut-off's consistency cost", lambda s, m, a: a == "pdd"),
    ("Cut-off threshold", lambda s, m, a: a == "pdd"),
    ("Streamed KV appears", lambda s, m, a: a in LINE_ARCHITECTURES),
    ("Striping:", lambda s, m, a: a in LINE_ARCHITECTURES),
    ("Batched prefill:", lambda s, m, a: a != "colocated"),
    ("The operating batch counts every arrival", lambda s, m, a: a != "colocated"),
    ("Default prefill budget", lambda s, m, a: a != "colocated"),
    ("Colocated serving prefills", lambda s, m, a: a == "colocated"),
    ("Eager RLD tokens", lambda s, m, a: a == "pdd"),
    ("Relay overflow", lambda s, m, a: a == "pdd"),
    ("The handoff's fixed engine cost", lambda s, m, a: a == "pdd"),
    ("The cut-off selects relay candidates", lambda s, m, a: a == "pdd"),
    ("Catch-up's rounds in the closed form", lambda s, m, a: a == "pdd"),
    ("Catch-up's absorbing steps", lambda s, m, a: a == "pdd"),
    ("RLD's tokens past MD's position", lambda s, m, a: a == "pdd"),
    # mixed decode roles: only where the optimiser may mix (policy.mixed_pools)
    ("A mixed decode role is split", lambda s, m, a: _mixing(s, a)),
    ("Each group of a mixed role", lambda s, m, a: _mixing(s, a)),
    ("Each group's arrivals keep", lambda s, m, a: _mixing(s, a)),
    ("With a mixed main-decode role", lambda s, m, a: a == "pdd" and _mixing(s, a)),
    ("A mixed answer is the MILP's plan", lambda s, m, a: _mixing(s, a)),
    ("A scenario's `engine.decode_kv_bytes_per_token`",
     lambda s, m, a: s.engine.decode_kv_bytes_per_token is not None),
)  # fmt: skip

# rows about experts, wherever they are in the table, apply to MoE models only
MOE_WORDS = ("expert", "MoE")


def _rule(text: str) -> Callable | None:
    for start, applies in RULES:
        if text.startswith(start):
            return applies
    if any(w in text for w in MOE_WORDS):
        return lambda s, m, a: _moe(m)
    return None


def applicable(scenario, model, architecture: str) -> list[tuple[str, str]]:
    """The rows of ASSUMPTIONS that apply to this scenario's model and the architecture."""
    out = []
    for row in ASSUMPTIONS:
        rule = _rule(row[0])
        if rule is None or rule(scenario, model, architecture):
            out.append(row)
    return out
