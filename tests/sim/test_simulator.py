"""Simulator-only properties: seeded runs, conservation of requests and tokens, the
relay's role, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pdd_plan.model import routing as rt
from pdd_plan.sim.entry import load_setup
from pdd_plan.sim.run import SimConfig, simulate

REPO = Path(__file__).resolve().parents[2]
PLANS = REPO / "scenarios" / "plans"


@pytest.fixture(scope="module")
def pdd_setup(catalog):
    return load_setup("pdd-paper", PLANS / "pdd-paper-pdd.yaml", catalog)


@pytest.fixture(scope="module")
def pdd_run(pdd_setup):
    return simulate(pdd_setup, SimConfig(3000, seed=7))


@pytest.mark.slow
def test_same_seed_same_run_other_seed_other_run(pdd_setup, pdd_run):
    again = simulate(pdd_setup, SimConfig(3000, seed=7)).trace
    other = simulate(pdd_setup, SimConfig(3000, seed=8)).trace
    assert np.array_equal(pdd_run.trace.done_s, again.done_s)
    assert np.array_equal(pdd_run.trace.first_token_s, again.first_token_s)
    assert not np.array_equal(pdd_run.trace.requests.arrival_s, other.requests.arrival_s)


def test_every_request_finishes_once_with_all_its_tokens(pdd_run):
    tr = pdd_run.trace
    out = tr.requests.output_tokens
    assert np.all(np.isfinite(tr.done_s)) and np.all(np.isfinite(tr.first_token_s))
    assert np.array_equal(tr.local_tokens + tr.main_tokens, out.astype(int))
    assert tr.local_tokens.sum() + tr.main_tokens.sum() == out.sum()
    arrival = tr.requests.arrival_s
    assert np.all(tr.prefill.start_s >= arrival)
    assert np.all(tr.first_token_s > tr.prefill.end_s)
    assert np.all(tr.done_s >= tr.first_token_s)


def test_stages_in_order_and_paths_as_routed(pdd_run, pdd_setup):
    tr = pdd_run.trace
    relay = tr.path == rt.RELAY
    direct = tr.path == rt.DIRECT
    threshold = pdd_setup.deployment.policy.rld_hit_threshold
    assert np.array_equal(relay, tr.requests.hit_rate < threshold)
    # direct requests never touch RLD; their first token follows the WAN transfer
    assert np.all(tr.local_tokens[direct] == 0)
    assert np.all(tr.first_token_s[direct] > tr.wan.done_s[direct])
    # relayed requests start on RLD before MD holds their KV, and MD finishes them
    starts_on_rld = relay & (tr.local_tokens > 0)
    assert starts_on_rld.sum() > 0.9 * relay.sum()
    assert np.all(tr.first_token_s[starts_on_rld] < tr.wan.done_s[starts_on_rld])
    handed = relay & (tr.main_tokens > 0) & (tr.local_tokens > 0)
    assert np.all(tr.main_first_s[handed] >= tr.wan.done_s[handed])


def test_a_lone_request_takes_prefill_wan_and_one_step(catalog, tmp_path):
    setup = load_setup("pdd-paper", PLANS / "pdd-paper-cdc_pd.yaml", catalog)
    tr = simulate(setup, SimConfig(1, seed=3)).trace
    req = tr.requests
    service = setup.prefill.instance.prefill_time_s(req.uncached_tokens, req.cached_tokens)
    assert tr.prefill.end_s[0] - req.arrival_s[0] == pytest.approx(float(service[0]), rel=0.01)
    step = setup.decode.instance.decode_step_s(1, req.input_tokens[0])
    assert tr.first_token_s[0] - tr.wan.done_s[0] == pytest.approx(float(step), rel=0.01)
    assert tr.done_s[0] - tr.first_token_s[0] == pytest.approx(
        float(step) * (req.output_tokens[0] - 1), rel=0.02
    )


def test_cli_json_and_trace(run_cli, tmp_path):
    out = tmp_path / "trace.csv"
    r = run_cli("simulate", "pdd-paper", str(PLANS / "pdd-paper-pdd.yaml"), "--requests",
                "2300", "--seed", "2", "--format", "json", "--trace-out", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["status"] == "simulated" and data["plan"]["architecture"] == "pdd"
    m = data["metrics"]
    for key in ("ttft_s", "tpot_s"):
        assert set(m[key]) == {"p50", "p90", "p99"}
        for q, v in m[key].items():
            ci = m["confidence_intervals"][key][q]
            assert ci["ci95_low"] <= v <= ci["ci95_high"]
    assert {"mean_gbit_per_s", "utilization_frac", "transfer_s"} <= set(m["wan"])
    lines = out.read_text().splitlines()
    assert len(lines) == 2301 and lines[0].startswith("request,path,")
    assert not any(cell.startswith(("=", "+", "-", "@")) for ln in lines for cell in ln.split(","))


@pytest.mark.parametrize(
    "args, key",
    [(("--requests", "0"), "--requests"), (("--warmup-frac", "1.5"), "--warmup-frac")],
)
def test_cli_bad_options_are_input_errors(run_cli, args, key):
    r = run_cli("simulate", "pdd-paper", str(PLANS / "pdd-paper-pdd.yaml"), *args)
    assert r.returncode == 2
    assert key in r.stderr and "Traceback" not in r.stderr
