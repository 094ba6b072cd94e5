"""The simulator's prefill queue and WAN against textbook and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdd_plan.model.network.network import WanLink
from pdd_plan.sim.prefill import fcfs_pool
from pdd_plan.sim.wan import simulate_wan


def _poisson(rate: float, n: int, seed: int) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).exponential(1 / rate, n))


def test_md1_mean_wait_is_pollaczek_khinchine():
    # one prefill instance, fixed-length requests: M/D/1, W = rho s / (2 (1 - rho))
    rate, service, n = 8.0, 0.1, 200_000
    run = fcfs_pool(_poisson(rate, n, 3), np.full(n, service), 1)
    rho = rate * service
    assert np.mean(run.start_s - _poisson(rate, n, 3)) == pytest.approx(
        rho * service / (2 * (1 - rho)), rel=0.06
    )


def test_mm2_mean_wait_is_erlang_c():
    # M/M/2: P(wait) = 2 rho^2 / (1 + rho), W = P(wait) / (2 mu - lambda)
    rate, mu, n = 3.0, 2.0, 200_000
    arrivals = _poisson(rate, n, 5)
    service = np.random.default_rng(6).exponential(1 / mu, n)
    run = fcfs_pool(arrivals, service, 2)
    rho = rate / (2 * mu)
    p_wait = 2 * rho**2 / (1 + rho)
    assert np.mean(run.start_s - arrivals) == pytest.approx(p_wait / (2 * mu - rate), rel=0.06)
    assert np.mean(run.start_s > arrivals) == pytest.approx(p_wait, abs=0.02)


LINK = WanLink(20e9, 0.025, 220e6, 4, mtu_bytes=9000, initial_window_segments=10)


def test_lone_flow_on_an_idle_line_by_hand():
    payload_bits = 8 * 50e6
    b0 = 10 * (9000 - 52) * 8  # initial window: 10 segments of MSS = MTU - 52
    window = 220e6 * 0.025  # the window that carries 220 Mbit/s over 25 ms
    ramp_s = 0.025 * math.log2(window / b0)
    ramp_bits = (window - b0) / math.log(2)
    expected = ramp_s + (payload_bits - ramp_bits) / 220e6 + 0.025
    run = simulate_wan(LINK, np.array([2.0]), np.array([payload_bits]))
    assert run.done_s[0] - 2.0 == pytest.approx(expected, rel=1e-9)
    assert run.connect_s[0] == 2.0


def test_line_slower_than_the_cap_sets_the_rate():
    link = WanLink(1e8, 0.0, 220e6, 4, slow_start_after_idle=False)
    run = simulate_wan(link, np.array([0.0]), np.array([1e8]))
    assert run.done_s[0] == pytest.approx(1e8 / link.goodput_bits_per_s, rel=1e-9)


def test_two_flows_share_the_line_fairly():
    # the line carries 1.5 caps: together each gets 0.75 of its cap
    link = WanLink(300e6 / (8948 / 9038), 0.0, 200e6, 4, slow_start_after_idle=False)
    bits = 150e6
    run = simulate_wan(link, np.array([0.0, 0.0]), np.array([bits, bits]))
    assert run.done_s == pytest.approx([bits / 150e6] * 2, rel=1e-9)
    # a short flow leaves first and the long one speeds up to its cap
    run = simulate_wan(link, np.array([0.0, 0.0]), np.array([bits, 3 * bits]))
    assert run.done_s[0] == pytest.approx(1.0)
    assert run.done_s[1] == pytest.approx(1.0 + (3 * bits - 150e6) / 200e6)


def test_pool_of_one_connection_queues_fifo():
    link = WanLink(1e9, 0.01, 100e6, 1, slow_start_after_idle=False)
    run = simulate_wan(link, np.array([0.0, 0.001]), np.array([1e8, 1e8]))
    first = 1e8 / 100e6 + 0.01  # body at the cap, then the last acknowledgement
    assert run.done_s[0] == pytest.approx(first)
    assert run.connect_s[1] == pytest.approx(first)
    assert run.done_s[1] == pytest.approx(2 * first)
