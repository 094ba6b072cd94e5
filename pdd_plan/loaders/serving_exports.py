"""genai-perf, aiperf and GuideLLM exports, read into `ServingRun`s (loaders/serving_results.py).

- aiperf's `profile_export_aiperf.json` (one object, genai-perf's statistics layout:
  `time_to_first_token`, `inter_token_latency`, `inter_chunk_latency`,
  `request_throughput`, `output_token_throughput` as {avg, p50, p90, p99, unit}; the
  configuration under `input_config.endpoint.model_names` and `input_config.loadgen`
  {concurrency, request_rate, request_count}). aiperf's `inter_token_latency` is per
  request, (latency - TTFT) / (output tokens - 1): the TPOT of vLLM; its
  `inter_chunk_latency` is every gap between streamed chunks: vLLM's ITL.
- GuideLLM's report JSON (`guidellm benchmark --outputs json`): `benchmarks`, one run
  each, its load in `config.strategy` (older: `args.strategy`) as {type_: synchronous |
  concurrent (streams) | throughput | constant | poisson (rate)}, its figures in
  `metrics.<name>.successful` {mean, median, percentiles: {p50, p90, p99}} in ms.
  GuideLLM's `inter_token_latency_ms` is per request, (last token - first token) /
  (output tokens - 1): the TPOT of vLLM (its `time_per_output_token_ms` includes the
  first token and is not read). A constant-rate run is replayed as Poisson arrivals.
"""

from __future__ import annotations

import math

from pdd_plan.loaders import serving_results as sr


def genai_perf_run(f: sr._Fields, resolve) -> sr.ServingRun:
    d = f.data
    config = d.get("input_config") if isinstance(d.get("input_config"), dict) else {}
    c = sr._Fields(f.name, "input_config", config)
    count = d.get("request_count") if isinstance(d.get("request_count"), dict) else {}
    counts = (c.count("request_count"), f.count("avg", data=count), c.count("num_prompts"))
    requests = next((n for n in counts if n), sr.DEFAULT_REQUESTS)  # each checked, used or not
    concurrency, rate = sr._loop(c, c.count("concurrency"), c.number("request_rate"), requests)
    isl_osl = []
    for key, fallback in (
        ("input_sequence_length", "synthetic_input_tokens_mean"),
        ("output_sequence_length", "output_tokens_mean"),
    ):
        stats = d.get(key) if isinstance(d.get(key), dict) else {}
        value = sr._Fields(f.name, key, stats).number("avg") or c.number(fallback)
        if value is None:
            f._fail(key, "nothing", f"the run's mean length ({key}.avg or input_config)")
        isl_osl.append(max(int(round(value)), 1))
    measured = genai_stats(f, (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency")))
    if not measured:
        f._fail("time_to_first_token", "nothing", "TTFT or inter-token latency statistics")
    reported = genai_stats(f, (("itl", "inter_chunk_latency"),)) + genai_throughputs(f)
    model = config.get("model")
    model = model[0] if isinstance(model, list) and model else model
    cells = {k: config[k] for k in ("gpu", "tp", "ep", "dp") if k in config}
    resolved = resolve(f.name, "input_config", {"model": model, **cells})
    isl, osl = isl_osl
    return sr.ServingRun(
        "run 1", resolved, isl, osl, requests, concurrency, rate, measured, reported
    )


def genai_stats(f: sr._Fields, pairs) -> tuple[tuple[str, float], ...]:
    """genai-perf / aiperf statistics ({avg, p50, p90, p99, unit}) as (name, seconds)."""
    out = []
    for metric, key in pairs:
        stats = f.data.get(key)
        if stats is None:
            continue
        if not isinstance(stats, dict):
            f._fail(key, stats, "a mapping of statistics (avg, p50, p90, p99, unit)")
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}.get(stats.get("unit", "ms"))
        if scale is None:
            f._fail(f"{key}.unit", stats.get("unit"), "ms, us, ns or s")
        g = sr._Fields(f.name, key, stats)
        for s, k in (("mean", "avg"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99")):
            value = g.number(k)
            if value is not None and value > 0:
                out.append((f"{metric}_{s}", value * scale))
    return tuple(out)


def genai_throughputs(f: sr._Fields) -> tuple[tuple[str, float], ...]:
    """`request_throughput.avg` and `output_token_throughput.avg`, where present."""
    out = ()
    for name, key in (
        ("request_throughput_per_s", "request_throughput"),
        ("output_throughput_tokens_per_s", "output_token_throughput"),
    ):
        stats = f.data.get(key)
        if stats is None:
            continue
        if not isinstance(stats, dict):
            f._fail(key, stats, "a mapping with avg (per second)")
        g = sr._Fields(f.name, key, stats)
        value = g.number("avg")
        if value is not None:
            if not 0 < value < math.inf:
                g._fail("avg", value, "a throughput > 0 per second")
            out += ((name, value),)
    return out


def _mapping(f, key: str) -> dict:
    value = f.data.get(key, {})
    if not isinstance(value, dict):
        f._fail(key, value, "a mapping")
    return value


def aiperf_run(f, resolve) -> sr.ServingRun:
    config = _mapping(f, "input_config")
    where = "input_config"
    loadgen = sr._Fields(
        f.name, f"{where}.loadgen", _mapping(sr._Fields(f.name, where, config), "loadgen")
    )
    count = _mapping(f, "request_count")
    counts = (loadgen.count("request_count"), f.count("avg", data=count))
    requests = next((n for n in counts if n), sr.DEFAULT_REQUESTS)
    concurrency, rate = sr._loop(
        loadgen, loadgen.count("concurrency"), loadgen.number("request_rate"), requests
    )
    isl, osl = (
        _aiperf_length(f, key, total, requests)
        for key, total in (("input_sequence_length", "total_isl"),
                           ("output_sequence_length", "total_osl"))
    )  # fmt: skip
    measured = genai_stats(f, (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency")))
    if not measured:
        f._fail("time_to_first_token", "nothing", "TTFT or inter-token latency statistics")
    reported = genai_stats(f, (("itl", "inter_chunk_latency"),)) + genai_throughputs(f)
    endpoint = _mapping(sr._Fields(f.name, where, config), "endpoint")
    names = endpoint.get("model_names")
    model = names[0] if isinstance(names, list) and names else None
    resolved = resolve(f.name, f"{where}.endpoint", {"model": model})
    return sr.ServingRun(
        "run 1", resolved, isl, osl, requests, concurrency, rate, measured, reported
    )


def _aiperf_length(f, key: str, total_key: str, requests: int) -> int:
    stats = sr._Fields(f.name, key, _mapping(f, key))
    value = stats.number("avg")
    if value is None:
        total = f.number("avg", data=_mapping(f, total_key))
        value = total / requests if total is not None else None
    if value is None:
        f._fail(key, "nothing", f"the run's mean length ({key}.avg or {total_key}.avg)")
    if not value <= sr.MAX_REQUEST_TOKENS:
        stats._fail("avg", value, f"at most {sr.MAX_REQUEST_TOKENS:,} tokens per request")
    return max(int(round(value)), 1)


GUIDELLM_FIGURES = (
    ("ttft", "time_to_first_token_ms"),
    ("tpot", "inter_token_latency_ms"),
)
GUIDELLM_THROUGHPUTS = (
    ("request_throughput_per_s", "requests_per_second"),
    ("output_throughput_tokens_per_s", "output_tokens_per_second"),
)


def guidellm_runs(f, resolve) -> list[sr.ServingRun]:
    benchmarks = f.data.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        f._fail("benchmarks", benchmarks, "a list of GuideLLM benchmarks")
    runs = []
    for i, benchmark in enumerate(benchmarks):
        if not isinstance(benchmark, dict):
            f._fail(f"benchmarks[{i}]", benchmark, "a GuideLLM benchmark object")
        runs.append(_guidellm_run(sr._Fields(f.name, f"benchmarks[{i}]", benchmark), resolve))
    return runs


def _successful(f, metrics: dict, key: str) -> dict:
    """metrics.<key>.successful, or {} when the file does not have it."""
    block = metrics.get(key)
    if block is None:
        return {}
    if not isinstance(block, dict) or not isinstance(block.get("successful", {}), dict):
        f._fail(f"metrics.{key}", block, "a mapping with successful: {mean, percentiles}")
    return block.get("successful", {})


def _guidellm_run(f, resolve) -> sr.ServingRun:
    metrics = _mapping(f, "metrics")
    requests = _guidellm_requests(f, metrics)
    concurrency, rate = _guidellm_load(f, requests)
    lengths = []
    for key in ("prompt_token_count", "output_token_count"):
        value = sr._Fields(
            f.name, f"{f.where}, metrics.{key}.successful", _successful(f, metrics, key)
        ).number("mean")
        if value is None or not value <= sr.MAX_REQUEST_TOKENS:
            f._fail(
                f"metrics.{key}.successful.mean",
                value,
                f"a mean length of 1 to {sr.MAX_REQUEST_TOKENS:,} tokens",
            )
        lengths.append(max(int(round(value)), 1))
    measured = _guidellm_figures(f, metrics)
    if not measured:
        f._fail(
            "metrics.time_to_first_token_ms", "nothing", "TTFT or inter-token latency statistics"
        )
    reported = ()
    for name, key in GUIDELLM_THROUGHPUTS:
        at = f"{f.where}, metrics.{key}.successful"
        value = sr._Fields(f.name, at, _successful(f, metrics, key)).number("mean")
        if value is not None:
            if not 0 < value < math.inf:
                sr._Fields(f.name, at, {})._fail("mean", value, "a throughput > 0 per second")
            reported += ((name, value),)
    resolved = resolve(f.name, f.where, {})
    isl, osl = lengths
    return sr.ServingRun(
        f.where, resolved, isl, osl, requests, concurrency, rate, measured, reported
    )


def _guidellm_figures(f, metrics: dict) -> tuple[tuple[str, float], ...]:
    out = []
    for metric, key in GUIDELLM_FIGURES:
        stats = _successful(f, metrics, key)
        g = sr._Fields(f.name, f"{f.where}, metrics.{key}.successful", stats)
        percentiles = stats.get("percentiles", stats)
        if not isinstance(percentiles, dict):
            g._fail("percentiles", percentiles, "a mapping of p50, p90, p99")
        p = sr._Fields(f.name, f"{f.where}, metrics.{key}.successful.percentiles", percentiles)
        values = {"mean": g.number("mean"), "p50": p.number("p50") or g.number("median")}
        values.update(p90=p.number("p90"), p99=p.number("p99"))
        for stat, value in values.items():
            if value is not None and value > 0:
                out.append((f"{metric}_{stat}", value / 1e3))
    return tuple(out)


def _guidellm_requests(f, metrics: dict) -> int:
    """Successful requests: metrics.request_totals, request_totals or run_stats."""
    run_stats = f.data.get("run_stats")
    made = run_stats.get("requests_made") if isinstance(run_stats, dict) else None
    places = (metrics.get("request_totals"), f.data.get("request_totals"), made)
    for block in places:
        if isinstance(block, dict) and block.get("successful") is not None:
            return sr._Fields(f.name, f"{f.where}, request_totals", block).count("successful")
    return sr.DEFAULT_REQUESTS


def _guidellm_load(f, requests: int) -> tuple[int | None, float | None]:
    holder = f.data.get("config") if isinstance(f.data.get("config"), dict) else f.data.get("args")
    strategy = holder.get("strategy") if isinstance(holder, dict) else None
    if not isinstance(strategy, dict):
        f._fail("config.strategy", strategy, "the run's strategy {type_, streams or rate}")
    s = sr._Fields(f.name, f"{f.where}, config.strategy", strategy)
    kind = strategy.get("type_")
    if kind == "synchronous":
        return 1, None
    if kind == "concurrent":
        return s.count("streams", required=True), None
    if kind == "throughput":
        return sr._loop(s, None, math.inf, requests)
    if kind in ("constant", "poisson"):
        rate = s.number("rate", required=True)
        if not 0 < rate < math.inf:
            s._fail("rate", rate, "a rate > 0 req/s")
        return None, rate
    return s._fail("type_", kind, "synchronous, concurrent, throughput, constant or poisson")
