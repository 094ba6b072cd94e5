"""The finite-run WAN model (`wan_run`): hand-checkable cases, conservation, the pool bound,
agreement with the steady-state `wan_transfer` where both apply, and monotonicity in the line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pdd_plan.model.network.network import WanLink, send_time_s, wan_transfer
from pdd_plan.model.network.network_run import wan_run


def link(**kw) -> WanLink:
    base = dict(
        capacity_bits_per_s=10e9,
        rtt_s=0.02,
        per_connection_bits_per_s=500e6,
        connection_pool_size=64,
    )
    return WanLink(**{**base, **kw})


def log_mix(n: int = 300, low_bytes: float = 1e6, high_bytes: float = 3e8, seed: int = 0):
    rng = np.random.default_rng(seed)
    return np.geomspace(low_bytes, high_bytes, n), rng.uniform(0.1, 1.0, n)


def rate_for(lk: WanLink, x, w, line_frac: float) -> float:
    return line_frac * lk.goodput_bits_per_s / (8 * float(w @ x) / w.sum())


# ---------------------------------------------------------------------------- one request


@pytest.mark.parametrize("payload_bytes", [1e3, 1e5, 1e6, 1e7, 1e8])
@pytest.mark.parametrize("slow_start", [True, False])
def test_a_lone_request_takes_slow_start_body_and_one_rtt(payload_bytes, slow_start):
    lk = link(slow_start_after_idle=slow_start)
    r = wan_run(lk, [payload_bytes], [1.0], 1e-6, 10.0)  # flows never meet
    expected = float(send_time_s(payload_bytes * 8, lk.flow_cap_bits_per_s, lk)) + lk.rtt_s
    assert r.latency_p50_s == pytest.approx(expected, rel=1e-9)
    assert r.latency_p99_s == pytest.approx(expected, rel=1e-9)
    assert r.mean_latency_s == pytest.approx(expected, rel=1e-9)
    assert r.mean_wait_s == 0.0 and r.pool_full_after_s == math.inf


def test_tiny_request_ends_inside_slow_start():
    lk = link(rtt_s=0.05)
    b0 = lk.initial_window_segments * lk.mss_bytes * 8
    r = wan_run(lk, [b0 / 8], [1.0], 1e-6, 10.0)  # one initial window: one RTT to send
    assert r.latency_p50_s == pytest.approx(lk.rtt_s * math.log2(1 + math.log(2)) + lk.rtt_s)


def test_requests_without_payload_take_no_time_and_no_connection():
    lk = link()
    r = wan_run(lk, [0.0, 1e7], [0.75, 0.25], 10.0, 20.0)
    assert r.latency_quantiles_s([0.5, 0.75])[0] == 0.0
    assert r.latency_quantiles_s(0.76)[0] > 0.0
    empty = wan_run(lk, [0.0], [1.0], 10.0, 20.0)
    assert empty.latency_p99_s == 0.0 and empty.delivered_bits == 0.0
    assert wan_run(lk, [1e7], [1.0], 0.0, 20.0).pool_utilization_frac == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(duration_s=0.0),
        dict(duration_s=math.inf),
        dict(step_s=0.0),
        dict(arrival_rate_per_s=-1.0),
        dict(max_quanta=0),
    ],
)
def test_bad_arguments_are_rejected(kwargs):
    args = dict(arrival_rate_per_s=1.0, duration_s=10.0) | kwargs
    with pytest.raises(ValueError):
        wan_run(link(), [1e6], [1.0], **args)


# ---------------------------------------------------------------------------- conservation


@pytest.mark.parametrize("line_frac", [0.3, 0.9, 1.3])
def test_a_drained_run_delivers_every_byte_offered(line_frac):
    lk = link(connection_pool_size=40)
    x, w = log_mix(50)
    rate = rate_for(lk, x, w, line_frac)
    r = wan_run(lk, x, w, rate, 60.0)
    assert r.offered_bits == pytest.approx(rate * 60.0 * 8 * float(w @ x) / w.sum(), rel=1e-12)
    assert r.delivered_bits == pytest.approx(r.offered_bits, rel=1e-9)
    assert r.line_utilization_frac <= 1.0 + 1e-6
    assert r.queued_requests[-1] == 0.0 and r.busy_connections[-1] == pytest.approx(0.0, abs=1e-9)
    assert r.drained_s >= 60.0 and 0.0 <= r.finished_in_drain_frac <= 1.0


def test_the_pool_is_never_above_its_size():
    lk = link(connection_pool_size=20)
    x, w = log_mix(40)
    r = wan_run(lk, x, w, rate_for(lk, x, w, 1.5), 60.0)  # more than line and pool can carry
    assert r.busy_connections.max() <= lk.connection_pool_size * (1 + 1e-12)
    assert r.pool_peak_frac == pytest.approx(1.0)
    assert r.pool_full_after_s < 60.0 and r.mean_wait_s > 1.0  # it fills, a queue forms
    assert r.queued_requests.max() > 0
    assert np.all(r.flow_rate_bits_per_s <= lk.flow_cap_bits_per_s * (1 + 1e-12))
    assert np.all(r.flow_rate_bits_per_s > 0)


def test_quantiles_are_ordered_and_within_the_run():
    lk = link(connection_pool_size=30)
    x, w = log_mix(30)
    r = wan_run(lk, x, w, rate_for(lk, x, w, 1.1), 40.0)
    qs = r.latency_quantiles_s([0.0, 0.1, 0.5, 0.9, 0.99, 1.0])
    assert np.all(np.diff(qs) >= 0)
    assert qs[2] == r.latency_p50_s and qs[4] == r.latency_p99_s
    assert r.latency_p50_s <= r.mean_latency_s * 10 and qs[-1] <= r.drained_s
    with pytest.raises(ValueError):
        r.latency_quantiles_s(1.5)


@pytest.mark.slow
def test_a_finer_step_changes_little():
    lk = link(connection_pool_size=40)
    x, w = log_mix(60)
    rate = rate_for(lk, x, w, 1.05)
    coarse, fine = (wan_run(lk, x, w, rate, 60.0, step_s=s) for s in (0.1, 0.025))
    for name in ("latency_p50_s", "latency_p99_s", "mean_wait_s", "pool_utilization_frac"):
        assert getattr(coarse, name) == pytest.approx(getattr(fine, name), rel=0.03), name


# ---------------------------------------------------------------------------- steady state


@pytest.mark.slow
@pytest.mark.parametrize("line_frac", [0.6, 0.7, 0.8])
def test_a_long_stable_run_agrees_with_the_steady_state(line_frac):
    """Line at 60-80 %, many flows per line (goodput / cap = 90) and a pool well above the
    load: wan_transfer's queueing terms are small there and the fluid run has none."""
    lk = WanLink(
        capacity_bits_per_s=20e9,
        rtt_s=0.025,
        per_connection_bits_per_s=220e6,
        connection_pool_size=200,
    )
    x, w = log_mix(300, 2e6, 3e8)
    rate = rate_for(lk, x, w, line_frac)
    steady = wan_transfer(lk, x, w, rate)
    run = wan_run(lk, x, w, rate, 600.0)
    p50, p99 = steady.latency_quantiles_s([0.5, 0.99])
    assert run.latency_p50_s == pytest.approx(p50, rel=0.10)
    assert run.latency_p99_s == pytest.approx(p99, rel=0.10)
    assert run.mean_latency_s == pytest.approx(steady.mean_latency_s(), rel=0.10)
    assert run.pool_utilization_frac == pytest.approx(steady.pool_utilization_frac, rel=0.10)
    assert run.line_utilization_frac == pytest.approx(steady.line_utilization_frac, abs=0.02)
    assert run.mean_wait_s == pytest.approx(steady.connection_wait.mean_s(), abs=0.01)


# ---------------------------------------------------------------------------- monotonicity


@settings(max_examples=8, deadline=None)
@given(
    capacity=st.floats(2e9, 5e10),
    more=st.floats(1.05, 4.0),
    rtt=st.floats(0.0, 0.08),
    per_connection=st.floats(5e7, 5e9),
    pool=st.integers(2, 200),
    line_frac=st.floats(0.2, 1.4),
    seed=st.integers(0, 1000),
)
# hypothesis found it: the wider line's P99 0.04 % above the narrow one's at the run's
# 0.1 s integration step, reversed at 0.03 s and 0.01 s (where the P99 itself moves 3 %)
@example(
    capacity=21786168677.0, more=4.0, rtt=0.0625, per_connection=3779670373.0, pool=13,
    line_frac=1.125, seed=1,
)  # fmt: skip
def test_more_line_capacity_never_raises_the_p99(
    capacity, more, rtt, per_connection, pool, line_frac, seed
):
    rng = np.random.default_rng(seed)
    x = rng.uniform(1e4, 3e8, 6)
    w = rng.uniform(0.05, 1.0, 6)

    def lk(c: float) -> WanLink:
        return link(
            capacity_bits_per_s=c,
            rtt_s=rtt,
            per_connection_bits_per_s=per_connection,
            connection_pool_size=pool,
        )

    rate = rate_for(lk(capacity), x, w, line_frac)
    narrow, wide = (wan_run(lk(c), x, w, rate, 30.0) for c in (capacity, capacity * more))
    # to within the fluid run's integration error: a step of 0.1 s resolves a P99 to about
    # 3 % (the example above), so only a rise past 0.1 % is a property broken
    assert wide.latency_p99_s <= narrow.latency_p99_s * (1 + 1e-3)
    assert wide.mean_wait_s <= narrow.mean_wait_s * (1 + 1e-3) + 1e-12
