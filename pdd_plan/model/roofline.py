"""Roofline of one serving instance: prefill, decode and extend-decode step times.

One forward pass ("step") over a group of `gpus` GPUs costs

    max(compute_s, memory_s) + comm_s + overhead_s

- compute_s: linear FLOPs at the compute dtype's peak x measured GEMM efficiency
  (`Gpu.*_mfu_frac`), plus attention FLOPs at the BF16 peak x that efficiency x
  `*_ATTENTION_FLOP_EFF_FRAC` (flash attention runs below a GEMM's efficiency).
- memory_s: bytes read or written once, at HBM peak x measured `hbm_efficiency_frac`:
  the dense weights, the routed experts the step's tokens touch (modeling-notes,
  "Roofline of one instance": E (1 - (1 - k/E)^T) distinct experts per MoE layer for T
  tokens), every running request's KV, a chunk's cached KV and the KV it writes.
- comm_s: what the GPUs exchange (below; 0 on one GPU).
- overhead_s: `step_overhead_s` plus a fixed latency per kernel of every layer.

Two ways to split the model over the GPUs (`Instance.parallelism`):

- "tp", tensor parallelism: every weight and all KV split evenly over the GPUs, so
  memory_s = all bytes / (gpus x one GPU's bandwidth); two ring all-reduces per layer of
  tokens x hidden x 2 bytes (hierarchical over the RDMA NICs beyond one scale-up domain).
- "ep", data-parallel attention + expert parallelism (DeepSeek's EP32 / EP144, SGLang's
  and TRT-LLM's wide EP): each GPU runs attention for its own share of the requests;
  everything but the routed experts (attention, dense FFN layers, shared experts,
  router, embeddings, LM head) is replicated on every GPU; the routed experts are
  sharded, ceil(E / gpus) per GPU and MoE layer. Dense FFN layers of an MoE model
  (DeepSeek-V3's first three) are data parallel, not tensor parallel: they are a few
  percent of the weights, TP over 16-32 GPUs would cut their 18,432-wide GEMMs into
  slivers and add a reduce-scatter + all-gather of the whole batch per layer over the
  NICs; SGLang runs them DP (`--moe-dense-tp-size 1`), as DeepSeek runs attention and
  the shared expert. A step's
  tokens are taken as spread evenly over the GPUs (the throughput view: a loaded EP
  instance runs many requests, each on one GPU), so compute_s is the FLOPs / gpus; each
  GPU reads the replicated weights, those of its experts the whole step's tokens touch
  and 1/gpus of the KV; comm_s is a dispatch (FP8 where the compute is FP8, as DeepEP
  does, else BF16) and a combine (BF16) all-to-all per MoE layer (`alltoall_time_s`).
  The busiest GPU gets `EP_LOAD_IMBALANCE` x the mean routed tokens (expert compute and
  all-to-all bytes). A lone request's latency is underestimated: its attention and
  replicated layers run on one GPU only, not spread (up to gpus x for those parts).
- "auto" (the default): "ep" for a model with routed experts on more than
  min(AUTO_EP_ABOVE_GPUS, scale_up_domain_gpus) GPUs, else "tp". Beyond 8 GPUs tensor
  parallelism stops paying: the KV cannot be split further than its KV heads (at most 8
  in GQA models, one shared latent in MLA), so engines replicate it across TP ranks
  (the "tp" model here splits it, optimistically); the two all-reduces per layer carry
  the whole batch, over the NICs once the instance spans nodes; and every published
  large MoE deployment at that size runs DP attention + EP (DeepSeek EP32 / EP144,
  SGLang EP32 / EP72 at 3.3x / 5.2x its own TP16 baseline, TRT-LLM wide EP on GB200).
  Up to 8 GPUs in one domain tensor parallelism is every engine's default for latency,
  its all-reduces stay on NVLink, and it is what the TP anchors check.

Limits, all on the side of a slower estimate unless noted: communication is added, not
overlapped (DeepSeek and SGLang hide most all-to-all time behind a second micro-batch);
multi-token prediction (speculative decoding) is not modelled; an EP dispatch is charged
one copy per (token, expert) pair, as DeepEP's low-latency kernels send it, while its
prefill kernels send a token once per destination node; sparse attention (DSA / CSA
top-k) is charged a read of all stored KV; in "tp" expert load is taken as balanced
(optimistic) and KV as split over all GPUs (optimistic beyond the KV heads); NCCL at
1-30 MB messages is slower than the ring model (optimistic, see
tests/anchors/test_roofline_kernels.py); redundant experts (EPLB) are not counted in
the weights (optimistic by their memory, 12.5 % of the experts in DeepSeek's units).
Against DeepSeek-V3's published large-scale EP throughput (tests/unit/test_roofline.py)
"ep" lands at 0.56-0.99 of the measured figures because two errors roughly cancel: its
added all-to-alls (50-72 % of its step there) stand in for kernels that run well below
this roofline (SGLang's decode step is 2.4x its compute + memory + overhead). Correcting
one without the other would put it off by about 2x.

A small prefill chunk cannot beat one read of the weights: that is the "tail chunk"
inefficiency after a high prefix hit. Every constant below names its origin; the
efficiency fractions themselves are catalog data (measured, see hardware_catalog/gpus).

Speed: the planner asks for thousands of scalar steps. A step whose arguments are all
Python numbers is assembled in plain floats by the same code as the vectorised one (the
kernels' primitives keep a float a float) and memoised per (batch, context, new, cached,
prompts); the per-instance constants and per-context FLOP and KV figures are memoised
too. The memo lives in the model's private cache under the instance's fields, so every
`Instance` of the same (model, GPU, shape, dtypes, profile) shares it.
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.engine_profile import IDENTITY, EngineProfile
from pdd_plan.model.hardware import Gpu
from pdd_plan.model.kernels import (  # noqa: F401  (re-exported for callers of roofline)
    ACTIVATION_BYTES,
    ATTENTION_KERNEL_LATENCY_S,
    AUTO_EP_ABOVE_GPUS,
    CONTEXT_ATTENTION_FLOP_EFF_FRAC,
    DENSE_LAYER_GEMMS,
    DENSE_LAYER_MEMORY_OPS,
    EP_LOAD_IMBALANCE,
    GEMM_LATENCY_S,
    GENERATION_ATTENTION_FLOP_EFF_FRAC,
    MEMORY_OP_LATENCY_S,
    MOE_EXTRA_GEMMS,
    MOE_EXTRA_MEMORY_OPS,
    PARALLELISMS,
    STEP_OVERHEAD_S,
    AllReduce,
    AllToAll,
    achievable_bytes_per_s,
    achievable_flop_per_s,
    allreduce_time_s,
    alltoall_time_s,
    as_output,
    attention_decode_time_s,
    context_attention_time_s,
    experts_touched,
    gemm_time_s,
    maximum,
    mla_decode_time_s,
    per_unique,
    where,
)
from pdd_plan.model.llm import EMBEDDING_DTYPE, ModelSpec
from pdd_plan.units import dtype_bytes

STEP_KEYS = ("compute_s", "memory_s", "comm_s", "overhead_s", "total_s", "flops", "bytes")
# Memoised scalar steps per instance before the memo starts afresh (a sweep in one process
# meets many contexts; one solve stays far below this).
STEP_MEMO_LIMIT = 200_000
# Vectorised step times are memoised too (the planner asks the same per-class prefill
# times at every rate it tries) for arguments of at most this many elements each, this
# many calls per instance: at most 20 MB, in practice well under 1 MB.
VECTOR_MEMO_MAX_ELEMENTS = 2048
VECTOR_MEMO_LIMIT = 256
# KV bytes of arrays of at most this many token counts are looked up per count in the
# instance's memo (a numpy evaluation costs 50-100 us whatever the size below this).
KV_MEMO_MAX_ELEMENTS = 256


@dataclass(frozen=True)
class Instance:
    """One serving instance: `gpus` GPUs of one type running one model replica.

    `parallelism`: "tp", "ep" or "auto" (module docstring); `parallel_mode()` is the one
    in force.
    """

    model: ModelSpec
    gpu: Gpu
    gpus: int
    kv_dtype: str = "bf16"
    weight_dtype: str | None = None  # None: the model's native dtypes
    step_overhead_s: float = STEP_OVERHEAD_S  # per forward pass; origin at STEP_OVERHEAD_S
    parallelism: str = "auto"
    engine_profile: EngineProfile = IDENTITY  # fitted step parameters (engine_profile.py)

    def __post_init__(self):
        if int(self.gpus) != self.gpus or self.gpus < 1:
            raise ValueError(f"gpus must be a positive integer, got {self.gpus!r}")
        dtype_bytes(self.kv_dtype)  # KeyError names the known dtypes
        if self.weight_dtype is not None:
            dtype_bytes(self.weight_dtype)
        if self.step_overhead_s < 0:
            raise ValueError("step_overhead_s must be >= 0")
        if self.parallelism not in PARALLELISMS:
            raise ValueError(
                f"parallelism must be one of {', '.join(PARALLELISMS)}, got {self.parallelism!r}"
            )
        if self.parallelism == "ep" and not self.model.routed_expert_params():
            raise ValueError(f"parallelism 'ep' needs routed experts; {self.model.id} has none")
        key = ("instance", self.gpu, self.gpus, self.kv_dtype, self.weight_dtype)
        key += (self.step_overhead_s, self.parallelism, self.engine_profile)
        cache = getattr(self.model, "_cache", None)
        memo = ({}, {}, {}) if cache is None else cache.setdefault(key, ({}, {}, {}))
        object.__setattr__(self, "_memo", memo)  # (constants, scalar, vector steps)
        object.__setattr__(self, "_is_ep", self.parallel_mode() == "ep")  # asked per step

    def _const(self, key, compute):
        """`compute()` once per instance and `key` (figures fixed by the instance's fields)."""
        consts = self._memo[0]
        try:
            return consts[key]
        except KeyError:
            consts[key] = value = compute()
            return value

    def parallel_mode(self) -> str:
        """ "tp" or "ep": the parallelism asked for, or what "auto" picks (module docstring)."""
        if self.parallelism != "auto":
            return self.parallelism
        moe = self.model.routed_expert_params() > 0
        spread = self.gpus > min(AUTO_EP_ABOVE_GPUS, self.gpu.scale_up_domain_gpus)
        return "ep" if moe and spread else "tp"

    def _ep(self) -> bool:
        return self._is_ep

    # ---- dtypes and memory -------------------------------------------------------------
    def _dense_dtype(self) -> str:
        return self.weight_dtype or self.model.weight_dtype

    def _expert_dtype(self) -> str:
        return self.weight_dtype or self.model.expert_weight_dtype

    def compute_dtype(self) -> str:
        """fp8 where all linear weights are 8-bit or less and the GPU has FP8, else bf16."""
        return self._const("compute_dtype", self._compute_dtype)

    def _compute_dtype(self) -> str:
        widths = [dtype_bytes(self._dense_dtype())]
        if self.model.routed_expert_params():
            widths.append(dtype_bytes(self._expert_dtype()))
        has_fp8 = bool(self.gpu.fp8_flop_per_s and self.gpu.fp8_mfu_frac)
        return "fp8" if max(widths) <= 1.0 and has_fp8 else "bf16"

    def weight_bytes(self) -> float:
        return float(self.model.weight_bytes(self.weight_dtype))

    def routed_expert_bytes(self) -> float:
        """Bytes of all routed experts (all MoE layers)."""
        return self.model.routed_expert_params() * dtype_bytes(self._expert_dtype())

    def replicated_weight_bytes(self) -> float:
        """In "ep", the weights every GPU holds: all but the routed experts."""
        return self.weight_bytes() - self.routed_expert_bytes()

    def _experts_per_gpu(self, num_experts: int) -> int:
        """Routed experts of one MoE layer on one GPU in "ep": ceil(E / gpus) (when the
        GPUs do not divide E, some GPU holds the larger share and sets the step)."""
        return -(-num_experts // self.gpus)

    def weight_bytes_per_gpu(self) -> float:
        """ "tp": weights / gpus; "ep": replicated weights + this GPU's routed experts."""
        if not self._ep():
            return self.weight_bytes() / self.gpus
        experts = sum(n * self._experts_per_gpu(e) * b for n, e, _, b in self._expert_bytes())
        return self.replicated_weight_bytes() + experts

    def _usable_bytes_per_gpu(self) -> float:
        return self.gpu.hbm_bytes * self.gpu.usable_memory_frac

    def kv_capacity_bytes(self) -> float:
        """HBM left for KV over all GPUs (<= 0: does not fit): gpus x HBM x usable fraction
        - weights ("tp"); gpus x (HBM x usable fraction - weights per GPU) ("ep", where a
        GPU whose replicated weights and experts do not fit leaves the instance unfit)."""
        if self._ep():
            return self.gpus * (self._usable_bytes_per_gpu() - self.weight_bytes_per_gpu())
        usable = self.gpus * self.gpu.hbm_bytes * self.gpu.usable_memory_frac
        return usable - self.weight_bytes()

    def fits(self) -> bool:
        return self.kv_capacity_bytes() > 0

    def max_batch(self, context_tokens) -> int:
        """Requests of `context_tokens` whose KV fits next to the weights (0 if none).

        In "ep" each request's KV lives whole on one GPU: gpus x the requests one GPU holds.
        """
        tokens = max(int(round(context_tokens)), 1)
        return self._const(("max_batch", tokens), lambda: self._max_batch(tokens))

    def _max_batch(self, tokens: int) -> int:
        capacity = self.kv_capacity_bytes()
        per_request = float(self.model.resident_kv_bytes(tokens, self.kv_dtype))
        if self._ep():
            per_gpu = capacity / self.gpus
            return self.gpus * int(per_gpu // per_request) if capacity > 0 else 0
        return max(int(capacity // per_request), 0) if capacity > 0 else 0

    # ---- the parts of one step -----------------------------------------------------------
    def _expert_bytes(self) -> list[tuple[int, int, int, float]]:
        """(layers, experts, top-k, bytes of one expert) per MoE FFN kind."""
        return self._const("expert_bytes", self._expert_bytes_uncached)

    def _expert_bytes_uncached(self) -> list[tuple[int, int, int, float]]:
        width = dtype_bytes(self._expert_dtype())
        hidden = self.model.hidden_size
        return [
            (n, f.num_experts, f.experts_per_token, f.expert_params(hidden) * width)
            for n, f in self.model.moe_layout()
        ]

    def _dense_read_bytes(self) -> float:
        """Weights every step reads whatever the routing: all but the routed experts and
        the input embedding table (a step gathers only its tokens' rows of it)."""
        return self._const("dense_read_bytes", self._dense_read_bytes_uncached)

    def _dense_read_bytes_uncached(self) -> float:
        experts = self.model.routed_expert_params() * dtype_bytes(self._expert_dtype())
        m = self.model
        lookup = 0 if m.tie_word_embeddings else m.vocab_size * m.hidden_size
        return self.weight_bytes() - experts - lookup * dtype_bytes(EMBEDDING_DTYPE)

    def weight_read_bytes(self, tokens):
        """Weight bytes a step of `tokens` tokens reads (all GPUs together, "tp")."""
        touched = sum(n * experts_touched(e, k, tokens) * b for n, e, k, b in self._expert_bytes())
        return self._dense_read_bytes() + touched

    def ep_weight_read_bytes_per_gpu(self, tokens):
        """Weight bytes one GPU reads in an "ep" step of `tokens` tokens (all GPUs): the
        replicated weights, and each of its ceil(E / gpus) experts per MoE layer with the
        chance that one of the step's tokens is routed to it, 1 - (1 - k/E)^T."""
        experts = sum(
            held * experts_touched(e, k, tokens) / e * b for held, e, k, b in self._held_experts()
        )
        return self._dense_read_bytes() + experts

    def _held_experts(self) -> list[tuple[int, int, int, float]]:
        """(layers x experts one GPU holds per layer, experts, top-k, bytes of one expert)
        per MoE FFN kind, in "ep"."""
        return self._const("held_experts", lambda: [
            (n * self._experts_per_gpu(e), e, k, b) for n, e, k, b in self._expert_bytes()
        ])  # fmt: skip

    def _linear_flop_per_token(self) -> tuple[float, float]:
        """(matmul FLOPs per token incl. the LM head, linear-state FLOPs per token)."""
        m = self.model
        return self._const(
            "linear_flop_per_token",
            lambda: (m._matmul_flop_per_token(), m._linear_state_flop_per_token()),
        )

    def _routed_flop_per_token(self) -> float:
        """Matmul FLOPs of one token's routed experts (all MoE layers)."""
        return self._const("routed_flop_per_token", self._routed_flop_per_token_uncached)

    def _routed_flop_per_token_uncached(self) -> float:
        hidden = self.model.hidden_size
        return 2.0 * sum(
            n * f.experts_per_token * f.expert_params(hidden) for n, f in self.model.moe_layout()
        )

    def _chunk_attention_flops(self, new: int, cached: int) -> float:
        if new <= 0:
            return 0.0
        key = ("chunk_attention_flops", new, cached)
        return self._const(key, lambda: self._chunk_attention_flops_uncached(new, cached))

    def _chunk_attention_flops_uncached(self, new: int, cached: int) -> float:
        matmul, state = self._linear_flop_per_token()
        lm_head = 2.0 * self.model.vocab_size * self.model.hidden_size
        linear = (matmul - lm_head) * new + lm_head + state * new
        return self.model.prefill_flops(new, cached) - linear

    def _decode_attention_flops(self, context: int) -> float:
        key = ("decode_attention_flops", context)
        return self._const(key, lambda: self._decode_attention_flops_uncached(context))

    def _decode_attention_flops_uncached(self, context: int) -> float:
        linear = sum(self._linear_flop_per_token())
        return self.model.decode_flops(context) - linear

    def layer_latency_s(self) -> float:
        """Fixed kernel latencies of one forward pass (all layers)."""
        return self._const("layer_latency_s", self._layer_latency_s)

    def _layer_latency_s(self) -> float:
        gemm = GEMM_LATENCY_S[self.compute_dtype()]
        dense = DENSE_LAYER_GEMMS * gemm + ATTENTION_KERNEL_LATENCY_S
        dense += DENSE_LAYER_MEMORY_OPS * MEMORY_OP_LATENCY_S
        moe_layers = sum(n for n, _ in self.model.moe_layout())
        moe = MOE_EXTRA_GEMMS * gemm + MOE_EXTRA_MEMORY_OPS * MEMORY_OP_LATENCY_S
        return self.model.num_layers * dense + moe_layers * moe

    def _compute(self, batch, context, new, cached, prompts) -> tuple:
        """(FLOPs, compute seconds) of a step: linears at the compute dtype, attention in
        BF16 at its own efficiency (generation for decode tokens, context for a chunk);
        `prompts` chunks of `new` tokens. In "ep" the busiest GPU's routed-expert FLOPs
        are EP_LOAD_IMBALANCE x their share."""
        matmul, state = self._linear_flop_per_token()
        lm_head = 2.0 * self.model.vocab_size * self.model.hidden_size
        # the LM head runs for every decode token but only the last token of a chunk
        tokens = batch + prompts * new
        linear = tokens * (matmul + state) - where(new > 0, prompts * (new - 1) * lm_head, 0.0)
        decode_attention = batch * self._per_unique(self._decode_attention_flops, context)
        chunk_attention = prompts * self._per_unique(self._chunk_attention_flops, new, cached)
        attention_s = (
            decode_attention / GENERATION_ATTENTION_FLOP_EFF_FRAC
            + chunk_attention / CONTEXT_ATTENTION_FLOP_EFF_FRAC
        ) / achievable_flop_per_s(self.gpu, "bf16")
        linear_rate = achievable_flop_per_s(self.gpu, self.compute_dtype())
        linear_s = linear / linear_rate
        flops = linear + decode_attention + chunk_attention
        if self._ep() and self.gpus > 1:
            routed = tokens * self._routed_flop_per_token()
            excess = (EP_LOAD_IMBALANCE - 1.0) * routed / linear_rate
            return flops, (linear_s + excess + attention_s) / self.gpus
        return flops, (linear_s + attention_s) / self.gpus

    def _kv_moved_bytes(self, batch, context, new, cached, prompts) -> tuple:
        """(running requests' KV read, chunks' cached KV read plus new KV written)."""
        running = batch * self._kv_bytes(context)
        chunk_kv = self._kv_bytes(cached + new)
        return running, where(new > 0, prompts * chunk_kv, 0.0)

    def _kv_bytes(self, tokens):
        """KV bytes of one request of `tokens` (whole) tokens; memoised per count for a
        float and for the elements of a small array (a step's classes recur)."""
        if isinstance(tokens, float) and math.isfinite(tokens):
            return self._kv_bytes_of(int(tokens))
        counts = np.asarray(tokens).astype(np.int64)
        if counts.size > KV_MEMO_MAX_ELEMENTS or not (counts >= 0).all():
            return self.model.kv_bytes(counts, self.kv_dtype)  # refuses negative counts
        if counts.ndim == 0:
            return self._kv_bytes_of(int(counts))
        return self._per_unique(self._kv_bytes_of, counts)

    def _per_unique(self, fn, *arrays):
        """`per_unique` of one of this instance's per-count figures, a small array's
        result memoised per its values (a step's classes recur at every batch)."""
        return per_unique(fn, *arrays, memo=self._const("per_unique", dict))

    def _kv_bytes_of(self, count: int) -> float:
        return self._const(("kv_bytes", count), lambda: self.model.kv_bytes(count, self.kv_dtype))

    def _moved_bytes(self, batch, context, new, cached, prompts) -> tuple:
        """(bytes all GPUs move, bytes the busiest GPU moves): weights the step's tokens
        touch, the running requests' KV, and chunks' cached KV read plus new KV written
        (together kv(cached + new)); "ep" reads the replicated weights on every GPU."""
        tokens = batch + prompts * new
        running, chunk = self._kv_moved_bytes(batch, context, new, cached, prompts)
        if self._ep():
            per_gpu = self.ep_weight_read_bytes_per_gpu(tokens) + (running + chunk) / self.gpus
            per_gpu = where(tokens > 0, per_gpu, 0.0)
            return per_gpu * self.gpus, per_gpu
        moved = self.weight_read_bytes(tokens) + running
        moved = moved + chunk
        moved = where(tokens > 0, moved, 0.0)
        return moved, moved / self.gpus

    def _comm_s(self, tokens):
        """ "tp": two all-reduces per layer of all tokens x hidden x 2 B. "ep": a dispatch and
        a combine per MoE layer of the busiest GPU's tokens (EP_LOAD_IMBALANCE x tokens /
        gpus) x top-k x the experts' input width (the latent width of a latent MoE)."""
        if not self._is_ep:
            reduces, allreduce = self._const("allreduces", self._allreduces)
            message = tokens * self.model.hidden_size * ACTIVATION_BYTES
            return reduces * allreduce.time_s(message)
        alltoall, dispatch, kinds = self._const("alltoalls", self._alltoalls)
        per_gpu = EP_LOAD_IMBALANCE * tokens / self.gpus
        comm = tokens * 0.0
        for n, top_k, width in kinds:
            copies = per_gpu * top_k * width
            comm = comm + n * (
                alltoall.time_s(copies * dispatch) + alltoall.time_s(copies * ACTIVATION_BYTES)
            )
        return comm

    def _allreduces(self) -> tuple[int, AllReduce]:
        """(all-reduces per step: two per layer, the all-reduce on this instance)."""
        return 2 * self.model.num_layers, AllReduce.of(self.gpu, self.gpus)

    def _alltoalls(self) -> tuple[AllToAll, float, list[tuple[int, int, int]]]:
        """(the all-to-all on this instance, bytes per dispatched element, and (layers,
        top-k, experts' input width) per MoE FFN kind)."""
        dispatch = dtype_bytes("fp8") if self.compute_dtype() == "fp8" else ACTIVATION_BYTES
        hidden = self.model.hidden_size
        kinds = [
            (n, f.experts_per_token, f.expert_hidden_size or hidden)
            for n, f in self.model.moe_layout()
        ]
        return AllToAll.of(self.gpu, self.gpus), dispatch, kinds

    def _step(self, batch, context, new, cached, prompts=1.0) -> dict:
        """One forward pass: `batch` decode tokens at `context` plus `prompts` chunks of
        `new` tokens after `cached` ones. Arrays broadcast; each result is an array (a
        float when every argument is a finite Python or numpy number); a step with no
        tokens is no forward pass and costs 0."""
        key = _scalar_key(batch, context, new, cached, prompts)
        if key is not None:
            return dict(zip(STEP_KEYS, self._scalar_step(key), strict=True))
        return self._vector_step(batch, context, new, cached, prompts)

    def _step_total_s(self, batch, context, new, cached, prompts=1.0):
        """`_step(...)["total_s"]`: a float for numbers, an array for arrays."""
        key = _scalar_key(batch, context, new, cached, prompts)
        if key is not None:
            return self._scalar_step(key)[4]
        key = _vector_key(batch, context, new, cached, prompts)
        if key is None:
            return as_output(self._vector_step(batch, context, new, cached, prompts)["total_s"])
        vectors = self._memo[2]
        if key not in vectors:
            if len(vectors) >= VECTOR_MEMO_LIMIT:
                vectors.clear()
            step = self._vector_step(batch, context, new, cached, prompts)
            vectors[key] = as_output(step["total_s"])
        out = vectors[key]
        return out.copy() if isinstance(out, np.ndarray) else out  # callers may write to it

    def _scalar_step(self, key: tuple) -> tuple:
        """The STEP_KEYS figures of one step in plain floats, memoised per `key`."""
        steps = self._memo[1]
        if key not in steps:
            if len(steps) >= STEP_MEMO_LIMIT:
                steps.clear()
            batch, context, new, cached, prompts = key
            if min(batch, context, new, cached) < 0:
                raise ValueError("batch and token counts must be >= 0")
            if prompts < 0:
                raise ValueError("prompts must be >= 0")
            step = self._assemble(batch, context, new, cached, prompts, plain=True)
            steps[key] = tuple(float(step[k]) for k in STEP_KEYS)
        return steps[key]

    def _vector_step(self, batch, context, new, cached, prompts) -> dict:
        batch = np.asarray(batch, dtype=float)
        prompts = np.asarray(prompts, dtype=float)
        context, new, cached = (np.rint(np.asarray(v, dtype=float)) for v in (context, new, cached))
        if (batch < 0).any() or (new < 0).any() or (cached < 0).any() or (context < 0).any():
            raise ValueError("batch and token counts must be >= 0")
        if (prompts < 0).any():
            raise ValueError("prompts must be >= 0")
        return self._assemble(batch, context, new, cached, prompts)

    def _assemble(self, batch, context, new, cached, prompts, plain=False) -> dict:
        """The step's parts from whole-token counts: numpy arrays or Python floats alike
        (`plain`: all five are Python floats, so every part is one too)."""
        tokens = batch + prompts * new
        flops, compute_s = self._compute(batch, context, new, cached, prompts)
        moved, moved_per_gpu = self._moved_bytes(batch, context, new, cached, prompts)
        if self._ep():
            memory_s = moved_per_gpu / achievable_bytes_per_s(self.gpu)
        else:
            memory_s = moved / (self.gpus * achievable_bytes_per_s(self.gpu))
        comm_s = where(tokens > 0, self._comm_s(tokens), 0.0)
        parts = {"compute_s": compute_s, "memory_s": memory_s, "comm_s": comm_s}
        parts.update(step_overhead_s=self.step_overhead_s, layer_s=self.layer_latency_s())
        counts = {"decode_requests": batch, "prompts": prompts, "new_tokens": new}
        counts["groups"] = self.gpus if self._ep() else 1
        adjust = self.engine_profile.adjust_floats if plain else self.engine_profile.adjust
        compute_s, memory_s, comm_s, overhead_s = adjust(parts, counts)
        overhead_s = where(tokens > 0, overhead_s, 0.0)
        return {
            "compute_s": compute_s,
            "memory_s": memory_s,
            "comm_s": comm_s,
            "overhead_s": overhead_s,
            "total_s": maximum(compute_s, memory_s) + comm_s + overhead_s,
            "flops": flops,
            "bytes": moved,
        }

    # ---- public step times ---------------------------------------------------------------
    def prefill_time_s(self, new_tokens, cached_tokens=0, prompts=1):
        """Prefill of `new_tokens` after `cached_tokens`: one request alone on the instance,
        or with `prompts` > 1 that many such prompts in one forward pass (a prefill batch,
        as EP prefill servers run: DeepSeek and SGLang batch 16,384 tokens per GPU).

        Vectorised over numpy arrays of any argument.
        """
        return self._step_total_s(0.0, 0, new_tokens, cached_tokens, prompts)

    def decode_step_s(self, batch, mean_context_tokens):
        """One decode step of `batch` running requests (vectorised over batch)."""
        return self._step_total_s(batch, mean_context_tokens, 0, 0)

    def extend_decode_s(self, batch, handed_tokens, context_tokens):
        """One decode step of `batch` requests that also processes `handed_tokens` handed-off
        tokens of one request after its `context_tokens` of KV (extend-decode / handoff).

        `context_tokens` is also the batch's mean context. With no handed tokens this is
        `decode_step_s`; with an empty batch it is a prefill chunk after that context.
        A float for scalar arguments; vectorised over numpy arrays of any of them.
        """
        return self._step_total_s(batch, context_tokens, handed_tokens, context_tokens)

    def mixed_step_breakdown(self, batch, context_tokens, new_tokens, cached_tokens, prompts):
        """The parts of one chunked-prefill iteration (arrays, as `_step`): `batch` decode
        requests at a mean context of `context_tokens` plus `prompts` chunks of
        `new_tokens` after `cached_tokens` each (sim/aggregated.py)."""
        return self._step(batch, context_tokens, new_tokens, cached_tokens, prompts)

    def mixed_step_s(self, batch, context_tokens, new_tokens, cached_tokens, prompts=1):
        """Time of one chunked-prefill iteration (`mixed_step_breakdown`)."""
        return self._step_total_s(batch, context_tokens, new_tokens, cached_tokens, prompts)

    def prefill_breakdown(self, new_tokens: int, cached_tokens: int = 0, prompts: int = 1) -> dict:
        return self._breakdown(self._step(0.0, 0, new_tokens, cached_tokens, prompts))

    def decode_breakdown(self, batch: int, mean_context_tokens: float) -> dict:
        return self._breakdown(self._step(batch, mean_context_tokens, 0, 0))

    def _breakdown(self, step: dict) -> dict:
        out: dict = {k: float(v) for k, v in step.items()}
        out["bound"] = "compute" if out["compute_s"] >= out["memory_s"] else "memory"
        out["parallelism"] = self.parallel_mode()
        return out

    def max_batch_for_tpot(self, tpot_s: float, context_tokens) -> int:
        """Largest batch whose decode step fits `tpot_s`, capped by `max_batch` (0 if none).

        The step time never falls as the batch grows, so a bisection finds the edge.
        """
        high = self.max_batch(context_tokens)
        if high == 0 or self.decode_step_s(1, context_tokens) > tpot_s:
            return 0
        low = 1  # invariant: step(low) <= tpot; step(high + 1) > tpot or high is the cap
        if self.decode_step_s(high, context_tokens) <= tpot_s:
            return high
        while high - low > 1:
            mid = (low + high) // 2
            if self.decode_step_s(mid, context_tokens) <= tpot_s:
                low = mid
            else:
                high = mid
        return low


def _scalar_key(batch, context, new, cached, prompts) -> tuple | None:
    """(batch, context, new, cached, prompts) as floats, token counts rounded half to even
    as `np.rint` does, when all five are finite numbers; None sends a call down the
    vectorised path (arrays, NaN, infinities)."""
    numbers = _NUMBERS
    if not (
        isinstance(batch, numbers)
        and isinstance(context, numbers)
        and isinstance(new, numbers)
        and isinstance(cached, numbers)
        and isinstance(prompts, numbers)
    ):
        return None
    b, c, n, k, p = float(batch), float(context), float(new), float(cached), float(prompts)
    # x - x is 0.0 for a finite x, NaN for an infinity or a NaN
    if b - b != 0.0 or c - c != 0.0 or n - n != 0.0 or k - k != 0.0 or p - p != 0.0:
        return None
    return (b, float(round(c)), float(round(n)), float(round(k)), p)


def _vector_key(*values) -> tuple | None:
    """The arguments of a vectorised call as (shape, float bytes) each, or None when they
    are too large to memoise."""
    arrays = [np.asarray(v, dtype=float) for v in values]
    if max(a.size for a in arrays) > VECTOR_MEMO_MAX_ELEMENTS:
        return None
    return tuple((a.shape, a.tobytes()) for a in arrays)


_NUMBERS = (int, float, np.integer, np.floating)
