"""`calibrate steps` knows each engine's largest captured CUDA graph: from the launch flags
in an index.csv beside an FPM file, or from --cuda-graph-max-tokens; a bad value is one
line, exit 2."""

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import load_engine_profile
from pdd_plan.model.compute.engine_profile import EngineProfile, vllm_graph_max_tokens
from pdd_plan.model.compute.roofline import Instance

CAT = Catalog()
HEADER = (
    "phase,workload_segment,counter_id,ctx_tokens,ctx_requests,ctx_kv_tokens,"
    "decode_requests,decode_kv_tokens,mean_decode_kv_tokens,latency_ms"
)
BASE = EngineProfile(fixed_step_s=0.004, layer_latency_frac=0.0, prefill_fixed_s=0.01)
EAGER_S = 0.06  # the engine's launch time of a step above its capture size
CAPTURE = 128  # its capture size, as `--max-cudagraph-capture-size 128` sets it


def _fpm_text() -> str:
    """An FPM CSV of Qwen3-32B on one B300 timed by the roofline with BASE, at least
    EAGER_S for every step of more than CAPTURE tokens (the expectation written by hand)."""
    rng = np.random.default_rng(5)
    n = 300
    batch = rng.choice([0, 1, 4, 16, 32], n)
    prompts = np.where(batch == 0, 1, rng.choice([0, 0, 1], n))
    new = prompts * rng.choice([64, 100, 1024, 4096], n)
    context = np.where(batch > 0, 3000, 0)
    inst = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 1, engine_profile=BASE)
    latency_s = inst.mixed_step_s(batch, context, new, np.zeros(n), prompts)
    latency_s = np.where(batch + new > CAPTURE, np.maximum(latency_s, EAGER_S), latency_s)
    latency_s[:3] = 2.0  # cold-start rows, dropped as warm-up
    lines = [HEADER]
    for i in range(n):
        phase = "mixed" if new[i] and batch[i] else ("context" if new[i] else "decode")
        lines.append(
            f"{phase},real,{i},{new[i]},{prompts[i]},0,{batch[i]},{batch[i] * context[i]},"
            f"{float(context[i]):.3f},{1e3 * latency_s[i]:.4f}"
        )
    return "\n".join(lines) + "\n"


def _write(tmp_path, flags: str) -> None:
    (tmp_path / "run.csv").write_text(_fpm_text())
    (tmp_path / "index.csv").write_text(
        "file,model,gpu,engine,engine_version,tp,ep,dp,kv_cache_dtype,max_num_seqs,"
        f'extra_engine_args\nrun.csv,Qwen/Qwen3-32B,b300_sxm,vllm,0.20.1,1,1,1,auto,1024,"{flags}"\n'
    )


def test_vllm_launch_flags():
    assert vllm_graph_max_tokens("--block-size 256 --max-cudagraph-capture-size 128", 1024) == 128
    assert vllm_graph_max_tokens("--max-cudagraph-capture-size=64", 1024) == 64
    # vLLM's default: min(2 x max_num_seqs, 512)
    assert vllm_graph_max_tokens("", 1024) == 512
    assert vllm_graph_max_tokens("", 100) == 200
    assert vllm_graph_max_tokens("", None) == 512


@pytest.mark.slow
def test_index_capture_size_lets_the_fit_find_the_eager_cost(run_cli, tmp_path):
    _write(tmp_path, f"--block-size 256 --max-cudagraph-capture-size {CAPTURE}")
    result = run_cli("calibrate", "steps", "run.csv", "-o", "p.yaml", "--no-cv")
    assert result.returncode == 0, result.stderr
    profile = load_engine_profile(tmp_path / "p.yaml")
    assert profile.eager_mode_step_s == pytest.approx(EAGER_S, rel=0.05)
    # one prompt per prefill step here: its fixed and per-request costs add up to BASE's
    prefill_s = profile.prefill_fixed_s + profile.prefill_request_s
    assert prefill_s == pytest.approx(0.01, rel=0.05)
    # told a capture size nothing here exceeds, the fit cannot find the 60 ms floor
    result = run_cli("calibrate", "steps", "run.csv", "-o", "q.yaml", "--no-cv",
                     "--cuda-graph-max-tokens", "8192")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert load_engine_profile(tmp_path / "q.yaml").eager_mode_step_s < EAGER_S / 2


def test_bad_capture_size_is_one_line(run_cli, tmp_path):
    _write(tmp_path, "")
    result = run_cli("calibrate", "steps", "run.csv", "-o", "p.yaml",
                     "--cuda-graph-max-tokens", "0")  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "error: command line: --cuda-graph-max-tokens: found 0; "
        "expected a whole number from 1 to 1,000,000"
    ]
    assert not (tmp_path / "p.yaml").exists()
