"""What a deployment is, independent of the arrival rate: request classes, routes,
roofline instances per role, the WAN link and the cost. `evaluate.snapshot` then runs it
at a given rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.errors import InputError
from pdd_plan.model import routing as rt
from pdd_plan.model.deployment import Deployment, InstanceGroup
from pdd_plan.model.hardware import Gpu
from pdd_plan.model.llm import ModelSpec
from pdd_plan.model.network import WanLink
from pdd_plan.model.roofline import Instance
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload import DEFAULT_RESOLUTION, RequestClasses, request_classes
from pdd_plan.units import HOURS_PER_MONTH

DECODE_ROLE = {"pdd": "main_decode", "cdc_pd": "main_decode", "idc_pd": "decode",
               "colocated": "colocated"}  # fmt: skip
PREFILL_ROLE = {"pdd": "prefill", "cdc_pd": "prefill", "idc_pd": "prefill",
                "colocated": "colocated"}  # fmt: skip


@dataclass(frozen=True)
class RolePool:
    """One role's instances (a single GPU type and shape per pool)."""

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


def _pool(deployment: Deployment, role: str, model, gpus: dict[str, Gpu], scenario) -> RolePool:
    groups = deployment.role(role)
    if not groups:
        raise InputError.single(
            "plan", "plan.instances", f"no {role} instances", f"instances for the {role} role"
        )
    if len(groups) > 1:
        raise InputError.single(
            "plan",
            "plan.instances",
            f"{len(groups)} instance groups for the {role} role",
            "one GPU type and shape per role (mixed pools within a role are not modelled yet)",
        )
    g = groups[0]
    inst = Instance(
        model, gpus[g.gpu], g.gpus_per_instance, scenario.kv_dtype, scenario.weight_dtype,
        engine_profile=scenario.engine.profile,
    )  # fmt: skip
    return RolePool(g, inst)


def _with_batch_limit(pool: RolePool, scenario: Scenario, context_tokens: float) -> RolePool:
    tpot = min(scenario.sla.tpot_s.values(), default=None)
    limit = pool.instance.max_batch(context_tokens)
    if tpot is not None:
        limit = pool.instance.max_batch_for_tpot(tpot, context_tokens)
    return RolePool(pool.group, pool.instance, limit)


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
    for pool in (setup.relay, setup.decode):
        if pool is not None and pool.instance.max_batch(context) < 1:
            g = pool.group
            raise InputError.single(
                "plan", "plan.instances", f"{g.role} on {g.gpus_per_instance} x {g.gpu}",
                "an instance shape whose HBM holds at least one request's KV next to the "
                "weights", f"mean decode context {context:,.0f} tokens",
            )  # fmt: skip


def deployment_cost_usd_per_hour(scenario: Scenario, deployment: Deployment, gpus, lines) -> float:
    total = 0.0
    for g in deployment.instances:
        offer = next(o for o in scenario.datacenter(g.datacenter).gpus if o.gpu == g.gpu)
        per_gpu = offer.price_usd_per_gpu_hour
        if scenario.costs.include_power:
            kw = gpus[g.gpu].facility_power_w(scenario.costs.pue) / 1e3
            per_gpu += kw * scenario.costs.power_usd_per_kwh
        total += g.gpus * per_gpu
    for lease in deployment.lines:
        monthly = scenario.wan.tier_price_usd_per_month.get(
            lease.tier, lines[lease.tier].price_usd_per_month
        )
        total += lease.count * monthly / HOURS_PER_MONTH
    return total


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
    cache = rt.md_cache_factor(
        scenario.policy.decode_cache_capacity_tokens,
        w.arrival_rate_per_s,
        classes.mean(classes.input_tokens),
    )
    routes = rt.route(
        arch,
        classes,
        deployment.policy,
        scenario.policy.short_output_cutoff,
        model,
        scenario.kv_dtype,
        cache,
    )
    prefill = _pool(deployment, PREFILL_ROLE[arch], model, gpus, scenario)
    context = float(
        np.dot(
            classes.weight * classes.output_tokens, classes.input_tokens + classes.output_tokens / 2
        )
        / np.dot(classes.weight, classes.output_tokens)
    )
    decode = _with_batch_limit(
        _pool(deployment, DECODE_ROLE[arch], model, gpus, scenario), scenario, context
    )
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
        )
    cost = deployment_cost_usd_per_hour(scenario, deployment, gpus, lines)
    return Setup(scenario, deployment, model, classes, routes, prefill, decode, relay, link, cost)
