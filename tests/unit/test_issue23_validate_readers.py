"""Issue #23 item 5: every benchmark tool's output read into the figures `validate` compares.

The fixtures are written by hand from each tool's documented output, values chosen so that
the expected seconds are obvious (ms / 1000):
- vLLM `bench serve --save-result --metric-percentiles 50,90,99`: `{mean,median,p90,p99}_
  {ttft,tpot,itl}_ms`, `request_throughput`, `output_throughput` (vllm/benchmarks/serve.py).
- SGLang `bench_serving --output-file` JSONL: the same keys, one run per line.
- aiperf `profile_export_aiperf.json`: docs/tutorials/working-with-profile-exports.md of
  ai-dynamo/aiperf ("Aggregated Statistics (JSON)": metrics as {unit, avg, p50, p90, p99},
  `request_count`, `total_isl`, `input_config.endpoint.model_names`,
  `input_config.loadgen.concurrency`); its `inter_token_latency` is per request
  ((latency - TTFT) / (OSL - 1)), its `inter_chunk_latency` every chunk gap.
- GuideLLM `benchmarks.json`: src/guidellm/benchmark/schemas/generative (GenerativeMetrics:
  `time_to_first_token_ms`, `inter_token_latency_ms`, `time_per_output_token_ms`,
  `prompt_token_count`, `output_token_count`, `requests_per_second`,
  `output_tokens_per_second`, each a StatusDistributionSummary with `successful` {mean,
  median, percentiles}); docs/guides/metrics.md: ITL excludes the first token, TPOT
  includes it.
"""

import json

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.serving_files import read_serving_file

OPTIONS = {"model": "qwen3_32b", "gpu": "h200_sxm", "tp": 1}
CATALOG = Catalog()


def _read(tmp_path, name: str, doc) -> object:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (tmp_path / name).write_text(text)
    return read_serving_file(tmp_path / name, OPTIONS, CATALOG)


def _figures(run) -> dict:
    return dict(run.measured_s) | dict(run.reported)


VLLM = {
    "backend": "vllm", "model_id": "Qwen/Qwen3-32B", "num_prompts": 40, "completed": 40,
    "request_rate": "inf", "max_concurrency": 4, "total_input_tokens": 40_000,
    "total_output_tokens": 8_000, "request_throughput": 2.5, "output_throughput": 500.0,
    "mean_ttft_ms": 120.0, "median_ttft_ms": 110.0, "p90_ttft_ms": 200.0, "p99_ttft_ms": 300.0,
    "mean_tpot_ms": 20.0, "median_tpot_ms": 19.0, "p90_tpot_ms": 25.0, "p99_tpot_ms": 30.0,
    "mean_itl_ms": 21.0, "median_itl_ms": 18.0, "p90_itl_ms": 26.0, "p99_itl_ms": 40.0,
}  # fmt: skip


def test_vllm_reads_itl_and_throughput(tmp_path):
    f = _read(tmp_path, "v.json", VLLM)
    (run,) = f.runs
    assert f.kind == "vllm" and (run.isl_tokens, run.osl_tokens, run.concurrency) == (
        1000, 200, 4,
    )  # fmt: skip
    got = _figures(run)
    expected = {"ttft_p50": 0.110, "tpot_p90": 0.025, "itl_mean": 0.021, "itl_p50": 0.018,
                "itl_p90": 0.026, "itl_p99": 0.040, "request_throughput_per_s": 2.5,
                "output_throughput_tokens_per_s": 500.0}  # fmt: skip
    for key, value in expected.items():
        assert got[key] == pytest.approx(value), key


def test_sglang_lines_are_runs_with_their_itl(tmp_path):
    lines = [
        {"backend": "sglang", "random_input_len": 512, "random_output_len": 64,
         "completed": 10, "max_concurrency": n, "request_rate": float("inf"),
         "mean_ttft_ms": 50.0 * n, "median_itl_ms": 7.0 * n, "mean_tpot_ms": 8.0 * n}
        for n in (1, 2)
    ]  # fmt: skip
    f = _read(tmp_path, "s.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    assert f.kind == "sglang" and [r.concurrency for r in f.runs] == [1, 2]
    assert _figures(f.runs[1])["itl_p50"] == pytest.approx(0.014)
    assert _figures(f.runs[1])["tpot_mean"] == pytest.approx(0.016)


AIPERF = {
    "request_throughput": {"unit": "requests/sec", "avg": 13.16},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 1274.63},
    "time_to_first_token": {"unit": "ms", "avg": 1588.8, "p50": 787.5, "p90": 3695.1,
                            "p99": 4119.3},
    "inter_token_latency": {"unit": "ms", "avg": 51.76, "p50": 51.98, "p90": 53.18,
                            "p99": 55.87},
    "inter_chunk_latency": {"unit": "ms", "avg": 51.0, "p50": 50.0, "p90": 60.0, "p99": 90.0},
    "request_count": {"unit": "requests", "avg": 200.0},
    "total_isl": {"unit": "tokens", "avg": 110000.0},
    "output_sequence_length": {"unit": "tokens", "avg": 96.85},
    "input_config": {
        "endpoint": {"model_names": ["openai/gpt-oss-20b"], "type": "chat", "streaming": True},
        "loadgen": {"concurrency": 100, "request_count": 200},
    },
}  # fmt: skip


def test_aiperf_per_request_itl_is_tpot_and_chunk_gaps_are_itl(tmp_path):
    f = _read(tmp_path, "profile_export_aiperf.json", AIPERF)
    (run,) = f.runs
    assert f.kind == "aiperf"
    # 110,000 input tokens over 200 requests; 96.85 output tokens rounds to 97
    assert (run.isl_tokens, run.osl_tokens, run.requests, run.concurrency) == (550, 97, 200, 100)
    got = _figures(run)
    assert got["tpot_p90"] == pytest.approx(0.05318)  # aiperf's per-request "ITL"
    assert got["itl_p99"] == pytest.approx(0.090)  # every chunk gap
    assert got["ttft_mean"] == pytest.approx(1.5888)
    assert got["request_throughput_per_s"] == pytest.approx(13.16)


def _guidellm_benchmark(strategy: dict, scale: float = 1.0) -> dict:
    def summary(mean, p50, p90, p99):
        return {"successful": {"mean": mean * scale, "median": p50 * scale,
                               "percentiles": {"p50": p50 * scale, "p90": p90 * scale,
                                               "p99": p99 * scale}}}  # fmt: skip

    return {
        "type_": "generative_benchmark",
        "config": {"strategy": strategy},
        "metrics": {
            "request_totals": {"successful": 64, "errored": 0, "incomplete": 0},
            "prompt_token_count": {"successful": {"mean": 256.0}},
            "output_token_count": {"successful": {"mean": 128.0}},
            "time_to_first_token_ms": summary(40.0, 35.0, 60.0, 90.0),
            "inter_token_latency_ms": summary(10.0, 9.0, 12.0, 15.0),
            "time_per_output_token_ms": summary(99.0, 99.0, 99.0, 99.0),
            "requests_per_second": {"successful": {"mean": 3.5}},
            "output_tokens_per_second": {"successful": {"mean": 448.0}},
        },
    }


def test_guidellm_benchmarks_are_runs_and_its_itl_is_a_tpot(tmp_path):
    doc = {"benchmarks": [
        _guidellm_benchmark({"type_": "synchronous"}),
        _guidellm_benchmark({"type_": "concurrent", "streams": 8}, 2.0),
        _guidellm_benchmark({"type_": "poisson", "rate": 2.5}),
    ]}  # fmt: skip
    f = _read(tmp_path, "benchmarks.json", doc)
    assert f.kind == "guidellm" and len(f.runs) == 3
    loads = [(r.concurrency, r.rate_per_s) for r in f.runs]
    assert loads == [(1, None), (8, None), (None, 2.5)]
    run = f.runs[1]
    assert (run.isl_tokens, run.osl_tokens, run.requests) == (256, 128, 64)
    got = _figures(run)
    assert got["tpot_p99"] == pytest.approx(0.030)  # inter_token_latency_ms x 2
    assert got["ttft_p50"] == pytest.approx(0.070)
    assert "itl_p50" not in got  # GuideLLM keeps no per-gap latencies
    assert 0.099 not in got.values() and 0.198 not in got.values()  # TPOT with TTFT: unread
    assert got["output_throughput_tokens_per_s"] == pytest.approx(448.0)


@pytest.mark.parametrize(
    "name, doc, fragments",
    [
        ("a1.json", AIPERF | {"input_config": {"loadgen": {"concurrency": "lots"}}},
         ("input_config.loadgen, concurrency", "'lots'", "a number")),
        ("a2.json", AIPERF | {"request_throughput": {"avg": 0}},
         ("request_throughput, avg", "0", "a throughput > 0")),
        ("g1.json", {"benchmarks": [_guidellm_benchmark({"type_": "sweep"})]},
         ("benchmarks[0], config.strategy, type_", "'sweep'", "concurrent")),
        ("g2.json", {"benchmarks": [_guidellm_benchmark({"type_": "concurrent"})]},
         ("streams", "nothing", "a number")),
        ("g3.json", {"benchmarks": []}, ("benchmarks", "[]", "a list of GuideLLM")),
        ("g5.json", {"benchmarks": [5]}, ("json: benchmarks[0]: found 5", "benchmark object")),
        ("a3.json", AIPERF | {"input_config": {"endpoint": [1]}},
         ("input_config, endpoint", "[1]", "a mapping")),
        ("g4.json", {"benchmarks": [_guidellm_benchmark({"type_": "synchronous"})
                                    | {"metrics": {"prompt_token_count": 3}}]},
         ("metrics.prompt_token_count", "3", "successful")),
        ("v1.json", VLLM | {"p90_itl_ms": 0}, ("p90_itl_ms", "0", "a time > 0")),
    ],
)  # fmt: skip
def test_bad_input_is_one_error_naming_file_key_value_expected(tmp_path, name, doc, fragments):
    with pytest.raises(InputError) as err:
        _read(tmp_path, name, doc)
    text = str(err.value)
    assert name in text and "\n" not in text.strip(), text
    for fragment in fragments:
        assert fragment in text, (fragment, text)


def test_csv_reads_itl_and_throughput_columns(tmp_path):
    text = (
        "model,gpu,tp,input_tokens,output_tokens,concurrency,ttft_mean_ms,itl_p90_ms,"
        "output_throughput_tokens_per_s\nqwen3_32b,h200_sxm,1,5000,500,5,546.7,21.83,218.48\n"
    )
    (run,) = _read(tmp_path, "points.csv", text).runs
    got = _figures(run)
    assert got["itl_p90"] == pytest.approx(0.02183)
    assert got["output_throughput_tokens_per_s"] == pytest.approx(218.48)
