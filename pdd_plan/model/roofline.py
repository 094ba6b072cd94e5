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
Pure: numpy only, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model.hardware import Gpu
from pdd_plan.model.llm import EMBEDDING_DTYPE, ModelSpec
from pdd_plan.units import BITS_PER_BYTE, dtype_bytes

# Fixed latency of one memory-bound kernel: aiconfigurator models every NVIDIA system
# with a constant 3 us per memory op (hardware-reference.md section 1, notes).
MEMORY_OP_LATENCY_S = 3e-6
# Fixed latency of one GEMM call: the intercept of a least-squares line of latency against
# weight bytes for skinny GEMMs (m = 1..64, n, k >= 1024) in the aiconfigurator TRT-LLM
# 1.3.0rc20 tables: BF16 3.8-5.1 us on H100 / H200 / B200; FP8 13.2-16.0 us (the FP8
# path quantises the activations in a kernel of its own). The slopes, 2.7-2.9 / 3.7-4.2 /
# 5.4-6.5 TB/s, are close to the catalog's hbm_efficiency_frac x peak (2.9 / 4.0 / 6.7).
GEMM_LATENCY_S = {"bf16": 4.5e-6, "fp8": 14e-6}
# Floor of an attention call: 10-11 us at batch 1, past 127, on H100 / H200 / B200 alike.
ATTENTION_KERNEL_LATENCY_S = 10e-6
# Attention runs below a GEMM's efficiency; both fractions multiply the BF16 GEMM
# efficiency (`bf16_mfu_frac`), fitted on the same tables:
# - causal context (prefill) attention, 64 q / 8 kv heads, d = 128, BF16, 4,096-16,384
#   tokens: 0.55-0.76 on H100 / H200 / B200, median about 0.63 (hardware-reference 4E:
#   523 vs 806 TFLOP/s on H200);
# - generation (decode) attention where it is compute-bound, MLA with 128 heads and BF16
#   KV, batch x past >= 2^19: medians 0.80 / 0.79 / 0.89 on H100 / H200 / B200.
CONTEXT_ATTENTION_FLOP_EFF_FRAC = 0.65
GENERATION_ATTENTION_FLOP_EFF_FRAC = 0.8
# NCCL all-reduce of small messages (<= 128 KiB) in the NCCL 2.29.2 tables: about 6, 9.5
# and 15.6 us on 2, 4 and 8 H100 / H200 GPUs; a least-squares line 4.5 + 1.6 (N - 1) us.
ALLREDUCE_BASE_LATENCY_S = 4.5e-6
ALLREDUCE_STEP_LATENCY_S = 1.6e-6
# Activations cross the links in 16 bits.
ACTIVATION_BYTES = 2.0
# Kernels of one layer in a step: a dense layer runs 4 GEMMs (QKV, O, gate-up, down),
# one attention kernel and 3 other memory-bound ops (two norms, rope + KV append); an
# MoE layer adds 3 GEMM calls (router, two grouped expert GEMMs beside the shared
# expert's) and 2 memory ops (token permute and un-permute).
DENSE_LAYER_GEMMS, DENSE_LAYER_MEMORY_OPS = 4, 3
MOE_EXTRA_GEMMS, MOE_EXTRA_MEMORY_OPS = 3, 2
# Engine time per forward pass beyond its kernels (scheduler, sampling, host sync): 0 by
# default, because current engines overlap that host work with the GPU (CUDA graphs, an
# overlapped scheduler) and the one clean published decode step leaves no room for it:
# NVIDIA NIM, Llama-3.3-70B FP8 on 2 x H100 TP2, 5,000 in / 500 out, concurrency 1, ITL
# 18.58 ms (hardware-reference 4C), against 19.26 ms from this roofline with 0 here
# (12.28 ms weights + KV, 0.98 ms all-reduces, 6.0 ms kernel latencies; checked in
# tests/unit/test_roofline.py). Set it (about 1-3 ms) for engines that do not overlap.
STEP_OVERHEAD_S = 0.0
# Parallelism of an instance (module docstring): "auto" picks "ep" for an MoE model on
# more than min(this, the scale-up domain) GPUs.
PARALLELISMS = ("tp", "ep", "auto")
AUTO_EP_ABOVE_GPUS = 8
# Fixed latency of one MoE all-to-all (a dispatch or a combine): fitted on DeepSeek's
# DeepEP low-latency kernels (deepseek-ai/DeepEP README, H800 + CX7 400 Gbit/s, 128
# tokens per GPU, hidden 7168, top-8, FP8 dispatch, BF16 combine): with the bytes of
# `alltoall_time_s` the 12 published points, EP8-EP256, dispatch 77-194 us, combine
# 114-369 us, are all within 13 % with 45 us (tests/anchors/test_roofline_kernels.py).
# NCCL's all-to-all inside one H200 board starts at 7-12 us; a MoE dispatch also packs
# per expert, casts to FP8 and exchanges counts.
EP_ALLTOALL_LATENCY_S = 45e-6
# Routed tokens on the busiest GPU over the mean, after expert load balancing (EPLB with
# redundant experts); it scales the routed-expert FLOPs and the all-to-all bytes of an
# "ep" step. SGLang's EP32 prefill of DeepSeek-V3 on 4 x 8 H100 ran 1.18x slower with
# its real expert routing than with a simulated perfect balance (50,302 vs 59,337
# tokens/s per node, lmsys.org/blog/2025-05-05-large-scale-ep); only the MoE part of a
# step is imbalanced, so there the ratio is at least 1.18: 1.2. An assumption, not
# fitted to a throughput.
EP_LOAD_IMBALANCE = 1.2


def gemm_time_s(gpu: Gpu, m, n, k, dtype: str = "bf16"):
    """One GEMM (m x k) @ (k x n) in `dtype` (bf16 or fp8), output in BF16."""
    m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
    flop_s = 2.0 * m * n * k / _flop_per_s(gpu, dtype)
    in_bytes = dtype_bytes(dtype)
    moved = (m * k + k * n) * in_bytes + m * n * ACTIVATION_BYTES
    return np.maximum(flop_s, moved / _bytes_per_s(gpu)) + GEMM_LATENCY_S[dtype]


def attention_decode_time_s(
    gpu: Gpu, batch, kv_len, kv_heads, head_dim, kv_dtype_bytes, q_heads=None
):
    """One layer's generation attention: each of `batch` queries reads its K and V.

    Memory: batch x kv_len x kv_heads x head_dim x 2 (K, V) x bytes; compute (with
    q_heads, default kv_heads): 4 x q_heads x head_dim FLOPs per entry.
    """
    entries = np.asarray(batch, dtype=float) * np.asarray(kv_len, dtype=float)
    moved = entries * kv_heads * head_dim * 2 * kv_dtype_bytes
    flops = entries * 4.0 * (q_heads or kv_heads) * head_dim
    return _attention_s(gpu, flops, moved, GENERATION_ATTENTION_FLOP_EFF_FRAC)


def mla_decode_time_s(
    gpu: Gpu, batch, kv_len, num_heads, kv_dtype_bytes, kv_lora_rank=512, rope_dim=64
):
    """One layer's MLA generation attention in the weight-absorbed form.

    Each entry is one latent of kv_lora_rank + rope_dim elements shared by all heads;
    per head QK^T spans the whole entry and AV the latent: 2 (2 r + rope) FLOPs.
    """
    entries = np.asarray(batch, dtype=float) * np.asarray(kv_len, dtype=float)
    moved = entries * (kv_lora_rank + rope_dim) * kv_dtype_bytes
    flops = entries * 2.0 * num_heads * (2 * kv_lora_rank + rope_dim)
    return _attention_s(gpu, flops, moved, GENERATION_ATTENTION_FLOP_EFF_FRAC)


def context_attention_time_s(gpu: Gpu, batch, isl, num_heads, head_dim):
    """One layer's causal prefill attention of `batch` prompts of `isl` tokens (BF16).

    FLOPs: 4 x heads x head_dim per (query, key) pair, isl (isl + 1) / 2 pairs.
    """
    isl = np.asarray(isl, dtype=float)
    flops = np.asarray(batch, dtype=float) * 4.0 * num_heads * head_dim * isl * (isl + 1) / 2
    return _attention_s(gpu, flops, 0.0, CONTEXT_ATTENTION_FLOP_EFF_FRAC)


def _attention_s(gpu: Gpu, flops, moved_bytes, efficiency_frac: float):
    compute = flops / (_flop_per_s(gpu, "bf16") * efficiency_frac)
    return np.maximum(compute, moved_bytes / _bytes_per_s(gpu)) + ATTENTION_KERNEL_LATENCY_S


def _flop_per_s(gpu: Gpu, dtype: str) -> float:
    """Achievable FLOP/s of one GPU: datasheet peak x measured GEMM efficiency."""
    if dtype in ("fp8", "int8") and gpu.fp8_flop_per_s and gpu.fp8_mfu_frac:
        return gpu.fp8_flop_per_s * gpu.fp8_mfu_frac
    if dtype in ("fp8", "int8"):
        raise ValueError(f"{gpu.id} has no FP8 peak or FP8 efficiency in the catalog")
    return gpu.peak_flop_per_s("bf16") * gpu.bf16_mfu_frac


def _bytes_per_s(gpu: Gpu) -> float:  # achievable HBM bandwidth of one GPU
    return gpu.hbm_bytes_per_s * gpu.hbm_efficiency_frac


def allreduce_time_s(gpu: Gpu, gpus: int, message_bytes):
    """All-reduce of `message_bytes` over `gpus` GPUs: ring time 2 (N-1)/N bytes / link + latency.

    Inside one scale-up domain the link is the scale-up fabric x its measured efficiency.
    Beyond it the all-reduce is hierarchical (as NCCL runs it): a ring inside each domain,
    then a ring across the D domains on each GPU's 1/g shard, every GPU on its own RDMA
    NIC (scale_out_bits_per_s / 8): + 2 (D-1)/D x bytes / g / NIC.
    """
    message_bytes = np.asarray(message_bytes, dtype=float)
    if gpus <= 1:
        return np.zeros_like(message_bytes)
    group = max(min(gpus, gpu.scale_up_domain_gpus), 1)
    fabric = gpu.scale_up_bytes_per_s * gpu.scale_up_efficiency_frac
    time_s = 2.0 * (group - 1) / group * message_bytes / fabric
    if gpus > group:
        domains = -(-gpus // group)
        nic = gpu.scale_out_bits_per_s / BITS_PER_BYTE
        time_s = time_s + 2.0 * (domains - 1) / domains * message_bytes / group / nic
    return time_s + ALLREDUCE_BASE_LATENCY_S + ALLREDUCE_STEP_LATENCY_S * (gpus - 1)


def alltoall_time_s(gpu: Gpu, gpus: int, send_bytes):
    """One MoE all-to-all (dispatch or combine) over `gpus` GPUs, `send_bytes` per GPU.

    `send_bytes` is what one GPU's tokens carry to all their experts, one copy per
    (token, expert) pair, the experts spread evenly over the GPUs. Of it, (g - 1) / N
    goes to the other GPUs of its scale-up domain (g = min(N, domain)) over the fabric x
    its measured efficiency, and (N - g) / N leaves the domain over the GPU's own RDMA
    NIC (scale_out_bits_per_s / 8); both run at once: time = max of the two +
    EP_ALLTOALL_LATENCY_S. 0 on one GPU.
    """
    send_bytes = np.asarray(send_bytes, dtype=float)
    if gpus <= 1:
        return np.zeros_like(send_bytes)
    group = max(min(gpus, gpu.scale_up_domain_gpus), 1)
    fabric = gpu.scale_up_bytes_per_s * gpu.scale_up_efficiency_frac
    time_s = send_bytes * (group - 1) / gpus / fabric
    if gpus > group:
        nic = gpu.scale_out_bits_per_s / BITS_PER_BYTE
        time_s = np.maximum(time_s, send_bytes * (gpus - group) / gpus / nic)
    return time_s + EP_ALLTOALL_LATENCY_S


def experts_touched(num_experts: int, top_k: int, tokens):
    """Expected distinct experts T tokens route to: E (1 - (1 - k/E)^T) (modeling-notes)."""
    t = np.asarray(tokens, dtype=float)
    if top_k >= num_experts:
        return np.where(t > 0, float(num_experts), 0.0)
    return num_experts * -np.expm1(t * np.log1p(-top_k / num_experts))


def _per_unique(fn, *arrays) -> np.ndarray:
    """`fn` of Python ints over broadcast integer arrays, each distinct tuple once."""
    cols = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in arrays))
    if cols[0].size == 0:
        return np.zeros(cols[0].shape)
    flat = np.stack([c.ravel() for c in cols], axis=1)
    uniq, inverse = np.unique(flat, axis=0, return_inverse=True)
    values = np.array([fn(*(int(v) for v in row)) for row in uniq], dtype=float)
    return values[inverse.reshape(-1)].reshape(cols[0].shape)


def _out(value):
    value = np.asarray(value, dtype=float)
    return float(value) if value.ndim == 0 else value


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

    def parallel_mode(self) -> str:
        """ "tp" or "ep": the parallelism asked for, or what "auto" picks (module docstring)."""
        if self.parallelism != "auto":
            return self.parallelism
        moe = self.model.routed_expert_params() > 0
        spread = self.gpus > min(AUTO_EP_ABOVE_GPUS, self.gpu.scale_up_domain_gpus)
        return "ep" if moe and spread else "tp"

    def _ep(self) -> bool:
        return self.parallel_mode() == "ep"

    # ---- dtypes and memory -------------------------------------------------------------
    def _dense_dtype(self) -> str:
        return self.weight_dtype or self.model.weight_dtype

    def _expert_dtype(self) -> str:
        return self.weight_dtype or self.model.expert_weight_dtype

    def compute_dtype(self) -> str:
        """fp8 where all linear weights are 8-bit or less and the GPU has FP8, else bf16."""
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
        capacity = self.kv_capacity_bytes()
        per_request = float(self.model.kv_bytes(max(int(round(context_tokens)), 1), self.kv_dtype))
        if self._ep():
            per_gpu = capacity / self.gpus
            return self.gpus * int(per_gpu // per_request) if capacity > 0 else 0
        return max(int(capacity // per_request), 0) if capacity > 0 else 0

    # ---- the parts of one step -----------------------------------------------------------
    def _expert_bytes(self) -> list[tuple[int, int, int, float]]:
        """(layers, experts, top-k, bytes of one expert) per MoE FFN kind."""
        width = dtype_bytes(self._expert_dtype())
        hidden = self.model.hidden_size
        return [
            (n, f.num_experts, f.experts_per_token, f.expert_params(hidden) * width)
            for n, f in self.model.moe_layout()
        ]

    def _dense_read_bytes(self) -> float:
        """Weights every step reads whatever the routing: all but the routed experts and
        the input embedding table (a step gathers only its tokens' rows of it)."""
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
            n * self._experts_per_gpu(e) * experts_touched(e, k, tokens) / e * b
            for n, e, k, b in self._expert_bytes()
        )
        return self._dense_read_bytes() + experts

    def _linear_flop_per_token(self) -> tuple[float, float]:
        """(matmul FLOPs per token incl. the LM head, linear-state FLOPs per token)."""
        m = self.model
        return m._matmul_flop_per_token(), m._linear_state_flop_per_token()

    def _routed_flop_per_token(self) -> float:
        """Matmul FLOPs of one token's routed experts (all MoE layers)."""
        hidden = self.model.hidden_size
        return 2.0 * sum(
            n * f.experts_per_token * f.expert_params(hidden) for n, f in self.model.moe_layout()
        )

    def _chunk_attention_flops(self, new: int, cached: int) -> float:
        if new <= 0:
            return 0.0
        matmul, state = self._linear_flop_per_token()
        lm_head = 2.0 * self.model.vocab_size * self.model.hidden_size
        linear = (matmul - lm_head) * new + lm_head + state * new
        return self.model.prefill_flops(new, cached) - linear

    def _decode_attention_flops(self, context: int) -> float:
        return self.model.decode_flops(context) - sum(self._linear_flop_per_token())

    def layer_latency_s(self) -> float:
        """Fixed kernel latencies of one forward pass (all layers)."""
        gemm = GEMM_LATENCY_S[self.compute_dtype()]
        dense = DENSE_LAYER_GEMMS * gemm + ATTENTION_KERNEL_LATENCY_S
        dense += DENSE_LAYER_MEMORY_OPS * MEMORY_OP_LATENCY_S
        moe_layers = sum(n for n, _ in self.model.moe_layout())
        moe = MOE_EXTRA_GEMMS * gemm + MOE_EXTRA_MEMORY_OPS * MEMORY_OP_LATENCY_S
        return self.model.num_layers * dense + moe_layers * moe

    def _compute(self, batch, context, new, cached, prompts) -> tuple[np.ndarray, np.ndarray]:
        """(FLOPs, compute seconds) of a step: linears at the compute dtype, attention in
        BF16 at its own efficiency (generation for decode tokens, context for a chunk);
        `prompts` chunks of `new` tokens. In "ep" the busiest GPU's routed-expert FLOPs
        are EP_LOAD_IMBALANCE x their share."""
        matmul, state = self._linear_flop_per_token()
        lm_head = 2.0 * self.model.vocab_size * self.model.hidden_size
        # the LM head runs for every decode token but only the last token of a chunk
        tokens = batch + prompts * new
        linear = tokens * (matmul + state) - np.where(new > 0, prompts * (new - 1) * lm_head, 0.0)
        decode_attention = batch * _per_unique(self._decode_attention_flops, context)
        chunk_attention = prompts * _per_unique(self._chunk_attention_flops, new, cached)
        attention_s = (
            decode_attention / GENERATION_ATTENTION_FLOP_EFF_FRAC
            + chunk_attention / CONTEXT_ATTENTION_FLOP_EFF_FRAC
        ) / _flop_per_s(self.gpu, "bf16")
        linear_rate = _flop_per_s(self.gpu, self.compute_dtype())
        linear_s = linear / linear_rate
        flops = linear + decode_attention + chunk_attention
        if self._ep() and self.gpus > 1:
            routed = tokens * self._routed_flop_per_token()
            excess = (EP_LOAD_IMBALANCE - 1.0) * routed / linear_rate
            return flops, (linear_s + excess + attention_s) / self.gpus
        return flops, (linear_s + attention_s) / self.gpus

    def _kv_moved_bytes(self, batch, context, new, cached, prompts) -> tuple:
        """(running requests' KV read, chunks' cached KV read plus new KV written)."""
        kv = self.model.kv_bytes
        running = batch * kv(context.astype(np.int64), self.kv_dtype)
        chunk_kv = kv((cached + new).astype(np.int64), self.kv_dtype)
        return running, np.where(new > 0, prompts * chunk_kv, 0.0)

    def _moved_bytes(self, batch, context, new, cached, prompts) -> tuple:
        """(bytes all GPUs move, bytes the busiest GPU moves): weights the step's tokens
        touch, the running requests' KV, and chunks' cached KV read plus new KV written
        (together kv(cached + new)); "ep" reads the replicated weights on every GPU."""
        tokens = batch + prompts * new
        running, chunk = self._kv_moved_bytes(batch, context, new, cached, prompts)
        if self._ep():
            per_gpu = self.ep_weight_read_bytes_per_gpu(tokens) + (running + chunk) / self.gpus
            per_gpu = np.where(tokens > 0, per_gpu, 0.0)
            return per_gpu * self.gpus, per_gpu
        moved = self.weight_read_bytes(tokens) + running
        moved = moved + chunk
        moved = np.where(tokens > 0, moved, 0.0)
        return moved, moved / self.gpus

    def _comm_s(self, tokens):
        """ "tp": two all-reduces per layer of all tokens x hidden x 2 B. "ep": a dispatch and
        a combine per MoE layer of the busiest GPU's tokens (EP_LOAD_IMBALANCE x tokens /
        gpus) x top-k x the experts' input width (the latent width of a latent MoE)."""
        if not self._ep():
            message = tokens * self.model.hidden_size * ACTIVATION_BYTES
            return 2 * self.model.num_layers * allreduce_time_s(self.gpu, self.gpus, message)
        per_gpu = EP_LOAD_IMBALANCE * tokens / self.gpus
        dispatch = dtype_bytes("fp8") if self.compute_dtype() == "fp8" else ACTIVATION_BYTES
        comm = np.zeros_like(tokens)
        for n, f in self.model.moe_layout():
            width = f.expert_hidden_size or self.model.hidden_size
            copies = per_gpu * f.experts_per_token * width
            comm = comm + n * (
                alltoall_time_s(self.gpu, self.gpus, copies * dispatch)
                + alltoall_time_s(self.gpu, self.gpus, copies * ACTIVATION_BYTES)
            )
        return comm

    def _step(self, batch, context, new, cached, prompts=1.0) -> dict:
        """One forward pass: `batch` decode tokens at `context` plus `prompts` chunks of
        `new` tokens after `cached` ones. Arrays broadcast; each result is an array; a
        step with no tokens is no forward pass and costs 0."""
        batch = np.asarray(batch, dtype=float)
        prompts = np.asarray(prompts, dtype=float)
        context, new, cached = (np.rint(np.asarray(v, dtype=float)) for v in (context, new, cached))
        if np.any(batch < 0) or np.any(new < 0) or np.any(cached < 0) or np.any(context < 0):
            raise ValueError("batch and token counts must be >= 0")
        if np.any(prompts < 0):
            raise ValueError("prompts must be >= 0")
        tokens = batch + prompts * new
        flops, compute_s = self._compute(batch, context, new, cached, prompts)
        moved, moved_per_gpu = self._moved_bytes(batch, context, new, cached, prompts)
        if self._ep():
            memory_s = moved_per_gpu / _bytes_per_s(self.gpu)
        else:
            memory_s = moved / (self.gpus * _bytes_per_s(self.gpu))
        comm_s = np.where(tokens > 0, self._comm_s(tokens), 0.0)
        overhead_s = np.where(tokens > 0, self.step_overhead_s + self.layer_latency_s(), 0.0)
        return {
            "compute_s": compute_s,
            "memory_s": memory_s,
            "comm_s": comm_s,
            "overhead_s": overhead_s,
            "total_s": np.maximum(compute_s, memory_s) + comm_s + overhead_s,
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
        return _out(self._step(0.0, 0, new_tokens, cached_tokens, prompts)["total_s"])

    def decode_step_s(self, batch, mean_context_tokens):
        """One decode step of `batch` running requests (vectorised over batch)."""
        return _out(self._step(batch, mean_context_tokens, 0, 0)["total_s"])

    def extend_decode_s(self, batch, handed_tokens, context_tokens):
        """One decode step of `batch` requests that also processes `handed_tokens` handed-off
        tokens of one request after its `context_tokens` of KV (extend-decode / handoff).

        `context_tokens` is also the batch's mean context. With no handed tokens this is
        `decode_step_s`; with an empty batch it is a prefill chunk after that context.
        A float for scalar arguments; vectorised over numpy arrays of any of them.
        """
        step = self._step(batch, context_tokens, handed_tokens, context_tokens)
        return _out(step["total_s"])

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
