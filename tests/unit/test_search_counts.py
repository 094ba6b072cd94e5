"""The walk's memo of each bound's fewest instances by rate (search.Search._min_count):
exact where it answers without the bound (two rates asked before bracket the rate with
the same count), the bound asked otherwise."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

from pdd_plan.plan.search import Search


class Bound:
    """Fewest instances for a rate: ceil(rate / 10) (10 req/s an instance), None above
    100 req/s (no count carries it); counts its calls."""

    def __init__(self):
        self.calls = 0

    def min_count(self, rate: float) -> int | None:
        self.calls += 1
        return None if rate > 100 else max(1, math.ceil(rate / 10))


def ask(walk, b, rate):
    return Search._min_count(walk, b, rate)


def test_a_bracketed_rate_needs_no_bound_call():
    walk, b = SimpleNamespace(_counts={}), Bound()
    assert ask(walk, b, 21.0) == 3 and ask(walk, b, 29.0) == 3
    assert b.calls == 2
    assert ask(walk, b, 25.0) == 3 and b.calls == 2  # between 21 and 29, both 3
    assert ask(walk, b, 35.0) == 4 and b.calls == 3  # nothing above 35 known
    assert ask(walk, b, 30.5) == 4 and b.calls == 4  # 29 -> 3 and 35 -> 4 differ: asked
    assert ask(walk, b, 150.0) is None and ask(walk, b, 200.0) is None
    assert ask(walk, b, 180.0) is None and b.calls == 6  # between two Nones: none


def test_the_memo_agrees_with_the_bound_on_any_order_of_rates():
    walk, b, direct = SimpleNamespace(_counts={}), Bound(), Bound()
    rng = random.Random(7)
    rates = [rng.uniform(0.1, 130.0) for _ in range(400)]
    for r in rates:
        assert ask(walk, b, r) == direct.min_count(r)
    assert b.calls < len(rates)  # it did save calls
