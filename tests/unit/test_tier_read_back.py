"""The main-decode side reads a cached prefix back from its tier before it decodes (issue
#23: DRAM and SSD are not read alike): the read takes cached tokens x KV bytes per token /
(GPUs x the tier's read bandwidth per GPU), starts at prefill start, and MD holds the KV at
the later of the transfer's end and the read's. Expectations by hand from the qwen3_32b
case of test_cache_decision.py (262,144 B a token, 2 x L40S main-decode instances)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.caches import cache_tier
from pdd_plan.model.caches.cache_tier import CacheBuy
from pdd_plan.model.caches.tier_read_back import md_ready_after_prefill_s
from pdd_plan.model.evaluate import prepare, snapshot
from pdd_plan.sim.measure import measure
from pdd_plan.sim.run import SimConfig, simulate
from tests.unit.test_cache_decision import KV_BYTES_PER_TOKEN, _scenario, _solve


def test_the_read_back_is_the_bytes_over_each_gpus_link():
    ssd = CacheBuy("ssd", 8.0, 0.0, 7e9)
    dram = CacheBuy("dram", 8.0, 0.0, 50e9)
    # 4,000 cached tokens of 262,144 B on 2 GPUs: 1.05 GB over 2 x 7 GB/s = 74.9 ms
    by_hand = 4_000 * KV_BYTES_PER_TOKEN / (2 * 7e9)
    assert cache_tier.read_back_s(ssd, [4_000.0], KV_BYTES_PER_TOKEN, 2)[0] == pytest.approx(
        by_hand, rel=1e-12
    )
    assert cache_tier.read_back_s(dram, [4_000.0], KV_BYTES_PER_TOKEN, 2)[0] == pytest.approx(
        by_hand * 7 / 50, rel=1e-12
    )
    # no tier (the prefix stays in HBM), or an unpriced buy: nothing to read
    for none in (None, CacheBuy("none", 0.0), CacheBuy("dram", 8.0, 0.0, None)):
        assert cache_tier.read_back_s(none, [4_000.0], KV_BYTES_PER_TOKEN, 2)[0] == 0.0
    # MD holds the KV at the later of transfer end and read end (read from prefill start)
    ready = md_ready_after_prefill_s([0.2, 0.05], [0.1, 0.5], np.array([0.3, 0.3]))
    assert list(ready) == pytest.approx([0.2, 0.2])


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    path, s = _scenario(tmp_path_factory.mktemp("read"), [0, 2])
    base = _solve(s).deployment
    return path, s, base


def _at(s, base, read_bytes_per_s):
    cat = Catalog()
    buy = CacheBuy("dram", 2.0, 486.0, read_bytes_per_s)
    d = dataclasses.replace(base, policy=dataclasses.replace(base.policy, decode_cache=buy))
    return prepare(s, d, cat.model_for(s), cat.gpus, cat.lines)


@pytest.mark.slow
def test_a_slower_tier_delays_the_first_token_in_the_closed_form_and_the_simulator(case):
    """A tier read at 0.5 GB/s a GPU (an SSD read in small scattered blocks): a median
    resident request's ~3,600 cached tokens (4,000 x a ~0.9 hit) take 3,600 x 262,144 /
    (2 x 0.5e9) = 0.94 s to read from its prefill start, far beyond its prefill and the
    transfer of its few uncached tokens, so TTFT P50 is about that read (above 0.8 s);
    at DRAM's 50 GB/s the read (9 ms) hides behind the transfer and TTFT P50 stays below
    0.6 s. The simulator, reading each request's own prefix, agrees within 15 %."""
    _, s, base = case
    rate = s.workload.arrival_rate_per_s
    fast, slow = _at(s, base, 50e9), _at(s, base, 0.5e9)
    p50_fast = snapshot(fast, rate).ttft_s["p50"]
    p50_slow = snapshot(slow, rate).ttft_s["p50"]
    assert p50_fast < 0.6 and p50_slow > 0.8
    simulated = measure(simulate(slow, SimConfig(3_000, 1, 0.1, rate_per_s=rate)))
    assert p50_slow == pytest.approx(simulated.ttft_s["p50"].value, rel=0.15)
