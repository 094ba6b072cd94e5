"""Attention layer specs: what each stores per request (KV), attends over, and weighs.

Every layer kind reduces to the same two small vocabularies, so that hybrid models
(windowed, compressed, linear) are exact at every context length:

- `KvTerm`: a stored cache of `ceil(min(L, window) / ratio)` entries of `bytes_per_entry`
  for a request of L tokens (full attention: ratio 1, no window).
- `AttendTerm`: a query at position p attends to `min(cap, ceil(p / ratio))` entries at
  `flop_per_entry` FLOPs each (full attention: ratio 1, no cap).

Tensor parallelism splits a cache by its KV heads: t GPUs over h heads hold
ceil(h / t) heads each, so t > h replicates every head t / h times (an MLA latent or a
compressed entry is one head: under TP8 each GPU holds all of it). `tp_replication` is
that factor; `KvTerm.heads` and `LinearAttention`'s state heads say what splits.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from pdd_plan.model.units import dtype_bytes


def tp_replication(tp_degree: int, heads: int) -> float:
    """Copies of each byte of a cache split by `heads` heads that `tp_degree` tensor-parallel
    GPUs hold together: tp x ceil(heads / tp) / heads (1 while tp <= heads and divides
    them; tp / heads beyond: vLLM and SGLang replicate each KV head over tp / heads GPUs)."""
    if tp_degree <= 1 or heads <= 0:
        return 1.0
    return tp_degree * -(-heads // tp_degree) / heads


@dataclass(frozen=True)
class KvTerm:
    category: str
    bytes_per_entry: float
    ratio: int = 1
    window_tokens: int | None = None
    heads: int = 1  # KV heads tensor parallelism can split the term over (one: a latent)


@dataclass(frozen=True)
class KvLayout:
    """A decode engine's KV layout: the last `uncompressed_tokens` tokens of a request kept
    uncompressed in every layer the architecture gives a window (None: the whole context),
    beside the compressed entries the architecture stores for every token (which its
    attention reads, so no engine drops them). The architecture's own window is the
    smallest: it attends to those tokens. A layer without a window keeps every token."""

    uncompressed_tokens: int | None
    source: str = ""


def with_uncompressed_window(attention, tokens: int | None):
    """`attention` keeping its last `tokens` tokens uncompressed (None: all of them), where
    the architecture gives it a window; unchanged where it has none (it keeps them all)."""
    if getattr(attention, "window_tokens", None) is None:
        return attention
    return dataclasses.replace(attention, window_tokens=tokens)


@dataclass(frozen=True)
class AttendTerm:
    flop_per_entry: float
    ratio: int = 1
    cap_entries: int | None = None


@dataclass(frozen=True)
class Indexer:
    """DSA / lightning indexer: scores every (compressed) entry, keeps the top-k."""

    num_heads: int
    head_dim: int
    topk: int

    def params(self, hidden_size: int, q_in_dim: int) -> int:
        # query projection from the q latent, one shared key projection, per-head weights
        return q_in_dim * self.num_heads * self.head_dim + hidden_size * (
            self.head_dim + self.num_heads
        )


@dataclass(frozen=True)
class GqaAttention:
    """MHA / GQA / MQA, optionally sliding-window."""

    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    window_tokens: int | None = None
    kind: str = "gqa"

    @property
    def label(self) -> str:
        return f"sliding window {self.window_tokens}" if self.window_tokens else "full attention"

    def kv_terms(self, kv_dtype: str, indexer_dtype: str) -> list[KvTerm]:
        per_token = self.num_kv_heads * (self.head_dim + self.v_head_dim) * dtype_bytes(kv_dtype)
        return [KvTerm(self.label, per_token, 1, self.window_tokens, self.num_kv_heads)]

    def fixed_state_bytes(self, tp_degree: int = 1) -> float:
        return 0.0

    def attend_terms(self, decode: bool) -> list[AttendTerm]:
        flop = 2 * self.num_heads * (self.head_dim + self.v_head_dim)
        return [AttendTerm(flop, 1, self.window_tokens)]

    def params(self, hidden_size: int) -> int:
        q = hidden_size * self.num_heads * self.head_dim
        kv = hidden_size * self.num_kv_heads * (self.head_dim + self.v_head_dim)
        o = self.num_heads * self.v_head_dim * hidden_size
        return q + kv + o


@dataclass(frozen=True)
class MlaAttention:
    """Multi-head latent attention: one latent + rope key per token, shared by all heads."""

    num_heads: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    indexer: Indexer | None = None
    window_tokens: int | None = None
    kind: str = "mla"

    @property
    def label(self) -> str:
        return "MLA latent"

    def kv_terms(self, kv_dtype: str, indexer_dtype: str) -> list[KvTerm]:
        latent = (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes(kv_dtype)
        terms = [KvTerm(self.label, latent, 1, self.window_tokens)]
        if self.indexer:
            idx = self.indexer.head_dim * dtype_bytes(indexer_dtype)
            terms.append(KvTerm("DSA indexer keys", idx, 1, self.window_tokens))
        return terms

    def fixed_state_bytes(self, tp_degree: int = 1) -> float:
        return 0.0

    def attend_terms(self, decode: bool) -> list[AttendTerm]:
        # Decode runs the weight-absorbed form (attention over the 512+64 latent);
        # prefill the expanded form (per-head nope+rope keys, v_head_dim values).
        if decode:
            flop = 2 * self.num_heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
        else:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            flop = 2 * self.num_heads * (qk + self.v_head_dim)
        cap = self.indexer.topk if self.indexer else self.window_tokens
        terms = [AttendTerm(flop, 1, cap)]
        if self.indexer:
            terms.append(AttendTerm(2 * self.indexer.num_heads * self.indexer.head_dim, 1, None))
        return terms

    def params(self, hidden_size: int) -> int:
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.q_lora_rank:
            q = hidden_size * self.q_lora_rank + self.q_lora_rank * self.num_heads * qk
        else:
            q = hidden_size * self.num_heads * qk
        kv_a = hidden_size * (self.kv_lora_rank + self.qk_rope_head_dim)
        kv_b = self.kv_lora_rank * self.num_heads * (self.qk_nope_head_dim + self.v_head_dim)
        o = self.num_heads * self.v_head_dim * hidden_size
        idx = (
            self.indexer.params(hidden_size, self.q_lora_rank or hidden_size) if self.indexer else 0
        )
        return q + kv_a + kv_b + o + idx


@dataclass(frozen=True)
class CompressedAttention:
    """DeepSeek-V4 compressed attention (CSA with an indexer at ratio 4, HCA at 128).

    Stores `ceil(L / ratio)` compressed entries of `num_kv_heads * head_dim` elements
    (ratio 0: none) plus the last `window_tokens` tokens uncompressed, and indexer keys
    for every compressed entry where an indexer exists.
    """

    num_heads: int
    head_dim: int
    num_kv_heads: int
    compress_ratio: int
    window_tokens: int
    q_lora_rank: int
    o_lora_rank: int
    o_groups: int
    indexer: Indexer | None = None
    kind: str = "compressed"

    @property
    def label(self) -> str:
        if self.compress_ratio == 0:
            return "window only"
        return f"compressed 1/{self.compress_ratio}"

    def kv_terms(self, kv_dtype: str, indexer_dtype: str) -> list[KvTerm]:
        entry = self.num_kv_heads * self.head_dim * dtype_bytes(kv_dtype)
        heads = self.num_kv_heads
        terms = [KvTerm(f"window {self.window_tokens}", entry, 1, self.window_tokens, heads)]
        if self.compress_ratio:
            terms.append(KvTerm(self.label, entry, self.compress_ratio, None, heads))
            if self.indexer:
                idx = self.indexer.head_dim * dtype_bytes(indexer_dtype)
                terms.append(KvTerm("indexer keys", idx, self.compress_ratio, None))
        return terms

    def fixed_state_bytes(self, tp_degree: int = 1) -> float:
        return 0.0

    def attend_terms(self, decode: bool) -> list[AttendTerm]:
        # K and V share the one stored head: QK^T and AV each cost 2 * head_dim per head.
        flop = 2 * self.num_heads * 2 * self.head_dim
        terms = [AttendTerm(flop, 1, self.window_tokens)]
        if self.compress_ratio:
            cap = self.indexer.topk if self.indexer else None
            terms.append(AttendTerm(flop, self.compress_ratio, cap))
            if self.indexer:
                idx_flop = 2 * self.indexer.num_heads * self.indexer.head_dim
                terms.append(AttendTerm(idx_flop, self.compress_ratio, None))
        return terms

    def params(self, hidden_size: int) -> int:
        q = hidden_size * self.q_lora_rank + self.q_lora_rank * self.num_heads * self.head_dim
        kv = hidden_size * self.num_kv_heads * self.head_dim
        # grouped low-rank output: each group of heads -> o_lora_rank, then all groups -> hidden
        o_a = self.num_heads * self.head_dim * self.o_lora_rank
        o_b = self.o_groups * self.o_lora_rank * hidden_size
        # the compressor's key/value and gate projections (only where entries are compressed)
        compressor = 2 * hidden_size * self.head_dim if self.compress_ratio else 0
        idx = self.indexer.params(hidden_size, self.q_lora_rank) if self.indexer else 0
        return q + kv + o_a + o_b + compressor + idx


@dataclass(frozen=True)
class LinearAttention:
    """Linear / recurrent attention (Gated-DeltaNet, KDA, lightning): a fixed state."""

    variant: str
    num_heads: int
    num_key_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    state_dtype: str = "fp32"
    conv_dtype: str = "bf16"
    kind: str = "linear"

    @property
    def label(self) -> str:
        return f"linear state ({self.variant})"

    def kv_terms(self, kv_dtype: str, indexer_dtype: str) -> list[KvTerm]:
        return []

    def _conv_channels(self) -> int:
        return 2 * self.num_key_heads * self.key_head_dim + self.num_heads * self.value_head_dim

    def fixed_state_bytes(self, tp_degree: int = 1) -> float:
        """The recurrent and convolution state of one request, over `tp_degree` GPUs (split
        by the key heads, the fewer of the two head counts)."""
        recurrent = self.num_heads * self.key_head_dim * self.value_head_dim
        conv = max(self.conv_kernel - 1, 0) * self._conv_channels()
        state = recurrent * dtype_bytes(self.state_dtype) + conv * dtype_bytes(self.conv_dtype)
        return state * tp_replication(tp_degree, min(self.num_heads, self.num_key_heads))

    def attend_terms(self, decode: bool) -> list[AttendTerm]:
        return []

    def flop_per_token(self) -> float:
        # state update (k v^T outer product and decay) plus read-out q^T S
        return 4.0 * self.num_heads * self.key_head_dim * self.value_head_dim

    def params(self, hidden_size: int) -> int:
        qk = 2 * self.num_key_heads * self.key_head_dim
        v = self.num_heads * self.value_head_dim
        # q, k, v, an output gate of width v, per-head decay/beta gates, output projection
        proj = hidden_size * (qk + 2 * v + 2 * self.num_heads) + v * hidden_size
        conv = self.conv_kernel * self._conv_channels()
        return proj + conv


Attention = GqaAttention | MlaAttention | CompressedAttention | LinearAttention


def attended_entries_prefix_sum(positions: int, ratio: int, cap: int | None) -> int:
    """Sum over query positions p = 1..positions of min(cap, ceil(p / ratio)).

    Closed form, so long prompts cost nothing: with q = N // r and s = N % r the sum
    of ceil(p / r) is r * q (q + 1) / 2 + s (q + 1); a cap binds from p = cap * r on.
    """
    if positions <= 0:
        return 0
    uncapped_until = positions if cap is None else min(positions, cap * ratio)
    q, s = divmod(uncapped_until, ratio)
    total = ratio * q * (q + 1) // 2 + s * (q + 1)
    if cap is not None and positions > uncapped_until:
        total += cap * (positions - uncapped_until)
    return total


def attended_entries(position: int, ratio: int, cap: int | None) -> int:
    """Entries one query at `position` (1-based) attends to."""
    entries = math.ceil(position / ratio)
    return entries if cap is None else min(cap, entries)
