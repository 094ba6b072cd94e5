"""The rate above which a plan's WAN connection pool saturates, whatever its GPUs.

`network.wan_transfer` holds a connection (a stripe's worth of them) per transfer for its
send plus the RTT (streamed during prefill: the prefill, then the rest of the send and
the RTT, never less), and calls the pool saturated once (crossing rate) x E[hold] reaches
the transfers the pool runs at once (G/G/K, queueing.ggc_wait). A flow never runs faster
than its cap (one connection, or the whole line if less): the line's sharing only slows it
(M/G/R-PS stretch >= 1), and a send is non-increasing in the flow's rate. So the holds at
the cap are the least any rate gives, and

    rate >= K / (crossing share x E[send at the cap + RTT])

saturates the pool on every plan of that line and pair of datacenters (the line's own
saturation is LineOption.max_rate_rps). The default at 175 req/s: every one of PDD's 372
evaluations was such a plan (issue #15).
"""

from __future__ import annotations

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.model.network.network import BITS_PER_BYTE, WanLink, send_time_s
from pdd_plan.model.network.wan_streaming import stripe_servers

# the model's hold is summed in another order: the ceiling is taken this much higher, so
# it never refuses a plan the model runs
POOL_SLACK = 1e-9


def pool_max_rps(scenario, arch: str, classes, routes, capacity_bits_per_s: float, rtt_s):
    """The least rate at which the pool saturates (inf where nothing crosses)."""
    c = classes
    crossing = routes.path != rt.LOCAL if arch != "pdd" else routes.wan_payload_bytes > 0
    share = float(c.weight[crossing].sum())
    if capacity_bits_per_s <= 0 or share <= 0:
        return np.inf
    wan = scenario.wan
    link = WanLink(
        capacity_bits_per_s,
        rtt_s,
        wan.per_connection_bits_per_s,
        wan.connection_pool_size,
        stripes_per_transfer=wan.stripes_per_transfer,
    )
    stripe_bits = routes.wan_payload_bytes[crossing] * BITS_PER_BYTE / link.stripes_per_transfer
    sends = stripe_bits > 0  # a class that crosses with no bytes holds nothing
    hold = np.where(sends, send_time_s(stripe_bits, link.flow_cap_bits_per_s, link) + rtt_s, 0.0)
    mean_hold = float(np.dot(c.weight[crossing], hold)) / share
    servers = stripe_servers(link.connection_pool_size, link.stripes_per_transfer)
    if mean_hold <= 0:
        return np.inf
    return servers / (share * mean_hold) * (1 + POOL_SLACK)
