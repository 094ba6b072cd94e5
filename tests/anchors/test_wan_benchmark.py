"""The published cross-datacenter KV-transfer benchmark (pdd-system.md §2-3, [pub]).

20 Gbit/s line, 80 req/s, DeepSeek-V4-Pro, 64K-token prompts, mean prefix hit 90 %:

    |                          | skewed (hits 2-99 %) | narrow (hits 85-95 %) |
    | transfer latency P50     | 248 ms               | 1,210 ms              |
    | transfer latency P99     | 18,883 ms            | 25,542 ms             |
    | mean wait for connection | 0.31 ms              | 1,682 ms              |
    | pool utilisation         | 63.1 %               | 100 %                 |

Asserted here is the pattern, not the numbers, with ONE link for both mixes:
- skewed: median under 0.5 s, P99 over 10 s, pool not saturated, no real waiting;
- narrow: median near a second (0.5-2 s), several times the skewed median;
- both: the same line load, near but under the line (same mean bytes);
- modeling-notes arithmetic: 80 req/s x 64K x ~4.4 KB ≈ 23 GB/s > 180 Gbit/s at 0 % hit,
  10x less at 90 %.
The pool saturating with the narrow mix only is NOT reproduced (strict xfail below): no
stationary model of flows sharing a line can show it; pdd_plan/model/network/network.py's docstring
says why. Nor does a finite run (`wan_run`, the fluid model of a benchmark run starting empty,
second strict xfail): with the published payload ranges the load is 105 % of the goodput, the
narrow mix fills the pool 3.7x sooner than the skewed one (11.5 s vs 42 s, asserted below), but
both then queue without bound, so the skewed median is seconds, not 0.25 s. Nor does holding a
relayed request's connection through the published 305 ms handoff (`pool_hold: handoff_end`,
threshold 0.95, third strict xfail): narrow 77 %, skewed 66 %, no waiting; a full narrow pool
needs a 0.8 s hold.

Payload per request = (1 - hit) x kv_bytes(65,536 tokens, fp8) from the catalog (≈ 0.297 GB).

The mixes (weighted classes, hit rate uniform inside each bin, 50 classes per bin):
- skewed: hits 2-20 % 2 %, 20-50 % 4 %, 50-80 % 6 %, 80-95 % s, 95-98 % 30 %, 98-99 % 1-0.42-s,
  with s solved for a mean hit of exactly 90 % (s ≈ 14.5 %); 73 % of requests hit above 95 %
  (published: 70-80 %), the top 1 % hit 2-11 % (payloads 0.26-0.29 GB; published max 0.28 GB).
- narrow: hits uniform on 85-95 % (100 classes): payloads 15-45 MB (published 18-47 MB).

Finite runs: payload = 3.5 MB + 0.29 GB x (1 - hit), fitted to the published ranges (narrow
18-47 MB exactly; skewed 6.4-288 MB for the published 8-280 MB), mean 32.5 MB in both mixes:
80 req/s x 32.5 MB = 20.8 Gbit/s, 105 % of the goodput. Runs of 120, 300 and 600 s, drained.

The link: 20 Gbit/s, RTT 25 ms (≈ 2,500 km of fibre), 220 Mbit/s per TCP connection (Mathis at
25 ms, MSS 8,948 B, loss ≈ 2.5e-4; the published 0.28 GB tail flow moved at ~120 Mbit/s), a pool
of 170 connections (set so the skewed mix uses ~63 % of it, the one published figure used to
fit), jumbo frames (MTU 9000), IW10 and slow start after idle (Linux defaults).
"""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.errors import SaturatedError
from pdd_plan.model.decode.handoff import PUBLISHED_RECOMPUTE_HANDOFF_S
from pdd_plan.model.network.network import WanLink, wan_transfer
from pdd_plan.model.network.network_run import wan_run
from pdd_plan.sim.wan import simulate_wan

ARRIVAL_RATE_PER_S = 80.0
PROMPT_TOKENS = 65_536
LINE_BITS_PER_S = 20e9

LINK = WanLink(
    capacity_bits_per_s=LINE_BITS_PER_S,
    rtt_s=0.025,
    per_connection_bits_per_s=220e6,
    connection_pool_size=170,
    mtu_bytes=9000,
    initial_window_segments=10,
    slow_start_after_idle=True,
)

# (low hit, high hit, share); None: solved for the mean
SKEWED_BINS = (
    (0.02, 0.20, 0.02),
    (0.20, 0.50, 0.04),
    (0.50, 0.80, 0.06),
    (0.80, 0.95, None),
    (0.95, 0.98, 0.30),
    (0.98, 0.99, None),
)
CLASSES_PER_BIN = 50


def _uniform_hits(low: float, high: float, n: int) -> np.ndarray:
    edges = np.linspace(low, high, n + 1)
    return (edges[1:] + edges[:-1]) / 2


def skewed_mix(mean_hit: float = 0.90) -> tuple[np.ndarray, np.ndarray]:
    """Hit rates and weights; the two open shares solve sum = 1 and mean hit = `mean_hit`."""
    fixed = [(lo, hi, s) for lo, hi, s in SKEWED_BINS if s is not None]
    (lo_a, hi_a, _), (lo_b, hi_b, _) = [b for b in SKEWED_BINS if b[2] is None]
    rest = 1.0 - sum(s for *_, s in fixed)
    fixed_hit = sum(s * (lo + hi) / 2 for lo, hi, s in fixed)
    mid_a, mid_b = (lo_a + hi_a) / 2, (lo_b + hi_b) / 2
    share_a = (mean_hit - fixed_hit - rest * mid_b) / (mid_a - mid_b)
    shares = {(lo_a, hi_a): share_a, (lo_b, hi_b): rest - share_a}
    hits, weights = [], []
    for lo, hi, s in SKEWED_BINS:
        share = shares[(lo, hi)] if s is None else s
        hits.append(_uniform_hits(lo, hi, CLASSES_PER_BIN))
        weights.append(np.full(CLASSES_PER_BIN, share / CLASSES_PER_BIN))
    return np.concatenate(hits), np.concatenate(weights)


def narrow_mix() -> tuple[np.ndarray, np.ndarray]:
    return _uniform_hits(0.85, 0.95, 100), np.full(100, 0.01)


@pytest.fixture(scope="module")
def kv_64k_bytes(catalog) -> float:
    return catalog.model("deepseek_v4_pro").kv_bytes(PROMPT_TOKENS, "fp8")


@pytest.fixture(scope="module")
def results(kv_64k_bytes):
    out = {}
    for name, (hits, weights) in (("skewed", skewed_mix()), ("narrow", narrow_mix())):
        r = wan_transfer(LINK, (1.0 - hits) * kv_64k_bytes, weights, ARRIVAL_RATE_PER_S)
        p50, p99 = r.latency_quantiles_s([0.50, 0.99])
        out[name] = dict(result=r, p50=p50, p99=p99, wait=r.connection_wait.mean_s())
    return out


def test_the_mixes_are_as_stated(kv_64k_bytes):
    hits, w = skewed_mix()
    assert w.sum() == pytest.approx(1.0) and np.all(w > 0)
    assert hits @ w == pytest.approx(0.90, abs=1e-9)
    assert 0.70 <= w[hits > 0.95].sum() <= 0.80  # "70-80 % of requests hit above 95 %"
    assert hits.min() < 0.03 and hits.max() <= 0.99
    assert w[hits < 0.11].sum() >= 0.01  # the top 1 % of payloads are the 0.26-0.29 GB ones
    hits_n, w_n = narrow_mix()
    assert hits_n @ w_n == pytest.approx(0.90) and hits_n.min() > 0.85 and hits_n.max() < 0.95
    assert kv_64k_bytes == pytest.approx(0.29e9, rel=0.05)  # pdd-system.md: ≈ 0.29 GB


def test_same_mean_bytes_same_line_load(results):
    skewed, narrow = results["skewed"]["result"], results["narrow"]["result"]
    assert skewed.mean_load_bits_per_s == pytest.approx(narrow.mean_load_bits_per_s, rel=1e-9)
    # modeling-notes: ~18.6 Gbit/s of payload, the line near 93-96 % in both mixes
    assert 0.90 < skewed.line_utilization_frac < 1.0


def test_skewed_mix_tiny_median_long_tail_idle_pool(results):
    s = results["skewed"]
    assert s["p50"] < 0.5  # published 248 ms
    assert s["p99"] > 10.0  # published 18.9 s: the tail is the few low-hit requests
    assert s["p99"] > 20 * s["p50"]
    assert s["result"].pool_utilization_frac < 0.8  # published 63.1 %: not saturated
    assert s["wait"] < 0.01  # published 0.31 ms


def test_narrow_mix_median_near_a_second(results):
    n, s = results["narrow"], results["skewed"]
    assert 0.5 < n["p50"] < 2.0  # published 1.21 s: every payload is medium-sized
    assert n["p50"] > 2.5 * s["p50"]  # published 4.9x


@pytest.mark.xfail(
    strict=True,
    reason="published: the narrow mix saturates the pool (100 %, 1.68 s mean wait) while the "
    "skewed mix uses 63 %; a stationary flow model gives both the same pool occupancy "
    "(Jensen + PS insensitivity, see pdd_plan/model/network/network.py)",
)
def test_narrow_mix_saturates_the_pool_and_queues(results):
    n, s = results["narrow"], results["skewed"]
    assert n["result"].pool_utilization_frac > 0.95
    assert n["wait"] > 1.0
    assert s["result"].pool_utilization_frac < 0.8


def test_notes_arithmetic_zero_hit_needs_over_180_gbit(kv_64k_bytes):
    # 80 req/s x 64K tokens x 4.4 KB ≈ 23 GB/s ≈ 185 Gbit/s [pub]; from the catalog's KV bytes
    bytes_per_s = ARRIVAL_RATE_PER_S * kv_64k_bytes
    assert bytes_per_s == pytest.approx(23e9, rel=0.05)
    assert bytes_per_s * 8 > 180e9
    with pytest.raises(SaturatedError) as err:
        wan_transfer(LINK, np.array([kv_64k_bytes]), np.array([1.0]), ARRIVAL_RATE_PER_S)
    assert err.value.offered == pytest.approx(bytes_per_s * 8)
    assert err.value.capacity < LINE_BITS_PER_S  # goodput after framing
    assert "offered load" in str(err.value) and "capacity" in str(err.value)


def test_notes_arithmetic_ninety_percent_hit_is_ten_times_less(results, kv_64k_bytes):
    full_bits_per_s = ARRIVAL_RATE_PER_S * kv_64k_bytes * 8
    for name in ("skewed", "narrow"):
        load = results[name]["result"].mean_load_bits_per_s
        assert full_bits_per_s / load == pytest.approx(10.0, rel=1e-6)
        assert load < LINE_BITS_PER_S  # "line bandwidth and throughput in the same order"


# ---------------------------------------------------------------------------- a finite run

FIXED_PAYLOAD_BYTES = 3.5e6  # the newest tokens of a turn, never cached (~770 tokens)
PAYLOAD_PER_MISS_BYTES = 0.29e9  # the 64K-token KV at fp8 (catalog: 0.297 GB)
RUN_LENGTHS_S = (120.0, 300.0, 600.0)


def published_payload_bytes(hits: np.ndarray) -> np.ndarray:
    return FIXED_PAYLOAD_BYTES + PAYLOAD_PER_MISS_BYTES * (1.0 - hits)


@pytest.fixture(scope="module")
def finite_runs():
    mixes = (("skewed", skewed_mix()), ("narrow", narrow_mix()))
    return {
        (name, length_s): wan_run(
            LINK, published_payload_bytes(hits), weights, ARRIVAL_RATE_PER_S, length_s
        )
        for length_s in RUN_LENGTHS_S
        for name, (hits, weights) in mixes
    }


def test_the_fitted_payloads_match_the_published_ranges():
    hits_n, w_n = narrow_mix()
    narrow = published_payload_bytes(np.array([0.95, 0.85]))  # the bin's edges
    assert narrow == pytest.approx([0.018e9, 0.047e9], rel=0.01)  # published 0.018-0.047 GB
    skewed = published_payload_bytes(np.array([0.99, 0.02]))
    assert skewed[0] == pytest.approx(0.008e9, rel=0.25)  # published 0.008 GB: 6.4 MB
    assert skewed[1] == pytest.approx(0.280e9, rel=0.03)  # published 0.280 GB: 288 MB
    hits_s, w_s = skewed_mix()
    mean_s = w_s @ published_payload_bytes(hits_s)
    mean_n = w_n @ published_payload_bytes(hits_n)
    assert mean_s == pytest.approx(mean_n) == pytest.approx(32.5e6)
    assert ARRIVAL_RATE_PER_S * mean_s * 8 > LINK.goodput_bits_per_s  # 105 %: over the line


@pytest.mark.slow
@pytest.mark.parametrize("length_s", RUN_LENGTHS_S)
def test_finite_run_over_the_line_narrow_mix_fills_the_pool_first(finite_runs, length_s):
    """The mechanism the finite run does show: near capacity the number of flows grows as
    ~1/E[X^2] (the skewed mix's backlog is a few huge flows), so the narrow mix fills the pool
    3.7x sooner; it then waits and holds the pool more, at the same line load."""
    s, n = finite_runs[("skewed", length_s)], finite_runs[("narrow", length_s)]
    assert n.pool_full_after_s < 15.0 < 35.0 < s.pool_full_after_s  # 11.5 s and 42 s
    assert n.pool_utilization_frac > 0.95 and n.pool_utilization_frac > s.pool_utilization_frac
    assert n.mean_wait_s > 1.0 and n.mean_wait_s > s.mean_wait_s
    assert min(s.line_utilization_frac, n.line_utilization_frac) > 0.95
    assert s.latency_p99_s > 10.0 and s.latency_p99_s > n.latency_p99_s  # the huge flows


@pytest.mark.xfail(
    strict=True,
    reason="a finite run over the line shows the narrow mix filling the pool first, but both "
    "mixes then queue without bound: the skewed median is 2.4-15 s (published 0.25 s) and its "
    "pool 90-98 % (published 63 %); see pdd_plan/model/network/network.py",
)
@pytest.mark.parametrize("length_s", RUN_LENGTHS_S)
def test_finite_run_shows_the_published_pool_gap(finite_runs, length_s):
    s, n = finite_runs[("skewed", length_s)], finite_runs[("narrow", length_s)]
    assert s.latency_p50_s < 0.5 and s.latency_p99_s > 10.0  # published 0.25 s, 18.9 s
    assert s.pool_utilization_frac < 0.85 and s.mean_wait_s < 0.1  # published 63 %, 0.3 ms
    assert 0.5 < n.latency_p50_s < 3.0  # published 1.2 s
    assert n.pool_utilization_frac > 0.95 and n.mean_wait_s > 0.5  # published 100 %, 1.7 s


def test_finite_run_under_the_line_holds_the_same_pool_in_both_mixes(results, kv_64k_bytes):
    """With the catalog's payloads (96 % of the goodput) both mixes hold the same share of the
    pool and never wait, as in the stationary model; the fluid run lacks the random congestion
    (the stationary sharing slowdown, 1.17 here), so it is a little faster and holds less."""
    runs = {}
    for name, (hits, weights) in (("skewed", skewed_mix()), ("narrow", narrow_mix())):
        payload = (1.0 - hits) * kv_64k_bytes
        runs[name] = wan_run(LINK, payload, weights, ARRIVAL_RATE_PER_S, 300.0)
    s, n = runs["skewed"], runs["narrow"]
    assert s.pool_utilization_frac == pytest.approx(n.pool_utilization_frac, rel=0.02)  # 54 %
    assert s.mean_wait_s == 0.0 and n.mean_wait_s == 0.0
    assert s.latency_p50_s < 0.5 and 0.5 < n.latency_p50_s < 2.0  # 0.35 s, 1.15 s
    for name, run in runs.items():
        steady = results[name]
        assert 0.8 < run.latency_p50_s / steady["p50"] <= 1.0
        assert 0.8 < run.pool_utilization_frac / steady["result"].pool_utilization_frac <= 1.0


# ------------------------------------------------- holding the connection through the handoff

RELAY_THRESHOLD = 0.95  # requests below it are relayed (issue #12 item 7's setting)
SIM_RUN_S = 150.0  # 12,000 transfers per mix: each simulated run takes about a second


def relayed(hits: np.ndarray) -> np.ndarray:
    return hits < RELAY_THRESHOLD


def handoff_hold_s(hits: np.ndarray, handoff_s: float = PUBLISHED_RECOMPUTE_HANDOFF_S):
    """`pool_hold: handoff_end`: a relayed request keeps its connection for the handoff
    (the published recompute handoff, 305.2 ms: MD has the KV -> MD's next token)."""
    return np.where(relayed(hits), handoff_s, 0.0)


@pytest.fixture(scope="module")
def held(kv_64k_bytes):
    out = {}
    for name, (hits, weights) in (("skewed", skewed_mix()), ("narrow", narrow_mix())):
        payload = (1.0 - hits) * kv_64k_bytes
        r = wan_transfer(
            LINK, payload, weights, ARRIVAL_RATE_PER_S, extra_hold_s=handoff_hold_s(hits)
        )
        out[name] = r
    return out


@pytest.fixture(scope="module")
def held_sim(kv_64k_bytes):
    """Poisson arrivals at 80/s through the simulated pool and line; occupancy over the run
    after its first 10 %, connections held to their release."""
    out = {}
    for name, (hits, weights) in (("skewed", skewed_mix()), ("narrow", narrow_mix())):
        rng = np.random.default_rng(7)
        n = int(ARRIVAL_RATE_PER_S * SIM_RUN_S)
        t = np.cumsum(rng.exponential(1.0 / ARRIVAL_RATE_PER_S, n))
        k = rng.choice(len(weights), n, p=weights)
        bits = (1.0 - hits[k]) * kv_64k_bytes * 8
        run = simulate_wan(LINK, t, bits, extra_hold_s=handoff_hold_s(hits[k]))
        lo, hi = t[n // 10], t[-1]
        busy = np.clip(np.minimum(run.release_s, hi) - np.maximum(run.connect_s, lo), 0, None)
        wait = (run.connect_s - t)[n // 10 :]
        out[name] = dict(
            pool=busy.sum() / (LINK.connection_pool_size * (hi - lo)), wait=wait.mean()
        )
    return out


def test_a_095_threshold_relays_the_whole_narrow_mix_and_a_quarter_of_the_skewed():
    hits_s, w_s = skewed_mix()
    hits_n, w_n = narrow_mix()
    assert w_n[relayed(hits_n)].sum() == pytest.approx(1.0)
    assert w_s[relayed(hits_s)].sum() == pytest.approx(0.265, abs=0.01)  # issue: ~27 %


def test_handoff_hold_adds_by_little(results, held):
    """Occupancy rises by rate x relayed share x handoff / pool: narrow 80 x 1 x 0.3052 /
    170 = +14.4 points, skewed 80 x 0.265 x 0.3052 / 170 = +3.8 points."""
    for name, (hits, w) in (("skewed", skewed_mix()), ("narrow", narrow_mix())):
        share = w[relayed(hits)].sum()
        added = ARRIVAL_RATE_PER_S * share * PUBLISHED_RECOMPUTE_HANDOFF_S / 170
        before = results[name]["result"].pool_utilization_frac
        assert held[name].pool_utilization_frac - before == pytest.approx(added, rel=1e-9)


def test_handoff_hold_opens_a_gap_short_of_the_published_one(held, held_sim):
    """With the published handoff the narrow mix holds more of the pool than the skewed one
    (closed form 76.9 % vs 66.4 %; simulated a few points lower), but neither waits: the
    published 100 % and 1.7 s need a hold 2.6x the measured handoff (next test)."""
    n, s = held["narrow"], held["skewed"]
    assert 0.74 < n.pool_utilization_frac < 0.80 and 0.63 < s.pool_utilization_frac < 0.70
    assert n.connection_wait.mean_s() < 0.01 and s.connection_wait.mean_s() < 0.01
    sim_n, sim_s = held_sim["narrow"], held_sim["skewed"]
    assert sim_n["pool"] == pytest.approx(n.pool_utilization_frac, abs=0.05)
    assert sim_s["pool"] == pytest.approx(s.pool_utilization_frac, abs=0.06)
    assert sim_n["pool"] > sim_s["pool"] + 0.08
    assert sim_n["wait"] < 0.05 and sim_s["wait"] < 0.01


def test_a_full_narrow_pool_needs_a_hold_of_08_s(results, kv_64k_bytes):
    """Little: the narrow pool is full when 80 x (E[T] + H) = 170, H = 170 / 80 - E[T] =
    2.125 - 1.33 = 0.80 s (the issue's "about 0.8 s"), 2.6x the measured 0.305 s handoff;
    there the stationary pool is saturated."""
    mean_t = results["narrow"]["result"].mean_transfer_s
    needed = 170 / ARRIVAL_RATE_PER_S - mean_t
    assert needed == pytest.approx(0.80, abs=0.01)
    assert needed / PUBLISHED_RECOMPUTE_HANDOFF_S == pytest.approx(2.6, abs=0.05)
    hits, w = narrow_mix()
    with pytest.raises(SaturatedError):
        wan_transfer(LINK, (1.0 - hits) * kv_64k_bytes, w, ARRIVAL_RATE_PER_S,
                     extra_hold_s=handoff_hold_s(hits, needed + 0.01))  # fmt: skip


@pytest.mark.xfail(
    strict=True,
    reason="holding connections through the published 305 ms handoff (pool_hold: handoff_end, "
    "threshold 0.95) lifts the narrow pool to 77 % and the skewed to 66 %: a gap, but the "
    "published 100 % / 1.7 s wait needs a 0.8 s hold; see pdd_plan/model/network/network.py",
)
def test_handoff_hold_reproduces_the_published_pool_gap(held, held_sim):
    n, s = held["narrow"], held["skewed"]
    assert n.pool_utilization_frac > 0.95 and n.connection_wait.mean_s() > 0.5
    assert s.pool_utilization_frac < 0.8 and s.connection_wait.mean_s() < 0.01
    assert held_sim["narrow"]["pool"] > 0.95 and held_sim["narrow"]["wait"] > 0.5
