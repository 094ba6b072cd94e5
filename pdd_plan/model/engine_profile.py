"""Engine profiles: the fitted parameters of the roofline step for one serving engine.

A datasheet roofline gets ratios right but not what a given engine (version, CUDA
graphs, fused kernels) reaches on a given GPU. A profile corrects the step assembly of
`roofline.Instance._step` with a few physical parameters, fitted to per-iteration
measurements by `pdd-plan calibrate steps`:

    step_s = max(compute_s / compute_efficiency_frac, memory_s / memory_efficiency_frac)
             + comm_s x (1 - comm_overlap_frac)
             + step_overhead_s + fixed_step_s + layer_latency_frac x kernel floor
             + [prefill in the step] (prefill_fixed_s + prefill_request_s x prompts / groups)
             + decode_request_s x decode requests / groups
             + serial_token_s x tokens / groups
    and a step of more tokens than the largest CUDA graph lasts at least
    eager_mode_step_s (the host launching its kernels one by one).

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
    engine: str = ""
    engine_version: str = ""
    gpu: str = ""  # catalog GPU id the parameters were fitted on ("" = any)
    model: str = ""
    source: str = ""  # the file it was read from, or "built-in"
    cv_error_frac: tuple[tuple[str, float], ...] = field(default=())
    parallelism: tuple[tuple[str, int], ...] = field(default=())  # (("tp", 1), ...)
    fitted_on: tuple[tuple[str, str, int], ...] = field(default=())  # (file, sha256, rows)
    poor_fit: tuple[str, ...] = field(default=())
    # observed / predicted of each figure its fit predicted with its point left out
    # (calibrate observed), sorted, per metric ("ttft", "tpot"): `solve --confidence`
    held_out_ratio: tuple[tuple[str, tuple[float, ...]], ...] = field(default=())

    def __post_init__(self):
        for name, (_, low, high) in PARAMETERS.items():
            value = getattr(self, name)
            if not (np.isfinite(value) and low <= value <= high):
                raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}")
        # the parameters as plain floats, in PARAMETERS order: `adjust` runs per step
        object.__setattr__(self, "_params", tuple(float(getattr(self, k)) for k in PARAMETERS))

    def is_identity(self) -> bool:
        return all(getattr(self, k) == v[0] for k, v in PARAMETERS.items())

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
    fixed, layer, compute_eff, memory_eff, overlap, p_fixed, p_req, d_req, serial, eager = params
    groups = counts["groups"]
    prompts = counts["prompts"]
    decode = counts["decode_requests"]
    tokens = decode + prompts * counts["new_tokens"]
    prefill = np.where(prompts * counts["new_tokens"] > 0, p_fixed + p_req * prompts / groups, 0.0)
    overhead_s = parts["step_overhead_s"] + fixed + layer * parts["layer_s"]
    overhead_s = overhead_s + prefill + d_req * decode / groups + serial * tokens / groups
    compute_s = parts["compute_s"] / compute_eff
    memory_s = parts["memory_s"] / memory_eff
    comm_s = parts["comm_s"] * (1.0 - overlap)
    # an eager step ends when the host has launched its last kernel or the GPU has run
    # it, whichever is later: the launches run ahead of the GPU (asynchronous CUDA)
    gpu_s = np.maximum(compute_s, memory_s) + comm_s + overhead_s
    overhead_s = overhead_s + _eager(counts, tokens, groups) * np.maximum(eager - gpu_s, 0.0)
    return compute_s, memory_s, comm_s, overhead_s


def _float_step_parts(params, parts: dict, counts: dict) -> tuple:
    """`step_parts` of Python numbers in plain floats, the same operations in the same
    order (numpy's per-call cost is most of a scalar step's): np.where becomes a choice
    (its both branches are finite arithmetic) and np.maximum `_maximum`."""
    fixed, layer, compute_eff, memory_eff, overlap, p_fixed, p_req, d_req, serial, eager = params
    groups = counts["groups"]
    prompts = counts["prompts"]
    decode = counts["decode_requests"]
    tokens = decode + prompts * counts["new_tokens"]
    prefill = p_fixed + p_req * prompts / groups if prompts * counts["new_tokens"] > 0 else 0.0
    overhead_s = parts["step_overhead_s"] + fixed + layer * parts["layer_s"]
    overhead_s = overhead_s + prefill + d_req * decode / groups + serial * tokens / groups
    compute_s = parts["compute_s"] / compute_eff
    memory_s = parts["memory_s"] / memory_eff
    comm_s = parts["comm_s"] * (1.0 - overlap)
    gpu_s = _maximum(compute_s, memory_s) + comm_s + overhead_s
    flag = counts["eager"] if "eager" in counts else (tokens > GRAPH_MAX_TOKENS * groups) * 1.0
    overhead_s = overhead_s + flag * _maximum(eager - gpu_s, 0.0)
    return compute_s, memory_s, comm_s, overhead_s


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


IDENTITY = EngineProfile(source="built-in")
