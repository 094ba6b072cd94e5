"""A model's KV bytes, weights and FLOPs, computed from its architecture.

`kv_bytes(tokens)` of one request is a function, not a constant:
fixed part (recurrent states) + windowed part (at most `window` tokens per layer)
+ growing part (full, latent and compressed caches), so hybrid models are exact at
every length. All results are SI floats (bytes, FLOPs, parameters).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from pdd_plan.model.compute.attention import (
    AttendTerm,
    Attention,
    KvLayout,
    KvTerm,
    LinearAttention,
    attended_entries,
    attended_entries_prefix_sum,
    tp_replication,
    with_uncompressed_window,
)
from pdd_plan.model.compute.ffn import Ffn, MoeFfn
from pdd_plan.model.units import dtype_bytes


def _memo(method):
    """Cache a method's result per arguments in the (frozen) spec's private cache: the
    planner asks the same totals thousands of times."""

    name = method.__name__

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        # (name, args) alone when there are no keywords: a 2-tuple, never equal to a
        # 3-tuple key of a call with keywords
        key = (name, args, tuple(sorted(kwargs.items()))) if kwargs else (name, args)
        cache = self._cache
        try:
            return cache[key]
        except KeyError:
            cache[key] = value = method(self, *args, **kwargs)
            return value

    return wrapper


# `kv_bytes` of a Python int below this takes the plain-number path: its int products stay
# below 2^63 there, as the numpy path's int64 ones must (2^40 tokens x 61 layers x 2 KiB
# per entry is 1.4e17).
_INT_PATH_MAX_TOKENS = 2**40

# `kv_bytes` of arrays of up to this many counts is memoised per (dtype, counts), this
# many entries (the planner asks the same classes' KV at every rate; at most 8 MB)
_ARRAY_MEMO_MAX_ELEMENTS = 256
_ARRAY_MEMO_LIMIT = 2048

# Embeddings, norms and routers stay in 16 bits when an engine quantises the linears.
EMBEDDING_DTYPE = "bf16"


def _replicated(term: KvTerm, copies: float) -> KvTerm:
    return (
        term
        if copies == 1.0
        else dataclasses.replace(term, bytes_per_entry=term.bytes_per_entry * copies)
    )


@dataclass(frozen=True)
class LayerGroup:
    """`repeat` consecutive layers that share one attention and one FFN spec."""

    repeat: int
    attention: str
    ffn: str


@dataclass(frozen=True)
class KvBreakdownRow:
    category: str
    layers: int
    bytes_per_token: float  # long-context limit (growing part only)
    window_bytes: float  # bytes held once the window is full
    fixed_bytes: float  # recurrent state per request


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    architecture: str
    source: str
    hidden_size: int
    vocab_size: int
    tie_word_embeddings: bool
    weight_dtype: str
    expert_weight_dtype: str
    attention_types: dict[str, Attention]
    ffn_types: dict[str, Ffn]
    layer_groups: tuple[LayerGroup, ...]
    mtp_layers: int = 0
    indexer_dtype: str | None = None
    shipped_kv_bytes_per_token: float | None = None
    shipped_kv_source: str | None = None
    # the decode engine's layout (scenario engine.kv_uncompressed_tokens); None: the model's
    decode_kv_layout: KvLayout | None = None
    notes: str = ""
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    # ---- structure -------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return self._num_layers()

    @_memo
    def _num_layers(self) -> int:
        return sum(g.repeat for g in self.layer_groups)

    def layers(self) -> list[tuple[Attention, Ffn]]:
        """One (attention, ffn) pair per layer, in model order."""
        out = []
        for g in self.layer_groups:
            out.extend([(self.attention_types[g.attention], self.ffn_types[g.ffn])] * g.repeat)
        return out

    @_memo
    def _layer_counts(self) -> list[tuple[int, Attention, Ffn]]:
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for g in self.layer_groups:
            counts[(g.attention, g.ffn)] += g.repeat
        return [(n, self.attention_types[a], self.ffn_types[f]) for (a, f), n in counts.items()]

    # ---- KV cache --------------------------------------------------------------------
    def _kv_terms(self, kv_dtype: str, tp_degree: int = 1) -> list[tuple[int, KvTerm]]:
        """(layers, term) of every stored cache; with `tp_degree` > 1, each term's bytes are
        those `tp_degree` tensor-parallel GPUs hold together (replicated heads counted)."""
        indexer_dtype = self.indexer_dtype or kv_dtype
        key = ("kv_terms", kv_dtype, tp_degree)
        if key not in self._cache:
            counts: dict[str, int] = defaultdict(int)
            for g in self.layer_groups:
                counts[g.attention] += g.repeat
            terms = [
                (n, term)
                for name, n in counts.items()
                for term in self.attention_types[name].kv_terms(kv_dtype, indexer_dtype)
            ]
            self._cache[key] = [
                (n, _replicated(t, tp_replication(tp_degree, t.heads))) for n, t in terms
            ]
        return self._cache[key]

    @_memo
    def fixed_state_bytes(self, tp_degree: int = 1) -> float:
        """Recurrent state per request, whatever its length (linear-attention layers), over
        `tp_degree` tensor-parallel GPUs."""
        counts: dict[str, int] = defaultdict(int)
        for g in self.layer_groups:
            counts[g.attention] += g.repeat
        return float(
            sum(n * self.attention_types[a].fixed_state_bytes(tp_degree) for a, n in counts.items())
        )

    def kv_bytes(self, tokens, kv_dtype: str = "bf16", tp_degree: int = 1):
        """Bytes of KV cache (and recurrent state) one request of `tokens` tokens holds;
        with `tp_degree`, over that many tensor-parallel GPUs (heads replicated beyond the
        KV heads count once per copy: `attention.tp_replication`).

        Accepts an int or a numpy array of token counts (vectorised).
        """
        if isinstance(tokens, int) and 0 <= tokens < _INT_PATH_MAX_TOKENS:
            return self._kv_bytes_int(int(tokens), kv_dtype, tp_degree)
        length = np.asarray(tokens, dtype=np.int64)
        if length.ndim == 0 or length.size > _ARRAY_MEMO_MAX_ELEMENTS:
            return self._kv_bytes_numpy(length, kv_dtype, tp_degree)
        memo = self._cache.setdefault("kv_bytes_arrays", {})
        key = (kv_dtype, tp_degree, length.shape, length.tobytes())
        found = memo.get(key)
        if found is None:
            found = self._kv_bytes_numpy(length, kv_dtype, tp_degree)
            if len(memo) >= _ARRAY_MEMO_LIMIT:
                memo.clear()
            memo[key] = found
        return found.copy()  # the caller may write into its result

    def _kv_bytes_numpy(self, length: np.ndarray, kv_dtype: str, tp_degree: int = 1):
        if np.any(length < 0):
            raise ValueError("token counts must be >= 0")
        total = np.zeros(length.shape, dtype=float)
        for n_layers, term in self._kv_terms(kv_dtype, tp_degree):
            stored = (
                length if term.window_tokens is None else np.minimum(length, term.window_tokens)
            )
            entries = -(-stored // term.ratio)  # ceil for non-negative integers
            total += n_layers * term.bytes_per_entry * entries
        total += np.where(length > 0, self.fixed_state_bytes(tp_degree), 0.0)
        return float(total) if total.ndim == 0 else total

    def _kv_bytes_int(self, length: int, kv_dtype: str, tp_degree: int = 1) -> float:
        """`kv_bytes` of one Python int in plain numbers: the numpy path's operations in
        its order (numpy on a 0-d array costs tens of microseconds a call)."""
        total = 0.0
        for n_layers, term in self._kv_terms(kv_dtype, tp_degree):
            window = term.window_tokens
            stored = length if window is None else min(length, window)
            entries = -(-stored // term.ratio)
            total += n_layers * term.bytes_per_entry * entries
        return total + (self.fixed_state_bytes(tp_degree) if length > 0 else 0.0)

    @_memo
    def kv_bytes_per_token(self, kv_dtype: str = "bf16", tp_degree: int = 1) -> float:
        """Growing bytes per token in the long-context limit (windows and states excluded)."""
        return sum(
            n * t.bytes_per_entry / t.ratio
            for n, t in self._kv_terms(kv_dtype, tp_degree)
            if t.window_tokens is None
        )

    def shipped_bytes_per_token(self, kv_dtype: str = "bf16") -> float:
        """Bytes per token that cross a link: the engine override where one is given."""
        if self.shipped_kv_bytes_per_token is not None:
            return self.shipped_kv_bytes_per_token
        return self.kv_bytes_per_token(kv_dtype)

    @_memo
    def decode_kv_model(self) -> ModelSpec:
        """This model as the decode engine stores its KV (`decode_kv_layout`): every
        windowed layer keeps the layout's uncompressed tokens; itself without a layout.
        For KV bytes only: what attention computes is the architecture's."""
        layout = self.decode_kv_layout
        if layout is None:
            return self
        kinds = {
            name: with_uncompressed_window(att, layout.uncompressed_tokens)
            for name, att in self.attention_types.items()
        }
        return dataclasses.replace(self, attention_types=kinds, decode_kv_layout=None, _cache={})

    def resident_kv_bytes(self, tokens, kv_dtype: str = "bf16", tp_degree: int = 1):
        """HBM one request of `tokens` holds on a decoding instance, in the decode engine's
        layout over `tp_degree` tensor-parallel GPUs: what admission counts and what each
        decode step reads (model/compute/roofline_parts.py), one layout for both."""
        return self.decode_kv_model().kv_bytes(tokens, kv_dtype, tp_degree)

    def decode_kv_bytes_per_token(self, kv_dtype: str = "bf16") -> float:
        """`kv_bytes_per_token` in the decode engine's layout (a decode-side cache's token)."""
        return self.decode_kv_model().kv_bytes_per_token(kv_dtype)

    def largest_window_tokens(self) -> int:
        """The longest window any layer attends to (0: none): the fewest tokens a decode
        layout may keep uncompressed."""
        windows = [getattr(a, "window_tokens", None) for a in self.attention_types.values()]
        return max((w for w in windows if w), default=0)

    def kv_breakdown(self, kv_dtype: str = "bf16") -> list[KvBreakdownRow]:
        """KV bytes by kind of layer term, for `model show`."""
        rows: dict[str, list[float]] = {}
        for n_layers, term in self._kv_terms(kv_dtype):
            row = rows.setdefault(term.category, [0, 0.0, 0.0, 0.0])
            row[0] += n_layers
            if term.window_tokens is None:
                row[1] += n_layers * term.bytes_per_entry / term.ratio
            else:
                row[2] += (
                    n_layers * term.bytes_per_entry * math.ceil(term.window_tokens / term.ratio)
                )
        counts: dict[str, int] = defaultdict(int)
        for g in self.layer_groups:
            counts[g.attention] += g.repeat
        for name, n in counts.items():
            att = self.attention_types[name]
            if isinstance(att, LinearAttention):
                row = rows.setdefault(att.label, [0, 0.0, 0.0, 0.0])
                row[0] += n
                row[3] += n * att.fixed_state_bytes()
        return [KvBreakdownRow(k, int(v[0]), v[1], v[2], v[3]) for k, v in rows.items()]

    # ---- parameters and weights --------------------------------------------------------
    def embedding_params(self) -> int:
        copies = 1 if self.tie_word_embeddings else 2
        return copies * self.vocab_size * self.hidden_size

    def _norm_params(self) -> int:
        return (2 * self.num_layers + 1) * self.hidden_size

    @_memo
    def params_total(self) -> int:
        """All parameters of the main model (MTP layers excluded, as in published totals)."""
        body = sum(
            n * (att.params(self.hidden_size) + ffn.params(self.hidden_size))
            for n, att, ffn in self._layer_counts()
        )
        return body + self.embedding_params() + self._norm_params()

    @_memo
    def params_active(self) -> int:
        """Parameters one token touches: everything but the experts it is not routed to."""
        body = sum(
            n * (att.params(self.hidden_size) + ffn.active_params(self.hidden_size))
            for n, att, ffn in self._layer_counts()
        )
        return body + self.embedding_params() + self._norm_params()

    @_memo
    def routed_expert_params(self) -> int:
        return sum(
            n * ffn.routed_expert_params(self.hidden_size) for n, _, ffn in self._layer_counts()
        )

    @_memo
    def weight_bytes(self, weight_dtype: str | None = None) -> float:
        """Bytes of weights: dense linears, routed experts, and 16-bit embeddings and norms.

        `weight_dtype` overrides both the dense and the expert dtype (a quantised deployment).
        """
        dense_dtype = weight_dtype or self.weight_dtype
        expert_dtype = weight_dtype or self.expert_weight_dtype
        experts = self.routed_expert_params()
        unquantised = self.embedding_params() + self._norm_params()
        dense = self.params_total() - experts - unquantised
        return (
            dense * dtype_bytes(dense_dtype)
            + experts * dtype_bytes(expert_dtype)
            + unquantised * dtype_bytes(EMBEDDING_DTYPE)
        )

    def moe_layout(self) -> list[tuple[int, MoeFfn]]:
        """(layers, spec) of every MoE FFN, for the expert-touch model of decode."""
        return [(n, ffn) for n, _, ffn in self._layer_counts() if isinstance(ffn, MoeFfn)]

    # ---- FLOPs -------------------------------------------------------------------------
    @_memo
    def _matmul_flop_per_token(self) -> float:
        """2 x active parameters of the linears (the embedding lookup is not a matmul)."""
        lm_head = self.vocab_size * self.hidden_size
        body = self.params_active() - self.embedding_params() - self._norm_params()
        return 2.0 * (body + lm_head)

    @_memo
    def _attention_terms(self, decode: bool) -> list[tuple[int, AttendTerm]]:
        counts: dict[str, int] = defaultdict(int)
        for g in self.layer_groups:
            counts[g.attention] += g.repeat
        return [
            (n, term)
            for name, n in counts.items()
            for term in self.attention_types[name].attend_terms(decode)
        ]

    @_memo
    def _linear_state_flop_per_token(self) -> float:
        return sum(
            n * att.flop_per_token()
            for n, att, _ in self._layer_counts()
            if isinstance(att, LinearAttention)
        )

    def prefill_flops(self, new_tokens: int, cached_tokens: int = 0) -> float:
        """FLOPs of a prefill chunk of `new_tokens` after `cached_tokens` already cached.

        Linears for every new token (the LM head only for the last), causal attention of
        each new token over everything before it, and linear-state updates.
        """
        if new_tokens <= 0:
            return 0.0
        lm_head = 2.0 * self.vocab_size * self.hidden_size
        linears = (self._matmul_flop_per_token() - lm_head) * new_tokens + lm_head
        attention = 0.0
        end = cached_tokens + new_tokens
        for n_layers, t in self._attention_terms(decode=False):
            entries = attended_entries_prefix_sum(
                end, t.ratio, t.cap_entries
            ) - attended_entries_prefix_sum(cached_tokens, t.ratio, t.cap_entries)
            attention += n_layers * t.flop_per_entry * entries
        return linears + attention + self._linear_state_flop_per_token() * new_tokens

    def decode_flops(self, context_tokens: int) -> float:
        """FLOPs of one decode token whose query sees `context_tokens` earlier tokens."""
        attention = sum(
            n * t.flop_per_entry * attended_entries(context_tokens + 1, t.ratio, t.cap_entries)
            for n, t in self._attention_terms(decode=True)
        )
        return self._matmul_flop_per_token() + attention + self._linear_state_flop_per_token()
