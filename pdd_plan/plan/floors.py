"""The SLA floors, in figures: when a role has no candidate because no instance meets an
SLA limit even unloaded, how far the best one is from it.

- TTFT: a request's TTFT is at least its prefill time alone (no queue, no transfer), so
  the TTFT percentile of the prefill times of the fastest prefill candidate is a floor;
- TPOT: a decoding request's TPOT is at least one decode step at batch 1 at the
  context it decodes at (the mean over the output tokens), so the fastest decode
  candidate's step there is a floor.
These only name the figures of what space.py / bounds.py already proved (`no_candidate`);
they do not decide anything.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pdd_plan.model.queueing.latency_mixture import LatencyGroup, grouped_quantiles_s
from pdd_plan.plan.candidates import shapes
from pdd_plan.plan.figures import up_3g
from pdd_plan.plan.shortfalls import Miss, at_least

PREFILL_ROLES = ("prefill", "colocated")
DECODE_ROLES = ("decode", "main_decode", "relay_decode", "colocated")


def _instances(plans, role: str):
    """Every (label, instance) a role may use whose weights fit."""
    s = plans.scenario
    for dc in (d for d in s.datacenters if role in d.roles):
        for offer in dc.gpus:
            gpu = plans.gpus[offer.gpu]
            for n in shapes(gpu.gpus_per_node, offer.gpus_per_instance):
                inst = plans._instance(gpu.id, n)
                if inst.fits():
                    yield f"{gpu.id} x{n} in {dc.id}", inst


def ttft_floors(plans, role: str) -> list[Miss]:
    """Each TTFT limit the fastest candidate's prefill time alone misses."""
    out = []
    limits = plans.scenario.sla.ttft_s
    best: dict[float, tuple[float, str]] = {}
    for label, inst in _instances(plans, role):
        for p in limits:
            worst = 0.0
            for c in plans.classes:  # every hit-rate distribution must be met
                service = np.asarray(inst.prefill_time_s(c.uncached_tokens, c.cached_tokens))
                got = grouped_quantiles_s([p / 100], [LatencyGroup(c.weight, service)])[0]
                worst = max(worst, got)
            if p not in best or worst < best[p][0]:
                best[p] = (worst, label)
    for p, (floor, label) in best.items():
        if floor > limits[p]:
            miss = at_least(
                f"TTFT P{p:g} limit ({role}: the prefill time alone on {label})",
                floor,
                limits[p],
                "s",
                "sla",
                f"sla.ttft_p{p:g}_s",
                up_3g(floor),
            )
            out.append(_or_faster(miss))  # fmt: skip
    return out


def tpot_floors(plans, role: str) -> list[Miss]:
    """Each TPOT limit the fastest candidate's decode step at batch 1 misses."""
    limits = plans.scenario.sla.tpot_s
    if not limits:
        return []
    step_best, label_best = np.inf, ""
    for label, inst in _instances(plans, role):
        step = 0.0
        for c in plans.classes:
            w, out = c.weight, c.output_tokens
            tokens = float(np.dot(w, out))
            ctx = c.input_tokens + out / 2
            context = max(float(np.dot(w * out, ctx)) / tokens, 1.0) if tokens else 1.0
            step = max(step, float(inst.decode_step_s(1.0, context)))
        if step < step_best:
            step_best, label_best = step, label
    p, limit = min(limits.items(), key=lambda kv: kv[1])
    if not step_best > limit:
        return []
    miss = at_least(f"TPOT P{p:g} limit ({role}: one decode step at batch 1 on {label_best})",
                    step_best * 1e3, limit * 1e3, "ms", "sla", f"sla.tpot_p{p:g}_ms",
                    up_3g(step_best * 1e3))  # fmt: skip
    return [_or_faster(miss)]


def _or_faster(miss: Miss) -> Miss:
    return dataclasses.replace(
        miss, relaxation=f"{miss.relaxation}, or a faster GPU or larger instance shape"
    )


def sla_floors(plans, roles) -> list[Miss]:
    """The SLA floors the roles without a candidate miss."""
    out = []
    for role in roles:
        if role in PREFILL_ROLES:
            out += ttft_floors(plans, role)
        if role in DECODE_ROLES:
            out += tpot_floors(plans, role)
    return out
