"""`pdd-plan validate RESULTS...`: the model's error on measured serving benchmarks."""

from __future__ import annotations

from pathlib import Path

import typer

from pdd_plan.cli.bounds import MAX_TOKENS, bounded, parallel_size_option
from pdd_plan.cli.output import FORMAT_HELP, Format, console, print_structured, safe, table
from pdd_plan.errors import InputError
from pdd_plan.model.units import DTYPE_BYTES, MS_S

LATENCY_LABELS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL"}
THROUGHPUT_LABELS = {
    "request_throughput_per_s": "requests/s",
    "output_throughput_tokens_per_s": "output tokens/s",
}


def _label(name: str) -> str:
    if name in THROUGHPUT_LABELS:
        return THROUGHPUT_LABELS[name]
    metric, stat = name.split("_")
    return f"{LATENCY_LABELS[metric]} {stat.upper() if stat != 'mean' else stat} (ms)"


def _shown(name: str, value: float) -> str:
    return f"{value:,.3f}" if name in THROUGHPUT_LABELS else f"{value / MS_S:,.2f}"


def validate_data(checks, profile) -> dict:
    from pdd_plan.loaders.engine_profile import profile_summary
    from pdd_plan.stages.calibrating.validation import (
        DEFINITIONS,
        MODEL_DEFINITION,
        TOOL_KEYS,
        summary,
    )

    tools = sorted({c.tool for c in checks})
    return {
        "engine_profile": profile_summary(profile),
        "definitions": DEFINITIONS | {"model": MODEL_DEFINITION},
        "tool_keys": {t: TOOL_KEYS[t] for t in tools if t in TOOL_KEYS},
        "error": "model / measured - 1",
        "runs": [
            {
                "run": c.label,
                "tool": c.tool,
                "model": c.run.config.model,
                "gpu": c.run.config.gpu,
                "tp": c.run.config.tp,
                "isl": c.run.isl_tokens,
                "osl": c.run.osl_tokens,
                "requests": c.run.requests,
                "replayed_requests": c.replayed_requests,
                "concurrency": c.run.concurrency,
                "rate_per_s": c.run.rate_per_s,
                "figures": [
                    {
                        "figure": f.name,
                        "measured": f.measured,
                        "model": f.model,
                        "error_frac": f.error_frac,
                    }
                    for f in c.figures
                ],  # fmt: skip
            }
            for c in checks
        ],
        "summary": summary(checks),
    }


def _print(d: dict) -> None:
    from pdd_plan.loaders.engine_profile import profile_line

    console.print(profile_line(d["engine_profile"]), markup=False)
    for run in d["runs"]:
        load = _load_text(run)
        rows = [
            [_label(f["figure"]), _shown(f["figure"], f["measured"]),
             _shown(f["figure"], f["model"]), f"{100 * f['error_frac']:+.1f} %"]
            for f in run["figures"]
        ]  # fmt: skip
        table(
            f"{safe(run['run'])} ({run['tool']}): {run['model']} on TP{run['tp']} x "
            f"{run['gpu']}, {run['isl']:,} -> {run['osl']:,} tokens, {load}",
            ["figure", "measured", "model", "error"],
            rows,
        )
    if len(d["runs"]) > 1:
        rows = [
            [_label(k), str(v["runs"]), f"{100 * v['median_error_frac']:+.1f} %",
             f"{100 * v['median_abs_error_frac']:.1f} %"]
            for k, v in d["summary"].items()
        ]  # fmt: skip
        table("over the runs", ["figure", "runs", "median error", "median |error|"], rows)
    console.print("error = model / measured - 1 (+: the model predicts more)", markup=False)
    for name, text in d["definitions"].items():
        console.print(f"{name.upper() if name != 'model' else 'model'}: {text}", markup=False)
    for tool, keys in d["tool_keys"].items():
        console.print(f"read from {tool}: {keys}", markup=False)


def _load_text(run: dict) -> str:
    requests = f"{run['requests']:,} requests"
    if run["replayed_requests"] < run["requests"]:
        requests += f" (the first {run['replayed_requests']:,} replayed)"
    if run["concurrency"]:
        return f"{run['concurrency']:,} clients (closed loop), {requests}"
    return f"{run['rate_per_s']:,g} req/s Poisson, {requests}"


def validate(
    files: list[Path] = typer.Argument(
        ..., help="vLLM bench serve JSON, SGLang JSONL, genai-perf / aiperf JSON, GuideLLM "
        "report JSON, or CSV",
    ),
    model: str | None = typer.Option(None, help="catalog model id (over the file's)"),
    gpu: str | None = typer.Option(None, help="catalog GPU id (over the file's)"),
    tp: int | None = parallel_size_option("--tp", "tensor-parallel"),
    ep: int | None = parallel_size_option("--ep", "expert-parallel"),
    dp: int | None = parallel_size_option("--dp", "data-parallel"),
    engine_profile: str | None = typer.Option(
        None, "--engine-profile", help="engine profile YAML (default: the plain roofline)"
    ),
    weight_dtype: str | None = typer.Option(None, "--weight-dtype", help="default: native"),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="KV cache dtype (bf16)"),
    max_batched_tokens: int = bounded(
        8192, "--max-batched-tokens", low=1, high=MAX_TOKENS,
        help="the engine's token budget per iteration",
    ),
    format: Format = typer.Option(Format.table, "--format", help=FORMAT_HELP),
) -> None:  # fmt: skip
    """Replay measured serving benchmarks and print the model's error on each figure.

    Each run is served by the model as `estimate --concurrency N` (or `--rate R`) serves
    one, with the run's lengths, load and request count, and the mean, P50, P90 and P99
    of TTFT, TPOT and ITL and the request and output-token throughput that the file
    states are set against the model's: error = model / measured - 1. TPOT is per
    request, (end-to-end - TTFT) / (output tokens - 1); ITL is every gap between tokens.
    genai-perf's, aiperf's and GuideLLM's "inter-token latency" is per request: a TPOT,
    compared as one. Nothing is written.
    """
    from pdd_plan.loaders.engine_profile import load_engine_profile
    from pdd_plan.model.compute.engine_profile import IDENTITY
    from pdd_plan.stages.calibrating.validation import validate as run_validation

    for option, value in {"--weight-dtype": weight_dtype, "--kv-dtype": kv_dtype}.items():
        if value is not None and value not in DTYPE_BYTES:
            raise InputError.single(
                "command line", option, repr(value), f"one of {', '.join(DTYPE_BYTES)}"
            )
    profile = load_engine_profile(engine_profile) if engine_profile else IDENTITY
    options = dict(model=model, gpu=gpu, tp=tp, ep=ep, dp=dp, kv_dtype=kv_dtype)
    options.update(
        weight_dtype=weight_dtype, max_batched_tokens=max_batched_tokens, engine_profile=profile
    )
    data = validate_data(run_validation(files, options), profile)
    if format.structured:
        print_structured(data, format)
        return
    _print(data)
