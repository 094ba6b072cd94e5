"""One prefill step over several chunks: what each chunk adds (its compute and KV bytes),
what the step's total tokens set (weights read, communication), and the step's time through
the engine profile. prefill_mix.py builds the workload's steps from these.

Pure: numpy only, no I/O.
"""

from __future__ import annotations

import numpy as np

from pdd_plan.model.compute.kernels import achievable_bytes_per_s, maximum, where
from pdd_plan.model.compute.roofline import Instance


def chunk_parts(inst: Instance, new_tokens, cached_tokens) -> tuple[np.ndarray, np.ndarray]:
    """(compute seconds, KV bytes moved) each chunk adds to a step: its linear FLOPs and its
    attention over `cached` + `new` tokens; its cached KV read plus its new KV written."""
    new = np.rint(np.asarray(new_tokens, dtype=float))
    cached = np.rint(np.asarray(cached_tokens, dtype=float))
    # the roofline's own per-chunk terms (batch 0: no decode tokens in a prefill step)
    _, compute_s = inst._compute(0.0, 0.0, new, cached, 1.0)
    _, kv_bytes = inst._kv_moved_bytes(0.0, 0.0, new, cached, 1.0)
    return np.asarray(compute_s, dtype=float), np.asarray(kv_bytes, dtype=float)


def token_terms(inst: Instance, tokens):
    """(weight bytes read, communication seconds) of a step of `tokens` tokens: the parts
    set by the step's total tokens alone (weights per GPU in "ep", all GPUs in "tp")."""
    if inst._ep():
        return inst.ep_weight_read_bytes_per_gpu(tokens), inst._comm_s(tokens)
    return inst.weight_read_bytes(tokens), inst._comm_s(tokens)


# The mean step over its compositions (`step_s`): the compute of a step at
# equal-chance points of its gamma law; a CV² below the floor is a fixed composition.
COMPOSITION_POINTS = 16
COMPOSITION_PROBS = (np.arange(COMPOSITION_POINTS) + 0.5) / COMPOSITION_POINTS
MIN_COMPOSITION_CV2 = 1e-6


def step_s(inst: Instance, compute_s, kv_bytes, tokens, prompts, terms=None):
    """One prefill step from its chunks' summed parts: `compute_s` and `kv_bytes` summed over
    the chunks, `tokens` their new tokens, `prompts` how many chunks (may be fractional: a
    mean mix); `terms`: `token_terms(inst, tokens)` when the caller has them. The weights
    the step's tokens touch are read once; 0 for no tokens."""
    weight_bytes, comm_s = token_terms(inst, tokens) if terms is None else terms
    bandwidth = achievable_bytes_per_s(inst.gpu)
    if inst._ep():
        memory_s = (weight_bytes + kv_bytes / inst.gpus) / bandwidth
    else:
        memory_s = (weight_bytes + kv_bytes) / (inst.gpus * bandwidth)
    parts = inst.profile_parts(compute_s, memory_s, comm_s)
    parts["kv_memory_s"] = kv_bytes / inst.gpus / bandwidth  # the KV share (engine profile)
    per_prompt = where(prompts > 0, tokens / np.maximum(prompts, 1e-300), 0.0)
    counts = {"decode_requests": 0.0, "prompts": prompts, "new_tokens": per_prompt}
    counts["groups"] = inst.gpus if inst._ep() else 1
    compute, memory, comm, overhead = inst.engine_profile.adjust(parts, counts)
    return where(tokens > 0, maximum(compute, memory) + comm + overhead, 0.0)


def batch_step_s(inst: Instance, new_tokens, cached_tokens) -> float:
    """Time of one prefill step over the chunks (new_tokens[i] after cached_tokens[i])."""
    new = np.atleast_1d(np.rint(np.asarray(new_tokens, dtype=float)))
    compute_s, kv_bytes = chunk_parts(inst, new, cached_tokens)
    prompts = float(np.count_nonzero(new > 0))
    return float(step_s(inst, float(compute_s.sum()), float(kv_bytes.sum()), new.sum(), prompts))
