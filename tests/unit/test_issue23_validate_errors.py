"""Issue #23 item 5: `validate`'s errors, computed by hand on two runs.

One client (closed loop), prompts of one chunk and two output tokens: every request is
one prefill iteration (its TTFT) and one decode iteration at batch 1 (its TPOT and its
only inter-token gap), so the model's figures are two roofline steps
(`Instance.mixed_step_s`) and the throughput is 1 / (prefill + decode). The measured
figures are set to known multiples of those, so each error is known in advance.
"""

import json

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.aggregated import Load
from pdd_plan.stages.calibrating.validation import (
    model_figures,
    summary,
    validate,
    weighted_percentile,
)

CAT = Catalog()
INST = Instance(CAT.model("qwen3_32b"), CAT.gpus["h200_sxm"], 1)
OPTIONS = {"model": "qwen3_32b", "gpu": "h200_sxm", "tp": 1}
# (isl, measured TTFT / model TTFT, measured TPOT and ITL / model, measured req/s / model)
RUNS = ((1000, 1.25, 0.8, 0.5), (2000, 1 / 1.1, 1.0, 2.0))


def _steps(isl: int) -> tuple[float, float]:
    prefill_s = float(INST.mixed_step_s(0, 0, isl, 0, 1))
    decode_s = float(INST.mixed_step_s(1, isl + 1, 0, 0, 0))
    return prefill_s, decode_s


def _vllm(isl, ttft_x, tpot_x, rate_x) -> dict:
    prefill_s, decode_s = _steps(isl)
    doc = {"backend": "vllm", "model_id": "Qwen/Qwen3-32B", "num_prompts": 6, "completed": 6,
           "max_concurrency": 1, "request_rate": "inf", "total_input_tokens": 6 * isl,
           "total_output_tokens": 12,
           "request_throughput": rate_x / (prefill_s + decode_s)}  # fmt: skip
    for stat in ("mean", "median", "p90", "p99"):
        doc[f"{stat}_ttft_ms"] = 1e3 * ttft_x * prefill_s
        doc[f"{stat}_tpot_ms"] = 1e3 * tpot_x * decode_s
        doc[f"{stat}_itl_ms"] = 1e3 * tpot_x * decode_s
    return doc


def test_model_figures_of_one_client_are_two_roofline_steps():
    prefill_s, decode_s = _steps(1000)
    got = model_figures(INST, Load(1000, 2, 6, concurrency=1))
    for key in ("ttft_mean", "ttft_p99"):
        assert got[key] == pytest.approx(prefill_s, rel=1e-9)
    for key in ("tpot_p50", "itl_mean", "itl_p90"):
        assert got[key] == pytest.approx(decode_s, rel=1e-9)
    assert got["request_throughput_per_s"] == pytest.approx(1 / (prefill_s + decode_s))
    assert got["output_throughput_tokens_per_s"] == pytest.approx(2 / (prefill_s + decode_s))


def test_two_runs_errors_and_their_medians_by_hand(tmp_path):
    paths = []
    for i, run in enumerate(RUNS):
        (tmp_path / f"r{i}.json").write_text(json.dumps(_vllm(*run)))
        paths.append(tmp_path / f"r{i}.json")
    checks = validate(paths, OPTIONS, CAT)
    errors = [{f.name: f.error_frac for f in c.figures} for c in checks]
    # run 1: model / measured - 1 = 1/1.25 - 1, 1/0.8 - 1, 1/0.5 - 1
    assert errors[0]["ttft_p90"] == pytest.approx(-0.2, abs=1e-9)
    assert errors[0]["tpot_mean"] == pytest.approx(0.25, abs=1e-9)
    assert errors[0]["itl_p99"] == pytest.approx(0.25, abs=1e-9)
    assert errors[0]["request_throughput_per_s"] == pytest.approx(1.0, abs=1e-9)
    # run 2: 1.1 - 1, exact, 1/2 - 1
    assert errors[1]["ttft_p50"] == pytest.approx(0.1, abs=1e-9)
    assert errors[1]["tpot_p50"] == pytest.approx(0.0, abs=1e-9)
    assert errors[1]["request_throughput_per_s"] == pytest.approx(-0.5, abs=1e-9)
    over = summary(checks)
    # medians of two runs are their means: (-0.2 + 0.1) / 2 and (0.2 + 0.1) / 2
    assert over["ttft_p50"]["median_error_frac"] == pytest.approx(-0.05, abs=1e-9)
    assert over["ttft_p50"]["median_abs_error_frac"] == pytest.approx(0.15, abs=1e-9)
    assert over["request_throughput_per_s"]["median_error_frac"] == pytest.approx(0.25)
    assert over["tpot_p99"]["runs"] == 2
    assert "output_throughput_tokens_per_s" not in over  # no file states it


def test_weighted_percentile_is_the_percentile_of_the_repeated_values():
    rng = np.random.default_rng(7)
    for _ in range(50):
        values = rng.uniform(0.01, 0.05, rng.integers(1, 30))
        weights = rng.integers(0, 6, len(values))
        weights[rng.integers(len(values))] += 1  # at least one gap
        for q in (0, 50, 90, 99, 100):
            expected = np.percentile(np.repeat(values, weights), q)
            assert weighted_percentile(values, weights, q) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "load", [Load(700, 50, 40, concurrency=8), Load(700, 50, 300, rate_per_s=3.0)]
)
def test_itl_counts_each_gap_once(load):
    """Every request of OSL tokens has OSL - 1 gaps: with fixed lengths the mean over all
    gaps (ITL) equals the mean over requests of their mean gap (TPOT), closed or open
    loop; the slowest gaps (iterations that carry a prompt) show in ITL's tail, which a
    request's mean dilutes."""
    got = model_figures(INST, load)
    assert got["itl_mean"] == pytest.approx(got["tpot_mean"], rel=1e-9)
    assert got["itl_p99"] >= got["tpot_p99"]


@pytest.mark.slow
def test_a_run_of_a_million_requests_is_replayed_with_its_first_100000(tmp_path):
    doc = _vllm(100, 1.0, 1.0, 1.0) | {"num_prompts": 1_000_000, "completed": 1_000_000,
                                       "max_concurrency": None, "request_rate": 50.0,
                                       "total_input_tokens": 100 * 1_000_000,
                                       "total_output_tokens": 2 * 1_000_000}  # fmt: skip
    (tmp_path / "long.json").write_text(json.dumps(doc))
    (check,) = validate([tmp_path / "long.json"], OPTIONS, CAT)
    assert (check.run.requests, check.replayed_requests) == (1_000_000, 100_000)
    assert check.figures  # replayed, compared
