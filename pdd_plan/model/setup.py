"""What a deployment is, independent of the arrival rate: request classes, routes,
roofline instances per role, the WAN link and the cost. `evaluate.snapshot` then runs it
at a given rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.model import routing as rt
from pdd_plan.model.caches.cache_tier import MAIN_DECODE
from pdd_plan.model.compute.hardware import Gpu
from pdd_plan.model.compute.llm import ModelSpec
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.decode.mixed_pool import capacity_shares, mixable
from pdd_plan.model.decode_cache import routed
from pdd_plan.model.deployment import Deployment, InstanceGroup
from pdd_plan.model.network.network import WanLink
from pdd_plan.model.scenario import GpuOffer, Scenario
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION, RequestClasses, request_classes

DECODE_ROLE = {"pdd": "main_decode", "cdc_pd": "main_decode", "idc_pd": "decode",
               "colocated": "colocated"}  # fmt: skip
PREFILL_ROLE = {"pdd": "prefill", "cdc_pd": "prefill", "idc_pd": "prefill",
                "colocated": "colocated"}  # fmt: skip


@dataclass(frozen=True)
class RolePool:
    """One group of a role's instances (one GPU type and shape)."""

    group: InstanceGroup
    instance: Instance
    batch_limit: int = 0  # the batch at which a decode step reaches the TPOT limit (or HBM)


@dataclass(frozen=True)
class Setup:
    scenario: Scenario
    deployment: Deployment
    model: ModelSpec
    classes: RequestClasses
    routes: rt.Routes
    prefill: RolePool
    decode: RolePool
    relay: RolePool | None
    link: WanLink | None
    cost_usd_per_hour: float
    # the finishing decode role's groups (model/decode/mixed_pool.py) and each one's share of its
    # requests; `decode` is the group with the largest share (the only one when unmixed)
    decode_groups: tuple[RolePool, ...] = ()
    decode_shares_frac: tuple[float, ...] = ()

    @property
    def mixed(self) -> bool:
        """Whether the finishing decode role holds several groups."""
        return len(self.decode_groups) > 1


def _pools(deployment: Deployment, role: str, model, gpus, scenario) -> list[RolePool]:
    groups = deployment.role(role)
    if not groups:
        raise InputError.single(
            "plan", "plan.instances", f"no {role} instances", f"instances for the {role} role"
        )
    mixable(role, groups)
    return [
        RolePool(
            g,
            Instance(
                model,
                gpus[g.gpu],
                g.gpus_per_instance,
                scenario.kv_dtype,
                scenario.weight_dtype,
                engine_profile=scenario.engine.profile,
            ),
        )  # fmt: skip
        for g in groups
    ]


def _pool(deployment: Deployment, role: str, model, gpus: dict[str, Gpu], scenario) -> RolePool:
    return _pools(deployment, role, model, gpus, scenario)[0]


def tpot_batch_limit(instance, scenario: Scenario, context_tokens: float) -> int:
    """The batch whose decode step reaches the TPOT limit at `context_tokens` (without a
    TPOT limit, the batch that fits HBM): a decode pool's `batch_limit`."""
    tpot = min(scenario.sla.tpot_s.values(), default=None)
    if tpot is None:
        return instance.max_batch(context_tokens)
    return instance.max_batch_for_tpot(tpot, context_tokens)


def _with_batch_limit(pool: RolePool, scenario: Scenario, context_tokens: float) -> RolePool:
    limit = tpot_batch_limit(pool.instance, scenario, context_tokens)
    return RolePool(pool.group, pool.instance, limit)


def batch_limit_context_tokens(classes: RequestClasses) -> float:
    """The context `prepare` sizes every decode pool's batch limit at: input + half the
    output, weighted by output tokens, over every class (plan/first_pass.py reads the same
    figure, so its ceiling is the model's to the bit)."""
    c = classes
    return float(
        np.dot(c.weight * c.output_tokens, c.input_tokens + c.output_tokens / 2)
        / np.dot(c.weight, c.output_tokens)
    )


def decode_context_tokens(classes: RequestClasses) -> float:
    """The mean context of a decode step: input + half the output, weighted by the
    output tokens each request spends on decode."""
    weight = classes.weight * classes.output_tokens
    context = classes.input_tokens + classes.output_tokens / 2
    return float(np.dot(weight, context) / weight.sum())


def check_holds_a_request(setup: Setup) -> None:
    """A plan whose decode instances (RLD or MD, decode, colocated) cannot hold one
    request of the mean context beside the weights cannot run at any rate: bad input
    (exit 2), refused alike by `evaluate` and `simulate`, never a "saturated" result."""
    context = decode_context_tokens(setup.classes)
    for pool in (setup.relay, setup.decode, *setup.decode_groups):
        if pool is not None and pool.instance.max_batch(context) < 1:
            g = pool.group
            raise InputError.single(
                "plan", "plan.instances", f"{g.role} on {g.gpus_per_instance} x {g.gpu}",
                "an instance shape whose HBM holds at least one request's KV next to the "
                "weights", f"mean decode context {context:,.0f} tokens",
            )  # fmt: skip


@dataclass(frozen=True)
class CostItem:
    """One hourly charge of a deployment: what `cost_usd_per_hour` sums, and what the bill
    of materials lists, so the two cannot disagree."""

    kind: str  # gpu_rental | power | spare_gpus | line_lease | decode_cache
    datacenter: str
    role: str  # the instance role; "" for spare GPUs and lines
    item: str  # GPU id, line tier id or cache tier id
    units: float  # GPUs or lines (whole), or TB of cache
    unit_usd_per_hour: float
    usd_per_hour: float


def power_usd_per_kwh(scenario: Scenario, datacenter: str) -> float:
    """The datacenter's electricity tariff: its quoted one (`prices.power`), else the
    scenario's `costs.power_usd_per_kwh`."""
    site = next((dc for dc in scenario.datacenters if dc.id == datacenter), None)
    own = site.power_usd_per_kwh if site is not None else None
    return scenario.costs.power_usd_per_kwh if own is None else own


def power_usd_per_gpu_hour(scenario: Scenario, gpu: Gpu, datacenter: str) -> float:
    """Electricity of one GPU at full board power: TDP x PUE x the datacenter's tariff."""
    kw = gpu.facility_power_w(scenario.costs.pue) / 1e3
    return kw * power_usd_per_kwh(scenario, datacenter)


def gpu_usd_per_gpu_hour(scenario: Scenario, offer: GpuOffer, gpu: Gpu, datacenter: str) -> float:
    """What one GPU of `datacenter`'s `offer` costs an hour: its rental (quoted or the
    catalog's), plus its electricity when `costs.include_power`. The one price the
    optimiser's candidates, its search space and the bill (`cost_items`, which lists the two
    parts apart) all use."""
    power = 0.0
    if scenario.costs.include_power:
        power = power_usd_per_gpu_hour(scenario, gpu, datacenter)
    return offer.price_usd_per_gpu_hour + power


def gpus_by_datacenter(deployment: Deployment) -> dict[tuple[str, str], int]:
    """GPUs in use per (datacenter, GPU type): what is packed onto orderable nodes."""
    used: dict[tuple[str, str], int] = {}
    for g in deployment.instances:
        used[(g.datacenter, g.gpu)] = used.get((g.datacenter, g.gpu), 0) + g.gpus
    return used


def nodes_needed(gpus_used: int, gpus_per_node: int) -> int:
    """Whole nodes that hold `gpus_used` GPUs (instances of several shapes share nodes)."""
    return -(-gpus_used // gpus_per_node)


def line_price_usd_per_month(scenario: Scenario, lines, tier: str) -> float:
    """The scenario's price for a tier where it sets one, else the catalog's."""
    return scenario.wan.tier_price_usd_per_month.get(tier, lines[tier].price_usd_per_month)


def cost_items(scenario: Scenario, deployment: Deployment, gpus, lines) -> list[CostItem]:
    """Every hourly charge: GPU rental per role, its power when `costs.include_power`, the
    idle GPUs of the last node when `costs.charge_whole_nodes`, the leased lines."""
    items = []
    for g in deployment.instances:
        price = _offer(scenario, g.datacenter, g.gpu).price_usd_per_gpu_hour
        items.append(CostItem("gpu_rental", g.datacenter, g.role, g.gpu, g.gpus, price,
                              g.gpus * price))  # fmt: skip
        if scenario.costs.include_power:
            power = power_usd_per_gpu_hour(scenario, gpus[g.gpu], g.datacenter)
            items.append(CostItem("power", g.datacenter, g.role, g.gpu, g.gpus, power,
                                  g.gpus * power))  # fmt: skip
    if scenario.costs.charge_whole_nodes:  # a rented node is paid whole, idle GPUs too
        for (dc, gpu_id), used in gpus_by_datacenter(deployment).items():
            per_node = gpus[gpu_id].gpus_per_node
            spare = nodes_needed(used, per_node) * per_node - used
            price = _offer(scenario, dc, gpu_id).price_usd_per_gpu_hour
            if spare:
                items.append(CostItem("spare_gpus", dc, "", gpu_id, spare, price, spare * price))
    for lease in deployment.lines:
        hourly = line_price_usd_per_month(scenario, lines, lease.tier) / HOURS_PER_MONTH
        items.append(CostItem("line_lease", "", "", lease.tier, lease.count, hourly,
                              lease.count * hourly))  # fmt: skip
    return items + decode_cache_items(deployment)


def decode_cache_items(deployment: Deployment) -> list[CostItem]:
    """The decode-side cache tier: its TB at the plan's price per TB-month, charged where
    the main-decode instances are (units: TB; none when no tier is bought)."""
    buy = deployment.decode_cache
    groups = [g for g in deployment.instances if g.role == MAIN_DECODE and g.count > 0]
    if buy is None or buy.tb <= 0 or not groups:
        return []
    per_tb_hour = buy.price_usd_per_tb_month / HOURS_PER_MONTH
    return [CostItem("decode_cache", groups[0].datacenter, MAIN_DECODE, buy.tier, buy.tb,
                     per_tb_hour, buy.usd_per_hour)]  # fmt: skip


def _offer(scenario: Scenario, datacenter: str, gpu_id: str):
    return next(o for o in scenario.datacenter(datacenter).gpus if o.gpu == gpu_id)


def deployment_cost_usd_per_hour(scenario: Scenario, deployment: Deployment, gpus, lines) -> float:
    """The answer's cost per hour: the sum of `cost_items`, the one cost formula."""
    return sum(item.usd_per_hour for item in cost_items(scenario, deployment, gpus, lines))


def prepare(
    scenario: Scenario,
    deployment: Deployment,
    model: ModelSpec,
    gpus: dict[str, Gpu],
    lines: dict,
    resolution=DEFAULT_RESOLUTION,
    hit_rate=None,
) -> Setup:
    w = scenario.workload
    classes = request_classes(
        w.input_tokens, w.output_tokens, hit_rate or w.prefix_hit_rate, resolution
    )
    arch = deployment.architecture
    # each class split by MD residency (decode_cache.py), at the scenario's arrival rate
    classes, routes = routed(scenario, arch, deployment.policy, classes, model,
                             deployment=deployment)  # fmt: skip
    prefill = _pool(deployment, PREFILL_ROLE[arch], model, gpus, scenario)
    context = batch_limit_context_tokens(classes)
    groups = [
        _with_batch_limit(p, scenario, context)
        for p in _pools(deployment, DECODE_ROLE[arch], model, gpus, scenario)
    ]
    shares = capacity_shares(groups, context)
    decode = groups[max(range(len(groups)), key=shares.__getitem__)]
    relay = None
    if arch == "pdd":
        relay = _with_batch_limit(
            _pool(deployment, "relay_decode", model, gpus, scenario), scenario, context
        )
    link = None
    if arch in ("pdd", "cdc_pd"):
        link = WanLink(
            capacity_bits_per_s=deployment.line_capacity_bits_per_s,
            rtt_s=scenario.wan.rtt_between(prefill.group.datacenter, decode.group.datacenter),
            per_connection_bits_per_s=scenario.wan.per_connection_bits_per_s,
            connection_pool_size=scenario.wan.connection_pool_size,
            stripes_per_transfer=scenario.wan.stripes_per_transfer,
        )
    cost = deployment_cost_usd_per_hour(scenario, deployment, gpus, lines)
    return Setup(scenario, deployment, model, classes, routes, prefill, decode, relay, link, cost,
                 tuple(groups), shares)  # fmt: skip
