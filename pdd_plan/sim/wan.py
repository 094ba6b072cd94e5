"""The WAN line as an event-driven fluid: TCP flows share the line max-min fairly, each
capped at one connection's rate, each holding a connection of a finite pool (FIFO wait).

A flow on a connection goes through the phases the closed form's single-flow primitive
(`network.send_time_s`) defines: slow start from the initial window up to the connection's
rate (a fixed duration: its rate is small, far below a fair share, so sharing does not
stretch it; its bits still take their part of the line), then the body at the shared rate,
then one RTT for the last acknowledgement, holding the connection throughout.

Body flows all have the same cap, so max-min sharing gives them one common rate
r = min(cap, (goodput - bits/s of ramping flows) / flows): one virtual clock V = the
service each body flow has received, and a heap of the V at which each finishes. Rates
change only when the set of flows changes, so the run costs O(log n) per event.

The transfer engine's knobs (model/network/wan_streaming.py): a striped transfer is N flows of
x / N, each its own connection and slow start. A transfer streamed during prefill becomes
ready at prefill start and its send may not end before prefill end + the last layer's
share; its bits are not otherwise held back by production (the simplest faithful version:
a flow whose prefill is slower than its send puts its bits on the line earlier than they
exist, taking its share of the line early and sitting idle on its connection until its
last layer is out; total bits, its end and its connection time are right). With
`pool_hold: handoff_end` a flow's connection is released a given time after its last
acknowledgement.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import deque
from dataclasses import dataclass

import numpy as np

from pdd_plan.model.network.network import BITS_PER_BYTE, WanLink, send_time_s


@dataclass(frozen=True)
class WanRun:
    """Per transfer (in the caller's order): connection acquired (its first stripe's), last
    byte sent, transfer complete (last byte acknowledged at the sender), connections
    released (after `extra_hold_s`; its last stripe's)."""

    connect_s: np.ndarray
    sent_s: np.ndarray
    done_s: np.ndarray
    release_s: np.ndarray


def ramp_bits(link: WanLink, rate_bits_per_s: float) -> float:
    """Bits a flow sends in slow start before its window carries `rate` (0 without slow
    start), as in `network.send_time_s`: (W - b0) / ln 2."""
    b0 = link.initial_window_segments * link.mss_bytes * BITS_PER_BYTE
    window = rate_bits_per_s * link.rtt_s
    if not link.slow_start_after_idle or link.rtt_s == 0 or window <= b0:
        return 0.0
    return (window - b0) / math.log(2.0)


def flow_phases(link: WanLink, payload_bits: np.ndarray):
    """(slow-start bits, slow-start seconds, body bits) of each flow."""
    cap = link.flow_cap_bits_per_s
    first = np.minimum(payload_bits, ramp_bits(link, cap))
    first_s = np.where(first > 0, send_time_s(first, cap, link), 0.0)
    return first, np.asarray(first_s, float), payload_bits - first


def simulate_wan(
    link: WanLink,
    ready_s: np.ndarray,
    payload_bits: np.ndarray,
    not_before_s: np.ndarray | None = None,
    extra_hold_s: np.ndarray | None = None,
) -> WanRun:
    """Run every transfer that becomes ready at `ready_s` with `payload_bits` (0: nothing
    to send, done at once) through the pool and the shared line, each split over the
    link's `stripes_per_transfer` flows of equal size, each flow on its own connection with
    its own slow start; a transfer is done when its last flow is.

    not_before_s: a flow may not finish sending before this time (KV streamed during
    prefill: prefill end + the last layer's share; model/network/wan_streaming.py);
    extra_hold_s: connection time after the last acknowledgement (`pool_hold:
    handoff_end`); each stripe keeps its connection that long after its own end.
    """
    n, stripes = len(ready_s), link.stripes_per_transfer
    rep = (lambda a: np.repeat(np.asarray(a, float), stripes)) if stripes > 1 else np.asarray
    zeros = np.zeros(n)
    run = _flows(
        link,
        rep(ready_s),
        rep(payload_bits) / stripes,
        rep(ready_s if not_before_s is None else not_before_s),
        rep(zeros if extra_hold_s is None else extra_hold_s),
    )
    if stripes == 1:
        return run
    return WanRun(
        run.connect_s.reshape(n, stripes).min(axis=1),
        run.sent_s.reshape(n, stripes).max(axis=1),
        run.done_s.reshape(n, stripes).max(axis=1),
        run.release_s.reshape(n, stripes).max(axis=1),
    )


def _flows(link: WanLink, ready_s, payload_bits, not_before_s, extra_hold_s) -> WanRun:
    """One flow per entry (see `simulate_wan`)."""
    n = len(ready_s)
    # a flow with nothing to send is done when it could have ended (streamed: prefill end)
    never = np.maximum(ready_s, not_before_s).astype(float)
    connect, sent, done, released = never.copy(), never.copy(), never.copy(), never
    first_bits, first_s, body_bits = flow_phases(link, payload_bits)
    first_rate = np.divide(first_bits, first_s, out=np.zeros(n), where=first_s > 0)
    order = np.argsort(ready_s, kind="stable")
    order = array("q", order[payload_bits[order] > 0].astype(np.int64).tobytes())
    # flat arrays, not lists: indexing gives the same Python floats at 8 bytes an entry
    ready, f_s, f_rate, body, earliest, extra = (
        array("d", np.ascontiguousarray(a, dtype=np.float64).tobytes())
        for a in (ready_s, first_s, first_rate, body_bits, not_before_s, extra_hold_s)
    )
    rtt = link.rtt_s
    goodput, cap = link.goodput_bits_per_s, link.flow_cap_bits_per_s
    floor = 1e-6 * goodput  # body flows never stop entirely, even under many ramps

    # (time, seq, kind, flow): 0 = slow start over, 1 = acknowledged, 2 = last byte
    # produced (streaming: the send ends), 3 = connection released (handoff_end)
    events: list = []
    bodies: list = []  # (virtual finish, seq, flow)
    waiting: deque = deque()
    free, seq, t, v, rate = link.connection_pool_size, 0, 0.0, 0.0, cap
    n_body, n_ramp, ramp_load, k = 0, 0, 0.0, 0

    def push(time: float, kind: int, i: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (time, seq, kind, i))

    def start(i: int) -> None:
        nonlocal free, n_ramp, ramp_load
        free -= 1
        connect[i] = t
        if f_s[i] > 0:
            n_ramp += 1
            ramp_load += f_rate[i]
            push(t + f_s[i], 0, i)
        else:
            begin_body(i)

    def begin_body(i: int) -> None:
        nonlocal n_body, seq
        if body[i] > 0:
            seq += 1
            n_body += 1
            heapq.heappush(bodies, (v + body[i], seq, i))
        else:
            end_send(i)

    def end_send(i: int) -> None:
        # a streamed flow's bits have left (sent ahead of their production: the simplest
        # faithful version, see the module docstring) but its send ends no earlier than
        # its last layer's bytes can
        if earliest[i] > t:
            push(earliest[i], 2, i)
        else:
            sent[i] = t
            push(t + rtt, 1, i)

    def release(i: int) -> None:
        nonlocal free
        released[i] = t
        free += 1
        if waiting:
            start(waiting.popleft())

    while k < len(order) or events or bodies:
        t_arrive = ready[order[k]] if k < len(order) else math.inf
        t_event = events[0][0] if events else math.inf
        t_body = t + (bodies[0][0] - v) / rate if bodies else math.inf
        t_next = min(t_arrive, t_event, t_body)
        v += rate * (t_next - t) if n_body else 0.0
        t = t_next
        if t_body <= t_event and t_body <= t_arrive:
            _, _, i = heapq.heappop(bodies)
            n_body -= 1
            end_send(i)
        elif t_event <= t_arrive:
            _, _, kind, i = heapq.heappop(events)
            if kind == 0:
                n_ramp -= 1
                ramp_load = ramp_load - f_rate[i] if n_ramp else 0.0
                begin_body(i)
            elif kind == 2:
                sent[i] = t
                push(t + rtt, 1, i)
            elif kind == 1 and extra[i] > 0:
                done[i] = t
                push(t + extra[i], 3, i)
            else:
                done[i] = t if kind == 1 else done[i]
                release(i)
        else:
            i = order[k]
            k += 1
            if free > 0:
                start(i)
            else:
                waiting.append(i)
        if n_body:
            rate = min(cap, max(goodput - ramp_load, floor) / n_body)
    return WanRun(connect, sent, done, released)
