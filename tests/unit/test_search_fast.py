"""The walk's lazy ceilings (issue #15): bounds.SupRate answers "is the bound's max_rate at
most this rate?" with only the bisection steps the question needs, and bounds.Ceiling the
same for the least of several bounds; both must agree with the full bisection (the value
the walk used before) on every question, in any order, and go on to the same value."""

from __future__ import annotations

import math
import random

from pdd_plan.plan.bounds import Ceiling, PrefillBound, RoleBound, SupRate


def full_bisection(ok, high: float) -> float:
    """The reference: the bisection written out in full (bounds.py's before issue #15)."""
    if not ok(high * 1e-9):
        return 0.0
    low = high * 1e-9
    while high - low > 1e-9 * high:
        mid = (low + high) / 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return high


class Counted:
    """ok(r) = r < edge, monotone like a bound's test; counts its calls."""

    def __init__(self, edge: float):
        self.edge, self.calls = edge, 0

    def __call__(self, rate: float) -> bool:
        self.calls += 1
        return rate < self.edge


def test_every_question_agrees_with_the_full_bisection_in_any_order():
    rng = random.Random(15)
    for _ in range(200):
        high = rng.choice([1.0, 37.5, 1e3, 1e9])
        edge = high * rng.choice([rng.random(), 1e-10, 1.0, 2.0])
        want = full_bisection(Counted(edge), high)
        lazy = SupRate(Counted(edge), high)
        for _ in range(20):
            rate = rng.choice([want, want * (1 + 1e-12), edge, rng.uniform(0, 2 * high)])
            strict = rng.random() < 0.5
            expect = want < rate if strict else want <= rate
            assert lazy.at_most(rate, strict) is expect, (high, edge, rate, strict)
        assert lazy.value() == want  # stopping early, then going on: the same value


def test_a_rate_far_from_the_edge_takes_a_few_steps_not_the_full_bisection():
    # edge 40 % of the way up: the full bisection takes ~31 ok calls (1e-9 relative)
    full = Counted(400.0)
    full_bisection(full, 1000.0)
    assert full.calls >= 30
    ok = Counted(400.0)
    lazy = SupRate(ok, 1000.0)
    assert lazy.at_most(1000.0) and ok.calls == 0  # at the start's top: no step at all
    # ok at 1e-6, not at ~500, ok at ~250: 100 is below a rate that passed
    assert not lazy.at_most(100.0) and ok.calls == 3
    assert lazy.at_most(600.0) and ok.calls == 3  # ~500 failed: settled without a step


class Fixed(RoleBound):
    def __init__(self, most: float):
        self.most = most

    def max_rate(self, n: int) -> float:
        return n * self.most


class Bisecting(PrefillBound):
    """A PrefillBound whose max_rate is SupRate over ok(n, r) = r < n x edge (no model)."""

    def __init__(self, edge: float, top: float):
        self.edge, self.top, self._rates, self.calls = edge, top, {}, 0

    def _within(self, waits) -> bool:
        return True

    def _top_rate(self, n: int) -> float:
        return n * self.top

    def ok(self, n: int, rate: float) -> bool:
        self.calls += 1
        return rate < n * self.edge


def test_a_ceiling_agrees_with_the_least_of_its_terms():
    rng = random.Random(7)
    for _ in range(100):
        line = rng.choice([math.inf, rng.uniform(1, 100)])
        terms = [(Fixed(rng.uniform(0.5, 20)), rng.randint(1, 5)) for _ in range(2)]
        terms += [(Bisecting(rng.uniform(1, 30), 40.0), rng.randint(1, 5)) for _ in range(2)]
        want = min([line, *(b.max_rate(n) for b, n in terms)])  # full bisections
        fresh = [(Bisecting(b.edge, b.top), n) if isinstance(b, Bisecting) else (b, n)
                 for b, n in terms]  # fmt: skip
        ceiling = Ceiling(line, fresh)
        for rate in (want, want * 0.999, want * 1.001, rng.uniform(0, 200)):
            assert ceiling.at_most(rate) is (want <= rate)
            assert ceiling.at_most(rate, strict=True) is (want < rate)
        assert ceiling.value() == want


def test_a_ceiling_settled_by_a_cheap_term_asks_no_bisection():
    slow = Bisecting(10.0, 40.0)
    assert Ceiling(math.inf, [(slow, 2), (Fixed(5.0), 1)]).at_most(6.0)  # 5 <= 6
    assert slow.calls == 0
    assert Ceiling(3.0, [(slow, 2)]).at_most(3.0) and slow.calls == 0  # the line settles it


def test_a_corner_that_keeps_passing_is_tested_at_doubling_rises_of_the_rate():
    """search.Search._recheck: not at a group's first evaluation, then at its second; after
    k passing tests, again once the rate rose RECHECK_REL x 2^(k-1) (2 %, 4 %, 8 %...)."""
    from types import SimpleNamespace

    from pdd_plan.plan.search import RECHECK_REL, Search

    walk = SimpleNamespace(_tried={})

    def ask(rate: float, key="g") -> bool:
        return Search._recheck(walk, key, rate)

    assert RECHECK_REL == 0.02  # the margins below are written for it
    assert not ask(50.0)  # the group's first evaluation: no corner test
    assert ask(50.0)  # its second: tested (passed at 50)
    assert not ask(50.0 * 1.019) and ask(50.0 * 1.021)  # 2 % above 50
    last = 50.0 * 1.021
    assert not ask(last * 1.039) and ask(last * 1.041)  # then 4 %
    last *= 1.041
    assert not ask(last * 1.079) and ask(last * 1.081)  # then 8 %
    assert not ask(10.0, key="h") and ask(10.0, key="h")  # each group on its own


class _Plan:
    """A stand-in Deployment: what the walk's cache keys on."""

    def __init__(self, name: str):
        self.policy, self.instances, self.line_capacity_bits_per_s = name, (), 0.0


def _walk(monkeypatch, edges: dict[str, tuple[float, float]]):
    """A Search over two hit-rate distributions whose plan `name` meets the SLA under
    distribution i below edges[name][i] (stand-ins for prepare and meets_sla)."""
    from types import SimpleNamespace

    from pdd_plan.plan import search as sr

    asked = []

    def meets_sla(setup, rate):
        asked.append(setup)
        name, dist = setup
        return rate < edges[name][dist]

    monkeypatch.setattr(sr, "prepare", lambda s, d, m, g, t, r, h: (d.policy, h))
    monkeypatch.setattr(sr, "meets_sla", meets_sla)
    monkeypatch.setattr(sr, "line_within_cap", lambda setup, floor, cap: True)
    monkeypatch.setattr(sr, "roles_within_cap", lambda setup, floor, cap: True)
    walk = sr.Search.__new__(sr.Search)
    walk.scenario = walk.model = walk.gpus = walk.tiers = walk.resolution = None
    walk.dists, walk._misses, walk._cache, walk.evaluations = (0, 1), [0, 0], {}, 0
    walk.goal, walk._cap_frac = SimpleNamespace(floor_rps=1.0), 1.0
    return walk, asked


def test_a_corner_is_asked_under_the_distribution_that_misses_most(monkeypatch):
    walk, asked = _walk(monkeypatch, {"a": (90.0, 40.0), "b": (90.0, 60.0), "c": (90, 80)})
    assert not walk.meets(_Plan("a"), 50.0)  # dist 0 met, dist 1 missed
    assert asked == [("a", 0), ("a", 1)] and walk._misses == [0, 1]
    asked.clear()
    assert walk._corner_misses(_Plan("b"), 70.0) and asked == [("b", 1)]  # one snapshot
    assert not walk.meets(_Plan("b"), 75.0) and asked == [("b", 1)]  # the miss is kept
    asked.clear()
    assert not walk._corner_misses(_Plan("c"), 70.0) and asked == [("c", 1)]
    assert walk.meets(_Plan("c"), 70.0) and len(asked) == 3  # a corner pass is no pass


def test_a_corner_miss_is_always_a_miss_of_the_full_check(monkeypatch):
    rng = random.Random(3)
    for _ in range(50):
        edges = {"p": (rng.uniform(10, 100), rng.uniform(10, 100))}
        rate = rng.uniform(5, 110)
        walk, _ = _walk(monkeypatch, edges)
        walk._misses = [rng.randint(0, 3), rng.randint(0, 3)]
        corner = walk._corner_misses(_Plan("p"), rate)
        full, _ = _walk(monkeypatch, edges)
        assert not (corner and full.meets(_Plan("p"), rate))
        if min(edges["p"]) > rate:
            assert not corner
