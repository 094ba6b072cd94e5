"""Engine profiles: the fitted parameters of the roofline step for one serving engine.

A datasheet roofline gets ratios right but not what a given engine (version, CUDA
graphs, fused kernels) reaches on a given GPU. A profile corrects the step assembly of
`roofline.Instance._step` with a few physical parameters, fitted to per-iteration
measurements by `pdd-plan calibrate steps`:

    step_s = max(compute_s', memory_s') + comm_s' + step_overhead_s + fixed_step_s
             + layer_latency_frac x kernel floor + kernel_latency_s x kernels per step
             + [prefill in the step] (prefill_fixed_s + prefill_request_s x prompts / groups)
             + decode_request_s x decode requests / groups
             + serial_token_s x tokens / groups
    compute_s' = (compute_s - experts - attention) / compute_efficiency_frac
                 + experts / (compute_efficiency_frac x expert_gemm_efficiency_frac)
                 + attention / (compute_efficiency_frac x attention_efficiency_frac)
    memory_s'  = (memory_s - kv) / memory_efficiency_frac
                 + kv / (memory_efficiency_frac x kv_read_efficiency_frac)
    comm_s'    = comm_s x (1 - comm_overlap_frac), less min(alltoall_overlap_frac x that,
                 max(compute_s', memory_s')) of an "ep" all-to-all (two-batch overlap)
    and a step of more tokens than the largest CUDA graph lasts at least
    eager_mode_step_s (the host launching its kernels one by one). With multi-token
    prediction (`mtp_draft_tokens` k, `mtp_accepted_tokens` L) the plain parts are those
    of a verify of k + 1 tokens per decode request and a decode step's time per emitted
    token is step_s x (1 + k / layers) / L. PHYSICAL says what the issue-#23 parameters
    mean and where their ranges come from; each is written as a correction that adds 0
    at its identity value, so the identity profile is the plain roofline bit for bit.

`groups` is the number of groups that run attention side by side: 1 in tensor
parallelism, the GPUs in "ep" (data-parallel attention), so the per-request and
per-token terms are those of one group's share of the step. The efficiency fractions
multiply the catalog's measured ones, so a profile fitted on one GPU moves to another
through the datasheet ratios (peak FLOP/s, HBM bandwidth); the seconds terms move as
they are.

`eager_mode_step_s` is the host's time to launch a step's kernels one by one: an engine
replays captured CUDA graphs only for steps of up to its largest captured size
(`GRAPH_MAX_TOKENS` tokens on one rank); a larger step runs in PyTorch's eager mode, every
kernel launched from Python (nothing to do with the handoff's eager tokens). Launches are
asynchronous, so they overlap the GPU's work: the step lasts max(GPU time, launch time),
and a model of many small kernels per layer on a fast instance is host-bound. vLLM 0.20.1
on B300, DeepSeek-V4-Flash: mixed steps of 128-384 tokens take 78-81 ms in the run
launched with `--max-cudagraph-capture-size 128` against 28-36 ms in the runs at the
default 512; from 128 to 1,024 prompt tokens a step grows by 38-40 ms on 4 GPUs (of which
about 10 ms of compute at the measured 11-13 us per token) but on 1 GPU by no more than its
compute (38 ms at 33 us per token): a floor that the slower GPU hides.
The identity profile (`IDENTITY`) gives the plain roofline exactly.

Pure: numpy only, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace

import numpy as np

# The fitted parameters, in the order a fit vector holds them, with their identity
# values (the plain roofline) and the physical bounds a fit keeps them in.
PARAMETERS: dict[str, tuple[float, float, float]] = {
    "fixed_step_s": (0.0, 0.0, 1.0),
    "layer_latency_frac": (1.0, 0.0, 10.0),
    "compute_efficiency_frac": (1.0, 0.02, 1.6),
    "memory_efficiency_frac": (1.0, 0.02, 1.25),
    "comm_overlap_frac": (0.0, 0.0, 1.0),
    "prefill_fixed_s": (0.0, 0.0, 5.0),
    "prefill_request_s": (0.0, 0.0, 1.0),
    "decode_request_s": (0.0, 0.0, 0.1),
    "serial_token_s": (0.0, 0.0, 0.01),
    "eager_mode_step_s": (0.0, 0.0, 1.0),
    # issue #23: physical parameters (PHYSICAL below says what each means)
    "expert_gemm_efficiency_frac": (1.0, 0.05, 1.6),
    "attention_efficiency_frac": (1.0, 0.05, 1.6),
    "kv_read_efficiency_frac": (1.0, 0.05, 1.6),
    "kernel_latency_s": (0.0, 0.0, 50e-6),
    "alltoall_overlap_frac": (0.0, 0.0, 1.0),
}
# Multi-token prediction, an input of the engine's launch (not fitted): (identity, low,
# high) of the draft tokens k per step and the acceptance length (PHYSICAL).
MTP_RANGES = {"mtp_draft_tokens": (0.0, 0.0, 7.0), "mtp_accepted_tokens": (1.0, 1.0, 8.0)}
# What each issue-#23 parameter means, and where its range comes from (the README's
# table; `calibrate` repeats it when a fit sits at a bound).
PHYSICAL: dict[str, str] = {
    "expert_gemm_efficiency_frac": (
        "grouped-expert (routed MoE) GEMMs' efficiency over the dense GEMMs' "
        "(compute_efficiency_frac); a grouped GEMM of a few tokens per expert runs below a "
        "dense one. Bounded above by the datasheet peak (calibration_checks)"
    ),
    "attention_efficiency_frac": (
        "attention kernels' FLOP efficiency over the dense GEMMs'; bounded above by the "
        "datasheet peak (calibration_checks)"
    ),
    "kv_read_efficiency_frac": (
        "the KV reads' (and writes') HBM efficiency over the weights' "
        "(memory_efficiency_frac): paged decode attention streams many small blocks, "
        "fewer heads per GPU as TP grows; bounded above by the HBM peak"
    ),
    "kernel_latency_s": (
        "fixed time of one kernel in a CUDA-graph replay (launch gap + tail), times the "
        "kernels one GPU runs per step (layers x kernels per layer + collectives: "
        "roofline_parts.kernels_per_step); 0-50 us (a graph replay's gaps are 1-5 us, "
        "an eager launch 5-20 us)"
    ),
    "alltoall_overlap_frac": (
        "share of the MoE all-to-all hidden behind the other micro-batch's compute "
        "(two-batch overlap); never more than the step's GPU time; 0 without TBO, "
        "up to 1"
    ),
    "mtp_draft_tokens": (
        "multi-token prediction: draft tokens k per decode request per step (a whole "
        "number, 0-7): each decode step verifies k + 1 tokens of every request (its "
        "linears, attention and collectives on k + 1 tokens; weights and KV read once) and "
        "runs the draft module k times, one layer each (DeepSeek's MTP module is one "
        "transformer block): the step x (1 + k / layers)"
    ),
    "mtp_accepted_tokens": (
        "acceptance length: tokens a decode request emits per step, 1 to k + 1 (measured "
        "by the engine: DeepSeek-V3 reports 1.8-1.9 at k = 1); a decode-only step's time "
        "per emitted token is its time / this. A mixed step (a prefill chunk in it) is "
        "credited one token per request: pessimistic there"
    ),
}
# Largest step (tokens on one rank) an engine replays as a captured CUDA graph: vLLM's
# default `max_cudagraph_capture_size` is min(2 x max_num_seqs, 512) (vLLM 0.20
# CompilationConfig), 512 at any max_num_seqs >= 256, as every serving launch uses.
GRAPH_MAX_TOKENS = 512


def vllm_graph_max_tokens(extra_engine_args: str, max_num_seqs: int | None) -> int:
    """The largest captured CUDA graph of a vLLM launch: `--max-cudagraph-capture-size`
    where the launch flags give it, else min(2 x max_num_seqs, GRAPH_MAX_TOKENS)."""
    flag = re.search(r"--max-cudagraph-capture-size[ =](\d+)", extra_engine_args or "")
    if flag:
        return int(flag.group(1))
    return GRAPH_MAX_TOKENS if not max_num_seqs else min(2 * max_num_seqs, GRAPH_MAX_TOKENS)


@dataclass(frozen=True)
class EngineProfile:
    """Fitted step-time parameters (module docstring) and where they come from.

    `cv_error_frac`: cross-validated median absolute relative error per phase
    ("decode", "prefill", "mixed"), as (phase, fraction) pairs; empty when unknown.
    `poor_fit`: why the fit is physically impossible or fits its data badly, one note
    each, when `calibrate --accept-poor-fit` kept it (calibration_checks.py); every
    answer made with the profile repeats them. Empty for a sound fit.
    """

    name: str = "roofline_default"
    fixed_step_s: float = 0.0
    layer_latency_frac: float = 1.0
    compute_efficiency_frac: float = 1.0
    memory_efficiency_frac: float = 1.0
    comm_overlap_frac: float = 0.0
    prefill_fixed_s: float = 0.0
    prefill_request_s: float = 0.0
    decode_request_s: float = 0.0
    serial_token_s: float = 0.0
    eager_mode_step_s: float = 0.0
    expert_gemm_efficiency_frac: float = 1.0
    attention_efficiency_frac: float = 1.0
    kv_read_efficiency_frac: float = 1.0
    kernel_latency_s: float = 0.0
    alltoall_overlap_frac: float = 0.0
    mtp_draft_tokens: float = 0.0
    mtp_accepted_tokens: float = 1.0
    engine: str = ""
    engine_version: str = ""
    gpu: str = ""  # catalog GPU id the parameters were fitted on ("" = any)
    model: str = ""
    source: str = ""  # the file it was read from, or "built-in"
    cv_error_frac: tuple[tuple[str, float], ...] = field(default=())
    parallelism: tuple[tuple[str, int], ...] = field(default=())  # (("tp", 1), ...)
    fitted_on: tuple[tuple[str, str, int], ...] = field(default=())  # (file, sha256, rows)
    poor_fit: tuple[str, ...] = field(default=())
    # a profile set (issue #23): one fitted profile per GPU type, with that GPU's
    # datasheet (peak BF16 FLOP/s, HBM bytes/s); empty for a single profile. An
    # `Instance` runs the member its GPU was fitted on, else the nearest (`for_gpu`).
    members: tuple[tuple[EngineProfile, float, float], ...] = field(default=())
    # observed / predicted of each figure its fit predicted with its point left out
    # (calibrate observed), sorted, per metric ("ttft", "tpot"): `solve --confidence`
    held_out_ratio: tuple[tuple[str, tuple[float, ...]], ...] = field(default=())

    def __post_init__(self):
        for name, (_, low, high) in PARAMETERS.items():
            value = getattr(self, name)
            if not (np.isfinite(value) and low <= value <= high):
                raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}")
        for name, (_, low, high) in MTP_RANGES.items():
            value = getattr(self, name)
            if not (np.isfinite(value) and low <= value <= high):
                raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}")
        problem = mtp_problem(self.mtp_draft_tokens, self.mtp_accepted_tokens)
        if problem:
            raise ValueError(problem)
        # the parameters as plain floats, in PARAMETERS order: `adjust` runs per step
        object.__setattr__(self, "_params", tuple(float(getattr(self, k)) for k in PARAMETERS))

    def mtp_only(self) -> EngineProfile:
        """The identity with this profile's multi-token prediction: the plain step of a
        verify (k + 1 tokens per decode request) that a re-weigh then times."""
        return replace(IDENTITY_VALUES, mtp_draft_tokens=self.mtp_draft_tokens,
                       mtp_accepted_tokens=self.mtp_accepted_tokens)  # fmt: skip

    def is_identity(self) -> bool:
        if self.members or self.mtp_draft_tokens:
            return False
        return all(getattr(self, k) == v[0] for k, v in PARAMETERS.items())

    def for_gpu(self, gpu_id: str, flop_per_s: float, bytes_per_s: float) -> EngineProfile:
        """The profile an instance of this GPU runs: itself for a single profile; in a set,
        the member fitted on `gpu_id`, else the member whose GPU's datasheet is nearest
        (the smallest |ln FLOP/s ratio| + |ln HBM bandwidth ratio|; its efficiencies then
        carry by the datasheet ratios, its seconds terms as fitted: module docstring)."""
        if not self.members:
            return self
        for member, _, _ in self.members:
            if member.gpu == gpu_id:
                return member
        return min(
            self.members,
            key=lambda m: (
                abs(np.log(flop_per_s / m[1])) + abs(np.log(bytes_per_s / m[2])),
                m[0].gpu,
            ),
        )[0]

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, k) for k in PARAMETERS], dtype=float)

    def with_vector(self, values) -> EngineProfile:
        return replace(self, **{k: float(v) for k, v in zip(PARAMETERS, values, strict=True)})

    def describe(self) -> dict:
        """The profile as plain data (for JSON output and reports)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["cv_error_frac"] = dict(self.cv_error_frac)
        out["parallelism"] = dict(self.parallelism)
        out["fitted_on"] = [dict(file=f, sha256=h, rows=n) for f, h, n in self.fitted_on]
        out["poor_fit"] = list(self.poor_fit)
        out["members"] = [m.name for m, _, _ in self.members]
        out["held_out_ratio"] = {k: list(v) for k, v in self.held_out_ratio}
        return out

    def adjust(self, parts: dict, counts: dict) -> tuple:
        """(compute_s, memory_s, comm_s, overhead_s) of a step with this profile applied.

        `parts`: the plain roofline's compute_s, memory_s, comm_s, step_overhead_s and
        layer_s (kernel floor); `counts`: decode_requests, prompts, new_tokens (per
        prompt), groups (module docstring) and optionally eager (1 where the step runs
        without CUDA graphs, else 0; by default where one group's tokens exceed
        GRAPH_MAX_TOKENS). Arrays broadcast. The identity profile
        returns the plain parts, bit for bit (x / 1.0, x * 1.0 and x + 0.0 are exact).
        Plain numbers give plain floats (`_float_step_parts`), with the same values.
        """
        if _plain(parts.values()) and _plain(counts.values()):
            return _float_step_parts(self._params, parts, counts)
        return step_parts(self._params, parts, counts)

    def adjust_floats(self, parts: dict, counts: dict) -> tuple:
        """`adjust` for a caller that knows every part and count is a Python number."""
        return _float_step_parts(self._params, parts, counts)


def step_parts(params, parts: dict, counts: dict) -> tuple:
    """`EngineProfile.adjust` for a parameter vector in PARAMETERS order (fits call this
    with trial vectors; the roofline calls it through the profile)."""
    fixed, layer, _, _, overlap, p_fixed, p_req, d_req, serial, eager = params[:10]
    groups = counts["groups"]
    prompts = counts["prompts"]
    decode = counts["decode_requests"]
    tokens = decode + prompts * counts["new_tokens"]
    prefill = np.where(prompts * counts["new_tokens"] > 0, p_fixed + p_req * prompts / groups, 0.0)
    overhead_s = parts["step_overhead_s"] + fixed + layer * parts["layer_s"]
    overhead_s = overhead_s + prefill + d_req * decode / groups + serial * tokens / groups
    overhead_s = overhead_s + params[13] * parts.get("kernels", 0.0)
    compute_s, memory_s = _reweighed(params, parts)
    comm_s = parts["comm_s"] * (1.0 - overlap)
    comm_s = comm_s - np.minimum(
        params[14] * parts.get("alltoall_s", 0.0) * (1.0 - overlap), np.maximum(compute_s, memory_s)
    )
    # an eager step ends when the host has launched its last kernel or the GPU has run
    # it, whichever is later: the launches run ahead of the GPU (asynchronous CUDA)
    gpu_s = np.maximum(compute_s, memory_s) + comm_s + overhead_s
    overhead_s = overhead_s + _eager(counts, tokens, groups) * np.maximum(eager - gpu_s, 0.0)
    draft = parts.get("mtp_draft_tokens", 0.0)  # the plain parts' verify (roofline.py)
    if draft > 0:  # multi-token prediction (PHYSICAL): per emitted token
        d = 1.0 + draft / parts["layers"]
        new = prompts * counts["new_tokens"]
        scale = np.where(decode > 0, np.where(new > 0, d, d / parts["mtp_accepted_tokens"]), 1.0)
        return compute_s * scale, memory_s * scale, comm_s * scale, overhead_s * scale
    return compute_s, memory_s, comm_s, overhead_s


def _reweighed(params, parts: dict) -> tuple:
    """(compute_s, memory_s) with the profile's efficiencies: the whole at the dense GEMM /
    weight efficiencies, the routed-expert GEMM, attention and KV shares (parts
    "expert_compute_s", "attention_compute_s", "kv_memory_s"; 0 where absent) moved by
    their own. Written as a correction, so that at efficiency 1 it adds share x 0.0:
    the identity profile leaves the plain parts bit for bit."""
    compute_eff, memory_eff = params[2], params[3]
    expert_eff, attention_eff, kv_eff = params[10], params[11], params[12]
    compute_s = parts["compute_s"] / compute_eff
    compute_s = compute_s + parts.get("expert_compute_s", 0.0) * (
        1.0 / (compute_eff * expert_eff) - 1.0 / compute_eff
    )
    compute_s = compute_s + parts.get("attention_compute_s", 0.0) * (
        1.0 / (compute_eff * attention_eff) - 1.0 / compute_eff
    )
    memory_s = parts["memory_s"] / memory_eff
    memory_s = memory_s + parts.get("kv_memory_s", 0.0) * (
        1.0 / (memory_eff * kv_eff) - 1.0 / memory_eff
    )
    return compute_s, memory_s


def _float_step_parts(params, parts: dict, counts: dict) -> tuple:
    """`step_parts` of Python numbers in plain floats, the same operations in the same
    order (numpy's per-call cost is most of a scalar step's): np.where becomes a choice
    (its both branches are finite arithmetic) and np.maximum `_maximum`."""
    fixed, layer, _, _, overlap, p_fixed, p_req, d_req, serial, eager = params[:10]
    groups = counts["groups"]
    prompts = counts["prompts"]
    decode = counts["decode_requests"]
    tokens = decode + prompts * counts["new_tokens"]
    prefill = p_fixed + p_req * prompts / groups if prompts * counts["new_tokens"] > 0 else 0.0
    overhead_s = parts["step_overhead_s"] + fixed + layer * parts["layer_s"]
    overhead_s = overhead_s + prefill + d_req * decode / groups + serial * tokens / groups
    overhead_s = overhead_s + params[13] * parts.get("kernels", 0.0)
    compute_s, memory_s = _reweighed(params, parts)
    comm_s = parts["comm_s"] * (1.0 - overlap)
    hidden = params[14] * parts.get("alltoall_s", 0.0) * (1.0 - overlap)
    comm_s = comm_s - _minimum(hidden, _maximum(compute_s, memory_s))
    gpu_s = _maximum(compute_s, memory_s) + comm_s + overhead_s
    flag = counts["eager"] if "eager" in counts else (tokens > GRAPH_MAX_TOKENS * groups) * 1.0
    overhead_s = overhead_s + flag * _maximum(eager - gpu_s, 0.0)
    draft = parts.get("mtp_draft_tokens", 0.0)
    if draft > 0 and decode > 0:  # multi-token prediction, as step_parts
        d = 1.0 + draft / parts["layers"]
        scale = d if prompts * counts["new_tokens"] > 0 else d / parts["mtp_accepted_tokens"]
        return compute_s * scale, memory_s * scale, comm_s * scale, overhead_s * scale
    return compute_s, memory_s, comm_s, overhead_s


def _minimum(a: float, b: float) -> float:
    """np.minimum of two floats: the smaller, a NaN either way."""
    return a if a <= b or a != a else b


def _maximum(a: float, b: float) -> float:
    """np.maximum of two floats: the larger, a NaN either way."""
    return a if a >= b or a != a else b


# what `adjust` takes down the plain-float path (np.float64 is a float)
_NUMBERS = (float, int)


def _plain(values) -> bool:
    """Every value a Python number (a loop: all() of a generator costs twice as much)."""
    for value in values:  # noqa: SIM110
        if not isinstance(value, _NUMBERS):
            return False
    return True


def _eager(counts: dict, tokens, groups):
    """1.0 where the step runs eagerly: the given flags (a fit knows each measured
    engine's capture size), else one group's tokens above GRAPH_MAX_TOKENS. A float for
    floats (the roofline's scalar path), an array for arrays."""
    if "eager" in counts:
        return counts["eager"]
    return (tokens > GRAPH_MAX_TOKENS * groups) * 1.0


def mtp_problem(draft_tokens: float, accepted_tokens: float) -> str:
    """Why a (k, acceptance length) pair is impossible ("" when it is not)."""
    if draft_tokens != int(draft_tokens):
        return f"mtp_draft_tokens must be a whole number, got {draft_tokens!r}"
    if accepted_tokens > draft_tokens + 1:
        return (
            f"mtp_accepted_tokens must be at most 1 + mtp_draft_tokens = {draft_tokens + 1:g} "
            f"(a step emits at most the tokens it verifies), got {accepted_tokens!r}"
        )
    return ""


IDENTITY = EngineProfile(source="built-in")
IDENTITY_VALUES = EngineProfile()
