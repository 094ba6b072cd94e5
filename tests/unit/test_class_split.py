"""The reserved / on-demand / spot split of one role's needs (issue #26 item 3,
plan/class_split.py): exact by enumeration, the closed form without spot, and the rule a
capacity planner checks by hand: with reserved at r x on-demand, an instance needed in
fewer than a share r of the hours is not reserved."""

from __future__ import annotations

import itertools

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pdd_plan.model.capacity_classes import SpotTerms
from pdd_plan.plan.class_split import Prices, split


def closed_form_reserved(needs, hours, r: float) -> int:
    """Reserve the j-th instance iff it is needed in more than r of the hours."""
    horizon = sum(hours)
    return sum(
        1
        for j in range(1, max(needs) + 1)
        if sum(h for n, h in zip(needs, hours, strict=True) if n >= j) > r * horizon
    )


def test_an_instance_needed_in_fewer_than_r_of_the_hours_is_on_demand():
    # 24 hours: 2 instances all day, a third for 14 h, a fourth for 6 h; reserved at 0.6
    needs = (2,) * 10 + (3,) * 8 + (4,) * 6
    hours = (1.0,) * 24
    s = split(needs, hours, Prices(10.0, 6.0))
    # the third is needed 14/24 = 0.58 of the hours (< 0.6): on demand; the fourth too
    assert s.reserved == 2
    assert s.on_demand == (0,) * 10 + (1,) * 8 + (2,) * 6
    assert s.cost_usd == 24 * 6.0 * 2 + 10.0 * (8 * 1 + 6 * 2)
    # at 0.55 the third pays for itself (0.58 > 0.55)
    assert split(needs, hours, Prices(10.0, 5.5)).reserved == 3


@settings(max_examples=200, deadline=None)
@given(
    needs=st.lists(st.integers(0, 6), min_size=1, max_size=10),
    r=st.floats(0.05, 1.0),
    lengths=st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=10, max_size=10),
)
def test_without_spot_the_enumeration_is_the_closed_form(needs, r, lengths):
    hours = tuple(lengths[: len(needs)])
    shares = [sum(h for n, h in zip(needs, hours, strict=True) if n >= j) / sum(hours)
              for j in range(1, max(needs) + 1)]  # fmt: skip
    assume(all(abs(x - r) > 1e-9 for x in shares))  # a tie: either count is cheapest
    s = split(tuple(needs), hours, Prices(1.0, r))
    best = min(
        sum(hours) * r * k + sum(h * max(0, n - k) for n, h in zip(needs, hours, strict=True))
        for k in range(max(needs) + 1)
    )
    assert abs(s.cost_usd - best) <= 1e-9 * max(1.0, best)
    assert s.reserved == closed_form_reserved(needs, hours, r)


def brute_force_spot(needs, hours, prices: Prices) -> float:
    """Every (reserved, on-demand, spot) per period, spot's headroom checked directly."""
    t = prices.spot
    best = float("inf")
    for reserved in range(max(needs) + 1):
        cost = sum(hours) * prices.reserved_usd_per_hour * reserved
        for n, h in zip(needs, hours, strict=True):
            options = [
                o * prices.on_demand_usd_per_hour + sp * prices.spot_usd_per_hour
                for o, sp in itertools.product(range(n + 1), range(3 * n + 2))
                if reserved + o >= n
                or (sp and t.instances_for(max(0, n - reserved - o)) <= sp
                    and sp <= t.max_share_frac * (reserved + o + sp))
            ]  # fmt: skip
            cost += h * min(options)
        best = min(best, cost)
    return best


def test_spot_split_matches_a_brute_force_and_respects_the_share_cap():
    terms = SpotTerms(price_frac=0.3, interruptions_per_hour=0.5, replacement_s=1800,
                      confidence=0.95, max_share_frac=0.5)  # fmt: skip
    prices = Prices(10.0, 6.0, terms)
    needs, hours = (1, 2, 4, 5, 3), (3.0, 5.0, 8.0, 6.0, 2.0)
    s = split(needs, hours, prices)
    assert abs(s.cost_usd - brute_force_spot(needs, hours, prices)) < 1e-9
    for t, n in enumerate(needs):
        assert s.spot[t] <= 0.5 * s.instances(t) + 1e-9
        covered = s.reserved + s.on_demand[t]
        if s.spot[t]:
            assert terms.instances_for(n - covered) <= s.spot[t]
        else:
            assert covered >= n
