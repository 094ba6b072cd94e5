"""How a transfer engine uses the line: KV streamed during prefill, a transfer striped over
several pooled connections, and how long a transfer keeps its connections.

Pure numbers (no link object): `network.wan_transfer` feeds them its single-flow times.

Streaming (`streamed_times`). Engines that ship KV layer by layer (Mooncake's transfer
engine, NIXL-based connectors) start sending when prefill starts; layer l's KV exists once
prefill has run l of L layers, i.e. bytes appear uniformly over the prefill's service S.
A flow that needs `send_s` to push its bytes from an idle connection therefore finishes
sending at max(send_s, S + tail_s) after prefill start, where tail_s is the last layer's
share (its 1/L of the bytes at the flow's rate, released only when prefill ends). What
shows after prefill ends is max(send_s - S, tail_s) + one RTT for the last
acknowledgement; the connection is held from prefill start, so a transfer shorter than its
prefill holds its connection for S + tail_s + RTT, longer than without streaming (pool
occupancy rises with streaming). Without streaming both are send_s + RTT from prefill end.
This is `rdma_visible` of the RDMA path (evaluate/_ttft_groups) applied to the WAN.

Striping (`stripe_servers`). A transfer split over N connections sends x / N on each, each
with its own slow start and per-connection cap, all sharing the line fairly (the line's
load and the M/G/R-PS stretch do not change: same bits, same per-flow cap). It ends when
its last stripe does (equal stripes end together) and holds N connections throughout; the
pool of K connections then serves floor(K / N) striped transfers at a time (FIFO,
all-or-nothing: a conservative reading of a per-stripe FIFO, which can start some stripes
of a transfer in connections left over).

Pool hold (`POOL_HOLDS`). `transfer_end`: a connection is released when its transfer's
last byte is acknowledged. `handoff_end`: a relayed request's connection is kept until its
extend-decode handoff completes (model/decode/handoff.py: message RTT + engine fixed cost + MD
slot wait + step boundary + extend step), as an engine does that frees the transfer's
state only when MD confirms the takeover; direct requests release at transfer end. Pool
occupancy is then arrival rate x E[hold] (Little), hold = transfer + handoff for relayed.
"""

from __future__ import annotations

import numpy as np

POOL_HOLDS = ("transfer_end", "handoff_end")


def streamed_times(send_s, prefill_s, tail_s, rtt_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(after prefill end until the last byte is acknowledged, connection hold) per flow.

    send_s: time to push the flow's bytes from an idle connection (slow start + body);
    prefill_s: the prefill's service time (None: no streaming, the flow starts at its end);
    tail_s: the last layer's share of the send (1 / L of the bytes at the flow's rate).
    """
    send = np.asarray(send_s, float)
    if prefill_s is None:
        done = send + rtt_s
        return done, done
    prefill = np.asarray(prefill_s, float)
    after = np.maximum(send - prefill, np.asarray(tail_s, float)) + rtt_s
    return after, prefill + after


def stripe_servers(pool_size: int, stripes: int) -> int:
    """Striped transfers the pool runs at once: each holds `stripes` connections."""
    if int(stripes) != stripes or stripes < 1:
        raise ValueError(f"stripes must be an integer >= 1, got {stripes}")
    return int(pool_size) // int(stripes)
