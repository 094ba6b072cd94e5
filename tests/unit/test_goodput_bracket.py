"""The simulated goodput's bracket (sim/agreement.py): the rate met and the rate missed
that the bisection ends with hold the goodput between them, `steps` halvings of the
starting [0.6, 1.4] x guess apart; the campaign reads its middle, not its low end."""

from __future__ import annotations

import pytest

from pdd_plan.sim import agreement as ag


@pytest.mark.parametrize(("true_rps", "guess_rps"), [(7.07, 7.39), (12.1, 12.6), (3.0, 9.0)])
def test_the_bracket_holds_the_goodput_and_is_as_narrow_as_its_steps(monkeypatch, true_rps,
                                                                    guess_rps):  # fmt: skip
    monkeypatch.setattr(ag, "meets_sla", lambda setup, rate, requests, seed: rate <= true_rps)
    low, high = ag.simulated_goodput_bracket(None, guess_rps, 100, 1, steps=8)
    assert low <= true_rps < high
    # the last bracket [0.6, 1.4] x the guess it started from, halved 8 times
    start = guess_rps
    while 0.6 * start > true_rps:  # the low end missed: the search restarts from it
        start *= 0.6
    assert high - low == pytest.approx(0.8 * start / 2**8)
    assert ag.simulated_goodput_rps(None, guess_rps, 100, 1, steps=8) == low
