"""RDMA and WAN transfer model: hand-checkable numbers and the limits of known queues."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdd_plan.errors import SaturatedError
from pdd_plan.model.network.flow_sharing import erlang_c_continuous, ps_slowdown
from pdd_plan.model.network.network import WanLink, send_time_s, wan_transfer
from pdd_plan.model.network.rdma import rdma_transfer_s
from pdd_plan.model.queueing.queueing import erlang_c, ps_mean_sojourn_s


def link(**kw) -> WanLink:
    base = dict(
        capacity_bits_per_s=10e9,
        rtt_s=0.02,
        per_connection_bits_per_s=500e6,
        connection_pool_size=64,
    )
    return WanLink(**{**base, **kw})


# ---------------------------------------------------------------------------- RDMA


def test_rdma_one_gigabyte_over_eight_400g_nics(catalog):
    h100 = catalog.gpu("h100_sxm")  # 400 Gbit/s NIC per GPU
    t = rdma_transfer_s(1e9, 8, h100, efficiency_frac=0.85, latency_s=10e-6)
    assert isinstance(t, float)
    assert t == pytest.approx(8e9 / (8 * 400e9 * 0.85) + 10e-6)  # 2.94 ms + 10 us


def test_rdma_is_vectorised_and_zero_payload_costs_nothing(catalog):
    h200 = catalog.gpu("h200_sxm")
    t = rdma_transfer_s(np.array([0.0, 1e8, 2e8]), 4, h200, efficiency_frac=1.0, latency_s=0.0)
    assert t[0] == 0.0
    assert t[2] == pytest.approx(2 * t[1]) and t[1] == pytest.approx(8e8 / 1.6e12)


@pytest.mark.parametrize("kw", [dict(gpus=0), dict(gpus=1.5), dict(efficiency_frac=0.0)])
def test_rdma_rejects_bad_arguments(catalog, kw):
    args = dict(payload_bytes=1e6, gpus=1, gpu=catalog.gpu("h100_sxm")) | kw
    with pytest.raises(ValueError):
        rdma_transfer_s(**args)


# ---------------------------------------------------------------------------- the link


def test_framing_goodput():
    # MSS = MTU - 20 (IPv4) - 20 (TCP) - 12 (timestamps); wire = MTU + 38 (Ethernet)
    assert link(mtu_bytes=1500).goodput_frac == pytest.approx(1448 / 1538)
    assert link(mtu_bytes=9000).goodput_frac == pytest.approx(8948 / 9038)
    assert link(mtu_bytes=9000).goodput_bits_per_s == pytest.approx(10e9 * 8948 / 9038)


def test_initial_window_bits_by_hand():
    # RFC 6928's 10 segments of MSS = MTU - 52 (IPv4 20 + TCP 20 + timestamps 12), 8 bits a byte
    assert link().initial_window_bits == 10 * (9000 - 52) * 8  # 715,840
    assert link(mtu_bytes=1500, initial_window_segments=4).initial_window_bits == 4 * 1448 * 8


def test_one_flow_cannot_exceed_the_line():
    assert link(per_connection_bits_per_s=1e12).flow_cap_bits_per_s == pytest.approx(
        link().goodput_bits_per_s
    )


@pytest.mark.parametrize(
    "kw",
    [
        dict(capacity_bits_per_s=0.0),
        dict(rtt_s=-0.001),
        dict(per_connection_bits_per_s=math.nan),
        dict(connection_pool_size=0),
        dict(connection_pool_size=2.5),
        dict(mtu_bytes=40),
        dict(initial_window_segments=0),
    ],
)
def test_link_rejects_bad_parameters(kw):
    with pytest.raises(ValueError):
        link(**kw)


# ---------------------------------------------------------------------------- pieces


@pytest.mark.parametrize("servers,load", [(1, 0.5), (2, 1.5), (10, 7.3), (64, 60.0), (500, 480.0)])
def test_continuous_erlang_c_equals_the_recursion_at_whole_servers(servers, load):
    assert erlang_c_continuous(float(servers), load) == pytest.approx(
        erlang_c(servers, load), rel=1e-9
    )


def test_continuous_erlang_c_falls_between_whole_servers():
    values = [erlang_c_continuous(r, 9.0) for r in np.linspace(10.0, 11.0, 11)]
    assert np.all(np.diff(values) < 0)


def test_one_server_slowdown_is_m_g_1_processor_sharing():
    # modeling-notes: a job of size x under load ρ takes x / (C (1 - ρ))
    for rho in (0.1, 0.5, 0.93):
        assert ps_slowdown(1.0, rho) == pytest.approx(1.0 / (1.0 - rho))


def test_slow_start_doubling_in_the_fluid_limit():
    lk = link(rtt_s=0.03, mtu_bytes=1500, initial_window_segments=10)
    b0 = 10 * 1448 * 8
    rate = 400e6  # window = rate x RTT = 12 Mbit, far above b0
    for rounds in (1, 3, 5):  # b0 (2^n - 1) / ln 2 bits take n RTTs
        x = b0 * (2**rounds - 1) / math.log(2)
        assert send_time_s(x, rate, lk) == pytest.approx(rounds * 0.03)
    window = rate * 0.03
    ramp_bits = (window - b0) / math.log(2)
    ramp_s = 0.03 * math.log2(window / b0)
    big = 1e9
    assert send_time_s(big, rate, lk) == pytest.approx(ramp_s + (big - ramp_bits) / rate)
    # continuous where the ramp meets the body, and so is the slope (1 / rate on both sides)
    eps = 1e-6 * ramp_bits
    lo, mid, hi = send_time_s(np.array([ramp_bits - eps, ramp_bits, ramp_bits + eps]), rate, lk)
    assert mid - lo == pytest.approx(eps / rate, rel=1e-3)
    assert hi - mid == pytest.approx(eps / rate, rel=1e-3)


def test_without_slow_start_a_transfer_is_bits_over_rate():
    lk = link(slow_start_after_idle=False)
    assert send_time_s(np.array([8e8]), 2e8, lk)[0] == pytest.approx(4.0)


# ---------------------------------------------------------------------------- wan_transfer


def test_a_fast_connection_on_an_idle_rtt_free_line_is_m_g_1_processor_sharing():
    lk = link(rtt_s=0.0, per_connection_bits_per_s=1e12, connection_pool_size=1000)
    x = np.array([1e6, 5e7, 2e8])
    w = np.array([0.5, 0.3, 0.2])
    rate = 12.0
    r = wan_transfer(lk, x, w, rate)
    rho = rate * 8 * (w @ x) / lk.goodput_bits_per_s
    expected = ps_mean_sojourn_s(8 * x, lk.goodput_bits_per_s, rho)
    np.testing.assert_allclose(r.transfer_s, expected, rtol=1e-9)
    assert r.line_utilization_frac == pytest.approx(rho)


def test_load_utilisation_and_littles_law():
    lk = link()
    x, w = np.array([1e7, 1e8]), np.array([0.75, 0.25])
    r = wan_transfer(lk, x, w, 5.0)
    assert r.mean_load_bits_per_s == pytest.approx(5.0 * 8 * (0.75e7 + 0.25e8))
    assert r.mean_transfer_s == pytest.approx(w @ r.transfer_s)
    assert r.pool_utilization_frac == pytest.approx(5.0 * r.mean_transfer_s / 64)
    # a transfer is at least its bits at the per-connection rate plus one RTT
    assert np.all(r.transfer_s >= 8 * x / 500e6 + 0.02)


def test_weights_are_normalised():
    lk = link()
    a = wan_transfer(lk, np.array([1e7, 1e8]), np.array([3.0, 1.0]), 5.0)
    b = wan_transfer(lk, np.array([1e7, 1e8]), np.array([0.75, 0.25]), 5.0)
    np.testing.assert_allclose(a.transfer_s, b.transfer_s)
    assert a.pool_utilization_frac == pytest.approx(b.pool_utilization_frac)


def test_zero_payload_class_needs_no_connection():
    r = wan_transfer(link(), np.array([0.0, 1e7]), np.array([0.5, 0.5]), 1.0)
    assert r.transfer_s[0] == 0.0 and r.transfer_s[1] > 0


def test_no_traffic_no_wait():
    r = wan_transfer(link(), np.array([1e7]), np.array([1.0]), 0.0)
    assert r.connection_wait.mean_s() == 0.0 and r.line_utilization_frac == 0.0
    empty = wan_transfer(link(), np.array([]), np.array([]), 3.0)
    assert empty.mean_load_bits_per_s == 0.0 and empty.latency_quantiles_s([0.5]).tolist() == [0.0]


def test_line_saturation_names_load_and_capacity():
    lk = link()
    with pytest.raises(SaturatedError) as err:
        wan_transfer(lk, np.array([1e8]), np.array([1.0]), 20.0)  # 16 Gbit/s on 10
    assert err.value.offered == pytest.approx(16e9)
    assert err.value.capacity == pytest.approx(lk.goodput_bits_per_s)
    assert "WAN line" in str(err.value) and "bit/s" in str(err.value)


def test_pool_saturation_names_load_and_capacity():
    lk = link(connection_pool_size=2)
    with pytest.raises(SaturatedError) as err:
        wan_transfer(lk, np.array([1e8]), np.array([1.0]), 2.0)  # ~1.6 s each, 2/s, 2 conns
    assert "connection pool" in str(err.value) and err.value.capacity == 2.0
    assert err.value.offered >= 2.0


def test_latency_quantiles_include_the_wait():
    lk = link(connection_pool_size=6)
    r = wan_transfer(lk, np.array([5e7]), np.array([1.0]), 6.0)  # 5.2 of 6 connections busy
    assert r.connection_wait.prob_wait > 0.1
    p50, p99 = r.latency_quantiles_s([0.5, 0.99])
    assert p50 >= r.transfer_s[0] and p99 > r.transfer_s[0]
    assert p99 == pytest.approx(r.transfer_s[0] + r.connection_wait.quantile_s(0.99), rel=1e-6)
    assert r.mean_latency_s() == pytest.approx(r.mean_transfer_s + r.connection_wait.mean_s())


@pytest.mark.parametrize(
    "x,w",
    [
        (np.array([1.0, 2.0]), np.array([1.0])),
        (np.array([-1.0]), np.array([1.0])),
        (np.array([1.0]), np.array([0.0])),
        (np.array([np.inf]), np.array([1.0])),
    ],
)
def test_bad_classes_are_rejected(x, w):
    with pytest.raises(ValueError):
        wan_transfer(link(), x, w, 1.0)
