"""Figures for a role no candidate can serve, where floors.py names no SLA floor: for each
way its candidates fail, the closest one and how far it is.

- the weights do not fit (Instance.fits) on any shape allowed: the weights per GPU
  against the HBM usable per GPU, and the smallest shape of the GPU they fit on;
- more instances than the availability or the power budget allows (bounds.py's fewest
  instances, a proof): the GPUs or kW the candidate needs at least;
- no count meets the SLA (a bound's proof): the TTFT percentile of the prefill alone
  (the batched pool's own steps where it batches), or one decode step at batch 1 at the
  role's mean context against the TPOT limit, or one request's KV against the HBM room.
Each figure is a lower bound for its candidate (a relaxation reads "at least"): other
limits may bind once it is lifted.
"""

from __future__ import annotations

import math

from pdd_plan.errors import InfeasibleError
from pdd_plan.model.queueing.latency_mixture import LatencyGroup, grouped_quantiles_s
from pdd_plan.plan import bounds as bd
from pdd_plan.plan.candidates import shapes
from pdd_plan.plan.ceilings import ShortfallError
from pdd_plan.plan.figures import up_3g, up_fixed
from pdd_plan.plan.shortfalls import Miss, at_least

GB = 1e9
LARGEST_SHAPE = 64  # GPUs per instance tried for the smallest shape the weights fit on


def refuse(why: str, search, roles) -> None:
    """InfeasibleError for roles no candidate serves, with the figures when found."""
    misses = role_misses(search, roles)
    if not misses:
        raise InfeasibleError(why)
    what = "; ".join(f"{m.line()} (relax: {m.relaxation})" for m in misses)
    raise ShortfallError(f"{why} ({what})", misses)


def role_misses(search, roles) -> list[Miss]:
    """The closest candidate of each way `roles` fail (module doc), each role's own."""
    out = []
    for role in roles:
        found = {}
        for dc, offer, n in _offered(search.plans.scenario, search.plans.gpus, role):
            for miss in _candidate(search, role, dc, offer, n):
                best = found.get(miss.kind)
                if best is None or _ratio(miss) < _ratio(best):
                    found[miss.kind] = miss
        if not found:
            found["hbm"] = _weights(search.plans, role)
        out += list(found.values())
    return out


def _ratio(m: Miss) -> float:
    """How far a candidate is from its limit (the closest is named)."""
    return m.needs / m.has if m.has > 0 else math.inf


def _offered(scenario, gpus, role):
    for dc in (d for d in scenario.datacenters if role in d.roles):
        for offer in dc.gpus:
            for n in shapes(gpus[offer.gpu].gpus_per_node, offer.gpus_per_instance):
                yield dc, offer, n


def _candidate(search, role, dc, offer, n) -> list[Miss]:
    plans = search.plans
    inst = plans._instance(offer.gpu, n)
    if not inst.fits() or (offer.max_gpus is not None and n > offer.max_gpus):
        return []  # the weights: _weights, when no candidate has another figure
    label = f"{role} on {n} x {offer.gpu} in {dc.id}"
    out = []
    for sp in search.spaces:
        routes = [plans._classes_routes(sp.policy, c) for c in plans.classes]
        found = [plans._role_bound(role, inst, sp.policy, i, c, r)
                 for i, (c, r) in enumerate(routes)]  # fmt: skip
        need = [b.min_count(plans.floor_rps) for b in found]
        if None in need:
            out += [m for b, k in zip(found, need, strict=True) if k is None
                    for m in _hopeless(plans.scenario, b, label)]  # fmt: skip
            continue
        most, limit = plans._most_instances(dc, offer, n)
        if max(need) > most:
            out.append(_count(plans, dc, offer, n, max(need), limit, label))
    return out


def _count(plans, dc, offer, n, need: int, limit: str, label: str) -> Miss:
    """More instances than the availability or power allows: the GPUs or kW needed."""
    if limit == "available":
        key = f"datacenters[{dc.id}].gpus[{offer.gpu}].max_gpus"
        return at_least(
            f"{offer.gpu} in {dc.id} ({label}: at least {need} instances)",
            need * n,
            offer.max_gpus,
            "GPUs",
            "availability",
            key,
            str(need * n),
        )
    kw = need * n * plans.power_w(offer.gpu) / 1e3
    key = f"datacenters[{dc.id}].power_budget_kw"
    return at_least(
        f"power in {dc.id} ({label}: at least {need} instances)",
        kw,
        dc.power_budget_w / 1e3,
        "kW",
        "power",
        key,
        up_fixed(kw, 1),
    )


def _hopeless(scenario, bound, label: str) -> list[Miss]:
    """Why a bound finds no count: the prefill alone misses a TTFT limit, or its decode
    part (colocated) or the decode pool misses TPOT at batch 1, or holds no request."""
    if isinstance(bound, bd.CeilingOnly):
        bound = bound.sizing()
    if isinstance(bound, bd.PrefillBound):
        out = _ttft_alone(scenario, bound, label)
        if bound.decode is not None:
            out += _decode_alone(scenario, bound.decode, label)
        return out
    if isinstance(bound, bd.DecodeBound):
        return _decode_alone(scenario, bound, label)
    return []


def _ttft_alone(scenario, b, label: str) -> list[Miss]:
    out = []
    for p, limit in scenario.sla.ttft_s.items():
        got = grouped_quantiles_s([p / 100], [LatencyGroup(b.c.weight, b.service)])[0]
        if got > limit + bd.TTFT_MARGIN_S:
            out.append(at_least(f"TTFT P{p:g} ({label}: the prefill alone)", got, limit, "s",
                                "sla", f"sla.ttft_p{p:g}_s", up_3g(got)))  # fmt: skip
    return out


def _decode_alone(scenario, d, label: str) -> list[Miss]:
    if d.inst.max_batch(d.context) < 1:
        need = float(d.inst.model.resident_kv_bytes(max(round(d.context), 1), d.inst.kv_dtype))
        room = max(d.inst.kv_capacity_bytes(), 0.0)
        return [Miss(f"KV room ({label}: one request of {d.context:,.0f} tokens)",
                     need / GB, room / GB, "GB",
                     f"HBM left for KV at least {up_3g(need / GB)} GB an instance: a GPU with "
                     "more HBM or a larger instance shape", "hbm")]  # fmt: skip
    step = float(d.inst.decode_step_s(1.0, d.context))
    if d.limit is None or step <= d.limit:
        return []
    p, limit = min(scenario.sla.tpot_s.items(), key=lambda kv: kv[1])
    return [
        at_least(
            f"TPOT P{p:g} ({label}: one decode step at batch 1)",
            step * 1e3,
            limit * 1e3,
            "ms",
            "sla",
            f"sla.tpot_p{p:g}_ms",
            up_3g(step * 1e3),
        )
    ]


def _weights(plans, role: str) -> Miss:
    """No shape allowed holds the weights. Per GPU offered: the smallest instance they fit
    on; where the availability is below it, the GPUs needed; else the weights per GPU
    against the HBM usable per GPU at the largest shape allowed. The GPU closest to
    fitting is named (no GPU offered for the role at all: that)."""
    found = []
    for dc in (d for d in plans.scenario.datacenters if role in d.roles):
        for offer in dc.gpus:
            allowed = [n for n in shapes(plans.gpus[offer.gpu].gpus_per_node,
                                         offer.gpus_per_instance)
                       if offer.max_gpus is None or n <= offer.max_gpus]  # fmt: skip
            fits = next((k for k in range(1, LARGEST_SHAPE + 1)
                         if plans._instance(offer.gpu, k).fits()), None)  # fmt: skip
            found.append(_unfit(plans, role, dc, offer, max(allowed, default=0), fits))
    if not found:
        return Miss(f"datacenters whose roles include {role}", 1, 0, "", f"at least one "
                    f"datacenter with {role} in its roles and a GPU offered", "role")  # fmt: skip
    return min(found, key=lambda m: m.needs / m.has if m.has else math.inf)


def _unfit(plans, role, dc, offer, largest: int, fits: int | None) -> Miss:
    key = f"datacenters[{dc.id}].gpus[{offer.gpu}]"
    if fits is not None and offer.max_gpus is not None and offer.max_gpus < fits:
        return at_least(
            f"{offer.gpu} in {dc.id} ({role}: the weights fit on {fits} GPUs)",
            fits,
            offer.max_gpus,
            "GPUs",
            "availability",
            f"{key}.max_gpus",
            str(fits),
        )
    inst = plans._instance(offer.gpu, max(largest, 1))
    relax = "a GPU with more HBM, or lighter weights (weight_dtype)"
    if fits is not None:
        relax = f"{key}.gpus_per_instance allowing at least {fits}, or {relax}"
    return Miss(
        f"weights per GPU ({role} on {inst.gpus} x {offer.gpu} in {dc.id})",
        inst.weight_bytes_per_gpu() / GB, inst._usable_bytes_per_gpu() / GB, "GB", relax, "hbm",
    )  # fmt: skip
