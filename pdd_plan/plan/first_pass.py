"""PDD main decode's first pass, as `decode_side` runs it: the most tokens/s one MD
instance carries before the model calls the pool saturated, whatever RLD does.

`decode_side` solves MD once with every remote request's whole output on it (the MD the
handoff sees), before RLD takes its eager tokens, and a saturated pool there fails the
plan at that rate. That pass is `decode_fixed_point` on K slots per instance (K from
`slots_per_instance`, capped by the batch whose step reaches the TPOT limit): it
saturates when `rate / n x T x step(K) > K`, T the remote output tokens per request of the
stream, step(K) the step at the pass's mean context. So `n K / step(K) / T` is the exact
rate above which every plan with n such instances fails, read off the same functions.
Nothing here depends on the counts, the line or the rate: one figure per candidate,
routing policy and hit-rate distribution (space.py keys the bounds so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.decode.decode_admission import (
    count_cap,
    reserve_output_tokens,
    reserved_tokens,
    slots_per_instance,
)
from pdd_plan.model.decode_side import context_tokens
from pdd_plan.model.setup import RolePool, batch_limit_context_tokens, tpot_batch_limit


@dataclass(frozen=True)
class FirstPass:
    tokens_per_request: float  # remote output tokens per request of the stream
    slots: int  # K: requests one instance admits in the pass
    step_s: float  # the step at K slots and the pass's mean context

    @property
    def tokens_per_s(self) -> float:
        """What one instance carries at its slot limit (0 when no request fits)."""
        return self.slots / self.step_s if self.slots >= 1 else 0.0


def first_pass(inst: Instance, classes, routes, scenario) -> FirstPass:
    """MD's first pass for classes routed as `routes` (PDD: every path but the cut-off's
    LOCAL reaches MD with its whole output), as `decode_side.pool_load` sizes it."""
    c = classes
    remote = routes.path != rt.LOCAL
    full = np.where(remote, c.output_tokens, 0.0)
    weights = c.weight * remote
    context = context_tokens(c, full, weights)
    reserve = reserved_tokens(c.input_tokens, c.output_tokens, reserve_output_tokens(scenario))
    limit = tpot_batch_limit(inst, scenario, batch_limit_context_tokens(c))
    cap = count_cap(RolePool(None, inst, limit), context)
    slots = slots_per_instance(inst, reserve, weights * full, cap)
    step = float(inst.decode_step_s(float(max(slots, 1)), context))
    return FirstPass(float(np.dot(weights, full)), int(slots), step)
