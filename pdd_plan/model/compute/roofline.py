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

- "tp", tensor parallelism: every weight split evenly over the GPUs, the KV by its heads
  (a head held by several GPUs once tp > KV heads: `attention.tp_replication`, counted
  in the KV room and in the bytes a step reads), so
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
  min(AUTO_EP_ABOVE_GPUS, scale_up_domain_gpus) GPUs, and on fewer where tensor
  parallelism would replicate its KV heads and the "ep" layout fits (DP attention, as
  SGLang's and vLLM's DeepSeek recipes run one node); else "tp". Beyond 8 GPUs tensor
  parallelism stops paying: the KV cannot be split further than its KV heads (at most 8
  in GQA models, one shared latent in MLA), so engines replicate it across TP ranks
  (so does "tp" here: attention.tp_replication); the two all-reduces per layer carry
  the whole batch, over the NICs once the instance spans nodes; and every published
  large MoE deployment at that size runs DP attention + EP (DeepSeek EP32 / EP144,
  SGLang EP32 / EP72 at 3.3x / 5.2x its own TP16 baseline, TRT-LLM wide EP on GB200).
  Up to 8 GPUs in one domain tensor parallelism is every engine's default for latency,
  its all-reduces stay on NVLink, and it is what the TP anchors check.

Limits, all on the side of a slower estimate unless noted: communication is added, not
overlapped (DeepSeek and SGLang hide most all-to-all time behind a second micro-batch:
an engine profile's `alltoall_overlap_frac` states it); multi-token prediction is the
engine profile's (`mtp`: off in the plain roofline); an EP dispatch is charged
one copy per (token, expert) pair, as DeepEP's low-latency kernels send it, while its
prefill kernels send a token once per destination node; sparse attention (DSA / CSA
top-k) is charged a read of all stored KV; in "tp" expert load is taken as balanced
(optimistic); NCCL at
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

The parts of a step (FLOPs, bytes, communication, kernel latencies) are
model/compute/roofline_parts.py;
the memos and the scalar fast path that answer the planner's thousands of step queries are
model/compute/roofline_memo.py. Pure: numpy only, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model.compute.engine_profile import IDENTITY, EngineProfile
from pdd_plan.model.compute.hardware import Gpu
from pdd_plan.model.compute.kernels import (
    AUTO_EP_ABOVE_GPUS,
    PARALLELISMS,
    STEP_OVERHEAD_S,
    achievable_bytes_per_s,
    maximum,
    where,
)
from pdd_plan.model.compute.llm import ModelSpec
from pdd_plan.model.compute.roofline_memo import MemoisedSteps
from pdd_plan.model.compute.roofline_parts import StepParts
from pdd_plan.model.units import dtype_bytes


@dataclass(frozen=True)
class Instance(StepParts, MemoisedSteps):
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
        if self.engine_profile.members:  # a profile set: the member for this GPU
            g = self.gpu
            member = self.engine_profile.for_gpu(g.id, g.peak_flop_per_s("bf16"), g.hbm_bytes_per_s)
            object.__setattr__(self, "engine_profile", member)
        key = ("instance", self.gpu, self.gpus, self.kv_dtype, self.weight_dtype)
        key += (self.step_overhead_s, self.parallelism, self.engine_profile)
        cache = getattr(self.model, "_cache", None)
        memo = ({}, {}, {}) if cache is None else cache.setdefault(key, ({}, {}, {}))
        object.__setattr__(self, "_memo", memo)  # (constants, scalar, vector steps)
        object.__setattr__(self, "_is_ep", self.parallel_mode() == "ep")  # asked per step

    def parallel_mode(self) -> str:
        """ "tp" or "ep": the parallelism asked for, or what "auto" picks (module docstring)."""
        if self.parallelism != "auto":
            return self.parallelism
        if not self.model.routed_expert_params():
            return "tp"
        if self.gpus > min(AUTO_EP_ABOVE_GPUS, self.gpu.scale_up_domain_gpus):
            return "ep"
        # within one domain: DP attention where TP would replicate the KV heads (an MLA
        # latent on every GPU under TP8), as SGLang and vLLM recommend, if its layout fits
        return "ep" if self._tp_replicates_kv() and self._ep_kv_room_bytes() > 0 else "tp"

    def _tp_replicates_kv(self) -> bool:
        """Whether tensor parallelism over these GPUs would hold a KV head more than once."""
        tokens = 4096  # any length holding every term (windows included) tells the same
        one = self.model.kv_bytes(tokens, self.kv_dtype)
        return self.model.kv_bytes(tokens, self.kv_dtype, self.gpus) > one * (1 + 1e-12)

    def _ep_weight_bytes_per_gpu(self) -> float:
        """ "ep"'s weights on one GPU: the replicated weights + its routed experts."""
        experts = sum(n * self._experts_per_gpu(e) * b for n, e, _, b in self._expert_bytes())
        return self.replicated_weight_bytes() + experts

    def _ep_kv_room_bytes(self) -> float:
        return self.gpus * (self._usable_bytes_per_gpu() - self._ep_weight_bytes_per_gpu())

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
        return self._ep_weight_bytes_per_gpu()

    def _usable_bytes_per_gpu(self) -> float:
        return self.gpu.hbm_bytes * self.gpu.usable_memory_frac

    def kv_capacity_bytes(self) -> float:
        """HBM left for KV over all GPUs (<= 0: does not fit): gpus x HBM x usable fraction
        - weights ("tp"); gpus x (HBM x usable fraction - weights per GPU) ("ep", where a
        GPU whose replicated weights and experts do not fit leaves the instance unfit)."""
        if self._ep():
            return self._ep_kv_room_bytes()
        usable = self.gpus * self.gpu.hbm_bytes * self.gpu.usable_memory_frac
        return usable - self.weight_bytes()

    def fits(self) -> bool:
        return self.kv_capacity_bytes() > 0

    def kv_tp_degree(self) -> int:
        """GPUs that split each request's KV by its heads: all of them in "tp" (beyond the
        KV heads, heads are replicated: attention.tp_replication); 1 in "ep", where each
        request's KV lives whole on one GPU."""
        return 1 if self._ep() else self.gpus

    def held_kv_bytes(self, tokens):
        """HBM one request of `tokens` holds on this instance, replicated heads counted:
        what admission and the batch limit count (vectorised)."""
        return self.model.resident_kv_bytes(tokens, self.kv_dtype, self.kv_tp_degree())

    def max_batch(self, context_tokens) -> int:
        """Requests of `context_tokens` whose KV fits next to the weights (0 if none).

        In "ep" each request's KV lives whole on one GPU: gpus x the requests one GPU holds.
        """
        tokens = max(int(round(context_tokens)), 1)
        return self._const(("max_batch", tokens), lambda: self._max_batch(tokens))

    def _max_batch(self, tokens: int) -> int:
        capacity = self.kv_capacity_bytes()
        per_request = float(self.held_kv_bytes(tokens))
        if self._ep():
            per_gpu = capacity / self.gpus
            return self.gpus * int(per_gpu // per_request) if capacity > 0 else 0
        return max(int(capacity // per_request), 0) if capacity > 0 else 0

    def _assemble(self, batch, context, new, cached, prompts, plain=False) -> dict:
        """The step's parts from whole-token counts: numpy arrays or Python floats alike
        (`plain`: all five are Python floats, so every part is one too)."""
        tokens = batch + prompts * new
        parts, flops, moved = self._plain_parts(batch, context, new, cached, prompts)
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

    def _plain_parts(self, batch, context, new, cached, prompts) -> tuple:
        """(the plain roofline's parts a profile re-weighs, FLOPs, bytes moved) of a step
        of whole-token counts (`profile_parts` and the expert, attention and KV shares)."""
        # multi-token prediction: every decode request verifies k + 1 tokens (its KV read
        # once); the per-emitted-token scaling is the profile's (engine_profile.step_parts)
        queries = 1.0 + self.engine_profile.mtp_draft_tokens
        decode_tokens = batch * queries if queries != 1.0 else batch
        tokens = decode_tokens + prompts * new
        flops, compute_s, expert_s, attention_s = self._compute_split(
            decode_tokens, context, new, cached, prompts
        )
        moved, moved_per_gpu, kv_per_gpu = self._moved_split(
            batch, context, new, cached, prompts, decode_tokens
        )
        bandwidth = achievable_bytes_per_s(self.gpu)
        memory_s = moved_per_gpu / bandwidth if self._ep() else moved / (self.gpus * bandwidth)
        comm_s = where(tokens > 0, self._comm_s(tokens), 0.0)
        parts = self.profile_parts(compute_s, memory_s, comm_s)
        parts.update(expert_compute_s=expert_s, attention_compute_s=attention_s)
        parts["kv_memory_s"] = kv_per_gpu / bandwidth
        return parts, flops, moved

    def plain_step_parts(self, batch, context, new, cached, prompts) -> dict:
        """The plain parts (`_plain_parts`) of steps given as arrays, token counts rounded
        as `_step` rounds them: what a fit re-weighs per trial profile (step_fit.py)."""
        batch, prompts = (np.asarray(v, dtype=float) for v in (batch, prompts))
        context, new, cached = (np.rint(np.asarray(v, dtype=float)) for v in (context, new, cached))
        return self._plain_parts(batch, context, new, cached, prompts)[0]

    def profile_parts(self, compute_s, memory_s, comm_s) -> dict:
        """The plain parts an engine profile re-weighs (engine_profile.step_parts), with
        this instance's fixed terms: per-step overhead, kernel floor, kernel count, and the
        communication that is an all-to-all ("ep"; two-batch overlap hides only that).
        Callers that know the step's expert, attention and KV shares add them."""
        parts = {"compute_s": compute_s, "memory_s": memory_s, "comm_s": comm_s}
        parts.update(step_overhead_s=self.step_overhead_s, layer_s=self.layer_latency_s())
        parts.update(kernels=self.kernels_per_step(), alltoall_s=comm_s if self._is_ep else 0.0)
        parts["layers"] = float(self.model.num_layers)  # a draft pass is one layer (MTP)
        if self.engine_profile.mtp_draft_tokens:  # the steps verify k + 1 tokens a request
            parts["mtp_draft_tokens"] = self.engine_profile.mtp_draft_tokens
            parts["mtp_accepted_tokens"] = self.engine_profile.mtp_accepted_tokens
        return parts

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
