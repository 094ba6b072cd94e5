"""`pdd-plan calibrate steps`: a profile from an FPM-shaped CSV written here, read back by
the profile loader, used by evaluate; malformed files are one line, exit 2."""

import gzip
import json

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import load_engine_profile
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance

CAT = Catalog()
FPM_HEADER = (
    "phase,workload_segment,counter_id,ctx_tokens,ctx_requests,ctx_kv_tokens,"
    "decode_requests,decode_kv_tokens,mean_decode_kv_tokens,latency_ms"
)
TRUE = EngineProfile(
    fixed_step_s=0.004, layer_latency_frac=0.0, memory_efficiency_frac=0.8,
    prefill_fixed_s=0.01, decode_request_s=1e-4,
)  # fmt: skip


def _steps(n: int = 300, seed: int = 3):
    """(batch, context, prompts, new, cached) of n iterations: decode-only, prefill-only
    and mixed, as an engine's scheduler would run them."""
    rng = np.random.default_rng(seed)
    batch = rng.choice([0, 1, 4, 16, 32], n)
    prompts = np.where(batch == 0, 1, rng.choice([0, 0, 0, 1], n))
    new = prompts * rng.choice([128, 1024, 4096], n)
    cached = prompts * rng.choice([0, 2048], n)
    context = np.where(batch > 0, rng.choice([1000, 4000, 9000], n), 0)
    return batch, context, prompts, new, cached


def _fpm_text(profile: EngineProfile = TRUE) -> str:
    """An FPM-shaped CSV whose latencies are the roofline's with `profile` (qwen3_32b,
    b300, one GPU), so a fit can recover them; the first 3 rows are cold-start slow."""
    inst = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 1, engine_profile=profile)
    batch, context, prompts, new, cached = _steps()
    per = np.maximum(prompts, 1)
    latency_s = inst._step(batch, context, new / per, cached / per, prompts)["total_s"]
    latency_s[:3] = 2.0  # a cold engine's first iterations: dropped as warm-up
    lines = [FPM_HEADER]
    for i in range(len(batch)):
        phase = "mixed" if new[i] and batch[i] else ("context" if new[i] else "decode")
        lines.append(
            f"{phase},real,{i},{new[i]},{prompts[i]},{cached[i]},{batch[i]},"
            f"{batch[i] * context[i]},{float(context[i]):.3f},{1e3 * latency_s[i]:.4f}"
        )
    return "\n".join(lines) + "\n"


def _calibrate(run_cli, path, *extra):
    return run_cli(
        "calibrate", "steps", str(path), "--model", "qwen3_32b", "--gpu", "b300",
        "-o", "profile.yaml", *extra,
    )  # fmt: skip


def test_calibrate_recovers_the_step_times_of_a_known_engine(run_cli, tmp_path):
    src = tmp_path / "fpm.csv.gz"
    src.write_bytes(gzip.compress(_fpm_text().encode()))
    result = _calibrate(run_cli, src, "--no-cv", "--format", "json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["rows"] == 297  # 300 less the 3 warm-up rows
    profile = load_engine_profile(tmp_path / "profile.yaml")
    assert profile.model == "qwen3_32b" and profile.gpu == "b300"
    assert profile.fitted_on[0][0] == "fpm.csv.gz" and profile.fitted_on[0][2] == 300
    # the fitted profile times every step within 2 % of the engine that made the data
    fitted = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 1, engine_profile=profile)
    truth = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 1, engine_profile=TRUE)
    batch, context, prompts, new, cached = _steps(seed=11)
    per = np.maximum(prompts, 1)
    want = truth._step(batch, context, new / per, cached / per, prompts)["total_s"]
    got = fitted._step(batch, context, new / per, cached / per, prompts)["total_s"]
    assert np.max(np.abs(got / want - 1)) < 0.02
    assert max(out["median_abs_error_frac"]["fit"].values()) < 0.01


@pytest.mark.slow
def test_index_beside_the_file_names_model_and_gpu(run_cli, tmp_path):
    (tmp_path / "run.csv").write_text(_fpm_text())
    (tmp_path / "index.csv").write_text(
        "file,model,gpu,engine,engine_version,tp,ep,dp,kv_cache_dtype\n"
        "run.csv,Qwen/Qwen3-32B,b300_sxm,vllm,0.20.1,1,1,1,auto\n"
    )
    result = run_cli("calibrate", "steps", "run.csv", "-o", "p.yaml", "--no-cv")
    assert result.returncode == 0, result.stderr
    profile = load_engine_profile(tmp_path / "p.yaml")
    assert (profile.model, profile.gpu, profile.engine_version) == ("qwen3_32b", "b300", "0.20.1")
    assert dict(profile.parallelism) == {"tp": 1, "ep": 1, "dp": 1}


@pytest.mark.slow
def test_plain_csv_format(run_cli, tmp_path):
    batch, context, prompts, new, cached = _steps(80)
    inst = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 2, engine_profile=TRUE)
    per = np.maximum(prompts, 1)
    latency_s = inst._step(batch, context, new / per, cached / per, prompts)["total_s"]
    lines = ["model,gpu,tp,new_tokens,cached_tokens,prompts,decode_batch,"
             "decode_context_tokens,latency_ms"]  # fmt: skip
    for i in range(len(batch)):
        lines.append(
            f"qwen3_32b,b300,2,{new[i]},{cached[i]},{prompts[i]},{batch[i]},{context[i]},"
            f"{1e3 * latency_s[i]:.5f}"
        )
    (tmp_path / "plain.csv").write_text("\n".join(lines) + "\n")
    result = run_cli("calibrate", "steps", "plain.csv", "-o", "p.yaml", "--no-cv")
    assert result.returncode == 0, result.stderr
    profile = load_engine_profile(tmp_path / "p.yaml")
    assert dict(profile.parallelism)["tp"] == 2
    # fitted at TP2: decode steps of the fitted profile within 2 % of the truth's
    fitted = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 2, engine_profile=profile)
    assert fitted.decode_step_s(16, 4000) == pytest.approx(inst.decode_step_s(16, 4000), rel=0.02)


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("", ["an empty file"]),
        (FPM_HEADER + "\n", ["a header and no rows"]),
        (FPM_HEADER.replace(",latency_ms", "") + "\ndecode,real,1,0,0,0,1,100,100.0\n",
         ["line 1, column latency_ms", "no such column"]),
        (FPM_HEADER + "\n" + "decode,real,1,0,0,0,1,100,100.0,5.0\n" * 4
         + "decode,real,1,0,0,0,1,100,100.0,fast\n", ["line 6, column latency_ms", "'fast'"]),
        (FPM_HEADER + "\n" + "decode,real,1,0,0,0,1,100,100.0,5.0\n" * 4
         + "decode,real,1,0,0,0,1,100\n", ["line 6", "8 cells"]),
        ("a,b,c\n1,2,3\n", ["line 1", "the FPM columns"]),
        (FPM_HEADER + "\n" + "decode,real,1,0,0,0,1,100,100.0,5.0\n" * 2, ["warm-up rows"]),
    ],
    ids=["empty", "header-only", "missing-column", "non-numeric", "short-row", "unknown",
         "only-warm-up"],
)  # fmt: skip
def test_malformed_file_is_one_line(run_cli, tmp_path, text, fragments):
    (tmp_path / "bad.csv").write_text(text)
    result = _calibrate(run_cli, "bad.csv")
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: bad.csv"), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (tmp_path / "profile.yaml").exists()


@pytest.mark.slow
def test_broken_gzip_and_unknown_model_are_one_line(run_cli, tmp_path):
    (tmp_path / "bad.csv.gz").write_bytes(gzip.compress(_fpm_text().encode())[:200])
    result = _calibrate(run_cli, "bad.csv.gz")
    assert result.returncode == 2 and "gzip" in result.stderr, result.stderr
    (tmp_path / "ok.csv").write_text(_fpm_text())
    result = run_cli("calibrate", "steps", "ok.csv", "--model", "qwen9", "--gpu", "b300",
                     "-o", "p.yaml")  # fmt: skip
    assert result.returncode == 2 and "'qwen9'" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# ---- using a profile: --engine-profile and the scenario's engine.profile -------------------
import yaml  # noqa: E402

from pdd_plan.loaders.scenario import resolve_scenario_path  # noqa: E402

PLAN = str(resolve_scenario_path("pdd-paper").parent / "plans" / "pdd-paper-pdd.yaml")
SLOW = "name: slow_steps\nengine: test\ngpu: b300\nparameters: {fixed_step_s: 0.01}\n"


def _evaluate(run_cli, scenario, *extra):
    result = run_cli("evaluate", str(scenario), PLAN, "--format", "json", *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["metrics"]


@pytest.mark.slow
def test_evaluate_engine_profile_option(run_cli, tmp_path):
    (tmp_path / "slow.yaml").write_text(SLOW)
    plain = _evaluate(run_cli, "pdd-paper")
    slow = _evaluate(run_cli, "pdd-paper", "--engine-profile", "slow.yaml")
    assert plain["engine_profile"]["name"] == "roofline_default"
    assert plain["engine_profile"]["identity"] is True
    assert slow["engine_profile"]["name"] == "slow_steps"
    # every decode step is 10 ms longer (and batches grow with it): TPOT rises by >= 10 ms
    assert slow["tpot_s"]["p50"] >= plain["tpot_s"]["p50"] + 0.010 - 1e-9
    # fitted on b300, the plan runs H100 and H200: one note for each GPU
    notes = [w for w in slow["warnings"] if "fitted on b300" in w]
    assert {n.split("applied to ")[1].split(" ")[0] for n in notes} == {"h100_sxm", "h200_sxm"}
    assert not [w for w in plain["warnings"] if "fitted on" in w]


@pytest.mark.slow
def test_scenario_engine_profile_relative_and_the_option_wins(run_cli, tmp_path):
    data = yaml.safe_load(resolve_scenario_path("pdd-paper").read_text())
    data.setdefault("engine", {})["profile"] = "profiles/slow.yaml"
    (tmp_path / "sub" / "profiles").mkdir(parents=True)
    (tmp_path / "sub" / "profiles" / "slow.yaml").write_text(SLOW)
    (tmp_path / "sub" / "s.yaml").write_text(yaml.safe_dump(data))
    (tmp_path / "other.yaml").write_text(SLOW.replace("slow_steps", "other_steps"))
    assert _evaluate(run_cli, "sub/s.yaml")["engine_profile"]["name"] == "slow_steps"
    over = _evaluate(run_cli, "sub/s.yaml", "--engine-profile", "other.yaml")
    assert over["engine_profile"]["name"] == "other_steps"


@pytest.mark.slow
def test_calibrated_profile_is_accepted_by_evaluate(run_cli, tmp_path):
    (tmp_path / "fpm.csv").write_text(_fpm_text())
    assert _calibrate(run_cli, "fpm.csv", "--no-cv").returncode == 0
    m = _evaluate(run_cli, "pdd-paper", "--engine-profile", "profile.yaml")
    assert m["engine_profile"]["gpu"] == "b300"
    assert m["engine_profile"]["fitted_on"] == ["fpm.csv"]


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("name: x\nparameters: {memory_efficiency_frac: 0}\n",
         ["parameters.memory_efficiency_frac", "found 0"]),
        ("name: x\nparameters: {}\nbogus: 1\n", ["bogus", "an unknown key"]),
        ("", ["an empty file"]),
    ],
)  # fmt: skip
def test_bad_profile_is_one_line(run_cli, tmp_path, text, fragments):
    (tmp_path / "bad.yaml").write_text(text)
    result = run_cli("evaluate", "pdd-paper", PLAN, "--engine-profile", "bad.yaml")
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: bad.yaml")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.slow
def test_missing_scenario_profile_names_the_key(run_cli, tmp_path):
    data = yaml.safe_load(resolve_scenario_path("pdd-paper").read_text())
    data.setdefault("engine", {})["profile"] = "nowhere.yaml"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    result = run_cli("evaluate", "s.yaml", PLAN)
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "engine.profile" in lines[0] and "'nowhere.yaml'" in lines[0]


def test_estimate_names_its_profile(run_cli, tmp_path):
    (tmp_path / "slow.yaml").write_text(SLOW)
    args = ["estimate", "--model", "qwen3_32b", "--gpu", "b300", "--isl", "1000", "--osl",
            "100", "--batch", "8", "--format", "json"]  # fmt: skip
    plain = json.loads(run_cli(*args).stdout)
    slow = json.loads(run_cli(*args, "--engine-profile", "slow.yaml").stdout)
    assert plain["engine_profile"]["identity"] and not plain["warnings"]
    assert slow["tpot_s"] == pytest.approx(plain["tpot_s"] + 0.01)
    assert slow["prefill_s"] == pytest.approx(plain["prefill_s"] + 0.01)


@pytest.mark.slow
def test_sweep_workers_take_the_scenario_profile(run_cli, tmp_path):
    # the sweep loads each point from an edited copy in a temporary file: the profile's
    # path must still be read relative to the scenario file
    data = yaml.safe_load(resolve_scenario_path("pdd-paper").read_text())
    data.setdefault("engine", {})["profile"] = "profiles/slow.yaml"
    (tmp_path / "sub" / "profiles").mkdir(parents=True)
    (tmp_path / "sub" / "profiles" / "slow.yaml").write_text(SLOW)
    (tmp_path / "sub" / "s.yaml").write_text(yaml.safe_dump(data))

    def tpot_p50(scenario):
        result = run_cli("sweep", scenario, "--vary", "workload.arrival_rate_per_s=10:10:1",
                         "--plan", PLAN, "--jobs", "1", "--format", "json")  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["points"][0]["metrics"]["tpot_s"]["p50"]

    assert tpot_p50("sub/s.yaml") >= tpot_p50("pdd-paper") + 0.010 - 1e-9


@pytest.mark.slow
def test_a_profile_moved_to_another_model_and_gpu_says_so(run_cli, tmp_path):
    from pdd_plan.loaders.engine_profile import engines_dir

    shipped = str(engines_dir() / "vllm_0_20_b300_qwen3_32b.yaml")
    args = ["estimate", "--gpu", "h200_sxm", "--gpus-per-instance", "4", "--isl", "1000",
            "--osl", "100", "--format", "json", "--engine-profile", shipped]  # fmt: skip
    other = json.loads(run_cli(*args, "--model", "llama_3_1_70b").stdout)
    assert any("fitted on model qwen3_32b, not llama_3_1_70b" in w for w in other["warnings"])
    assert any("fitted on b300; applied to h200_sxm" in w for w in other["warnings"])
    same = json.loads(run_cli(*args, "--model", "qwen3_32b").stdout)
    assert not any("fitted on model" in w for w in same["warnings"])


@pytest.mark.slow
def test_sweep_option_reaches_the_worker_processes(run_cli, tmp_path):
    (tmp_path / "slow.yaml").write_text(SLOW)

    def tpot_p50(*extra):
        result = run_cli("sweep", "pdd-paper", "--vary", "workload.arrival_rate_per_s=10:20:10",
                         "--plan", PLAN, "--jobs", "2", "--format", "json", *extra)  # fmt: skip
        assert result.returncode == 0, result.stderr
        return [p["metrics"]["tpot_s"]["p50"] for p in json.loads(result.stdout)["points"]]

    plain, slow = tpot_p50(), tpot_p50("--engine-profile", "slow.yaml")
    assert all(b >= a + 0.010 - 1e-9 for a, b in zip(plain, slow, strict=True))


@pytest.mark.slow
def test_sizing_report_names_the_profile(run_cli, tmp_path):
    # a profile that barely moves the steps (0.1 ms), so the solve stays quick
    (tmp_path / "mild.yaml").write_text(SLOW.replace("0.01", "0.0001"))
    result = run_cli("solve", "default", "--report", "r.md", "--engine-profile", "mild.yaml")
    assert result.returncode == 0, result.stderr
    assert "engine profile: slow_steps" in result.stdout
    text = (tmp_path / "r.md").read_text()
    assert "engine profile: slow\\_steps" in text or "engine profile: slow_steps" in text


def test_zero_time_in_a_plain_file_names_its_line(run_cli, tmp_path):
    head = "model,gpu,tp,new_tokens,cached_tokens,prompts,decode_batch,decode_context_tokens,"
    rows = [f"qwen3_32b,b300,{1 + i % 2},0,0,0,4,1000,{5 + i}" for i in range(12)]
    rows[8] = "qwen3_32b,b300,1,0,0,0,4,1000,0"  # line 10 of the file, second rows of TP1
    (tmp_path / "p.csv").write_text(head + "latency_ms\n" + "\n".join(rows) + "\n")
    result = run_cli("calibrate", "steps", "p.csv", "-o", "out.yaml")
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "line 10, column latency_ms" in lines[0]
