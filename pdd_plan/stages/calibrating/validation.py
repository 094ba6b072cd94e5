"""`pdd-plan validate`: the model's error on measured serving benchmarks.

Each run of each result file (loaders/serving_results.py) is replayed by the aggregated
serving simulation (sim/aggregated.py, what `estimate --concurrency N | --rate R` runs)
with the run's own lengths, load and request count, on the instance the command line
names (with its engine profile, else the plain roofline), and every figure the file
states is set against the model's: error = model / measured - 1 (signed; + means the
model predicts more time, or more throughput, than was measured).

The model computes each metric as the tools define it:
- TTFT: per request, from its arrival to the end of the iteration that computes the
  last chunk of its prompt;
- TPOT: per request, (end-to-end latency - TTFT) / (output tokens - 1); mean and
  percentiles over requests;
- ITL: every gap between two consecutive output tokens of any request, i.e. each
  iteration's time counted once per request it decodes; mean and percentiles over gaps;
- throughput: completed requests (output tokens) / the run's length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.serving_files import read_serving_file
from pdd_plan.loaders.serving_results import ServingRun
from pdd_plan.model.compute.engine_profile import IDENTITY
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.compute.step_fit import layout
from pdd_plan.sim.aggregated import (
    MAX_BATCHED_TOKENS,
    PERCENTILES,
    IterationParts,
    Load,
    closed_loop_schedule,
    open_loop_schedule,
    running_cap,
    time_closed_loop,
    time_open_loop,
)

LATENCIES = ("ttft", "tpot", "itl")
STATS = ("mean", "p50", "p90", "p99")
THROUGHPUTS = ("request_throughput_per_s", "output_throughput_tokens_per_s")
FIGURES = tuple(f"{m}_{s}" for m in LATENCIES for s in STATS) + THROUGHPUTS
# the most requests one run is replayed with (`estimate --requests`' cap: a few seconds);
# a longer run's percentiles are those of its first 100,000 requests
MAX_REPLAY_REQUESTS = 100_000

DEFINITIONS = {
    "ttft": "time to first token: from sending a request to its first output token",
    "tpot": "time per output token, per request: (end-to-end latency - TTFT) / "
    "(output tokens - 1); statistics over requests",
    "itl": "inter-token latency: every gap between two consecutive output tokens, over "
    "all requests; statistics over gaps",
    "throughput": "completed requests, and output tokens, per second of the run",
}
# which key of each tool holds which metric (the tools' names differ from the metrics')
TOOL_KEYS = {
    "vllm": "TTFT *_ttft_ms, TPOT *_tpot_ms, ITL *_itl_ms, request_throughput, output_throughput",
    "sglang": "TTFT *_ttft_ms, TPOT *_tpot_ms, ITL *_itl_ms, request_throughput, output_throughput",
    "genai-perf": "TTFT time_to_first_token; TPOT inter_token_latency (per request: "
    "genai-perf's ITL is a TPOT); request_throughput, output_token_throughput",
    "aiperf": "TTFT time_to_first_token; TPOT inter_token_latency (per request); ITL "
    "inter_chunk_latency (every gap); request_throughput, output_token_throughput",
    "guidellm": "TTFT time_to_first_token_ms; TPOT inter_token_latency_ms (per request; "
    "time_per_output_token_ms includes the first token and is not read); "
    "requests_per_second, output_tokens_per_second",
    "csv": "TTFT ttft_*_ms, TPOT tpot_*_ms",
}
MODEL_DEFINITION = (
    "the model replays each run (its lengths, load and request count) iteration by "
    "iteration: TTFT per request; TPOT per request as (last token - first token) / "
    "(output tokens - 1); ITL as each iteration's time once per request it decodes"
)


@dataclass(frozen=True)
class Figure:
    name: str  # "ttft_p50", "itl_mean", "request_throughput_per_s"
    measured: float  # seconds, or per second for throughputs
    model: float

    @property
    def error_frac(self) -> float:
        return self.model / self.measured - 1.0


@dataclass(frozen=True)
class RunCheck:
    label: str  # "file: run"
    tool: str
    run: ServingRun
    figures: tuple[Figure, ...]
    replayed_requests: int  # the run's, at most MAX_REPLAY_REQUESTS


def weighted_percentile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """np.percentile(np.repeat(values, weights), q) (linear), without the repeat: a run
    of 100,000 requests of 10,000 tokens has a billion gaps."""
    order = np.argsort(values, kind="stable")
    values, weights = np.asarray(values)[order], np.asarray(weights)[order]
    cumulative = np.cumsum(weights)
    position = q / 100.0 * (cumulative[-1] - 1)
    low, frac = int(np.floor(position)), position - np.floor(position)
    at = np.searchsorted(cumulative, [low, low + 1], side="right")
    lower = values[min(at[0], len(values) - 1)]
    upper = values[min(at[1], len(values) - 1)]
    return float(lower + frac * (upper - lower))


def model_figures(inst: Instance, load: Load) -> dict[str, float | None]:
    """The model's figures for one run, by the names of `FIGURES` (None: undefined,
    e.g. TPOT of one-token outputs)."""
    cap = running_cap(inst, load)
    if load.concurrency is not None:
        schedule = closed_loop_schedule(load, cap)
        step_s = IterationParts(inst, schedule).seconds(inst.engine_profile.vector())
        serving = time_closed_loop(schedule, step_s, load.osl_tokens)
    else:
        schedule = open_loop_schedule(inst, load, cap)
        step_s = IterationParts(inst, schedule).seconds(inst.engine_profile.vector())
        serving = time_open_loop(schedule, step_s, load)
    summary = serving.summary()
    out = {f"{m}_{s}": summary[f"{m}_{s}_s"] for m in ("ttft", "tpot") for s in STATS}
    gaps = np.asarray(schedule.decode, dtype=float)  # requests decoding: one gap each
    if gaps.sum() > 0:
        out["itl_mean"] = float(np.sum(gaps * step_s) / gaps.sum())
        for q in PERCENTILES:
            out[f"itl_p{q}"] = weighted_percentile(step_s, gaps, q)
    out.update({k: summary[k] for k in THROUGHPUTS})
    return out


def _instance(run: ServingRun, catalog: Catalog, options: dict) -> Instance:
    c = run.config
    model = catalog.model(c.model)
    gpus, mode, _ = layout(model, c.tp, c.ep, c.dp)
    inst = Instance(
        model, catalog.gpus[c.gpu], gpus, c.kv_dtype, options.get("weight_dtype"),
        parallelism=mode, engine_profile=options.get("engine_profile") or IDENTITY,
    )  # fmt: skip
    return inst


def check_run(run: ServingRun, file: str, tool: str, catalog: Catalog, options) -> RunCheck:
    inst = _instance(run, catalog, options)
    requests = min(run.requests, MAX_REPLAY_REQUESTS)
    concurrency = min(run.concurrency, requests) if run.concurrency else None
    load = Load(
        run.isl_tokens, run.osl_tokens, requests, concurrency, run.rate_per_s,
        max_batched_tokens=options.get("max_batched_tokens") or MAX_BATCHED_TOKENS,
    )  # fmt: skip
    if running_cap(inst, load) < 1:
        c = run.config
        raise InputError.single(
            file, run.label, f"{c.model} on {inst.gpus} x {c.gpu} with {run.isl_tokens:,} + "
            f"{run.osl_tokens:,} tokens per request", "a run whose instance holds one request",
            "the weights leave no KV room: check --gpu, --tp and --weight-dtype",
        )  # fmt: skip
    predicted = model_figures(inst, load)
    measured = dict(run.measured_s) | dict(run.reported)
    figures = tuple(
        Figure(name, measured[name], predicted[name])
        for name in FIGURES
        if name in measured and predicted.get(name) is not None
    )
    return RunCheck(f"{file}: {run.label}", tool, run, figures, requests)


def validate(paths, options: dict, catalog: Catalog | None = None) -> list[RunCheck]:
    """Every run of every file, checked. `options`: model, gpu, tp, ep, dp, kv_dtype,
    weight_dtype, max_batched_tokens, engine_profile (an EngineProfile or None)."""
    catalog = catalog or Catalog()
    files = [read_serving_file(p, options, catalog) for p in paths]  # all read first
    return [check_run(run, f.file, f.kind, catalog, options) for f in files for run in f.runs]


def summary(checks: list[RunCheck]) -> dict[str, dict]:
    """Per figure over the runs: count, median signed error, median |error|."""
    errors: dict[str, list[float]] = {}
    for check in checks:
        for fig in check.figures:
            errors.setdefault(fig.name, []).append(fig.error_frac)
    return {
        name: {
            "runs": len(errors[name]),
            "median_error_frac": float(np.median(errors[name])),
            "median_abs_error_frac": float(np.median(np.abs(errors[name]))),
        }
        for name in FIGURES
        if name in errors
    }
