"""The eager-mode floor: a step of more tokens on one rank than the engine's largest CUDA
graph lasts at least `eager_mode_step_s` (engine_profile.py); a fit recovers it from measurements of
engines with different capture sizes; the calibration benchmark reads each run's size."""

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute import step_fit as sf
from pdd_plan.model.compute.engine_profile import GRAPH_MAX_TOKENS, EngineProfile
from pdd_plan.model.compute.roofline import Instance

CAT = Catalog()
REPO = Path(__file__).resolve().parents[2]


def test_vllm_default_capture_size():
    # vLLM: min(2 x max_num_seqs, 512), and serving launches use max_num_seqs >= 256
    assert GRAPH_MAX_TOKENS == min(2 * 256, 512) == 512


def test_eager_floor_binds_only_above_the_capture_size_on_one_rank():
    qwen = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 1, parallelism="tp")
    eager = dataclasses.replace(qwen, engine_profile=EngineProfile(eager_mode_step_s=0.05))
    # 600 tokens > 512: the step lasts at least the 0.05 s of launches (its GPU time is
    # shorter: 600 tokens of a 32B model at ~1.5 PFLOP/s is ~25 ms)
    assert qwen.prefill_time_s(600) < 0.05
    assert eager.prefill_time_s(600) == pytest.approx(0.05, rel=1e-12)
    # a long prompt's GPU time hides the launches; at 512 tokens and for a 32-request
    # decode the graphs run: nothing changes
    assert qwen.prefill_time_s(4096) > 0.05
    assert eager.prefill_time_s(4096) == qwen.prefill_time_s(4096)
    assert eager.prefill_time_s(512) == qwen.prefill_time_s(512)
    assert eager.mixed_step_s(32, 1000, 480, 0) == qwen.mixed_step_s(32, 1000, 480, 0)
    assert eager.mixed_step_s(33, 1000, 480, 0) == pytest.approx(0.05, rel=1e-12)
    # "ep" spreads a step's tokens over its GPUs: 8 x 512 tokens stay in the graphs
    dsv4 = Instance(CAT.model("deepseek_v4_flash"), CAT.gpus["b300"], 8, "fp8", parallelism="ep")
    ep_eager = dataclasses.replace(dsv4, engine_profile=EngineProfile(eager_mode_step_s=0.5))
    assert ep_eager.prefill_time_s(8 * 512) == dsv4.prefill_time_s(8 * 512)
    assert ep_eager.prefill_time_s(8 * 512 + 8) == pytest.approx(0.5, rel=1e-12)


def _samples(graph_max_tokens: int, eager_s: float, rng) -> sf.StepSamples:
    """Prefill-only and mixed steps of 64-2048 tokens on one B300 (Qwen3-32B TP1), timed
    by the roofline with a known profile, at least `eager_s` where the step's tokens
    exceed this engine's capture size (the expectation written by hand, not by the code)."""
    base = EngineProfile(fixed_step_s=0.004, layer_latency_frac=0.0, prefill_fixed_s=0.01)
    inst = Instance(CAT.model("qwen3_32b"), CAT.gpus["b300"], 1, "bf16", parallelism="tp",
                    engine_profile=base)  # fmt: skip
    n = 200
    batch = rng.choice([0, 0, 4, 16], n).astype(float)
    new = rng.choice([64, 100, 200, 300, 700, 2048], n).astype(float)
    context = np.where(batch > 0, 3000.0, 0.0)
    latency = inst.mixed_step_s(batch, context, new, np.zeros(n), np.ones(n))
    # an eager step lasts at least the host's launch time
    latency = np.where(batch + new > graph_max_tokens, np.maximum(latency, eager_s), latency)
    return sf.StepSamples(
        f"graphs{graph_max_tokens}", "qwen3_32b", "b300", 1, 1, 1, "bf16", batch, context,
        np.ones(n), new, np.zeros(n), latency, graph_max_tokens=graph_max_tokens,
    )  # fmt: skip


def test_fit_recovers_the_eager_cost_from_two_capture_sizes():
    rng = np.random.default_rng(3)
    samples = [_samples(512, 0.06, rng), _samples(128, 0.06, rng)]
    data = sf.prepare(samples, {"qwen3_32b": CAT.model("qwen3_32b")}, CAT.gpus)
    # the 128-token engine runs its 200- and 300-token steps eagerly, the 512 one does not
    assert data.counts["eager"][data.group == 1].sum() > data.counts["eager"][data.group == 0].sum()
    fitted, _ = sf.fit_profile(data)
    assert fitted.eager_mode_step_s == pytest.approx(0.06, rel=0.05)
    assert fitted.prefill_fixed_s == pytest.approx(0.01, rel=0.05)


def _benchmark():
    path = REPO / "benchmarks" / "calibration.py"
    spec = importlib.util.spec_from_file_location("calibration_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_reads_each_runs_capture_size(tmp_path):
    index = tmp_path / "index.csv"
    index.write_text(
        "file,max_num_seqs,extra_engine_args\n"
        'a.csv.gz,1024,"--block-size 256 --max-cudagraph-capture-size 128 --x 1"\n'
        "b.csv.gz,1024,\n"
        "c.csv.gz,100,--block-size 16\n"
    )
    sizes = _benchmark().graph_sizes(tmp_path)
    # the flag where given; else vLLM's min(2 x max_num_seqs, 512)
    assert sizes == {"a.csv.gz": 128, "b.csv.gz": 512, "c.csv.gz": 200}
