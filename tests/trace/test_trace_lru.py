"""The LRU replay against a plain list-based LRU, and hand-worked replays."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdd_plan.loaders.trace_lru import PrefixCache


def reference_hits(requests: list[list[int]], capacity: int | None) -> list[int]:
    """The same rule written plainly: a list, least recently used first. Hit = leading run
    of ids in the list before the request; then its ids are touched last-to-first."""
    cache: list[int] = []
    hits = []
    for ids in requests:
        run = 0
        for block in ids:
            if block not in cache:
                break
            run += 1
        hits.append(run)
        for block in reversed(ids):
            if block in cache:
                cache.remove(block)
            cache.append(block)
            while capacity is not None and len(cache) > capacity:
                cache.pop(0)
    return hits


# prefix-shaped requests: a few shared heads, then private or repeated tails
block_ids = st.integers(min_value=0, max_value=30)
requests_st = st.lists(st.lists(block_ids, min_size=0, max_size=8), min_size=1, max_size=40)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(requests=requests_st, capacity=st.one_of(st.none(), st.integers(0, 20)))
def test_replay_matches_the_list_reference(requests, capacity):
    cache = PrefixCache(capacity)
    assert [cache.replay(ids) for ids in requests] == reference_hits(requests, capacity)
    if capacity is not None:
        assert len(cache) <= capacity


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(requests=requests_st, capacity=st.integers(0, 20))
def test_more_capacity_never_hits_less(requests, capacity):
    # LRU is a stack algorithm: the content at capacity c is inside the content at c + 1
    small, large = PrefixCache(capacity), PrefixCache(capacity + 1)
    for ids in requests:
        assert small.replay(ids) <= large.replay(ids)


def test_prefix_semantics_stop_at_the_first_miss():
    cache = PrefixCache(None)
    assert cache.replay([1, 2, 3]) == 0
    assert cache.replay([1, 2, 9]) == 2
    assert cache.replay([7, 2, 3]) == 0  # 2 and 3 are cached, but behind a miss
    assert cache.replay([1, 2, 9, 4]) == 3


def test_a_small_cache_keeps_the_head_of_a_prefix():
    # capacity 2: after [1, 2, 3] the cache holds 1 and 2 (the tail 3 went first), so the
    # next request sharing the head hits both; a head-first eviction would give 0
    cache = PrefixCache(2)
    assert cache.replay([1, 2, 3]) == 0
    assert set(cache._blocks) == {1, 2}
    assert cache.replay([1, 2, 9]) == 2
    assert cache.replay([1]) == 1


def test_zero_capacity_never_hits():
    cache = PrefixCache(0)
    assert [cache.replay([1, 2]) for _ in range(3)] == [0, 0, 0]
    assert len(cache) == 0
