"""A finite benchmark run of the WAN: a deterministic fluid model, cohort by cohort.

The steady-state model (`network.wan_transfer`) is what a planner sizes with; this one
replays a run of fixed length starting empty, so that transients near or over the line's
capacity can be examined (the published 20 Gbit/s benchmark, pdd-system.md §3). The
mechanisms are those of `network` (slow-start restart, per-connection cap, fair sharing,
a FIFO connection pool); see that module's docstring for what each reproduces.
The result (`WanRunResult`) and the latencies read off the run's curves are
model/network/wan_run_result.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.network.network import (
    BITS_PER_BYTE,
    WanLink,
    normalised_classes,
)
from pdd_plan.model.network.wan_run_result import WanRunResult, empty_run, run_result

# ---------------------------------------------------------------------------- a finite run


def _ramp_params(link: WanLink, rate_bits_per_s: float) -> tuple[float, float, float]:
    """Slow start up to `rate`: its length a*, the bits B* sent in it, and the deficit
    delta = rate x a* - B* (past slow start a flow has sent what a flow at `rate` from its
    start would have, less delta). All zero without slow start (as in send_time_s)."""
    b0 = link.initial_window_bits
    window = rate_bits_per_s * link.rtt_s
    if not link.slow_start_after_idle or link.rtt_s == 0 or window <= b0:
        return 0.0, 0.0, 0.0
    a_star = link.rtt_s * math.log2(window / b0)
    b_star = (window - b0) / math.log(2.0)
    return a_star, b_star, rate_bits_per_s * a_star - b_star


def _ramp_sent_bits(link: WanLink, age_s):
    """Bits sent `age_s` into slow start: b0 (2^(age / RTT) - 1) / ln 2 (needs RTT > 0)."""
    b0 = link.initial_window_bits
    return b0 * np.expm1(np.asarray(age_s) / link.rtt_s * math.log(2.0)) / math.log(2.0)


class _SizeMix:
    """The payload sizes `xs` (bits, ascending) of a cohort's flows, probabilities `q`. At
    attained service s the share of its flows still sending is P(X > s) and the bits served
    per flow E[min(X, s)]: piecewise linear in s, exact on segment i = segment(s)."""

    def __init__(self, xs: np.ndarray, q: np.ndarray):
        knots = np.concatenate(([0.0], xs))
        tail = np.concatenate((np.cumsum(q[::-1])[::-1], [0.0]))  # on [knots[i], knots[i+1])
        served = np.concatenate(([0.0], np.cumsum(tail[:-1] * np.diff(knots))))
        self.xs = xs
        self.knot = np.concatenate(([0.0], knots))  # segment 0: s < 0, nothing served
        self.served = np.concatenate(([0.0], served))
        self.slope = np.concatenate(([0.0], tail))
        self.sending = np.concatenate(([1.0], tail))

    def segment(self, s):
        return self.xs.searchsorted(s, side="right") + 1

    def served_bits(self, s, i):
        return self.served[i] + self.slope[i] * (s - self.knot[i])


@dataclass
class _Step:
    """One step of the run, for trial rates u: the active cohorts (mass, offset -V(adm) -
    delta, bits sent in slow start by the step's end) and the step's new cohort (guessed mass,
    its slow-start bits and deficit half a step in)."""

    mix: _SizeMix
    dt: float
    v: float
    mass: np.ndarray
    offset: np.ndarray
    ramp_bits: np.ndarray
    served0: float
    new_mass: float
    new_ramp_bits: float
    new_delta: float

    def sent(self, u: float):
        """Bits sent in the step at rate u past slow start, d(bits)/du, the cohorts' attained
        service at the step's end and its segments."""
        v_part = (self.v + u * self.dt) + self.offset
        s1 = np.maximum(self.ramp_bits, v_part)
        i1 = self.mix.segment(s1)
        bits = float(self.mass @ self.mix.served_bits(s1, i1)) - self.served0
        slope = self.dt * float(self.mass @ (self.mix.sending[i1] * (v_part >= self.ramp_bits)))
        new_v = u * self.dt / 2 - self.new_delta
        new_s = max(self.new_ramp_bits, new_v)
        j = int(self.mix.segment(new_s))
        bits += self.new_mass * float(self.mix.served_bits(new_s, j))
        if new_v >= self.new_ramp_bits:
            slope += self.new_mass * self.dt / 2 * float(self.mix.sending[j])
        return bits, slope, s1, i1

    def rate(self, u_start: float, cap: float, budget: float):
        """The rate u in (0, cap] at which the step's bits fill `budget` (safeguarded Newton
        on a monotone piecewise-linear function), or cap if the line does not bind."""
        tol = 1e-7 * budget
        u = u_start
        bits, slope, s1, i1 = self.sent(u)
        if u >= cap and bits - budget <= tol:
            return u, bits, s1, i1
        u_lo, u_hi = 0.0, cap
        for _ in range(60):
            gap = bits - budget
            if abs(gap) <= tol or u_hi - u_lo <= 1e-12 * cap:
                break
            if gap > 0:
                u_hi = u
            else:
                u_lo = u
            nxt = u - gap / slope if slope > 0 else u_hi
            nxt = min(nxt, cap)
            u = nxt if u_lo < nxt <= u_hi else (u_lo + u_hi) / 2
            bits, slope, s1, i1 = self.sent(u)
            if u >= cap and bits <= budget:
                break
        if u < cap * 1e-9:  # only slow start sends (it is not bound by u): keep V increasing
            u = cap * 1e-9
            bits, slope, s1, i1 = self.sent(u)
        return u, bits, s1, i1


def wan_run(
    link: WanLink,
    payload_bytes: np.ndarray,
    weights: np.ndarray,
    arrival_rate_per_s: float,
    duration_s: float,
    step_s: float = 0.1,
    max_quanta: int = 2000,
) -> WanRunResult:
    """A deterministic finite run: requests arrive for `duration_s` seconds into an empty
    system, class k (probability weights[k]) at rate arrival_rate_per_s x weights[k] with
    payload_bytes[k]; then arrivals stop and the run drains.

    A fluid (mean-field) model integrated in steps of at most `step_s`, with the mechanisms of
    `wan_transfer`: a request waits FIFO for one of the pool's connections, holds it from its
    first byte until one RTT after its last, and sends in slow start from the initial window
    (rate b0 2^(age / RTT) / RTT) until it reaches the common rate u(t) of the flows past
    slow start: u = min(flow cap, the level at which the line's goodput is filled), max-min
    fair sharing (processor sharing with a per-flow cap; flows still in slow start take less
    and leave the rest to the others). The requests admitted in one step are one cohort;
    every flow past slow start gets u, so a cohort's attained service is
    s(t) = V(t) - V(admission) - delta, V the integral of u and delta the slow-start deficit
    (`_ramp_params`), and its flows of class k send while s < x_k: the mix of sizes matters
    exactly as in processor sharing. Within a step u is constant, solved so that the bits
    the step delivers fill the goodput (else u = cap). Latencies are then computed on the
    integrated V(t) and admission curve for up to `max_quanta` arrival instants
    (`wan_run_result.run_result`). Requests without payload need no connection: latency 0.
    """
    x, w = normalised_classes(payload_bytes, weights)
    lam = float(arrival_rate_per_s)
    if not (lam >= 0 and math.isfinite(lam)):
        raise ValueError(f"arrival_rate_per_s must be finite and >= 0, got {arrival_rate_per_s}")
    if not (duration_s > 0 and math.isfinite(duration_s)):
        raise ValueError(f"duration_s must be finite and > 0, got {duration_s}")
    if not (step_s > 0 and math.isfinite(step_s)):
        raise ValueError(f"step_s must be finite and > 0, got {step_s}")
    if int(max_quanta) != max_quanta or max_quanta < 1:
        raise ValueError(f"max_quanta must be an integer >= 1, got {max_quanta}")
    n_run = max(1, math.ceil(duration_s / step_s - 1e-9))
    dt = duration_s / n_run

    # Classes with payload, merged by size and sorted; q = their probabilities given payload.
    bits_all = x * BITS_PER_BYTE
    xs, inverse = np.unique(bits_all[bits_all > 0], return_inverse=True)
    q = np.bincount(inverse, weights=w[bits_all > 0], minlength=xs.size)
    p_nz = float(q.sum())
    offered_bits = lam * duration_s * float(w @ bits_all) if x.size else 0.0
    if xs.size == 0 or lam == 0:
        return empty_run(duration_s, dt, offered_bits)
    q = q / p_nz
    mix = _SizeMix(xs, q)
    x_max = float(xs[-1])

    cap = link.flow_cap_bits_per_s
    budget = link.goodput_bits_per_s * dt  # payload bits the line carries in a step
    pool = float(link.connection_pool_size)
    rtt = link.rtt_s
    arrivals_per_step = lam * p_nz * dt
    ramp_cap_s = _ramp_params(link, cap)[0]  # the longest slow start
    young_steps = math.ceil(ramp_cap_s / dt) + 1 if ramp_cap_s > 0 else 0  # maybe still in it
    # Past slow start an admitted flow gets at least min(cap, goodput / pool), so the run drains
    # well before this (a guard against a bug, not a limit of the model).
    slowest_s = x_max / min(cap, link.goodput_bits_per_s / pool) + ramp_cap_s + rtt + 2 * dt
    give_up_s = 2 * (duration_s + (lam * p_nz * duration_s / pool + 2) * slowest_s) + 10

    # Cohorts: mass, admission time, ramp length a*, ramp bits B*, offset -V(adm) - delta, s.
    size = n_run + 64
    c_mass, c_t, c_astar, c_bstar, c_off, c_s = (np.zeros(size) for _ in range(6))
    lo = hi = 0
    # Rows at the step boundaries: V, admitted, last byte sent, sending, queued; and per step:
    # u, bits sent, delta and B* of the step's new cohort.
    hist = np.zeros((9, 2 * n_run + 64))
    v = adm = queue = 0.0
    u_prev = cap
    u_ramp = -1.0
    a_star = b_star = delta = half_ramp = 0.0
    released_prev = 0.0
    n = 0

    def released_at(t_s: float, fin_next: float = -1.0) -> float:
        """Connections released by t_s: those whose last byte went out by t_s - RTT, on the
        piecewise-linear history of last bytes (`fin_next`: at the end of the current step)."""
        k = (t_s - rtt) / dt
        if k <= 0:
            return 0.0
        if k < n:
            i = int(k)
            return hist[2, i] + (k - i) * (hist[2, i + 1] - hist[2, i])
        if fin_next >= 0:
            return hist[2, n] + min(k - n, 1.0) * (fin_next - hist[2, n])
        return hist[2, n]

    while True:
        t = n * dt
        arriving = arrivals_per_step if n < n_run else 0.0
        rel_now = released_at(t)
        busy = adm - rel_now
        if n >= n_run and queue == 0.0 and lo == hi and busy <= 1e-12 * pool:
            break
        if t > give_up_s:  # pragma: no cover - a guard
            raise RuntimeError(f"wan_run did not drain by {give_up_s:.0f} s")
        if n + 2 >= hist.shape[1]:
            hist = np.concatenate((hist, np.zeros_like(hist)), axis=1)
        if u_prev != u_ramp:  # slow start of the step's new cohort: up to the current rate
            u_ramp = u_prev
            a_star, b_star, delta = _ramp_params(link, u_ramp)
            half_ramp = float(_ramp_sent_bits(link, min(dt / 2, a_star))) if a_star > 0 else 0.0

        ramp_bits = c_bstar[lo:hi]  # B*, less for the youngest cohorts
        k_young = max(0, (hi - lo) - young_steps)
        if hi - k_young > lo:
            young = slice(lo + k_young, hi)
            ages = np.minimum(t + dt - c_t[young], c_astar[young])
            ramp_bits = ramp_bits.copy()
            ramp_bits[k_young:] = np.where(ages > 0, _ramp_sent_bits(link, ages), 0.0)
        mass, s0 = c_mass[lo:hi], c_s[lo:hi]
        step = _Step(
            mix=mix,
            dt=dt,
            v=v,
            mass=mass,
            offset=c_off[lo:hi],
            ramp_bits=ramp_bits,
            served0=float(mass @ mix.served_bits(s0, mix.segment(s0))),
            new_mass=min(queue + arriving, max(pool - busy + released_prev, 0.0)),  # a guess
            new_ramp_bits=half_ramp,
            new_delta=delta,
        )
        u, sent, s1, i1 = step.rate(min(u_prev, cap), cap, budget)

        # Admit what the connections released by the step's end allow (FIFO), at mid-step.
        sending_old = float(mass @ mix.sending[i1])
        released_next = released_at(t + dt, adm - sending_old)
        admitted = min(queue + arriving, max(pool - adm + released_next, 0.0))
        new_s = max(half_ramp, u * dt / 2 - delta)
        j = int(mix.segment(new_s))
        sent += (admitted - step.new_mass) * float(mix.served_bits(new_s, j))

        c_s[lo:hi] = s1
        if hi == c_mass.size:  # grow (a long drain)
            c_mass, c_t, c_astar, c_bstar, c_off, c_s = (
                np.concatenate((a, np.zeros(a.size)))
                for a in (c_mass, c_t, c_astar, c_bstar, c_off, c_s)
            )
        if admitted > 0:
            c_mass[hi], c_t[hi], c_astar[hi], c_bstar[hi] = admitted, t + dt / 2, a_star, b_star
            c_off[hi] = -(v + u * dt / 2) - delta
            c_s[hi] = new_s
            hi += 1
        queue = queue + arriving - admitted
        if queue < 1e-12 * arrivals_per_step:
            queue = 0.0
        adm += admitted
        sending = sending_old + admitted * float(mix.sending[j])
        if hi > lo:
            done = c_s[lo:hi] >= x_max
            if done[0]:
                lo = hi if done.all() else lo + int(np.argmin(done))
        if lo == hi:
            sending = 0.0
        v += u * dt
        released_prev = released_next - rel_now
        u_prev = u
        n += 1
        hist[:5, n] = v, adm, adm - sending, sending, queue
        hist[5:, n - 1] = u, sent, delta, b_star

    rows = hist[:, : n + 1]
    curves = dict(zip(("v", "adm", "fin", "sending", "queue"), rows[:5], strict=True))
    per_step = dict(zip(("u", "sent", "delta", "b_star"), rows[5:, :n], strict=True))
    return run_result(
        link, dt, n_run, duration_s, lam, p_nz, xs, q, offered_bits, curves, per_step, max_quanta
    )
