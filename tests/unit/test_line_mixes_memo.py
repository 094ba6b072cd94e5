"""The line menu (space._line_mixes) is found once per (tier capacities, prices, most
lines) and reused by every policy and sweep point (issue #15 speed): it must be the
Pareto front of every mix a brute force lists, a hit must hand back the same menu, and a
change in any part of the key must be a miss."""

from __future__ import annotations

import itertools

import pytest

from pdd_plan.plan import space


def _brute_front(caps, prices, max_lines):
    """Every mix of 1..max_lines lines; kept when no other has at least its capacity for
    less, or more capacity for the same cost."""
    mixes = set()
    for n in range(1, max_lines + 1):
        for combo in itertools.combinations_with_replacement(range(len(caps)), n):
            cap = sum(caps[i] for i in combo)
            cost = sum(prices[i] for i in combo)
            mixes.add((round(cap, 6), round(cost, 9)))
    return {
        (cap, cost)
        for cap, cost in mixes
        if not any(c2 >= cap and p2 < cost or c2 > cap and p2 <= cost for c2, p2 in mixes)
    }


@pytest.mark.parametrize(
    "caps, prices, max_lines",
    [((10e9,), (5.0,), 4), ((10e9, 100e9), (5.0, 30.0), 6),
     ((10e9, 40e9, 100e9), (5.0, 18.0, 60.0), 5), ((10e9, 100e9), (5.0, 80.0), 3)],
)  # fmt: skip
def test_menu_is_the_brute_force_front(caps, prices, max_lines):
    menu = space._line_mixes(caps, prices, max_lines)
    got = {(round(cap, 6), round(cost, 9)) for _, cap, cost in menu}
    assert got == _brute_front(caps, prices, max_lines)
    costs = [cost for _, _, cost in menu]
    assert costs == sorted(costs)  # cheapest first
    for counts, cap, cost in menu:  # each mix's figures are its counts'
        assert sum(counts) <= max_lines
        assert cap == pytest.approx(sum(k * c for k, c in zip(counts, caps, strict=True)))
        assert cost == pytest.approx(sum(k * p for k, p in zip(counts, prices, strict=True)))


def test_a_hit_reuses_the_menu_and_any_change_misses():
    space._line_mixes.cache_clear()
    key = ((10e9, 100e9), (5.0, 30.0), 4)
    first = space._line_mixes(*key)
    assert space._line_mixes(*key) is first
    assert space._line_mixes.cache_info().hits == 1
    for other in (((10e9, 50e9), (5.0, 30.0), 4), ((10e9, 100e9), (5.0, 60.0), 4),
                  ((10e9, 100e9), (5.0, 30.0), 2)):  # fmt: skip
        assert space._line_mixes(*other) != first
    assert space._line_mixes.cache_info().misses == 4
