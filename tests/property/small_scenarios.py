"""Small random scenarios for the solve tests, and every plan of one listed and checked.

Each scenario has 2-3 GPU types over 1-2 datacenters, a few GPUs of each, 1-2 line tiers
and a small model (dense 32B/70B or a 120B MoE, 1-8 GPUs an instance), so every plan can
be listed: every routing policy solve considers (`solve._policies`), every (datacenter,
GPU, instance shape) per role whose weights fit in HBM, every count within the
availability (shared between roles in a datacenter) where each architecture places its roles
(IDC-PD's in one datacenter: model/placement.py), every number of lines of every tier
within wan.max_lines. Plans are checked with the model solve uses (`prepare` +
`meets_sla` at the same request-class resolution, under the main hit-rate distribution
and every alternative). The demand is set above what the cheapest plan carries, so that
the SLA binds.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import random

from pdd_plan.errors import InfeasibleError, SaturatedError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model import scenario as sc
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.deployment import ARCHITECTURE_ROLES, Deployment, InstanceGroup, LineLease
from pdd_plan.model.evaluate import (
    deployment_cost_usd_per_hour,
    goodput_rps,
    meets_sla,
    prepare,
    snapshot,
)
from pdd_plan.model.placement import placement_problem
from pdd_plan.model.workload import workload as wl
from pdd_plan.plan import solve as sv
from pdd_plan.plan.candidates import shapes
from pdd_plan.plan.search import BCR_HEADROOM

RESOLUTION = (2, 3, 4)
MODELS = ("qwen3_32b", "llama_3_1_70b", "gpt_oss_120b")
GPUS = ("h100_sxm", "h200_sxm", "h20_96g", "l40s", "a100_80g_sxm", "mi300x")
TIERS = ("wave_10g", "wave_100g", "wave_400g")
ARCHS = ("pdd", "pdd", "pdd", "cdc_pd", "idc_pd", "colocated")
ROBUST_EVERY = 4  # every 4th scenario also has a hit-rate alternative
MAX_PLANS = 5000  # per scenario, so that checking every one stays affordable


@functools.cache
def catalog() -> Catalog:
    return Catalog()


def random_scenario(seed: int, objective: str) -> tuple[sc.Scenario, str]:
    """A small scenario whose SLA binds (most of the time), and the architecture to plan."""
    r = random.Random(seed)
    cat = catalog()
    arch = r.choice(ARCHS)
    model = r.choice(MODELS)
    types = r.sample(GPUS, r.choice((2, 3)))

    def offer(gpu: str) -> sc.GpuOffer:
        price = round(cat.gpus[gpu].rental_usd_per_gpu_hour * r.uniform(0.6, 1.4), 2)
        shape = r.choice(((1, 2), (1, 2, 4), (2, 4), ()))
        return sc.GpuOffer(gpu, price, r.choice((4, 6, 8)), shape)

    if arch in ("pdd", "cdc_pd"):
        near = types[: len(types) - 1]
        dcs = (
            sc.Datacenter("dc_a", ("prefill", "relay_decode"), tuple(map(offer, near))),
            sc.Datacenter("dc_b", ("main_decode",), (offer(types[-1]),)),
        )
    else:
        roles = ("prefill", "decode", "colocated")
        split = r.choice((len(types), 1))
        dcs = (sc.Datacenter("dc_a", roles, tuple(map(offer, types[:split]))),)
        if split < len(types):
            dcs += (sc.Datacenter("dc_b", roles, tuple(map(offer, types[split:]))),)
    tiers = tuple(r.sample(TIERS, r.choice((1, 2))))
    prices = {t: round(cat.lines[t].price_usd_per_month * r.uniform(0.5, 2.0)) for t in tiers}
    wan = sc.Wan(r.uniform(0.005, 0.04), tiers, prices, 1e9, 64, r.choice((2, 3)))
    hits = wl.Bins((0.0, 0.5, 0.9), (0.5, 0.9, 0.99), (0.2, 0.3, 0.5))
    alternatives = {}
    if seed % ROBUST_EVERY == 3:
        alternatives["narrow"] = wl.Bins((0.3, 0.7), (0.7, 0.9), (0.5, 0.5))
    work = sc.Workload(
        1.0,  # set below, from the cheapest plan's goodput
        1.0,
        wl.TruncatedLognormal(256, 32768, median=r.choice((1024, 2048, 4096)), sigma=0.5),
        wl.TruncatedLognormal(8, 2048, median=r.choice((64, 128, 256)), sigma=0.8),
        hits,
        alternatives,
    )
    sla = sc.Sla({90.0: r.uniform(0.3, 2.0)}, {90.0: r.uniform(0.025, 0.07)})
    policy = sc.Policy(
        r.choice((None, 0.9)), r.choice(("catch_up", "auto")), sc.ShortOutputCutoff(), 0.8, None
    )
    s = sc.Scenario(
        f"random-{seed}", "", model, "fp8", r.choice((None, "fp8")), dcs, wan, work, sla,
        sc.Objective(objective), policy, sc.Costs(), (arch,),
    )  # fmt: skip
    plans = by_cost(s, arch)
    while len(plans) > MAX_PLANS:  # halve the largest availability until the list is short
        where = [(dc, i) for dc in s.datacenters for i in range(len(dc.gpus))]
        dc, i = max(where, key=lambda di: di[0].gpus[di[1]].max_gpus)
        offers = list(dc.gpus)
        offers[i] = dataclasses.replace(offers[i], max_gpus=max(1, offers[i].max_gpus // 2))
        dcs = tuple(
            dataclasses.replace(d, gpus=tuple(offers)) if d is dc else d for d in s.datacenters
        )
        s = dataclasses.replace(s, datacenters=dcs)
        plans = by_cost(s, arch)
    # a demand above what the cheapest plan carries, so that the SLA binds
    carried = 0.0
    if plans:
        setup = prepare(s, plans[0][1], cat.model(model), cat.gpus, cat.lines, RESOLUTION)
        carried = goodput_rps(setup, rel_tol=1e-2)
    rate = carried * r.uniform(1.2, 2.5) if carried > 0 else r.uniform(2.0, 8.0)
    work = dataclasses.replace(work, arrival_rate_per_s=round(rate, 3))
    return dataclasses.replace(s, workload=work), arch


def every_plan(s: sc.Scenario, arch: str):
    """Every plan within the scenario's limits (module doc)."""
    cat = catalog()
    model = cat.model_for(s)
    options = []
    for role in ARCHITECTURE_ROLES[arch]:
        mine = []
        for dc in (d for d in s.datacenters if role in d.roles):
            for o in dc.gpus:
                gpu = cat.gpus[o.gpu]
                for n in shapes(gpu.gpus_per_node, o.gpus_per_instance):
                    if n > o.max_gpus:
                        continue
                    if not Instance(model, gpu, n, s.kv_dtype, s.weight_dtype).fits():
                        continue
                    mine += [
                        InstanceGroup(role, dc.id, o.gpu, n, k)
                        for k in range(1, o.max_gpus // n + 1)
                    ]
        options.append(mine)
    lines = [()]
    if arch in ("pdd", "cdc_pd"):
        lines = [
            tuple(
                LineLease(t, cat.lines[t].capacity_bits_per_s, k)
                for t, k in zip(s.wan.tiers, counts, strict=True)
                if k
            )
            for counts in itertools.product(range(s.wan.max_lines + 1), repeat=len(s.wan.tiers))
            if 0 < sum(counts) <= s.wan.max_lines
        ]
    most = {(dc.id, o.gpu): o.max_gpus for dc in s.datacenters for o in dc.gpus}
    for policy in sv._policies(s, arch):
        for groups in itertools.product(*options):
            if placement_problem(arch, groups):  # IDC-PD in one datacenter (placement.py)
                continue
            used = {}
            for g in groups:
                used[g.datacenter, g.gpu] = used.get((g.datacenter, g.gpu), 0) + g.gpus
            if all(v <= most[k] for k, v in used.items()):
                for leases in lines:
                    yield Deployment(arch, groups, leases, policy)


def meets(s: sc.Scenario, d: Deployment, rate: float) -> bool:
    """The SLA at `rate`, and the line and every GPU role within the utilisation cap at the
    rate every plan must carry (the demand or the offered rate; issue #14 and helper ha's
    bug hunt: `policy.utilization_cap_frac` is the ceiling of every role)."""
    cat = catalog()
    model = cat.model_for(s)
    dists = (s.workload.prefix_hit_rate, *s.workload.hit_rate_alternatives.values())
    setups = [prepare(s, d, model, cat.gpus, cat.lines, RESOLUTION, h) for h in dists]
    floor = s.objective.demand_rps or s.workload.arrival_rate_per_s
    cap = s.policy.utilization_cap_frac * (1 + 1e-9)
    return all(max(loads(x, floor).values(), default=0.0) <= cap for x in setups) and all(
        meets_sla(x, rate) for x in setups
    )


def loads(setup, rate: float) -> dict[str, float]:
    """Each role's and the line's utilisation at `rate`, evaluate's own figures (the pool
    aside: the search holds the line's bits, not its connections, under the cap);
    saturated: infinite."""
    try:
        util = snapshot(setup, rate).utilization_frac
    except SaturatedError:
        return {"saturated": math.inf}
    return {k: v for k, v in util.items() if k != "wan_pool"}


def capped_goodput(s: sc.Scenario, d: Deployment) -> float:
    """The plan's goodput (the least over the hit-rate distributions), up to the cap."""
    cat = catalog()
    model = cat.model_for(s)
    cap = BCR_HEADROOM * s.workload.arrival_rate_per_s
    dists = (s.workload.prefix_hit_rate, *s.workload.hit_rate_alternatives.values())
    setups = [prepare(s, d, model, cat.gpus, cat.lines, RESOLUTION, h) for h in dists]
    return min(cap, *(goodput_rps(x, rel_tol=1e-5) for x in setups))


def by_cost(s: sc.Scenario, arch: str) -> list[tuple[float, Deployment]]:
    cat = catalog()
    plans = [
        (deployment_cost_usd_per_hour(s, d, cat.gpus, cat.lines), d) for d in every_plan(s, arch)
    ]
    return sorted(plans, key=lambda cd: cd[0])


def run_solve(s: sc.Scenario, arch: str):
    cat = catalog()
    try:
        result = sv.solve(s, cat.model_for(s), cat.gpus, cat.lines, arch, RESOLUTION, 60.0)
    except InfeasibleError:
        return None
    return result if result.status == "optimal" else None
