"""`goodput_rps` with a known bracket (#15 Build 1: the final metrics reuse the search's
rate bracket): the same answer as without it, never a snapshot at a rate the bracket
already answers, and fewer snapshots.

The SLA here is a step in the rate at a threshold drawn at random: the expected goodput
is independent of the code (the bisection's answer without a bracket, which must lie
within rel_tol below the threshold).
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from pdd_plan.model import evaluate as ev


def _setup(offered_rps: float):
    return SimpleNamespace(scenario=SimpleNamespace(workload=SimpleNamespace(
        arrival_rate_per_s=offered_rps)))  # fmt: skip


@pytest.mark.parametrize("seed", range(5))
def test_a_known_bracket_gives_the_same_goodput_with_fewer_snapshots(monkeypatch, seed):
    rng = random.Random(seed)
    for _ in range(40):
        threshold = rng.uniform(0.01, 500.0)
        asked: list[float] = []

        def meets(setup, rate, threshold=threshold, asked=asked):
            asked.append(rate)
            return rate <= threshold

        monkeypatch.setattr(ev, "meets_sla", meets)
        setup = _setup(rng.uniform(1.0, 100.0))
        plain = ev.goodput_rps(setup)
        assert threshold * (1 - 1e-3) <= plain <= threshold
        plain_calls = len(asked)
        # a bracket as a search leaves it: a rate met a little below, one missed above
        met = threshold * rng.uniform(0.9, 0.9999)
        missed = threshold * rng.uniform(1.0001, 1.5) if rng.random() < 0.7 else float("inf")
        asked.clear()
        assert ev.goodput_rps(setup, known=(met, missed)) == plain
        assert all(met < r < missed for r in asked)
        assert len(asked) <= plain_calls


def test_a_bracket_that_settles_everything_needs_no_snapshot(monkeypatch):
    monkeypatch.setattr(ev, "meets_sla", lambda setup, rate: pytest.fail("snapshot taken"))
    setup = _setup(20.0)
    # met at 24.3, missed at 24.31; by hand the bisection asks 20, 40 (doubling), then
    # 30, 25, 22.5, 23.75, 24.375, 24.0625, 24.21875, 24.296875, 24.3359375, 24.31640625
    # (each at or below 24.3, or at or above 24.31) and stops at [24.296875, 24.316...],
    # narrower than 1e-3 x 24.3
    assert ev.goodput_rps(setup, known=(24.3, 24.31)) == 24.296875
