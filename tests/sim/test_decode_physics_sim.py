"""The simulator's decode mechanisms (issue #11): KV-block admission, relay overflow to
P -> MD, the handoff's round trip and fixed cost, per-request largest gaps, and goodput
trials long enough for decode to fill."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from pdd_plan.model import routing as rt
from pdd_plan.model.decode.handoff import DEFAULT_ENGINE_FIXED_S
from pdd_plan.model.workload.workload import Bins
from pdd_plan.sim.agreement import SUITE, TRIAL_HOLDS, longest_hold_s, trial_requests
from pdd_plan.sim.decode import (
    ARRIVE,
    HANDOFF,
    LOCAL_STAGE,
    MAIN_STAGE,
    DecodeEngine,
    Pool,
    direct_spec,
    local_spec,
)
from pdd_plan.sim.decode_instance import DecodeInstance
from pdd_plan.sim.entry import load_setup
from pdd_plan.sim.gaps import RangeMax, instance_gaps_s
from pdd_plan.sim.run import SimConfig, simulate

REPO = Path(__file__).resolve().parents[2]
PLANS = REPO / "scenarios" / "plans"


def _with(setup, **policy):
    d = dataclasses.replace(
        setup.deployment, policy=dataclasses.replace(setup.deployment.policy, **policy)
    )
    return dataclasses.replace(setup, deployment=d)


@pytest.fixture(scope="module")
def paper_pdd(catalog):
    return load_setup("pdd-paper", PLANS / "pdd-paper-pdd.yaml", catalog)


@pytest.fixture(scope="module")
def paper_pdd_hbm_bound(catalog, tmp_path_factory):
    """PDD on pdd-paper at the top of its decode KV range (the whole context uncompressed,
    2.4 GB a request, issue #23): RLD holds few requests, so a high rate fills it."""
    text = (PLANS.parent / "pdd-paper.yaml").read_text()
    own = "kv_uncompressed_tokens: 128"
    assert own in text
    path = tmp_path_factory.mktemp("paper") / "paper.yaml"
    path.write_text(text.replace(own, "kv_uncompressed_tokens: all"))
    return load_setup(path, PLANS / "pdd-paper-pdd.yaml", catalog)


def test_one_shot_handoff_waits_a_round_trip_and_the_engine_cost(paper_pdd):
    """MD's first token of a handed-off request comes at least RTT (30 ms) + the fixed
    engine cost after RLD's last one."""
    run = simulate(_with(paper_pdd, handoff="one_shot"), SimConfig(2500, seed=3))
    tr = run.trace
    both = (tr.local_tokens > 0) & (tr.main_tokens > 0)
    assert both.sum() > 20
    gap = tr.main_first_s[both] - tr.local_last_s[both]
    assert gap.min() >= 0.030 + DEFAULT_ENGINE_FIXED_S - 1e-9
    assert np.all(tr.largest_gap_s[both] >= gap - 1e-9)


@pytest.mark.slow
def test_relay_overflows_to_md_when_full_and_every_token_is_served(paper_pdd_hbm_bound):
    """The narrow mix relays every request; with a high rate RLD (one instance) fills. A
    request that finds it full is not queued: MD decodes all of it after its WAN transfer."""
    s = paper_pdd_hbm_bound.scenario
    narrow = dataclasses.replace(s.workload, prefix_hit_rate=Bins((0.85,), (0.95,), (1.0,)))
    setup = dataclasses.replace(
        paper_pdd_hbm_bound, scenario=dataclasses.replace(s, workload=narrow)
    )
    run = simulate(setup, SimConfig(4000, seed=5, rate_per_s=70.0))
    tr = run.trace
    over = tr.overflowed
    assert over.sum() > 0 and np.all(tr.path[over] != rt.DIRECT)
    out = tr.requests.output_tokens.astype(int)
    assert np.all(tr.local_tokens[over] == 0) and np.array_equal(tr.main_tokens[over], out[over])
    assert np.all(tr.main_first_s[over] >= tr.wan.done_s[over])
    assert np.array_equal(tr.local_tokens + tr.main_tokens, out)


def test_no_overflow_at_a_light_load(paper_pdd):
    run = simulate(paper_pdd, SimConfig(2500, seed=2, rate_per_s=5.0))
    assert not run.trace.overflowed.any()


def test_kv_admission_never_overfills_a_gpu(catalog):
    """IDC-PD on pdd-paper: each request reserves its life-average KV on one GPU of an EP
    instance; at saturation no instance runs more requests than its GPUs can hold at the
    smallest reservation."""
    setup = load_setup("pdd-paper", PLANS / "pdd-paper-idc_pd.yaml", catalog)
    run = simulate(setup, SimConfig(3000, seed=1, rate_per_s=80.0))
    inst = setup.decode.instance
    req = run.trace.requests
    smallest = float(
        inst.model.resident_kv_bytes(int(req.input_tokens.min()), setup.scenario.kv_dtype)
    )
    per_gpu = inst.kv_capacity_bytes() / inst.gpus
    most = inst.gpus * int(per_gpu // smallest)
    seen = max(float(seg[4].max()) for seg in run.segments["decode"])
    assert 0 < seen <= most


def test_largest_gap_of_a_request_is_its_longest_step():
    """Segments (k0, t0, d_first, d): steps 1-3 take 1 s, step 4 (a new segment's first
    step, an extend step) 5 s, steps 5-6 2 s. A request emitting tokens at steps 2..6 sees
    gaps of steps 3..6: the largest is 5 s; one emitting at 5..6 sees only step 6: 2 s;
    one whose first token is the extend step (4) sees steps 5..6: 2 s."""
    seg = tuple(np.array(v, float) for v in ([0, 3], [0, 3], [1, 5], [1, 2], [1, 1]))
    gaps = instance_gaps_s(seg, np.array([2, 5, 4, 3]), np.array([5, 2, 3, 1]))
    assert list(gaps) == [5.0, 2.0, 2.0, 0.0]
    assert list(
        RangeMax(np.array([3.0, 1, 4, 1, 5])).query(np.array([0, 1, 3]), np.array([4, 3, 3]))
    ) == [5, 4, 1]


def test_goodput_trials_outlast_the_longest_decode(catalog):
    """A trial at 60 req/s on pdd-paper lasts at least five of the longest slot holds
    (5,576 tokens x a full-batch step, at most the 50 ms TPOT limit: under 279 s)."""
    setup = load_setup("pdd-paper", PLANS / "pdd-paper-idc_pd.yaml", catalog)
    hold = longest_hold_s(setup)
    assert 150 < hold <= 5_576 * 0.050
    n = trial_requests(setup, 60.0, 6000)
    assert n * 0.9 / 60.0 >= TRIAL_HOLDS * hold


def test_the_suite_covers_decode_saturation_overflow_and_variable_contexts():
    names = [c.name for c in SUITE]
    assert len(SUITE) >= 18
    assert any("idc_pd" in n and c.load_frac >= 0.99 for n, c in zip(names, SUITE, strict=True))
    assert any("overflow" in n for n in names) and any("colocated" in n for n in names)
    assert any(c.scenario == "default" and c.load_frac >= 0.9 for c in SUITE)


class _UnitSteps:
    """Every decode and extend step lasts 1 s (a hand-made engine, no roofline)."""

    cap = 8

    def step_s(self, batch, mean_context):
        return 1.0

    def extend_s(self, batch, handed_tokens, context):
        return 1.0


def test_catch_up_holds_kv_on_both_stages_and_each_frees_its_own():
    """Two KV bins per instance on RLD and MD (expert parallelism), 10 bytes a request.
    B (20 tokens) goes straight to MD at t=0 and takes MD's bin 0; A (10 tokens) joins RLD
    at t=0 (RLD's bin 0). A's handoff at 2.5 s + 0.5 s delay reaches MD at 3.0 s; MD's
    emptiest bin is then bin 1. MD joins A at boundary 3 (t=3) with the 3 tokens RLD emitted
    by then, extend-decodes them in step 4 (ends t=4); RLD stops at its first boundary after
    that, 4 (4 tokens), so MD decodes the other 6. Between t=3 and t=4 A holds KV on both;
    RLD's stop frees RLD's bin 0 and MD's finish frees MD's bin 1."""
    local = Pool(_UnitSteps(), [DecodeInstance(0)], 8, 100.0, True, kv_bins=2)
    main = Pool(_UnitSteps(), [DecodeInstance(0)], 8, 100.0, False, kv_bins=2)
    inputs, outputs = np.array([100.0, 100.0]), np.array([10, 20])
    eng = DecodeEngine([local], main, inputs, outputs, "catch_up", np.array([10.0, 10.0]),
                       np.array([2.5, np.nan]), handoff_delay_s=0.5)  # fmt: skip
    eng.push(0.0, ARRIVE, (MAIN_STAGE, 0, direct_spec(1, outputs, inputs)))
    eng.push(0.0, ARRIVE, (LOCAL_STAGE, 0, local_spec(0, outputs, inputs)))
    eng.push(2.5, HANDOFF, 0)
    eng.run(until=3.5)  # the overlap: A on RLD and on MD
    assert local.kv_used[0] == [10.0, 0.0] and main.kv_used[0] == [10.0, 10.0]
    eng.run(until=4.5)  # RLD stopped at t=4 and freed its own bin
    assert local.kv_used[0] == [0.0, 0.0] and main.kv_used[0] == [10.0, 10.0]
    eng.run()
    assert local.kv_used[0] == [0.0, 0.0] and main.kv_used[0] == [0.0, 0.0]
    assert eng.rec[LOCAL_STAGE].tokens[0] == 4 and eng.rec[MAIN_STAGE].tokens[0] == 6
