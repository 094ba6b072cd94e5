"""Catch-up as the published protocol (pdd-system.md §5): RLD streams its ids one way, MD
absorbs them in rounds until it has caught up, the stop reaches RLD one way later."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdd_plan.model.decode.handoff import (
    Handoff,
    catch_up_extra_tokens,
    catch_up_stop_s,
    caught_up,
    run_catch_up,
)


def _grid(step_s: float, phase_s: float = 0.0):
    """RLD's tokens emitted by t (t from the handoff's start): one at phase, phase + step..."""
    return lambda t: 0 if t < phase_s else int(math.floor((t - phase_s) / step_s + 1e-9)) + 1


def _md(extend_s: float, step_s: float):
    """MD's first step lasts `extend_s`, the following ones `step_s`."""
    calls = []

    def step(k: int) -> float:
        calls.append(k)
        return extend_s if len(calls) == 1 else step_s

    return step, calls


def test_rounds_counted_by_hand():
    """RLD emits a token every 30 ms from t = 30 ms; one way 15 ms; MD's step that absorbs k
    ids lasts 20 + 5k ms. MD starts its extend at 300 ms with the ids sent by 285 ms: 9
    (30..270 ms); it lasts 20 + 45 = 65 ms, to 365 ms. By 350 ms RLD has sent 11: more
    than MD's 9 + its own next one, so MD's next step absorbs 11 - 9 - 1 = 1 extra (25 ms,
    to 390 ms). By 375 ms RLD has sent 12 = 11 + 1: caught up after 2 steps at position 11;
    the stop reaches RLD at 390 + 15 = 405 ms."""
    absorbed = []

    def md(k: int) -> float:
        absorbed.append(k)
        return 0.020 + 0.005 * k

    rld = _grid(0.030, 0.030)
    first = rld(0.300 - 0.015)
    assert first == 9
    cu = run_catch_up(0.300, first, rld, md, 0.015, 1000)
    assert absorbed == [9, 1]
    assert (cu.md_steps, cu.md_position_tokens) == (2, 11)
    assert cu.stop_s == pytest.approx(0.405)


def test_caught_up_rule():
    """Caught up: at most MD's own next token arrived, or no fewer than the step before."""
    assert caught_up(1, 5) and caught_up(0, 5) and caught_up(3, 3) and caught_up(4, 3)
    assert not caught_up(2, 3)


@pytest.mark.parametrize("phase_frac", [0.0, 0.13, 0.5, 0.77, 0.99])
def test_converges_when_md_steps_faster_than_rld(phase_frac):
    """MD's 20 ms steps against RLD's 30 ms: a step lets at most one RLD token through, so
    MD has caught up at the first check after its extend (at most one absorbing step), and
    at the end no more than its own next token had arrived."""
    md, calls = _md(0.090, 0.020)
    rld = _grid(0.030, phase_frac * 0.030)
    start = 0.3
    cu = run_catch_up(start, rld(start - 0.015), rld, md, 0.015, 10_000)
    assert cu.md_steps <= 2
    end = cu.stop_s - 0.015
    assert rld(end - 0.015) - cu.md_position_tokens <= 1


def test_md_slower_than_rld_stops_at_the_streams_own_lag():
    """MD's 65 ms steps against RLD's 30 ms (RLD from t = 30 ms, one way 15 ms), extend
    from 300 ms with 9 ids (sent by 285 ms), 100 ms long: by 385 ms 12 have arrived, 3 new
    (MD's own next one among them): absorb, to 465 ms; by 450 ms 15 have arrived, again
    3 new: no fewer than before, so more rounds cannot shorten the lag: caught up after 2
    steps at position 12, stop heard at 480 ms."""
    md, calls = _md(0.100, 0.065)
    rld = _grid(0.030, 0.030)
    cu = run_catch_up(0.3, rld(0.285), rld, md, 0.015, 10**6)
    assert calls == [9, 2]
    assert (cu.md_steps, cu.md_position_tokens) == (2, 12)
    assert cu.stop_s == pytest.approx(0.480)


def _handoff(extend_s: float, absorb_s: float) -> Handoff:
    return Handoff(0.030, 0.2356, 0.0, 0.01, np.array([extend_s]), 0.015, absorb_s)


@pytest.mark.parametrize(
    "rld_s, extend_s, md_s",
    [(0.028, 0.0325, 0.030), (0.030, 0.050, 0.020), (0.030, 0.020, 0.035), (0.030, 0.070, 0.040)],
)
def test_closed_form_matches_the_rounds_over_rld_phases(rld_s, extend_s, md_s):
    """The closed form's expected stop time against the rounds run on RLD grids at 2,000
    uniform phases (what the simulator meets): within 2 %."""
    h = _handoff(extend_s, md_s)
    start = float(h.total_s[0]) - extend_s
    stops = []
    for phase in np.random.default_rng(7).random(2000) * rld_s:
        rld = _grid(rld_s, phase)
        md, _ = _md(extend_s, md_s)
        stops.append(run_catch_up(start, rld(start - 0.015), rld, md, 0.015, 10**6).stop_s)
    assert float(catch_up_stop_s(h, rld_s)[0]) == pytest.approx(np.mean(stops), rel=0.02)


@pytest.mark.parametrize("rld_s", [0.010, 0.028, 0.045])
@pytest.mark.parametrize("md_s", [0.012, 0.030, 0.050])
def test_catch_up_costs_at_least_the_handoff_over_the_rld_step(rld_s, md_s):
    """RLD keeps going at least through the handoff and the stop's trip back."""
    h = _handoff(0.035, md_s)
    extra = float(catch_up_extra_tokens(h, rld_s)[0])
    assert extra >= (float(h.total_s[0]) + 0.015) / rld_s - 1e-9
