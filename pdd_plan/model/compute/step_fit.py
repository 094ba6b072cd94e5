"""Fit an engine profile to measured per-iteration step times (`calibrate steps`).

Each measured iteration is one forward pass of one engine (one DP rank): `prompts`
prefill chunks of `new_tokens` in all after `cached_tokens` in all, plus
`decode_requests` decode tokens at a mean context of `decode_context_tokens`, taking
`latency_s`. The plain roofline's parts of that step (compute, memory, communication,
kernel floor) are computed once per row; a profile then only re-weighs them
(`engine_profile.step_parts`), so a fit over 100,000 rows takes well under a second per
iteration of the optimiser.

How an engine's parallelism maps onto an `Instance`: tensor parallelism of `tp` GPUs is
"tp" on tp GPUs (an MoE model without DP runs its experts sharded over the same GPUs,
by TP or EP); DP attention with experts spread over all tp x dp GPUs is "ep" on tp x dp
GPUs, and a row's counts, one rank's batch, are multiplied by dp (the ranks are taken
as equally loaded); a dense model with dp > 1 is dp independent "tp" instances.

The fit: least squares on log(predicted / measured) (a relative error, so a 5 ms decode
step and a 300 ms prefill weigh alike), each (configuration, phase) group weighted
equally whatever its row count, a soft-L1 loss (robust to the isolated slow iterations
of first-seen shapes), then rows more than a factor TRIM_FACTOR off the first fit are
dropped and the fit is repeated. Parameters stay within `engine_profile.PARAMETERS`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model.compute.engine_profile import (
    GRAPH_MAX_TOKENS,
    IDENTITY,
    PARAMETERS,
    EngineProfile,
    step_parts,
)
from pdd_plan.model.compute.roofline import Instance

PHASES = ("decode", "prefill", "mixed")
# the plain parts a profile re-weighs (roofline.Instance.profile_parts and the shares)
PART_KEYS = (
    "compute_s", "memory_s", "comm_s", "step_overhead_s", "layer_s", "kernels", "alltoall_s",
    "expert_compute_s", "attention_compute_s", "kv_memory_s", "layers",
)  # fmt: skip
COUNT_KEYS = ("decode_requests", "prompts", "new_tokens", "groups", "eager", "kv_split")
TRIM_FACTOR = 2.0  # rows off the first fit by more than this factor are outliers
ROBUST_SCALE = 0.05  # soft-L1 switches from squared to absolute beyond ~5 % error
# The per-step floor a fit finds is the kernels one GPU launches per step x one kernel's
# latency (`kernel_latency_s`; roofline_parts.kernels_per_step), not a constant: a
# constant fitted on TP1-4 carries no all-reduce kernels' gaps to TP8, and a per-request
# decode cost fitted where each GPU reads 8 KV heads is charged in full at 1 KV head per
# GPU. The KV reads' own efficiency (`kv_read_efficiency_frac`) scales with the KV bytes
# per GPU, as the work does. On Qwen3-32B (../shared/data/perf/fpm, B300, vLLM 0.20.1)
# that took TP8's held-out decode error from 10.8 % to 5.3 %
# (benchmarks/engine_accuracy.py). A constant host floor (`fixed_step_s`) stays free beside
# it. A fit holds at their start values: the roofline's per-kind kernel floor (zeroed:
# `kernel_latency_s` replaces it),
# and the parameters a step-time file cannot tell apart from the compute and memory
# efficiencies (expert GEMM, attention) or that need an overlapped engine (all-to-all).
HELD_BY_DEFAULT = (
    "layer_latency_frac", "expert_gemm_efficiency_frac",
    "attention_efficiency_frac", "alltoall_overlap_frac",
)  # fmt: skip
ZEROED_BY_DEFAULT = ("layer_latency_frac",)
# Parameters a fit can tell from others only where the rows vary in what they multiply:
# one KV split (TP degree) makes a request's KV reads move with the batch as the
# per-request cost does; one kernel count makes the per-kernel floor a constant, as
# `fixed_step_s` is. Data without that variation leave them at their start values.
NEEDS_VARIATION = {"kv_read_efficiency_frac": "kv_split", "kernel_latency_s": "kernels"}
# Where a fit starts the eager-mode floor (engine_profile.py): a floor below every step's
# GPU time binds nowhere and gives the optimiser no slope, so it starts at 0.1 s, longer
# than most eager steps of the vLLM data (30-200 ms); data without a floor bring it down.
FLOOR_START_S = {"eager_mode_step_s": 0.1}


@dataclass(frozen=True)
class StepSamples:
    """One engine configuration's measured iterations (arrays of equal length)."""

    label: str
    model: str  # catalog model id
    gpu: str  # catalog GPU id
    tp: int
    ep: int
    dp: int
    kv_dtype: str
    decode_requests: np.ndarray
    decode_context_tokens: np.ndarray  # mean over the decode requests
    prompts: np.ndarray
    new_tokens: np.ndarray  # summed over the prompts
    cached_tokens: np.ndarray  # summed over the prompts
    latency_s: np.ndarray
    graph_max_tokens: int = GRAPH_MAX_TOKENS  # the engine's largest captured CUDA graph

    def phases(self) -> np.ndarray:
        prefill = self.new_tokens > 0
        decode = self.decode_requests > 0
        return np.where(prefill & decode, "mixed", np.where(prefill, "prefill", "decode"))


def layout(model, tp: int, ep: int, dp: int) -> tuple[int, str, int]:
    """(GPUs of the Instance, its parallelism, the factor on one rank's decode count)."""
    if ep > 1 and model.routed_expert_params() > 0:
        return tp * dp, "ep", dp
    return tp, "tp", 1


@dataclass(frozen=True)
class Prepared:
    """The plain roofline's parts of every row, with the rows' phases and times."""

    parts: dict
    counts: dict
    latency_s: np.ndarray
    phase: np.ndarray
    group: np.ndarray  # index of the row's StepSamples

    def select(self, mask) -> Prepared:
        pick = {k: np.asarray(v)[mask] if np.ndim(v) else v for k, v in self.parts.items()}
        counts = {k: np.asarray(v)[mask] for k, v in self.counts.items()}
        return Prepared(pick, counts, self.latency_s[mask], self.phase[mask], self.group[mask])


def _prepare_one(samples: StepSamples, model, gpu) -> dict:
    gpus, mode, scale = layout(model, samples.tp, samples.ep, samples.dp)
    inst = Instance(model, gpu, gpus, samples.kv_dtype, parallelism=mode)
    prompts = samples.prompts
    per_prompt = np.where(samples.prompts > 0, 1.0 / np.maximum(samples.prompts, 1), 0.0)
    new, cached = samples.new_tokens * per_prompt, samples.cached_tokens * per_prompt
    batch = samples.decode_requests * scale
    parts = inst.plain_step_parts(batch, samples.decode_context_tokens, new, cached, prompts)
    n = len(samples.latency_s)
    return {
        **{k: np.broadcast_to(np.asarray(v, dtype=float), (n,)) for k, v in parts.items()},
        "decode_requests": batch,
        "prompts": prompts,
        "new_tokens": np.rint(new),
        "groups": np.full(n, float(gpus if mode == "ep" else 1)),
        "kv_split": np.full(n, float(inst.kv_tp_degree())),  # GPUs a request's KV spans
        # the row's own tokens are one rank's (the capture size is per rank)
        "eager": (samples.decode_requests + samples.new_tokens > samples.graph_max_tokens) * 1.0,
    }


def prepare(all_samples: list[StepSamples], models: dict, gpus: dict) -> Prepared:
    """The roofline's parts for every row of every configuration (`models` and `gpus`:
    catalog objects by id)."""
    rows = [_prepare_one(s, models[s.model], gpus[s.gpu]) for s in all_samples]
    cat = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
    part_keys = (*PART_KEYS,)
    return Prepared(
        {k: cat[k] for k in part_keys},
        {k: cat[k] for k in (*COUNT_KEYS,)},
        np.concatenate([s.latency_s for s in all_samples]),
        np.concatenate([s.phases() for s in all_samples]),
        np.concatenate([np.full(len(s.latency_s), i) for i, s in enumerate(all_samples)]),
    )


def predict_s(params, data: Prepared) -> np.ndarray:
    compute_s, memory_s, comm_s, overhead_s = step_parts(params, data.parts, data.counts)
    return np.maximum(compute_s, memory_s) + comm_s + overhead_s


def _weights(data: Prepared) -> np.ndarray:
    """1 / sqrt(rows of the row's (configuration, phase) group): every group weighs alike."""
    keys = np.char.add(data.group.astype(str), data.phase.astype(str))
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return 1.0 / np.sqrt(counts[inverse])


def _solve(data: Prepared, start: EngineProfile, free: tuple[str, ...]) -> np.ndarray:
    from scipy.optimize import least_squares  # on first use, not at every CLI start-up

    names = list(PARAMETERS)
    index = [names.index(k) for k in free]
    low = np.array([PARAMETERS[k][1] for k in free])
    high = np.array([PARAMETERS[k][2] for k in free])
    base = start.vector()
    weights, log_y = _weights(data), np.log(data.latency_s)

    def residual(x):
        params = base.copy()
        params[index] = x
        return weights * (np.log(predict_s(params, data)) - log_y)

    x0 = np.clip(base[index], low + 1e-9, high - 1e-9)
    for j, name in enumerate(free):
        x0[j] = max(x0[j], FLOOR_START_S.get(name, 0.0))
    fit = least_squares(residual, x0, bounds=(low, high), loss="soft_l1", f_scale=ROBUST_SCALE)
    out = base.copy()
    out[index] = fit.x
    return out


def _identifiable(name: str, data: Prepared) -> bool:
    key = NEEDS_VARIATION.get(name)
    if key is None:
        return True
    values = data.counts[key] if key in data.counts else data.parts[key]
    return len(np.unique(np.asarray(values))) > 1


def held_reasons(data: Prepared) -> dict[str, str]:
    """Why the default fit holds each parameter it does not fit (the rest are fitted)."""
    why = {"kv_split": "one KV split (TP degree) in the rows", "kernels": "one kernel count"}
    alike = "held: step times do not tell it from compute_efficiency_frac"
    out = {"expert_gemm_efficiency_frac": alike, "attention_efficiency_frac": alike}
    out["alltoall_overlap_frac"] = "held: state it where the engine runs two-batch overlap"
    out["layer_latency_frac"] = "held at 0: kernel_latency_s counts the kernels"
    for name, key in NEEDS_VARIATION.items():
        if not _identifiable(name, data):
            out[name] = f"held: not identifiable, {why[key]}"
    return out


def free_parameters(hold: tuple[str, ...] = HELD_BY_DEFAULT) -> tuple[str, ...]:
    return tuple(k for k in PARAMETERS if k not in hold)


def fit_profile(
    data: Prepared,
    start: EngineProfile = IDENTITY,
    free: tuple[str, ...] | None = None,
) -> tuple[EngineProfile, np.ndarray]:
    """The profile that best fits the rows, and the mask of rows kept after trimming.

    Parameters not in `free` keep `start`'s values; by default the roofline's per-kind
    kernel floor is replaced by the fitted per-kernel latency (HELD_BY_DEFAULT, with
    layer_latency_frac 0)."""
    if free is None:
        free = free_parameters()
        free = tuple(k for k in free if _identifiable(k, data))
        held = dict(zip(PARAMETERS, start.vector(), strict=True))
        held.update(dict.fromkeys(ZEROED_BY_DEFAULT, 0.0))
        start = start.with_vector(list(held.values()))
    first = _solve(data, start, free)
    ratio = predict_s(first, data) / data.latency_s
    keep = (ratio < TRIM_FACTOR) & (ratio > 1.0 / TRIM_FACTOR)
    second = _drop_idle_floor(_solve(data.select(keep), start.with_vector(first), free), data)
    return start.with_vector(second), keep


def _drop_idle_floor(params: np.ndarray, data: Prepared) -> np.ndarray:
    """The eager-mode floor at 0 where it binds on no row: nothing measured shows it (no
    step above the capture size, or every such step longer on the GPU), and left at its
    start it would floor the eager steps of every plan made with the profile."""
    j = list(PARAMETERS).index("eager_mode_step_s")
    zero = params.copy()
    zero[j] = 0.0
    return zero if np.array_equal(predict_s(params, data), predict_s(zero, data)) else params


def phase_errors(predicted_s, measured_s, phase) -> dict[str, float]:
    """Median absolute relative error per phase (phases with no rows left out)."""
    rel = np.abs(np.asarray(predicted_s) / np.asarray(measured_s) - 1.0)
    return {p: float(np.median(rel[phase == p])) for p in PHASES if np.any(phase == p)}


def held_out_s(data: Prepared, fold: np.ndarray, start: EngineProfile = IDENTITY) -> np.ndarray:
    """Each row's step time predicted by a profile fitted without the rows of its fold
    (`fold`: one label per row; leave-one-configuration-out when it is the group)."""
    out = np.empty_like(data.latency_s)
    for label in np.unique(fold):
        held = fold == label
        profile, _ = fit_profile(data.select(~held), start)
        out[held] = predict_s(profile.vector(), data.select(held))
    return out


def folds(data: Prepared, blocks: int = 5) -> np.ndarray:
    """Leave-one-configuration-out folds; with one configuration, `blocks` contiguous
    blocks of its rows (neighbouring iterations are alike, so a block tests more than a
    random split would)."""
    if len(np.unique(data.group)) > 1:
        return data.group
    return np.minimum(np.arange(len(data.group)) * blocks // len(data.group), blocks - 1)
