"""The outcome of a finite WAN run (`network_run.wan_run`): its dataclass, and the latencies,
waits and utilisations read off the run's integrated curves (V, the common rate's integral,
and the admission and last-byte curves, piecewise linear between step boundaries).
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.network.network import WanLink


@dataclass(frozen=True, eq=False)
class WanRunResult:
    """A finite benchmark run over the WAN (`wan_run`), starting empty and drained at the end.

    Latencies and waits are over the requests that arrived in [0, duration_s]; those unfinished
    at duration_s are counted at their completion in the drain (arrivals stop, the transfers
    and the queue run to completion). Utilisations are time averages over [0, duration_s].
    The series are sampled at the step boundaries `time_s` (the drain included).
    """

    duration_s: float
    step_s: float
    drained_s: float  # when the last connection of the run was released
    latency_p50_s: float  # wait for a connection + transfer (slow start, body, one RTT)
    latency_p99_s: float
    mean_latency_s: float
    mean_wait_s: float  # wait for a connection, all requests (those without payload wait 0)
    max_wait_s: float
    pool_utilization_frac: float  # mean busy connections / pool size over [0, duration_s]
    pool_peak_frac: float  # most busy connections / pool size over [0, duration_s]
    pool_full_after_s: float  # when every connection was first busy; inf if never
    line_utilization_frac: float  # payload bits delivered in [0, duration_s] / goodput x duration
    finished_in_drain_frac: float  # share of the run's requests released after duration_s
    offered_bits: float  # payload of the run's requests
    delivered_bits: float  # payload delivered, drain included
    time_s: np.ndarray
    busy_connections: np.ndarray  # sending, or waiting one RTT for the last acknowledgement
    sending_flows: np.ndarray
    queued_requests: np.ndarray  # waiting for a connection
    flow_rate_bits_per_s: np.ndarray  # per step: the rate of every flow past slow start
    latency_sorted_s: np.ndarray  # the latency distribution: values, ascending ...
    latency_cum_frac: np.ndarray  # ... and the share of requests at or below each

    def latency_quantiles_s(self, quantiles) -> np.ndarray:
        """Quantiles of wait + transfer over the run's requests: for each q the smallest
        latency that at least a share q of the requests do not exceed."""
        q = np.atleast_1d(np.asarray(quantiles, dtype=float))
        if np.any(~((q >= 0) & (q <= 1))):
            raise ValueError("quantiles must be in [0, 1]")
        i = np.searchsorted(self.latency_cum_frac, q * (1.0 - 1e-12), side="left")
        return self.latency_sorted_s[np.minimum(i, self.latency_sorted_s.size - 1)]


def empty_run(duration_s: float, dt: float, offered_bits: float) -> WanRunResult:
    """No request needs a connection: nothing waits, nothing is sent."""
    zeros = np.zeros(2)
    return WanRunResult(
        duration_s=duration_s,
        step_s=dt,
        drained_s=0.0,
        latency_p50_s=0.0,
        latency_p99_s=0.0,
        mean_latency_s=0.0,
        mean_wait_s=0.0,
        max_wait_s=0.0,
        pool_utilization_frac=0.0,
        pool_peak_frac=0.0,
        pool_full_after_s=math.inf,
        line_utilization_frac=0.0,
        finished_in_drain_frac=0.0,
        offered_bits=offered_bits,
        delivered_bits=0.0,
        time_s=np.array([0.0, duration_s]),
        busy_connections=zeros,
        sending_flows=zeros,
        queued_requests=zeros,
        flow_rate_bits_per_s=np.zeros(1),
        latency_sorted_s=np.zeros(1),
        latency_cum_frac=np.ones(1),
    )


def run_result(
    link: WanLink,
    dt: float,
    n_run: int,
    duration_s: float,
    lam: float,
    p_nz: float,
    xs: np.ndarray,
    q: np.ndarray,
    offered_bits: float,
    curves: dict[str, np.ndarray],
    per_step: dict[str, np.ndarray],
    max_quanta: int,
) -> WanRunResult:
    """Latencies on the integrated curves (V and admissions, piecewise linear), and averages.

    Arrival instants are the midpoints of `n_q` equal slices of the run; each is admitted when
    the admission curve reaches the arrivals before it (FIFO), and its class-k flow sends its
    last byte when V reaches V(admission) + delta + x_k, or earlier if it ends in slow start.
    """
    rtt, cap, pool = link.rtt_s, link.flow_cap_bits_per_s, link.connection_pool_size
    t_hist = np.arange(curves["v"].size) * dt
    v_hist, adm_hist = curves["v"], curves["adm"]
    n_q = min(n_run, int(max_quanta))
    tau = (np.arange(n_q) + 0.5) * (duration_s / n_q)
    level = lam * p_nz * tau
    j = np.clip(np.searchsorted(adm_hist, level, side="left"), 1, adm_hist.size - 1)
    rise = adm_hist[j] - adm_hist[j - 1]
    frac = np.where(rise > 0, (level - adm_hist[j - 1]) / np.where(rise > 0, rise, 1.0), 1.0)
    t_adm = t_hist[j - 1] + np.clip(frac, 0.0, 1.0) * dt
    t_adm = np.where(t_adm - tau <= 1e-9 * dt, tau, t_adm)  # no queue: rounding only
    wait = t_adm - tau
    step = np.clip((t_adm / dt).astype(int), 0, per_step["u"].size - 1)
    theta = (np.interp(t_adm, t_hist, v_hist) + per_step["delta"][step])[:, None] + xs[None, :]
    v_end, t_end = v_hist[-1], t_hist[-1]
    last_byte = np.where(
        theta > v_end, t_end + (theta - v_end) / cap, np.interp(theta, v_hist, t_hist)
    )
    if link.slow_start_after_idle and rtt > 0:
        b0 = link.initial_window_bits
        in_ramp_s = rtt * np.log2(1.0 + xs * math.log(2.0) / b0)
        ends_in_ramp = xs[None, :] <= per_step["b_star"][step][:, None]
        ramp_end = t_adm[:, None] + in_ramp_s[None, :]
        last_byte = np.where(ends_in_ramp, np.minimum(last_byte, ramp_end), last_byte)
    done = last_byte + rtt
    mass = np.broadcast_to(q[None, :] * (p_nz / n_q), done.shape)
    lat = np.concatenate(((done - tau[:, None]).ravel(), [0.0]))  # + those without payload
    wts = np.concatenate((mass.ravel(), [1.0 - p_nz]))
    order = np.argsort(lat, kind="stable")
    lat_sorted, cum = lat[order], np.cumsum(wts[order])
    cum /= cum[-1]
    p50, p99 = lat_sorted[
        np.minimum(np.searchsorted(cum, [0.5 * (1 - 1e-12), 0.99 * (1 - 1e-12)]), lat.size - 1)
    ]

    released = np.interp(t_hist - rtt, t_hist, curves["fin"], left=0.0)
    busy = np.maximum(adm_hist - released, 0.0)
    run = slice(0, n_run + 1)
    full = np.nonzero(busy[run] >= pool * (1.0 - 1e-9))[0]
    lat_sorted.setflags(write=False)
    cum.setflags(write=False)
    return WanRunResult(
        duration_s=duration_s,
        step_s=dt,
        drained_s=float(done.max()),
        latency_p50_s=float(p50),
        latency_p99_s=float(p99),
        mean_latency_s=float(wts @ lat),
        mean_wait_s=p_nz * float(wait.mean()),
        max_wait_s=float(wait.max()),
        pool_utilization_frac=float(np.trapezoid(busy[run], t_hist[run])) / duration_s / pool,
        pool_peak_frac=float(busy[run].max()) / pool,
        pool_full_after_s=float(t_hist[full[0]]) if full.size else math.inf,
        line_utilization_frac=float(per_step["sent"][:n_run].sum())
        / (link.goodput_bits_per_s * duration_s),
        finished_in_drain_frac=float(mass.ravel() @ (done.ravel() > duration_s)),
        offered_bits=offered_bits,
        delivered_bits=float(per_step["sent"].sum()),
        time_s=t_hist,
        busy_connections=busy,
        sending_flows=curves["sending"],
        queued_requests=curves["queue"],
        flow_rate_bits_per_s=per_step["u"],
        latency_sorted_s=lat_sorted,
        latency_cum_frac=cum,
    )
