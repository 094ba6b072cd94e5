"""The relay pool (RLD) by Little's law, with overflow to P -> MD.

RLD holds a relayed request from its arrival until MD has taken it over: its WAN transfer
plus the handoff and MD's catch-up rounds until the stop reaches RLD (catch-up) or plus
the token-id message (one-shot), or its whole output when that ends first; a short-output
cut-off request stays for its output. By Little's law the pool holds a = (arrival rate) x
E[hold] requests: no fixed point on RLD's own tokens. A request that finds every slot
taken is not queued: the router sends it P -> MD like a direct request and it waits for
its KV there. With Poisson arrivals the share that finds the pool full is Erlang-B over
n x K slots (insensitive to the hold distribution).

The step time that sets eager tokens is the step at the batch the pool carries, starting
from the step at the slot limit (the first pass), never from the batch-1 step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model.decode_admission import reserved_tokens, slots_per_instance
from pdd_plan.model.handoff import Handoff, catch_up_extra_tokens
from pdd_plan.model.queueing import erlang_b
from pdd_plan.model.routing import eager_tokens

PASSES = 3  # step -> eager tokens -> handoff -> hold -> batch -> step: settles in two


@dataclass(frozen=True)
class RelayLoad:
    eager_tokens: np.ndarray  # per class, if relayed (0 elsewhere)
    rld_tokens: np.ndarray  # tokens RLD decodes per class, if relayed
    handoff: Handoff | None
    overflow_frac: float  # share of RLD-bound requests that find it full
    slots: int  # per instance
    batch: float  # requests held per instance (time average)
    step_s: float
    utilization_frac: float  # batch / slots

    @property
    def max_batch(self) -> int:  # the name DecodeLoad gives its slots
        return self.slots

    @property
    def kept_frac(self) -> float:
        return 1.0 - self.overflow_frac


def relay_load(
    pool,
    classes,
    relay: np.ndarray,
    local: np.ndarray,
    rate: float,
    wan_time_s: np.ndarray,
    catch_up: bool,
    handoff_of,
    reserve_output_tokens: float | None,
    count_cap: int,
) -> RelayLoad:
    """`relay`, `local`: class masks of the P -> RLD -> MD path and the cut-off;
    `handoff_of(eager)` -> Handoff of each class's eager tokens."""
    inst, n, c = pool.instance, pool.group.count, classes
    held = relay | local
    context = float(c.mean(c.input_tokens)) + 1.0
    reserve = reserved_tokens(c.input_tokens, c.output_tokens, reserve_output_tokens)
    # hold weights for the slot count: by the output on RLD at the slot-limit step
    weights_hold = c.weight * np.where(held, c.output_tokens, 0.0)
    slots = slots_per_instance(inst, reserve, weights_hold, count_cap)
    step = float(inst.decode_step_s(max(slots, 1), context))
    for _ in range(PASSES):
        eager = np.where(relay, eager_tokens(wan_time_s, step, c.output_tokens), 0.0)
        h = handoff_of(eager) if relay.any() else None
        extra = catch_up_extra_tokens(h, step) if (catch_up and h) else 0.0
        kept_tokens = np.where(relay, np.minimum(eager + extra, c.output_tokens), 0.0)
        rld_tokens = np.where(local, c.output_tokens, kept_tokens)
        hold = rld_tokens * step
        if not catch_up and h is not None:  # one-shot: RLD waits for the message, not the rest
            hold = np.where(relay & (eager < c.output_tokens), hold + h.message_s, hold)
        offered = rate * float(np.dot(c.weight[held], hold[held]))
        servers = n * slots
        blocked = erlang_b(servers, offered) if servers > 0 else 1.0
        batch = offered * (1.0 - blocked) / max(n, 1)
        step = float(inst.decode_step_s(max(batch, 1.0), context))
    return RelayLoad(
        eager, rld_tokens, h, blocked, slots, batch, step, batch / slots if slots else 1.0
    )
