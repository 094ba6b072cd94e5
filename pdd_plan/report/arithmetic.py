"""What each role of a plan carries: the arithmetic the sizing report shows per role."""

from __future__ import annotations

import numpy as np

from pdd_plan.errors import SaturatedError
from pdd_plan.model import evaluate as ev
from pdd_plan.model import routing as rt
from pdd_plan.model.decode.mixed_pool import members
from pdd_plan.model.decode_side import decode_side
from pdd_plan.model.evaluate import DECODE_ROLE, PREFILL_ROLE, Setup


def _pool_fields(pool) -> dict:
    g = pool.group
    return {
        "datacenter": g.datacenter,
        "gpu": g.gpu,
        "gpus_per_instance": g.gpus_per_instance,
        "instances": g.count,
    }


def _decode_entry(role, pool, load, rate, weights, tokens, context) -> dict:
    share = float(weights.sum())
    mass = float(np.dot(weights, tokens))
    return {
        "role": role,
        "stage": "decode",
        **_pool_fields(pool),
        "requests_per_s": rate * share,
        "tokens_per_request": mass / share if share else 0.0,
        "tokens_per_s": rate * mass,
        "mean_context_tokens": float(np.dot(weights, tokens * context)) / mass if mass else 0.0,
        "batch_per_instance": float(load.batch),
        "max_batch_hbm": int(load.max_batch),
        "tpot_batch_limit": int(pool.batch_limit),
        "step_s": float(load.step_s),
        "utilization_frac": float(load.utilization_frac),
    }


def role_arithmetic(setup: Setup, rate: float) -> list[dict] | None:
    """What each role carries at `rate`: the quantities `evaluate`'s snapshot computes on
    the way to its metrics (prefill time and queue per request, decode batch and step),
    by the same calls in the same order, so the utilisations are the metrics' own. None
    when a queue saturates at `rate`.

    Prefill utilisation is the load against the pool's capacity (busy time when one
    request is one step; with batched prefill, against full steps); decode utilisation is
    the batch over the batch that fits HBM (what `evaluate` reports for decode roles).
    """
    c, routes, arch = setup.classes, setup.routes, setup.deployment.architecture
    context = c.input_tokens + c.output_tokens / 2
    try:
        service, p_wait, p_util = ev._prefill(setup, rate)
        # one decode side per group of the finishing role (one unless it is mixed)
        parts = [(s, su, _side(su, rate, service, p_util, s)) for s, su in members(setup)]
        side = parts[0][2]
        relay_entry = None
        if side.relay is not None:
            rl = side.relay
            near = (routes.path == rt.RELAY) | (routes.path == rt.LOCAL)
            relay_entry = _decode_entry(
                "relay_decode", setup.relay, rl, rate, c.weight * near * rl.kept_frac,
                rl.rld_tokens, context,
            )  # fmt: skip
    except SaturatedError:
        return None
    mean_service = c.mean(service)
    prefill = {
        "role": PREFILL_ROLE[arch],
        "stage": "prefill",
        **_pool_fields(setup.prefill),
        "requests_per_s": rate,
        "mean_input_tokens": c.mean(c.input_tokens),
        "mean_cached_input_tokens": c.mean(c.cached_tokens),
        "mean_uncached_input_tokens": c.mean(c.uncached_tokens),
        "mean_prefill_s": mean_service,
        "mean_queue_wait_s": p_wait.mean_s(),
        # utilisation = rate / (instances x capacity), batched prefill or not
        "instance_capacity_rps": rate / (setup.prefill.group.count * p_util) if p_util else 0.0,
        "utilization_frac": float(p_util),
    }
    decodes = []
    for share, su, sd in parts:
        entry = _decode_entry(
            DECODE_ROLE[arch], su.decode, sd.md, rate, sd.md_weights, sd.md_tokens, context
        )
        if setup.mixed:  # the router's split (model/decode/mixed_pool.py)
            entry["share_of_role_frac"] = share
        decodes.append(entry)
    if arch == "colocated":  # prefill steals time from the decode steps of the same instances
        decodes[0]["effective_step_s"] = decodes[0]["step_s"] / max(1e-9, 1.0 - p_util)
    return [e for e in (prefill, relay_entry, *decodes) if e is not None]


def _side(setup: Setup, rate: float, service, p_util: float, share: float):
    """The decode side as `evaluate`'s snapshot solves it: the line, then decode (twice
    with pool_hold handoff_end); `share`: of the role's requests, this group's."""
    if setup.link is not None:
        return ev._wan_and_decode(setup, rate, service, p_util, share)[2]
    return decode_side(setup, rate, np.zeros(len(setup.classes)), p_util, share)
