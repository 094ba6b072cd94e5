"""Aggregated serving of one instance (`estimate --concurrency/--rate`): expectations
built by hand from the roofline's public step times, and properties of the scheduler."""

import json

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.aggregated import Load, closed_loop_schedule, serve

CAT = Catalog()


def _inst(profile=None) -> Instance:
    extra = {"engine_profile": profile} if profile else {}
    model, gpu = CAT.model("llama_3_1_70b"), CAT.gpus["h200_sxm"]
    return Instance(model, gpu, 4, weight_dtype="fp8", **extra)


def test_mixed_step_is_prefill_or_decode_when_alone():
    inst = _inst()
    assert inst.mixed_step_s(0, 0, 2000, 0, 1) == pytest.approx(inst.prefill_time_s(2000))
    assert inst.mixed_step_s(8, 1500, 0, 0, 0) == pytest.approx(inst.decode_step_s(8, 1500))
    both = inst.mixed_step_s(8, 1500, 2000, 0, 1)
    assert both > max(inst.prefill_time_s(2000), inst.decode_step_s(8, 1500))


def test_one_client_is_prefill_then_decode_steps():
    """One client: TTFT is the prompt's prefill alone; TPOT is the mean of batch-1 decode
    steps at contexts isl+1 .. isl+osl-1; the throughput is one request per latency."""
    inst, isl, osl = _inst(), 3000, 50
    out = serve(inst, Load(isl, osl, 4, concurrency=1))
    prefill = inst.prefill_time_s(isl)
    decode = [inst.decode_step_s(1, isl + k) for k in range(1, osl)]
    assert out.ttft_s == pytest.approx(np.full(4, prefill), rel=1e-9)
    assert out.tpot_s == pytest.approx(np.full(4, np.mean(decode)), rel=1e-9)
    assert out.duration_s == pytest.approx(4 * (prefill + sum(decode)), rel=1e-9)
    assert out.mean_batch == pytest.approx(sum(decode) / (prefill + sum(decode)), rel=1e-9)


def test_long_prompt_is_prefilled_in_budget_sized_chunks():
    """A 20,000-token prompt under an 8,192 budget: chunks of 8192, 8192, 3616 after
    0, 8192 and 16384 computed tokens."""
    inst = _inst()
    out = serve(inst, Load(20_000, 2, 1, concurrency=1))
    chunks = [(8192, 0), (8192, 8192), (3616, 16384)]
    expected = sum(inst.prefill_time_s(n, c) for n, c in chunks)
    assert out.ttft_s[0] == pytest.approx(expected, rel=1e-9)


def test_decode_requests_take_their_share_of_the_budget():
    """4 clients of 3,000-token prompts, budget 8,192: the first iteration prefills two
    whole prompts and 2,192 tokens of the third; that one's second chunk (808 tokens)
    and the fourth prompt's 3000 share the second iteration with two decode tokens."""
    s = closed_loop_schedule(Load(3000, 10, 4, concurrency=4), max_running=256)
    assert s.new_tokens[:2] == [8192, 3808] and s.prompts[:2] == [3, 2]
    assert s.decode[:2] == [0, 2] and s.cached_tokens[1] == 2192
    assert [r.first_iter for r in s.requests] == [0, 0, 1, 1]


def test_closed_loop_keeps_n_requests_in_flight():
    """Little's law in a closed loop without think time: over the run every client always
    has one request in flight, so sum of request latencies = N x run length (less the
    idle tail of clients that finished early)."""
    inst, n = _inst(), 16
    out = serve(inst, Load(1000, 100, 10 * n, concurrency=n))
    latency = out.ttft_s + 99 * out.tpot_s
    assert latency.sum() == pytest.approx(n * out.duration_s, rel=0.02)
    # time-weighted decode batch: each request is in the batch for its 99 decode steps
    assert out.mean_batch == pytest.approx(99 * out.tpot_s.sum() / out.duration_s, rel=1e-9)


def test_open_loop_low_rate_is_the_lone_request_and_tpot_grows_with_rate():
    inst = _inst()
    low = serve(inst, Load(1000, 50, 200, rate_per_s=0.05, seed=1))
    assert np.median(low.ttft_s) == pytest.approx(inst.prefill_time_s(1000), rel=0.02)
    tpots = [
        np.median(serve(inst, Load(1000, 50, 300, rate_per_s=r, seed=1)).tpot_s)
        for r in (1, 10, 40)
    ]
    assert tpots == sorted(tpots) and tpots[-1] > 1.2 * tpots[0]
    again = serve(inst, Load(1000, 50, 300, rate_per_s=10, seed=1))
    assert np.median(again.tpot_s) == tpots[1]  # deterministic for a seed


def test_a_slower_engine_profile_slows_every_percentile():
    slow = EngineProfile(memory_efficiency_frac=0.5, fixed_step_s=0.002, prefill_fixed_s=0.02)
    load = Load(2000, 100, 160, concurrency=16)
    base, tuned = serve(_inst(), load).summary(), serve(_inst(slow), load).summary()
    for key in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s"):
        assert tuned[key] > base[key]


@pytest.mark.slow
def test_estimate_cli_serving(run_cli):
    args = ["estimate", "--model", "llama_3_1_70b", "--gpu", "h200_sxm", "--gpus-per-instance"]
    args += ["4", "--weight-dtype", "fp8", "--isl", "3000", "--osl", "50"]
    out = run_cli(*args, "--concurrency", "1", "--requests", "3", "--format", "json")
    assert out.returncode == 0, out.stderr
    serving = json.loads(out.stdout)["serving"]
    assert serving["ttft_p50_s"] == pytest.approx(_inst().prefill_time_s(3000), rel=1e-9)
    assert serving["requests"] == 3 and serving["mode"] == "closed loop"
    plain = json.loads(run_cli(*args, "--format", "json").stdout)
    assert "serving" not in plain  # without the options estimate is what it was
    table = run_cli(*args, "--rate", "2", "--requests", "50")
    assert table.returncode == 0 and "TTFT" in table.stdout and "req/s" in table.stdout


@pytest.mark.parametrize(
    "extra, where",
    [
        (("--concurrency", "2", "--rate", "1"), "--rate"),
        (
            (
                "--requests",
                "5",
            ),
            "--requests",
        ),
        (("--rate", "nan"), "--rate"),
        (("--concurrency", "0"), "--concurrency"),
        (("--rate", "1", "--requests", "1000001"), "--requests"),
        (("--concurrency", "1", "--max-batched-tokens", "0"), "--max-batched-tokens"),
    ],
)
def test_estimate_serving_bad_options_are_one_line(run_cli, extra, where):
    args = ["estimate", "--model", "llama_3_1_70b", "--gpu", "h200_sxm", "--isl", "100"]
    out = run_cli(*args, "--osl", "10", *extra)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: command line: " + where), out.stderr


def test_estimate_serving_refuses_an_instance_without_kv_room(run_cli):
    out = run_cli(
        "estimate",
        "--model",
        "llama_3_1_70b",
        "--gpu",
        "h200_sxm",
        "--isl",
        "100",
        "--osl",
        "10",
        "--concurrency",
        "2",
    )  # fmt: skip  (BF16 70B weights do not fit one H200)
    assert out.returncode == 2 and "KV" in out.stderr and "Traceback" not in out.stderr
