"""Serving-benchmark results for `pdd-plan calibrate serving`: one `ServingRun` per run.

Four formats, told apart by their content:

- vLLM's `vllm bench serve --save-result` JSON (one object): `model_id`, `num_prompts`,
  `request_rate` (a number or "inf"), `max_concurrency` (null: unbounded), `completed`,
  `total_input_tokens`, `total_output_tokens`, `{mean,median,p90,p99}_{ttft,tpot}_ms`
  (p90 with `--metric-percentiles 50,90,99`), optional `input_lens`/`output_lens`
  (`--save-detailed`) and any `--metadata KEY=VALUE` pairs (`gpu`, `tp`, `ep`, `dp`,
  `kv_cache_dtype` are read when present).
- SGLang's `bench_serving --output-file` JSONL (one object per line, per run): the same
  metric keys, with `random_input_len`/`random_output_len` as lengths when the totals
  are missing.
- genai-perf's `profile_export_genai_perf.json`: `time_to_first_token` and
  `inter_token_latency` ({avg, p50, p90, p99, unit}), `input_sequence_length` and
  `output_sequence_length` ({avg}) and `input_config` (`model`, `concurrency` or
  `request_rate`, `request_count`, `synthetic_input_tokens_mean`, `output_tokens_mean`;
  100 requests when no count is given).
- aiperf's `profile_export_aiperf.json` and GuideLLM's report JSON (read, with
  genai-perf's, in loaders/serving_exports.py).
- A plain CSV, one run per row: `model`, `gpu`, `tp`, `ep`, `dp` (optional, else the
  command line), `input_tokens`, `output_tokens`, `concurrency` or `request_rate`,
  optional `requests`, and any of `ttft_{mean,p50,p90,p99}_ms`, `tpot_{...}_ms` (and, read
  by `validate` only, `itl_{...}_ms`, `request_throughput_per_s`,
  `output_throughput_tokens_per_s`).

Lengths are the measured means (total tokens / completed requests) where the file has
them. A run without concurrency and with an infinite rate sent every request at once:
a closed loop of `requests` clients. Model, GPU and parallelism come from the file, else
from the command line. A malformed file is one line naming the file and key (exit 2).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from pdd_plan.errors import InputError
from pdd_plan.loaders.step_measurements import Config, csv_records

WHAT = (
    "a serving-benchmark result (vLLM JSON, SGLang JSONL, genai-perf, aiperf or GuideLLM "
    "JSON, or CSV)"
)
STATS = ("mean", "p50", "p90", "p99")
METRICS = ("ttft", "tpot")
MAX_RUN_REQUESTS = 100_000
MAX_REQUEST_TOKENS = 10_000_000  # tokens of one request: the scenario files' and --isl's cap
DEFAULT_REQUESTS = 100  # a genai-perf run that does not say how many it sent
MAX_FILE_BYTES = 256 * 1024 * 1024  # detailed results carry every request's token times


@dataclass(frozen=True)
class ServingRun:
    label: str  # file and run, as messages name it
    config: Config
    isl_tokens: int
    osl_tokens: int
    requests: int
    concurrency: int | None
    rate_per_s: float | None
    measured_s: tuple[tuple[str, float], ...]  # (("ttft_p50", 0.12), ...)
    # figures `calibrate serving` does not fit but `validate` compares: ITL over all
    # token gaps ("itl_p50", s) and throughput ("request_throughput_per_s", ...)
    reported: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ServingFile:
    file: str
    sha256: str
    kind: str
    runs: tuple[ServingRun, ...]


class _Fields:
    """Reads typed values of one run's mapping; every problem is one line."""

    def __init__(self, name: str, where: str, data: dict):
        self.name, self.where, self.data = name, where, data

    def _fail(self, key: str, value, expected: str):
        at = f"{self.where}, {key}" if self.where else key
        raise InputError.single(self.name, at, repr(value)[:80], expected)

    def number(self, key: str, low: float = 0.0, required=False, data=None):
        data = self.data if data is None else data
        value = data.get(key)
        if value is None:
            return self._fail(key, "nothing", "a number") if required else None
        if isinstance(value, str):  # CSV cells, "inf"
            try:
                value = float(value) if value.strip() else None
            except ValueError:
                self._fail(key, value, "a number")
            if value is None:
                return self._fail(key, "nothing", "a number") if required else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._fail(key, value, "a number")
        if math.isnan(value) or value < low:
            self._fail(key, value, f"a number >= {low:g}")
        return float(value)

    def count(self, key: str, required=False, data=None) -> int | None:
        value = self.number(key, 1.0, required, data)
        if value is None:
            return None
        if not math.isfinite(value) or value != int(value) or value > MAX_RUN_REQUESTS * 1000:
            self._fail(key, value, "a whole number")
        return int(value)


def _loop(f: _Fields, concurrency, rate, requests: int) -> tuple[int | None, float | None]:
    """(concurrency, rate): closed loop when a concurrency is set or the rate is infinite."""
    if concurrency is not None and (rate is None or math.isinf(rate)):
        return concurrency, None
    if rate is not None and not math.isinf(rate):
        if rate <= 0:
            f._fail("request_rate", rate, "a rate > 0 req/s or inf")
        return None, rate
    return requests, None  # every request sent at once


def _lengths(f: _Fields, requests: int, keys: tuple[str, str], fallbacks: tuple[str, str]):
    out = []
    for total_key, fallback in zip(keys, fallbacks, strict=True):
        total = f.number(total_key)
        value = total / requests if total is not None else f.number(fallback)
        if value is None:
            f._fail(total_key, "nothing", f"the run's token count ({total_key} or {fallback})")
        if not value <= MAX_REQUEST_TOKENS:  # inf and 1e308 overflowed the KV arithmetic
            key = total_key if total is not None else fallback
            f._fail(key, total if total is not None else value,
                    f"at most {MAX_REQUEST_TOKENS:,} tokens per request (the run has "
                    f"{requests:,} requests)")  # fmt: skip
        out.append(max(int(round(value)), 1))
    return out


def _measured(f: _Fields, keys: dict) -> tuple[tuple[str, float], ...]:
    out = []
    for name, key in keys.items():
        value = f.number(key)
        if value is not None:
            if value <= 0:
                f._fail(key, value, "a time > 0 ms")
            out.append((name, value / 1e3))
    if not out:
        f._fail(next(iter(keys)), "nothing", "at least one TTFT or TPOT figure")
    return tuple(out)


def _optional_ms(f: _Fields, keys: dict, scale_s: float = 1e-3, data=None) -> tuple:
    """(name, seconds) of the figures present; a figure that is there must be > 0."""
    out = []
    for name, key in keys.items():
        value = f.number(key, data=data)
        if value is not None:
            if value <= 0:
                f._fail(key, value, "a time > 0")
            out.append((name, value * scale_s))
    return tuple(out)


def _throughputs(f: _Fields, request_key: str, output_key: str, data=None) -> tuple:
    """The run's request and output-token throughput, where the file states them."""
    out = []
    for name, key in (
        ("request_throughput_per_s", request_key),
        ("output_throughput_tokens_per_s", output_key),
    ):
        value = f.number(key, data=data)
        if value is not None:
            if not 0 < value < math.inf:
                f._fail(key, value, "a throughput > 0 per second")
            out.append((name, value))
    return tuple(out)


def _sent_and_completed(f: _Fields) -> int:
    """The requests a vLLM / SGLang run completed (else sent); every count and the
    duration it states are checked, used or not: a broken figure is a broken file."""
    completed, sent = (
        f.count("completed"),
        f.count("num_prompts", required="completed" not in f.data),
    )
    if completed is not None and sent is not None and completed > sent:
        f._fail("completed", completed, f"at most num_prompts ({sent:,}): requests sent")
    duration = f.number("duration")
    if duration is not None and not 0 < duration < math.inf:
        f._fail("duration", duration, "the run's length in seconds, a number > 0")
    return completed or sent


def _bench_serve_run(f: _Fields, resolve, at: str) -> ServingRun:
    """One vLLM / SGLang result object."""
    d = f.data
    requests = _sent_and_completed(f)
    concurrency = f.count("max_concurrency")
    rate = f.number("request_rate") if d.get("request_rate") not in (None, "inf") else math.inf
    concurrency, rate = _loop(f, concurrency, rate, requests)
    isl, osl = _lengths(
        f, requests, ("total_input_tokens", "total_output_tokens"),
        ("random_input_len", "random_output_len"),
    )  # fmt: skip
    names = {"mean": "mean", "p50": "median", "p90": "p90", "p99": "p99"}
    keys = {f"{m}_{s}": f"{names[s]}_{m}_ms" for m in METRICS for s in STATS}
    cells = {k: d[k] for k in ("gpu", "tp", "ep", "dp", "kv_cache_dtype") if k in d}
    cells["model"] = d.get("model") or d.get("model_id")
    config = resolve(f.name, at, cells)
    measured = _measured(f, keys)
    reported = _optional_ms(f, {f"itl_{s}": f"{names[s]}_itl_ms" for s in STATS})
    reported += _throughputs(f, "request_throughput", "output_throughput")
    return ServingRun(at, config, isl, osl, requests, concurrency, rate, measured, reported)


def _csv_runs(name: str, text: str, resolve) -> list[ServingRun]:
    reader = csv.DictReader(io.StringIO(text))
    runs = []
    for row in csv_records(name, reader):
        line = reader.line_num
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k is not None}
        f = _Fields(name, f"line {line}", row)
        isl = f.count("input_tokens", required=True)
        osl = f.count("output_tokens", required=True)
        concurrency, rate = f.count("concurrency"), f.number("request_rate")
        if concurrency is None and rate is None:
            f._fail("concurrency", "nothing", "a concurrency or a request_rate")
        requests = f.count("requests") or (10 * concurrency if concurrency else 1000)
        concurrency, rate = _loop(f, concurrency, rate, requests)
        keys = {f"{m}_{s}": f"{m}_{s}_ms" for m in METRICS for s in STATS}
        cells = {k: row[k] for k in ("model", "gpu", "tp", "ep", "dp") if row.get(k)}
        config = resolve(name, f"line {line}", cells)
        measured = _measured(f, keys)
        reported = _optional_ms(f, {f"itl_{s}": f"itl_{s}_ms" for s in STATS})
        reported += _throughputs(f, "request_throughput_per_s", "output_throughput_tokens_per_s")
        at = f"line {line}"
        runs.append(
            ServingRun(at, config, isl, osl, requests, concurrency, rate, measured, reported)
        )
    if not runs:
        raise InputError.single(name, "", "a header and no rows", "a CSV with one run per row")
    return runs
