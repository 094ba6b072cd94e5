"""`pdd-plan calibrate serving`: results made by `estimate --concurrency`'s simulation at a
known profile, written in each benchmark tool's documented shape, fitted back; malformed
files are one line, exit 2."""

import json
from dataclasses import replace

import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import load_engine_profile
from pdd_plan.loaders.serving_files import read_serving_file
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.aggregated import Load, serve
from pdd_plan.sim.serving_fit import FITTED

CAT = Catalog()
TRUE = EngineProfile(
    compute_efficiency_frac=0.7, memory_efficiency_frac=0.8, fixed_step_s=0.003,
    prefill_fixed_s=0.02,
)  # fmt: skip
RUNS = [(isl, osl, n) for isl, osl in ((1000, 200), (4000, 100)) for n in (1, 8, 32)]
HF_ID = "Qwen/Qwen3-32B"


def _figures(isl: int, osl: int, n: int, profile=TRUE) -> dict:
    """The simulated run at `profile` on one H200 (what `estimate --concurrency` prints)."""
    inst = Instance(CAT.model("qwen3_32b"), CAT.gpus["h200_sxm"], 1, engine_profile=profile)
    return serve(inst, Load(isl, osl, 10 * n, concurrency=n)).summary()


def _ms(s: dict, metric: str, stat: str) -> float:
    return 1e3 * s[f"{metric}_{stat}_s"]


def _vllm(isl, osl, n) -> dict:
    """`vllm bench serve --save-result --save-detailed --metric-percentiles 50,90,99`."""
    s, count = _figures(isl, osl, n), 10 * n
    out = {
        "date": "20260101-120000", "backend": "vllm", "model_id": HF_ID,
        "tokenizer_id": HF_ID, "num_prompts": count, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": n, "duration": s["duration_s"],
        "completed": count, "total_input_tokens": count * isl,
        "total_output_tokens": count * osl,
        "request_throughput": s["request_throughput_per_s"],
        "output_throughput": s["output_throughput_tokens_per_s"],
        "input_lens": [isl] * count, "output_lens": [osl] * count,
        "ttfts": [s["ttft_p50_s"]] * count, "errors": [""] * count, "gpu": "h200_sxm",
    }  # fmt: skip
    for metric in ("ttft", "tpot"):
        out[f"mean_{metric}_ms"] = _ms(s, metric, "mean")
        out[f"median_{metric}_ms"] = _ms(s, metric, "p50")
        out[f"std_{metric}_ms"] = 0.0
        for q in ("p90", "p99"):
            out[f"{q}_{metric}_ms"] = _ms(s, metric, q)
    return out


def _sglang(isl, osl, n) -> dict:
    """One line of `python -m sglang.bench_serving --output-file` (JSONL)."""
    s, count = _figures(isl, osl, n), 10 * n
    out = {
        "backend": "sglang", "dataset_name": "random", "request_rate": float("inf"),
        "max_concurrency": n, "random_input_len": isl, "random_output_len": osl,
        "random_range_ratio": 1.0, "duration": s["duration_s"], "completed": count,
        "total_input_tokens": count * isl, "total_output_tokens": count * osl,
        "request_throughput": s["request_throughput_per_s"],
        "output_throughput": s["output_throughput_tokens_per_s"],
        "concurrency": s["mean_batch"],
    }  # fmt: skip
    for metric in ("ttft", "tpot"):
        out[f"mean_{metric}_ms"] = _ms(s, metric, "mean")
        out[f"median_{metric}_ms"] = _ms(s, metric, "p50")
        out[f"p99_{metric}_ms"] = _ms(s, metric, "p99")
    out["mean_itl_ms"] = out["mean_tpot_ms"]
    return out


def _genai_perf(isl, osl, n) -> dict:
    """`profile_export_genai_perf.json`."""
    s = _figures(isl, osl, n)

    def stats(metric):
        return {"unit": "ms", "avg": _ms(s, metric, "mean"), "p50": _ms(s, metric, "p50"),
                "p90": _ms(s, metric, "p90"), "p99": _ms(s, metric, "p99")}  # fmt: skip

    return {
        "time_to_first_token": stats("ttft"),
        "inter_token_latency": stats("tpot"),
        "request_throughput": {"unit": "requests/sec", "avg": s["request_throughput_per_s"]},
        "output_token_throughput": {"unit": "tokens/sec", "avg": 1.0},
        "input_sequence_length": {"unit": "tokens", "avg": isl},
        "output_sequence_length": {"unit": "tokens", "avg": osl},
        "input_config": {
            "model": [HF_ID], "concurrency": n, "request_count": 10 * n,
            "synthetic_input_tokens_mean": isl, "output_tokens_mean": osl,
        },
    }  # fmt: skip


def _csv(runs) -> str:
    stats = ("p50", "p90", "p99")
    head = "model,gpu,tp,input_tokens,output_tokens,concurrency,requests,"
    head += ",".join(f"{m}_{q}_ms" for m in ("ttft", "tpot") for q in stats)
    lines = [head]
    for isl, osl, n in runs:
        s = _figures(isl, osl, n)
        cells = [f"{_ms(s, m, q):.9g}" for m in ("ttft", "tpot") for q in stats]
        lines.append(f"qwen3_32b,h200_sxm,1,{isl},{osl},{n},{10 * n}," + ",".join(cells))
    return "\n".join(lines) + "\n"


def _write(tmp_path, kind: str) -> list[str]:
    if kind == "csv":
        (tmp_path / "runs.csv").write_text(_csv(RUNS))
        return ["runs.csv"]
    if kind == "sglang":
        text = "\n".join(json.dumps(_sglang(*r)) for r in RUNS) + "\n"
        (tmp_path / "sglang.jsonl").write_text(text)
        return ["sglang.jsonl"]
    names = []
    for i, run in enumerate(RUNS):
        doc = _vllm(*run) if kind == "vllm" else _genai_perf(*run)
        (tmp_path / f"{kind}_{i}.json").write_text(json.dumps(doc, indent=1))
        names.append(f"{kind}_{i}.json")
    return names


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["vllm", "sglang", "genai-perf", "csv"])
def test_fit_recovers_the_profile_from_each_format(run_cli, tmp_path, kind):
    """Done-when: a profile fitted to `estimate --concurrency`'s own output at known
    parameters recovers them within 5 % (the model is the same, so any miss is the fit)."""
    files = _write(tmp_path, kind)
    cv = ["--cv"] if kind == "csv" else ["--no-cv"]
    cv += ["--model", "qwen3_32b"] if kind == "sglang" else []  # its results do not say
    result = run_cli(
        "calibrate", "serving", *files, "--gpu", "h200_sxm", "-o", "p.yaml", *cv,
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    profile = load_engine_profile(tmp_path / "p.yaml")
    for key in FITTED:
        assert getattr(profile, key) == pytest.approx(getattr(TRUE, key), rel=0.05), key
    assert profile.model == "qwen3_32b" and profile.gpu == "h200_sxm"
    assert profile.source.endswith("p.yaml")
    assert [f for f, _, _ in profile.fitted_on] == files
    data = json.loads(result.stdout)
    assert data["runs"] == len(RUNS) and data["not_identified"] == []
    assert all(r["ratio"] == pytest.approx(1.0, rel=0.02) for r in data["simulated_over_measured"])
    if kind == "csv":
        assert set(dict(profile.cv_error_frac)) == {"ttft", "tpot"}
        assert max(dict(profile.cv_error_frac).values()) < 0.02


def test_estimate_cli_output_is_what_the_fit_replays(run_cli, tmp_path):
    """The figures the test writes are `estimate --concurrency`'s own (JSON of the CLI)."""
    (tmp_path / "true.yaml").write_text(
        "name: true_profile\nparameters: {compute_efficiency_frac: 0.7, "
        "memory_efficiency_frac: 0.8, fixed_step_s: 0.003, prefill_fixed_s: 0.02}\n"
    )
    result = run_cli(
        "estimate", "--model", "qwen3_32b", "--gpu", "h200_sxm", "--isl", "4000", "--osl",
        "100", "--concurrency", "8", "--engine-profile", "true.yaml", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    serving = json.loads(result.stdout)["serving"]
    expected = _figures(4000, 100, 8)
    for key in ("ttft_p50_s", "ttft_p99_s", "tpot_p90_s"):
        assert serving[key] == pytest.approx(expected[key], rel=1e-12)


def test_parsers_read_lengths_loop_and_figures(tmp_path):
    (tmp_path / "v.json").write_text(json.dumps(_vllm(1000, 200, 8)))
    run = read_serving_file(tmp_path / "v.json", {}, CAT).runs[0]
    assert (run.isl_tokens, run.osl_tokens, run.requests) == (1000, 200, 80)
    assert run.concurrency == 8 and run.rate_per_s is None
    assert run.config.model == "qwen3_32b" and run.config.gpu == "h200_sxm"
    assert dict(run.measured_s)["ttft_p50"] == pytest.approx(_figures(1000, 200, 8)["ttft_p50_s"])
    open_loop = _vllm(1000, 200, 8) | {"max_concurrency": None, "request_rate": 2.5}
    (tmp_path / "o.json").write_text(json.dumps(open_loop))
    run = read_serving_file(tmp_path / "o.json", {}, CAT).runs[0]
    assert run.concurrency is None and run.rate_per_s == 2.5
    burst = _vllm(1000, 200, 8) | {"max_concurrency": None}
    (tmp_path / "b.json").write_text(json.dumps(burst))
    assert read_serving_file(tmp_path / "b.json", {}, CAT).runs[0].concurrency == 80
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(_sglang(*r)) for r in RUNS[:2]) + "\n")
    runs = read_serving_file(tmp_path / "s.jsonl", {"model": "qwen3_32b", "gpu": "b200"}, CAT)
    assert runs.kind == "sglang" and len(runs.runs) == 2
    assert runs.runs[0].config.gpu == "b200"  # the command line over the file
    assert set(dict(runs.runs[0].measured_s)) == {
        "ttft_mean", "ttft_p50", "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p99"
    }  # fmt: skip
    doc = _genai_perf(4000, 100, 1)
    doc["time_to_first_token"] = {"unit": "s", "p99": 2.5}
    (tmp_path / "g.json").write_text(json.dumps(doc))
    g = read_serving_file(tmp_path / "g.json", {"gpu": "h200_sxm"}, CAT)
    assert g.kind == "genai-perf" and dict(g.runs[0].measured_s)["ttft_p99"] == 2.5
    assert g.runs[0].requests == 10


def _error(run_cli, tmp_path, name: str, text: str, *extra):
    (tmp_path / name).write_text(text)
    result = run_cli("calibrate", "serving", name, "--gpu", "h200_sxm", "-o", "p.yaml", *extra)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {name}") and "Traceback" not in result.stderr
    assert not (tmp_path / "p.yaml").exists()
    return lines[0]


GOOD_V = _vllm(1000, 200, 8)
GOOD_G = _genai_perf(1000, 200, 8)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, text, fragment",
    [
        ("empty.json", "", "an empty file"),
        ("bad.json", "{not json\n", "not JSON"),
        ("list.json", "[1, 2]", "a JSON object"),
        ("nokeys.json", json.dumps({"model_id": HF_ID}), "no TTFT or TPOT keys"),
        ("v1.json", json.dumps(GOOD_V | {"completed": "many"}), "completed"),
        ("v2.json", json.dumps({k: v for k, v in GOOD_V.items() if "tokens" not in k
                                and k != "input_lens"}), "total_input_tokens"),
        ("v3.json", json.dumps(GOOD_V | {"median_ttft_ms": -4}), "median_ttft_ms"),
        ("v4.json", json.dumps(GOOD_V | {"model_id": "acme/unknown-9b"}), "model"),
        ("v5.json", json.dumps(GOOD_V | {"request_rate": -1}), "request_rate"),
        ("s.jsonl", json.dumps(_sglang(1000, 200, 8)) + "\n{oops\n", "line 2"),
        ("g1.json", json.dumps(GOOD_G | {"time_to_first_token": [1, 2]}),
         "time_to_first_token"),
        ("g2.json", json.dumps(GOOD_G | {"inter_token_latency": {"unit": "h", "avg": 1}}),
         "inter_token_latency.unit"),
        ("c1.csv", "model,input_tokens\nqwen3_32b,100\n", "output_tokens"),
        ("c2.csv", "model,input_tokens,output_tokens,concurrency,ttft_p50_ms\n"
                   "qwen3_32b,100,10,x,5\n", "concurrency"),
        ("c3.csv", "model,input_tokens,output_tokens,concurrency\nqwen3_32b,100,10,4\n",
         "TTFT or TPOT"),
        ("c4.csv", "model,input_tokens,output_tokens,concurrency,ttft_p50_ms\n", "no rows"),
        ("few.csv", "model,input_tokens,output_tokens,concurrency,ttft_p50_ms,tpot_p50_ms\n"
                    "qwen3_32b,100,10,4,50,9\n", "at least 4"),
    ],
)  # fmt: skip
def test_malformed_files_are_one_line(run_cli, tmp_path, name, text, fragment):
    line = _error(run_cli, tmp_path, name, text)
    assert fragment in line, line


@pytest.mark.slow
def test_binary_and_kv_less_runs_are_one_line(run_cli, tmp_path):
    (tmp_path / "bin.json").write_bytes(b"\x00\x01\x02")
    result = run_cli("calibrate", "serving", "bin.json", "--gpu", "h200_sxm", "-o", "p.yaml")
    assert result.returncode == 2 and "NUL" in result.stderr
    line = _error(
        run_cli, tmp_path, "big.json", json.dumps(GOOD_V | {"model_id": "llama_3_1_405b"})
    )
    assert "KV room" in line


def test_a_slower_engine_fits_lower_efficiencies(tmp_path):
    """Same runs, an engine at half the memory efficiency: the fit follows it."""
    from pdd_plan.stages.calibrating.calibration_serving import calibrate_serving

    slow = replace(TRUE, memory_efficiency_frac=0.4)
    lines = _csv(RUNS[:3]).splitlines()
    head, rows = lines[0], []
    for (isl, osl, n), line in zip(RUNS[:3], lines[1:], strict=True):
        s = _figures(isl, osl, n, slow)
        cells = [f"{_ms(s, m, q):.9g}" for m in ("ttft", "tpot") for q in ("p50", "p90", "p99")]
        rows.append(",".join(line.split(",")[:7] + cells))
    (tmp_path / "slow.csv").write_text("\n".join([head, *rows]) + "\n")
    result = calibrate_serving([tmp_path / "slow.csv"], {}, cross_validate=False)
    assert result.profile.memory_efficiency_frac == pytest.approx(0.4, rel=0.05)


def test_open_loop_runs_are_fitted_to_their_figures(tmp_path):
    """Poisson runs (vLLM results with a request rate): each is simulated afresh per
    trial; the fit reproduces every figure within 10 % (the parameters themselves are
    less determined at low load: sim/serving_fit.py)."""
    from pdd_plan.stages.calibrating.calibration_serving import calibrate_serving

    inst = Instance(CAT.model("qwen3_32b"), CAT.gpus["h200_sxm"], 1, engine_profile=TRUE)
    names = []
    for i, (isl, osl, rate) in enumerate(((1000, 100, 2.0), (4000, 50, 4.0))):
        s = serve(inst, Load(isl, osl, 150, rate_per_s=rate)).summary()
        doc = _vllm(isl, osl, 1) | {"request_rate": rate, "max_concurrency": None}
        doc |= {"completed": 150, "num_prompts": 150, "total_input_tokens": 150 * isl,
                "total_output_tokens": 150 * osl}  # fmt: skip
        for metric in ("ttft", "tpot"):
            doc[f"median_{metric}_ms"] = _ms(s, metric, "p50")
            doc[f"mean_{metric}_ms"] = _ms(s, metric, "mean")
            for q in ("p90", "p99"):
                doc[f"{q}_{metric}_ms"] = _ms(s, metric, q)
        (tmp_path / f"r{i}.json").write_text(json.dumps(doc))
        names.append(tmp_path / f"r{i}.json")
    result = calibrate_serving(names, {}, cross_validate=False)
    assert all(run.concurrency is None for f in result.files for run in f.runs)
    assert all(abs(ratio - 1) < 0.10 for _, _, ratio in result.fit.ratios), result.fit.ratios


@pytest.mark.slow
def test_the_profile_never_overwrites_an_input(run_cli, tmp_path):
    (tmp_path / "runs.csv").write_text(_csv(RUNS[:2]))
    before = (tmp_path / "runs.csv").read_text()
    result = run_cli("calibrate", "serving", "runs.csv", "-o", "runs.csv")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "runs.csv" in result.stderr and (tmp_path / "runs.csv").read_text() == before
