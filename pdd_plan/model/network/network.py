"""Moving KV cache over the cross-datacenter line: TCP, its connection pool and the line
(RDMA inside a datacenter: model/network/rdma.py).

The WAN (`WanLink`, `wan_transfer`) has three mechanisms, each with a textbook origin:

1. One TCP connection has a long-run rate `c = per_connection_bits_per_s`, set by its window
   and the path's loss (Mathis et al. 1997: c ~ MSS/RTT x 1.22/sqrt(p)); at tens of ms of RTT it
   is hundreds of Mbit/s, far below the line. A transfer starts on an idle pooled connection,
   which TCP restarts in slow start (RFC 5681 s4.1; Linux `tcp_slow_start_after_idle=1`):
   from `initial_window_segments` (10, RFC 6928) the window doubles each RTT until it carries
   the flow's rate. In the fluid limit the first x bits take RTT log2(1 + x ln2 / b0)
   (b0 = the initial window in bits) and the rest go at the flow's rate. Small payloads thus
   cost a few RTTs, large ones bytes / rate: this makes the median of a mix of mostly tiny
   payloads small and its tail, set by the few big payloads, long (0.26 GB at ~180 Mbit/s
   is ~12 s while 0.26 GB / 20 Gbit/s is 0.1 s).
2. The line is shared fairly by the active flows, each capped at c: the M/G/R processor-
   sharing model of flow-level TCP (Lindberger, ITC 16, 1999; Riedl et al. 2000), with R =
   goodput / c "servers" and A = load / c erlangs. A flow's mean time is its time at rate c
   stretched by f = 1 + E2(R, A) / (R - A) (E2 = Erlang C, extended to non-integer R), so
   flows slow down only as the line nears saturation. The goodput is the line rate times
   MSS / wire bytes per segment (`mtu_bytes`: IPv4 + TCP-with-timestamps headers, Ethernet
   header, FCS, preamble and inter-frame gap).
3. The engine keeps `connection_pool_size` connections; a transfer holds one from its first
   byte until its last is acknowledged (send time + one RTT) and waits FIFO for one when all
   are busy: G/G/K with Allen-Cunneen (`queueing.ggc_wait`), service times the per-class
   transfer times.

How the engine uses the line (model/network/wan_streaming.py): a transfer may be striped over N
connections (x / N each, own slow start; N connections held), may stream during prefill
(from prefill start; what shows after prefill end is max(send - prefill, last layer) + RTT,
the connection held from prefill start), and may keep its connection through the handoff.

`transfer_s` (per class) = slow start + body at rate c / f + one RTT; the latency of a
request is its connection wait + transfer_s, and `WanResult.latency_quantiles_s` gives the
quantiles over the mixture of classes. Saturation of the line (load >= goodput) or of the pool
(offered connection-seconds per second >= pool size) raises `SaturatedError`.

`wan_run` is a finite run of the same mechanisms (a benchmark: start empty, arrivals for a
while, drain): a deterministic fluid, valid over the line too, that agrees with `wan_transfer`
where the latter's random queueing is small (line <= ~80 %, goodput / cap >> 1).

What this reproduces of the published 20 Gbit/s benchmark (pdd-system.md s3; test in
tests/anchors/test_wan_benchmark.py): the skewed mix's sub-second median and >10 s P99 (1 and
2), the narrow mix's median near a second (all payloads medium-sized, 2), the line near 95 %
in both, the 10x drop of WAN bytes at 90 % hit.

What it does not reproduce, and why: the pool saturating with the narrow mix (published
100 %, 1.7 s mean wait) while the skewed mix uses 63 % of it; here both mixes use the same
share of the pool. Same mean bytes, same arrival rate, and pool occupancy = arrival rate x
E[time on a connection], so the narrow mix would need ~1.6x the connection-seconds per request:
- if a connection's time is x / r(x) with r non-increasing in x (a per-connection cap, a
  window burst, loss after N packets), x / r(x) is convex and Jensen gives the skewed mix at
  least as many busy connection-seconds as the narrow one;
- the published percentiles imply such a convex time per size themselves (~8-10 MB in
  0.25 s, ~32 MB in ~1.2 s, 0.28 GB in 18.9 s: 25-31, 38 and 67 ms per MB);
- fair sharing of the line (M/G/1- or M/G/R-PS) is a symmetric queue, so its mean number of
  flows does not depend on the size distribution (Kelly 1979); a FIFO pool on top only makes
  the high-variance (skewed) mix wait more (Allen-Cunneen);
- the TCP transients that do make time concave in size (slow start; the trough after a
  slow-start restart, when Reno/CUBIC climb from ssthresh back to the loss window) last a few
  RTTs to ~10 s at ~1 MB windows: a scan of c over 0.1-1 Gbit/s and RTT over 5-100 ms gave at
  most 15 % more connection-seconds for the narrow mix, while the restart slowed the skewed
  mix's small transfers (median 0.45-0.8 s where the published one is 0.25 s);
- a discrete-event simulation of K-limited processor sharing with per-flow caps (stationary,
  3,000 s, a scratch check made while building this module) gave both mixes the same pool
  occupancy within its noise, the skewed mix waiting more.
So no stationary model of this kind shows the gap without an unphysical knob.

Hold times that depend on the route, not the size, escape that argument: with a relay
threshold of 0.95 the whole narrow mix is relayed and 26.5 % of the skewed one, and an
engine that keeps a relayed request's connection until its handoff completes (`pool_hold:
handoff_end`) adds rate x relayed share x handoff to the busy connections. With the
published recompute handoff (305.2 ms, pdd-system.md s5) on the anchor's link this gives
narrow 76.9 % / skewed 66.4 % of the pool (62.5 % both without it; the simulator, 150 s of
Poisson arrivals: 73.5 % / 60.9 %), and no waiting (narrow 0.01 ms closed form, 1.7 ms
simulated). A full narrow pool needs 80 x (1.33 s + H) = 170, H = 0.80 s, 2.6x the measured
handoff; the stationary pool saturates there, while the simulator at 0.80 s shows 94 % and a
67 ms mean wait (skewed 68 %, 0.4 ms), still short of 100 % and 1.7 s. So the knob moves the
pools the published way but, with the published handoff, 10 of the published 37 points.

A finite run (`wan_run`) was the remaining candidate. The published payload ranges fit
3.5 MB + 0.29 GB x miss (narrow 18-47 MB exactly; skewed 6.4-288 MB for 8-280 MB: the newest
~770 tokens of a turn are never cached, and 0.29 GB is the 64K-token KV at fp8), whose mean,
32.5 MB x 80/s = 20.8 Gbit/s, is 105 % of the line's 19.8 Gbit/s goodput. In an overloaded
processor-sharing queue the number of flows grows at a rate that depends on the size
distribution (Jean-Marie & Robert 1994; Puha, Stolyar & Williams 2006): tiny flows get through,
so the skewed mix's backlog sits in a few huge flows and the narrow mix's in many medium ones.
`wan_run` integrates such a run deterministically (a fluid over time and classes, cohorts by
admission step, the FIFO pool, slow start, the cap and fair sharing above; it drains the run
and counts late requests at their completion). With the anchor's link (20 Gbit/s, RTT 25 ms,
220 Mbit/s per connection, 170 connections, MTU 9000, IW10, slow start after idle) it shows
the mechanism but not the published pattern:
- the narrow mix fills the pool after 11.5 s, the skewed one after 42 s: near capacity the
  flow count grows roughly as 1 / E[X^2], and the skewed E[X^2] is 3.5x the narrow one;
- but both are over the line, so both then queue without bound: the pool's 170 flows share
  the goodput (119 Mbit/s each) and the queue grows by 80 - 76 = 4 requests/s. Over 120 s
  (published in brackets): skewed P50 2.4 s (0.25), P99 18 s (18.9), mean wait 1.3 s (0.3 ms),
  pool 90 % (63 %); narrow P50 4.7 s (1.2), P99 8.1 s (25.5), wait 2.5 s (1.7), pool 97 %
  (100 %); line 98-99 %. Waits and medians grow with the run's length (600 s: 13-15 s waits);
- below the line (the catalog's 0.297 GB x miss, 96 % of the goodput) the fluid run is the
  steady state without its random congestion: both mixes hold 54 % of the pool, never wait.
A scan (per-connection rate 150-500 Mbit/s, pools of 90-220, load 96-108 % of the goodput,
runs of 120-600 s; 384 cases) found none with both patterns; the nearest (400-500 Mbit/s,
101-102 %, one run length each) leave the narrow pool at 88-91 % on average (full at its peak).
The reason is structural: the skewed median stays under 0.5 s only while the line rarely
binds, i.e. with little backlog; the narrow pool is busy > 95 % of a run only if it fills in
the first few percent of it, after which its queue (and median) grow with the run's length;
and the pool-filling times differ by only ~3.7x. What a fluid leaves out is the randomness of
a finite run near capacity (bursts, the slow relaxation of the skewed mix's flow count), and
engine details the paper does not give (e.g. "pool utilisation" as a peak: the fluid peaks
are 100 % for both mixes over the line). A planner sizes for steady state, where such a run
is saturated: `wan_transfer` raises SaturatedError there.

Parameter values (defaults below; the anchor test states the set it uses):
- RTT 20-30 ms: 2,000-3,000 km of fibre (~5 us/km each way plus equipment), the distance
  between China's eastern demand hubs and its western datacenter regions.
- per-connection rate 100-300 Mbit/s: Mathis at RTT 25 ms with a 9,000-byte MTU gives
  110-350 Mbit/s for loss rates of 1e-3-1e-4; the benchmark's 0.28 GB tail flow moved at
  ~120 Mbit/s.
- pool: tens to a few hundred connections (a few per pair of prefill and decode instances,
  tens of instances).
- MTU 9000: dedicated wavelengths and cloud interconnect ports carry jumbo frames (AWS Direct
  Connect private VIF: 9001); with MTU 1500 the goodput is 94 % of the line rate, not 99 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.model.network.flow_sharing import ps_slowdown
from pdd_plan.model.network.wan_streaming import streamed_times, stripe_servers
from pdd_plan.model.queueing.queueing import WaitModel, ggc_wait, mixture_quantiles_s

BITS_PER_BYTE = 8.0

# ---- TCP over the WAN ------------------------------------------------------------------
IP_TCP_HEADER_BYTES = 52  # IPv4 20 + TCP 20 + timestamp option 12 (RFC 7323, Linux default)
ETHERNET_WIRE_OVERHEAD_BYTES = 38  # header 14 + FCS 4 + preamble/SFD 8 + inter-frame gap 12
DEFAULT_MTU_BYTES = 9000  # jumbo frames on a dedicated line
DEFAULT_INITIAL_WINDOW_SEGMENTS = 10  # RFC 6928; Linux since 2.6.39

LINE_WHAT = "WAN line"
POOL_WHAT = "WAN connection pool"


# ---------------------------------------------------------------------------- the WAN link


@dataclass(frozen=True)
class WanLink:
    """A cross-datacenter line and the TCP connection pool the transfer engine runs on it.

    capacity_bits_per_s: line rate of all leased lines together (tier rate x count).
    rtt_s: round-trip time between the two datacenters.
    per_connection_bits_per_s: long-run goodput of one TCP connection over this path (window
        and loss limited, Mathis); measured with iperf over one stream.
    connection_pool_size: connections the transfer engine keeps open; one transfer each.
    mtu_bytes: IP MTU; sets the MSS (MTU - 52) and the framing overhead on the line.
    initial_window_segments: the window TCP restarts from after an idle period (RFC 6928).
    slow_start_after_idle: whether an idle connection restarts in slow start (RFC 5681 s4.1,
        Linux default); False for engines that keep windows open (sysctl set to 0).
    stripes_per_transfer: connections one transfer is split over (model/network/wan_streaming.py).
    """

    capacity_bits_per_s: float
    rtt_s: float
    per_connection_bits_per_s: float
    connection_pool_size: int
    mtu_bytes: int = DEFAULT_MTU_BYTES
    initial_window_segments: int = DEFAULT_INITIAL_WINDOW_SEGMENTS
    slow_start_after_idle: bool = True
    stripes_per_transfer: int = 1

    def __post_init__(self):
        for name in ("capacity_bits_per_s", "per_connection_bits_per_s"):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be finite and > 0, got {value}")
        if not (self.rtt_s >= 0 and math.isfinite(self.rtt_s)):
            raise ValueError(f"rtt_s must be finite and >= 0, got {self.rtt_s}")
        for name, least in (
            ("connection_pool_size", 1),
            ("mtu_bytes", IP_TCP_HEADER_BYTES + 1),
            ("initial_window_segments", 1),
        ):
            value = getattr(self, name)
            if int(value) != value or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value}")
        if stripe_servers(self.connection_pool_size, self.stripes_per_transfer) < 1:
            raise ValueError(
                f"stripes_per_transfer must be in 1..connection_pool_size "
                f"({self.connection_pool_size}), got {self.stripes_per_transfer}"
            )

    @property
    def mss_bytes(self) -> int:
        return int(self.mtu_bytes) - IP_TCP_HEADER_BYTES

    @property
    def initial_window_bits(self) -> float:
        """b0 = IW x MSS: the window slow start starts from, in bits."""
        return self.initial_window_segments * self.mss_bytes * BITS_PER_BYTE

    @property
    def goodput_frac(self) -> float:
        """Payload bits per bit on the wire, full-sized segments."""
        return self.mss_bytes / (self.mtu_bytes + ETHERNET_WIRE_OVERHEAD_BYTES)

    @property
    def goodput_bits_per_s(self) -> float:
        return self.capacity_bits_per_s * self.goodput_frac

    @property
    def flow_cap_bits_per_s(self) -> float:
        """The most one flow can get: its connection's rate, or the whole line if less."""
        return min(self.per_connection_bits_per_s, self.goodput_bits_per_s)


@dataclass(frozen=True, eq=False)
class WanResult:
    """The WAN at one arrival rate, for request classes with probability `weights`."""

    transfer_s: np.ndarray  # per class: after prefill end until the last byte is acknowledged
    weights: np.ndarray  # per class, normalised
    connection_wait: WaitModel  # wait for a free connection, common to all classes
    line_utilization_frac: float  # payload load / line goodput
    pool_utilization_frac: float  # mean busy connections / pool size
    mean_load_bits_per_s: float  # payload bits per second offered to the line
    mean_transfer_s: float
    sharing_slowdown: float  # M/G/R-PS stretch factor f >= 1 of a flow's body
    flow_rate_bits_per_s: float  # a flow's mean rate after slow start: cap / f
    hold_s: np.ndarray = None  # per class: time each of its connections is held

    def mean_latency_s(self) -> float:
        """Mean of wait + transfer over the mixture."""
        return self.connection_wait.mean_s() + self.mean_transfer_s

    def latency_quantiles_s(self, quantiles) -> np.ndarray:
        """Quantiles of wait + transfer_s over the mixture of classes."""
        if self.transfer_s.size == 0:
            return np.zeros(np.atleast_1d(np.asarray(quantiles, dtype=float)).shape)
        return mixture_quantiles_s(quantiles, self.weights, self.transfer_s, [self.connection_wait])


# ---------------------------------------------------------------------------- pieces


def send_time_s(payload_bits, rate_bits_per_s: float, link: WanLink) -> np.ndarray:
    """Time to put `payload_bits` through one connection whose rate after slow start is `rate`.

    Fluid slow start: the window doubles each RTT from b0 = IW x MSS, so by time t it has sent
    b0 (2^(t/RTT) - 1) / ln 2 and reaches the window W = rate x RTT at t* = RTT log2(W / b0),
    having sent B* = (W - b0) / ln 2; the rest goes at `rate`. Continuous and non-decreasing in
    the payload; non-increasing in the rate.
    """
    x = np.asarray(payload_bits, dtype=float)
    body = x / rate_bits_per_s
    b0 = link.initial_window_bits
    window = rate_bits_per_s * link.rtt_s
    if not link.slow_start_after_idle or window <= b0 or link.rtt_s == 0:
        return body
    ramp_bits = (window - b0) / math.log(2.0)
    ramp_s = link.rtt_s * math.log2(window / b0)
    in_ramp = link.rtt_s * np.log2(1.0 + np.minimum(x, ramp_bits) * math.log(2.0) / b0)
    return np.where(x <= ramp_bits, in_ramp, ramp_s + (x - ramp_bits) / rate_bits_per_s)


def normalised_classes(payload_bytes, weights) -> tuple[np.ndarray, np.ndarray]:
    x = np.atleast_1d(np.asarray(payload_bytes, dtype=float))
    w = np.atleast_1d(np.asarray(weights, dtype=float))
    if x.ndim != 1 or x.shape != w.shape:
        raise ValueError(f"payload_bytes {x.shape} and weights {w.shape} must be equal 1-d shapes")
    if np.any(~np.isfinite(x)) or np.any(x < 0):
        raise ValueError("payload_bytes must be finite and >= 0")
    if np.any(~np.isfinite(w)) or np.any(w < 0) or (w.size and not w.sum() > 0):
        raise ValueError("weights must be finite, >= 0 and not all zero")
    return x, (w / w.sum() if w.size else w.copy())


# ---------------------------------------------------------------------------- WAN transfer


def wan_transfer(
    link: WanLink,
    payload_bytes: np.ndarray,
    weights: np.ndarray,
    arrival_rate_per_s: float,
    cv2_arrival: float = 1.0,
    prefill_s=None,
    num_layers: int = 1,
    extra_hold_s=None,
) -> WanResult:
    """Per-class transfer times, the wait for a connection and the utilisations of the line
    and the pool, for requests arriving at `arrival_rate_per_s` whose class k (probability
    weights[k]) ships payload_bytes[k] over `link`, each striped over the link's
    `stripes_per_transfer` connections. Raises SaturatedError when the line or the pool
    cannot carry the load.

    prefill_s (per class): stream the KV during a prefill of this service over `num_layers`
    layers (model/network/wan_streaming.py); None: the transfer starts when prefill ends.
    extra_hold_s (per class, mean): connection time after the last acknowledgement (the
    handoff, with `pool_hold: handoff_end`).
    """
    x, w = normalised_classes(payload_bytes, weights)
    if not (arrival_rate_per_s >= 0 and math.isfinite(arrival_rate_per_s)):
        raise ValueError(f"arrival_rate_per_s must be finite and >= 0, got {arrival_rate_per_s}")
    if not cv2_arrival >= 0:
        raise ValueError(f"cv2_arrival must be >= 0, got {cv2_arrival}")
    bits = x * BITS_PER_BYTE
    load = arrival_rate_per_s * float(w @ bits) if x.size else 0.0
    goodput = link.goodput_bits_per_s
    if load >= goodput:
        raise SaturatedError(f"{LINE_WHAT} (goodput after framing)", load, goodput, "bit/s")
    cap = link.flow_cap_bits_per_s
    slowdown = float(ps_slowdown(goodput / cap, load / cap))
    rate = cap / slowdown
    stripe_bits = bits / link.stripes_per_transfer
    tail = stripe_bits / (max(int(num_layers), 1) * rate)  # the last layer at the flow's rate
    after, hold = streamed_times(send_time_s(stripe_bits, rate, link), prefill_s, tail, link.rtt_s)
    sends = bits > 0
    transfer = np.where(sends, after, 0.0)
    extra = 0.0 if extra_hold_s is None else np.asarray(extra_hold_s, float)
    hold = np.where(sends, hold + extra, 0.0)
    mean_t = float(w @ transfer) if x.size else 0.0
    mean_hold = float(w @ hold) if x.size else 0.0
    cv2_service = float(w @ (hold / mean_hold) ** 2) - 1.0 if mean_hold > 0 else 0.0
    pool = link.connection_pool_size
    servers = stripe_servers(pool, link.stripes_per_transfer)
    wait = ggc_wait(
        arrival_rate_per_s, mean_hold, servers, cv2_arrival, max(cv2_service, 0.0), POOL_WHAT
    )
    for a in (transfer, hold, w):
        a.setflags(write=False)
    return WanResult(
        transfer_s=transfer,
        weights=w,
        connection_wait=wait,
        line_utilization_frac=load / goodput,
        pool_utilization_frac=arrival_rate_per_s * link.stripes_per_transfer * mean_hold / pool,
        mean_load_bits_per_s=load,
        mean_transfer_s=mean_t,
        sharing_slowdown=slowdown,
        flow_rate_bits_per_s=rate,
        hold_s=hold,
    )
