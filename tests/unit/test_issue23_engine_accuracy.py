"""Issue #23's accuracy targets on ../shared/data (skipped without it), measured by
benchmarks/engine_accuracy.py: the bounds the issue sets, asserted on the same code."""

import importlib.util
from pathlib import Path

import pytest

from pdd_plan.loaders.catalog import Catalog

REPO = Path(__file__).resolve().parents[2]
CAT = Catalog()


def _benchmark():
    path = REPO / "benchmarks" / "engine_accuracy.py"
    spec = importlib.util.spec_from_file_location("engine_accuracy_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_qwen3_32b_every_held_out_tp_within_8_percent(shared_dir):
    """Leave-one-configuration-out on the vLLM 0.20.1 B300 runs of Qwen3-32B: decode and
    prefill median error within 8 % at TP 1, 2, 4 and 8 (the issue-#22 fit missed TP8's
    decode by 10.8 %: its constant per-request cost, fitted where each GPU reads 8 KV
    heads, was charged in full at one)."""
    bench = _benchmark()
    measured, data = bench.qwen_data(shared_dir / "data", CAT)
    assert sorted(m.samples.tp for m in measured) == [1, 2, 4, 8]
    errors = bench.loco_errors(data, None)
    for group, phases in errors.items():
        tp = measured[group].samples.tp
        assert phases["decode"] <= 0.08, (tp, phases)
        assert phases["prefill"] <= 0.08, (tp, phases)


def test_nim_tpot_signed_error_within_10_percent_at_every_concurrency(shared_dir):
    """NIM Llama-3.3-70B FP8 on 2 x H100 TP2 (hardware-reference 4.C), uncalibrated: the
    mean TPOT of `estimate --concurrency N` against the published ITL (genai-perf's ITL is
    (latency - TTFT) / (tokens - 1), this tool's TPOT) within +-10 % at concurrency 1-50."""
    bench = _benchmark()
    points = bench.nim_points(shared_dir / "data")
    assert [c for c, _ in points] == [1, 5, 25, 50]  # the saturated 100 left out
    errors = bench.tpot_signed_errors(shared_dir / "data", CAT)
    assert all(abs(e) <= 0.10 for e in errors.values()), errors
