"""Kernel-level roofline primitives and their constants: GEMMs, attention, collectives.

`roofline.Instance` composes these into prefill, decode and extend-decode steps; the
anchor tests compare them with measured kernel latencies. Every constant names its
origin. The step primitives take numpy arrays or plain Python floats: a float stays a
float (the roofline's scalar fast path; numpy's per-call overhead is most of a scalar
step's cost), an array broadcasts, with the same arithmetic. Pure: numpy only, no I/O.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.compute.hardware import Gpu
from pdd_plan.model.units import BITS_PER_BYTE, dtype_bytes

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
    flop_s = 2.0 * m * n * k / achievable_flop_per_s(gpu, dtype)
    in_bytes = dtype_bytes(dtype)
    moved = (m * k + k * n) * in_bytes + m * n * ACTIVATION_BYTES
    return np.maximum(flop_s, moved / achievable_bytes_per_s(gpu)) + GEMM_LATENCY_S[dtype]


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
    compute = flops / (achievable_flop_per_s(gpu, "bf16") * efficiency_frac)
    return (
        np.maximum(compute, moved_bytes / achievable_bytes_per_s(gpu)) + ATTENTION_KERNEL_LATENCY_S
    )


def achievable_flop_per_s(gpu: Gpu, dtype: str) -> float:
    """Achievable FLOP/s of one GPU: datasheet peak x measured GEMM efficiency."""
    if dtype in ("fp8", "int8") and gpu.fp8_flop_per_s and gpu.fp8_mfu_frac:
        return gpu.fp8_flop_per_s * gpu.fp8_mfu_frac
    if dtype in ("fp8", "int8"):
        raise ValueError(f"{gpu.id} has no FP8 peak or FP8 efficiency in the catalog")
    return gpu.peak_flop_per_s("bf16") * gpu.bf16_mfu_frac


def achievable_bytes_per_s(gpu: Gpu) -> float:  # achievable HBM bandwidth of one GPU
    return gpu.hbm_bytes_per_s * gpu.hbm_efficiency_frac


def allreduce_time_s(gpu: Gpu, gpus: int, message_bytes):
    """All-reduce of `message_bytes` over `gpus` GPUs: ring time 2 (N-1)/N bytes / link + latency.

    Inside one scale-up domain the link is the scale-up fabric x its measured efficiency.
    Beyond it the all-reduce is hierarchical (as NCCL runs it): a ring inside each domain,
    then a ring across the D domains on each GPU's 1/g shard, every GPU on its own RDMA
    NIC (scale_out_bits_per_s / 8): + 2 (D-1)/D x bytes / g / NIC.
    """
    return AllReduce.of(gpu, gpus).time_s(message_bytes)


def alltoall_time_s(gpu: Gpu, gpus: int, send_bytes):
    """One MoE all-to-all (dispatch or combine) over `gpus` GPUs, `send_bytes` per GPU.

    `send_bytes` is what one GPU's tokens carry to all their experts, one copy per
    (token, expert) pair, the experts spread evenly over the GPUs. Of it, (g - 1) / N
    goes to the other GPUs of its scale-up domain (g = min(N, domain)) over the fabric x
    its measured efficiency, and (N - g) / N leaves the domain over the GPU's own RDMA
    NIC (scale_out_bits_per_s / 8); both run at once: time = max of the two +
    EP_ALLTOALL_LATENCY_S. 0 on one GPU.
    """
    return AllToAll.of(gpu, gpus).time_s(send_bytes)


@dataclass(frozen=True, slots=True)
class AllReduce:
    """`allreduce_time_s` on one (GPU, GPU count) with its constants worked out once (a
    roofline instance asks it thousands of times): the same operations in the same order,
    so the same numbers to the last bit."""

    gpus: int
    group: int  # GPUs of one scale-up domain taking part, g
    ring_frac: float  # 2 (g - 1) / g
    fabric_bytes_per_s: float
    across_frac: float  # 2 (D - 1) / D over D domains; 0 inside one domain
    nic_bytes_per_s: float
    step_latency_s: float  # ALLREDUCE_STEP_LATENCY_S x (N - 1)

    @classmethod
    def of(cls, gpu: Gpu, gpus: int) -> AllReduce:
        group = max(min(gpus, gpu.scale_up_domain_gpus), 1)
        domains = max(-(-gpus // group), 1)
        return cls(
            gpus, group, 2.0 * (group - 1) / group,
            gpu.scale_up_bytes_per_s * gpu.scale_up_efficiency_frac,
            2.0 * (domains - 1) / domains, gpu.scale_out_bits_per_s / BITS_PER_BYTE,
            ALLREDUCE_STEP_LATENCY_S * (gpus - 1),
        )  # fmt: skip

    def time_s(self, message_bytes):
        message_bytes = _float_or_array(message_bytes)
        if self.gpus <= 1:
            return message_bytes * 0.0
        time_s = self.ring_frac * message_bytes / self.fabric_bytes_per_s
        if self.gpus > self.group:
            across = self.across_frac * message_bytes / self.group / self.nic_bytes_per_s
            time_s = time_s + across
        return time_s + ALLREDUCE_BASE_LATENCY_S + self.step_latency_s


@dataclass(frozen=True, slots=True)
class AllToAll:
    """`alltoall_time_s` on one (GPU, GPU count), constants worked out once (as
    `AllReduce`; the same numbers to the last bit)."""

    gpus: int
    inside_gpus: int  # g - 1: the other GPUs of the sender's scale-up domain
    outside_gpus: int  # N - g: the GPUs beyond it
    fabric_bytes_per_s: float
    nic_bytes_per_s: float

    @classmethod
    def of(cls, gpu: Gpu, gpus: int) -> AllToAll:
        group = max(min(gpus, gpu.scale_up_domain_gpus), 1)
        fabric = gpu.scale_up_bytes_per_s * gpu.scale_up_efficiency_frac
        return cls(gpus, group - 1, gpus - group, fabric, gpu.scale_out_bits_per_s / BITS_PER_BYTE)

    def time_s(self, send_bytes):
        send_bytes = _float_or_array(send_bytes)
        if self.gpus <= 1:
            return send_bytes * 0.0
        time_s = send_bytes * self.inside_gpus / self.gpus / self.fabric_bytes_per_s
        if self.outside_gpus > 0:
            beyond = send_bytes * self.outside_gpus / self.gpus / self.nic_bytes_per_s
            time_s = maximum(time_s, beyond)
        return time_s + EP_ALLTOALL_LATENCY_S


def experts_touched(num_experts: int, top_k: int, tokens):
    """Expected distinct experts T tokens route to: E (1 - (1 - k/E)^T) (modeling-notes)."""
    t = _float_or_array(tokens)
    if top_k >= num_experts:
        return where(t > 0, float(num_experts), 0.0)
    touched = num_experts * -np.expm1(t * _log_miss(num_experts, top_k))
    return float(touched) if isinstance(t, float) else touched


@functools.lru_cache(maxsize=256)
def _log_miss(num_experts: int, top_k: int) -> float:
    """log(1 - k/E): the log of the chance that one token misses a given expert (a
    handful of (E, k) pairs per process; numpy's log1p, as the vectorised path)."""
    return float(np.log1p(-top_k / num_experts))


def per_unique(fn, *arrays, memo: dict | None = None):
    """`fn` of Python ints over broadcast integer arrays, each distinct tuple once (a
    float when every argument is a Python number).

    `memo`: a dict that keeps the (read-only) result per fn name and argument values
    for arrays of up to PER_UNIQUE_MEMO_MAX_ELEMENTS (the caller's, holding one fn per
    name); it starts afresh at PER_UNIQUE_MEMO_LIMIT entries."""
    if _finite_numbers(arrays):
        return float(fn(*(int(a) for a in arrays)))
    cols = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in arrays))
    size = cols[0].size
    if size == 0:
        return np.zeros(cols[0].shape)
    if memo is not None and size <= PER_UNIQUE_MEMO_MAX_ELEMENTS:
        key = (fn.__name__, cols[0].shape, *(c.tobytes() for c in cols))
        try:
            return memo[key]
        except KeyError:
            if len(memo) >= PER_UNIQUE_MEMO_LIMIT:
                memo.clear()
            memo[key] = out = _per_unique_dict(fn, cols)
            out.flags.writeable = False  # shared by every caller of the same arguments
            return out
    if size <= PER_UNIQUE_DICT_MAX:
        return _per_unique_dict(fn, cols)
    flat = np.stack([c.ravel() for c in cols], axis=1)
    uniq, inverse = np.unique(flat, axis=0, return_inverse=True)
    values = np.array([fn(*(int(v) for v in row)) for row in uniq], dtype=float)
    return values[inverse.reshape(-1)].reshape(cols[0].shape)


def _finite_numbers(values) -> bool:
    """Every value a finite Python number (np.float64 included: it is a float). A loop,
    not all() of a generator: this runs per step and the generator costs twice as much."""
    for value in values:  # noqa: SIM110
        if not (isinstance(value, float | int) and value - value == 0):
            return False
    return True


# Up to this many elements `per_unique` finds the distinct tuples in a dict: np.unique over
# rows sorts a structured view, 100-300 us even for 24 rows, where a dict of Python ints
# costs well under 1 us a row (measured, numpy 2 on the team's machine).
PER_UNIQUE_DICT_MAX = 4096
# `per_unique`'s memo: arrays of at most this many elements, this many entries (at most
# 2,048 x 256 x 8 B x 3 = 13 MB per memo: key bytes of two columns and the values).
PER_UNIQUE_MEMO_MAX_ELEMENTS = 256
PER_UNIQUE_MEMO_LIMIT = 2048


def _per_unique_dict(fn, cols: list[np.ndarray]) -> np.ndarray:
    seen: dict = {}
    values = []
    for row in zip(*(c.ravel().tolist() for c in cols), strict=True):
        value = seen.get(row)
        if value is None:
            value = seen[row] = float(fn(*row))
        values.append(value)
    return np.array(values, dtype=float).reshape(cols[0].shape)


def _float_or_array(value):
    """A Python number as a float (the scalar path), anything else as a float array."""
    if isinstance(value, float | int):
        return float(value)
    return np.asarray(value, dtype=float)


def where(condition, if_true, if_false):
    """`np.where`, or a plain choice when `condition` is a Python bool (the scalar path)."""
    if isinstance(condition, bool):
        return if_true if condition else if_false
    return np.where(condition, if_true, if_false)


def maximum(a, b):
    """`np.maximum`, or the larger float when both are Python floats (the scalar path);
    a NaN wins either way, as in numpy."""
    if isinstance(a, float) and isinstance(b, float):
        return a if a >= b or a != a else b
    return np.maximum(a, b)


def as_output(value):
    value = np.asarray(value, dtype=float)
    return float(value) if value.ndim == 0 else value
