"""The relay pool (RLD) by Little's law, with overflow to P -> MD.

RLD holds a relayed request from its arrival until MD has taken it over: its WAN transfer
plus the handoff and MD's catch-up rounds until the stop reaches RLD (catch-up) or plus
the token-id message (one-shot), or its whole output when that ends first; a short-output
cut-off request stays for its output. By Little's law the pool holds a = (arrival rate) x
E[hold] requests: no fixed point on RLD's own tokens. A request that finds no room is not
queued: the router sends it P -> MD like a direct request and it waits for its KV there.
Room is two limits: the KV bytes left, which a request of a long prompt needs more of
(the stochastic knapsack over the pool's KV, per class: model/queueing/knapsack.py; the n
instances' KV pooled, as least-loaded dispatch nearly makes them), and the slots of the
TPOT-feasible batch (Erlang-B over n x the count cap); a request is kept if both have room
(taken as independent). Both are insensitive to the hold distribution under Poisson
arrivals.

The step time that sets eager tokens is the step at the batch the pool carries, starting
from the step at the slot limit (the first pass), never from the batch-1 step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model.decode.decode_admission import kv_bins, reserved_tokens, slots_per_instance
from pdd_plan.model.decode.handoff import Handoff, catch_up_extra_tokens
from pdd_plan.model.queueing.knapsack import knapsack_blocking
from pdd_plan.model.queueing.queueing import erlang_b

PASSES = 3  # step -> eager tokens -> handoff -> hold -> batch -> step: settles in two


def eager_tokens(
    wan_time_s: np.ndarray, rld_step_s: float, output_tokens: np.ndarray
) -> np.ndarray:
    """Tokens RLD emits while MD waits for the KV: one per RLD step, at most the output."""
    return np.minimum(np.ceil(wan_time_s / rld_step_s), output_tokens)


@dataclass(frozen=True)
class RelayLoad:
    eager_tokens: np.ndarray  # per class, if relayed (0 elsewhere)
    rld_tokens: np.ndarray  # tokens RLD decodes per class, if relayed
    handoff: Handoff | None
    blocked_frac: np.ndarray  # per class: the chance an RLD-bound request finds no room
    held_weights: np.ndarray  # per class: requests RLD-bound (0 elsewhere)
    slots: int  # per instance
    batch: float  # requests held per instance (time average)
    step_s: float
    utilization_frac: float  # batch / slots

    @property
    def max_batch(self) -> int:  # the name DecodeLoad gives its slots
        return self.slots

    @property
    def kept_frac(self) -> np.ndarray:
        """Per class: the chance an RLD-bound request is kept there."""
        return 1.0 - self.blocked_frac

    @property
    def overflow_frac(self) -> float:
        """The share of RLD-bound requests that find no room (sent P -> MD)."""
        mass = float(self.held_weights.sum())
        return float(self.held_weights @ self.blocked_frac) / mass if mass > 0 else 0.0


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
    kv_need = np.asarray(inst.held_kv_bytes(np.maximum(np.round(reserve), 1).astype(np.int64)))
    held_need = c.weight * held
    mean_need = float(held_need @ kv_need) / float(held_need.sum()) if held.any() else 0.0
    kv_room = _kv_room_bytes(inst, n, mean_need)
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
        loads = rate * c.weight * np.where(held, hold, 0.0)  # Erlangs per class
        offered = float(loads.sum())
        by_count = erlang_b(n * count_cap, offered) if n * count_cap > 0 else 1.0
        blocked = 1.0 - (1.0 - knapsack_blocking(kv_room, kv_need, loads)) * (1.0 - by_count)
        blocked = np.where(held, blocked, 0.0)
        batch = float(loads @ (1.0 - blocked)) / max(n, 1)
        # the step a held request shares: the others and itself (decode_pool.py)
        step = float(inst.decode_step_s(min(batch + 1.0, max(slots, 1)), context))
    held_weights = c.weight * held
    return RelayLoad(eager, rld_tokens, h, blocked, held_weights, slots, batch, step,
                     batch / slots if slots else 1.0)  # fmt: skip


def _kv_room_bytes(inst, instances: int, mean_need_bytes: float) -> float:
    """The pool's KV room as the knapsack sees it: every instance's KV pool (under expert
    parallelism each GPU's: kv_bins) pooled, as dispatch to the emptiest nearly makes them,
    less what packing whole requests into separate pools leaves unused: half a mean
    request in every pool but one (the remainder when the next request does not fit is
    uniform; one pool alone is the knapsack exactly). Pessimistic where dispatch to the
    emptiest pool keeps many pools even (pdd-paper's 24 EP bins, narrow mix: 2.3 %
    overflow against 1.0 % simulated; pooled without the loss, 0.1 %)."""
    pools = max(instances, 0) * kv_bins(inst)
    total = max(float(inst.kv_capacity_bytes()), 0.0) * max(instances, 0)
    return max(total - max(pools - 1, 0) * mean_need_bytes / 2.0, 0.0)
