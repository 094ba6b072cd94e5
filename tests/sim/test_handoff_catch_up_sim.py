"""The simulator's catch-up rounds (model/handoff.run_catch_up on its own step grids),
counted by hand on a made-up engine, and against the closed form on pdd-paper."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

# the hand-made engine whose every step lasts 1 s (tests/sim is on the path, as pytest runs it)
from test_decode_physics_sim import _UnitSteps

from pdd_plan.model import evaluate as ev
from pdd_plan.sim.decode import (
    ARRIVE,
    HANDOFF,
    LOCAL_STAGE,
    MAIN_STAGE,
    DecodeEngine,
    Pool,
    local_spec,
)
from pdd_plan.sim.decode_instance import DecodeInstance, boundary_times
from pdd_plan.sim.entry import load_setup
from pdd_plan.sim.measure import measure
from pdd_plan.sim.run import SimConfig, simulate

PLANS = Path(__file__).resolve().parents[2] / "scenarios" / "plans"


def test_rounds_on_the_simulators_grids_counted_by_hand():
    """RLD emits A's tokens at t = 1, 2, 3, ...; A's handoff at 2.5 s + 0.5 s (round trip +
    fixed cost) reaches an idle MD at 3.0 s, which extend-decodes the 2 ids sent by
    3.0 - 0.25 (one way) and emits token 3 at 4.0. By 3.75 s RLD has sent 3 ids: only MD's
    own next one, so MD has caught up; the stop reaches RLD at 4.25 s and RLD leaves at its
    boundary 5 (5 tokens). MD emits 4 at t=5, 5 at t=6 (RLD's copies came first) and
    the user's 6th token at t=7, its 4th step: MD sends 15 tokens."""
    local = Pool(_UnitSteps(), [DecodeInstance(0)], 8)
    main = Pool(_UnitSteps(), [DecodeInstance(0)], 8)
    inputs, outputs = np.array([100.0]), np.array([20])
    eng = DecodeEngine([local], main, inputs, outputs, "catch_up", None, np.array([2.5]),
                       handoff_delay_s=0.5, one_way_s=0.25)  # fmt: skip
    eng.push(0.0, ARRIVE, (LOCAL_STAGE, 0, local_spec(0, outputs, inputs)))
    eng.push(2.5, HANDOFF, 0)
    eng.run()
    rld, md = eng.rec[LOCAL_STAGE], eng.rec[MAIN_STAGE]
    assert rld.tokens[0] == 5 and md.tokens[0] == 15
    assert md.join[0] == 0 and md.first[0] == 4
    seg = main.instances[0].segment_arrays()
    assert boundary_times(seg, np.array([4]))[0] == pytest.approx(7.0)


def _with(setup, mode):
    d = setup.deployment
    d = dataclasses.replace(d, policy=dataclasses.replace(d.policy, handoff=mode))
    return dataclasses.replace(setup, deployment=d)


@pytest.mark.slow
def test_catch_up_over_one_shot_closed_form_against_the_simulator(catalog):
    """pdd-paper at 50 req/s, 3,000 simulated requests (same seed, same routes): the extra
    RLD output of catch-up over one-shot agrees within 1.5 points, and is more than the
    handoff alone would give (the rounds and the stop's trip add to it)."""
    setup = load_setup("pdd-paper", PLANS / "pdd-paper-pdd.yaml", catalog)
    closed, sim = {}, {}
    for mode in ("one_shot", "catch_up"):
        s = _with(setup, mode)
        closed[mode] = ev.snapshot(s, 50.0).rld_token_share_frac
        run = simulate(s, SimConfig(3000, 1, 0.1, rate_per_s=50.0))
        sim[mode] = measure(run).rld_token_share_frac
    closed_up = closed["catch_up"] / closed["one_shot"] - 1
    sim_up = sim["catch_up"] / sim["one_shot"] - 1
    assert closed_up > 0.0 and sim_up > 0.0
    assert closed_up == pytest.approx(sim_up, abs=0.015)
