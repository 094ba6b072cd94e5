"""Candidate instances: every (role, datacenter, GPU, instance shape) the scenario allows,
with what one instance can carry under the utilisation cap, or why it was pruned.

Capacities are per instance and independent of how many are bought, which is what lets
the MILP stay linear: prefill carries `cap / E[prefill time]` requests per second (with
batched prefill, cap x its rate in full steps: model/queueing/prefill_batch.py); a
decode pool carries `cap x B_lim / (step(B_lim) x tokens per request)`, where B_lim is the
batch at which a step reaches the TPOT limit (or what fits HBM).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pdd_plan.model import routing as rt
from pdd_plan.model.compute.llm import ModelSpec
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.deployment import ARCHITECTURE_ROLES, RoutingPolicy, scenario_routing
from pdd_plan.model.queueing.prefill_batch import prefill_capacity_rps
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.setup import gpu_usd_per_gpu_hour
from pdd_plan.model.workload.workload import RequestClasses

DEFAULT_NODE_MULTIPLES = (1, 2, 3, 4)  # instance shapes: 1..4 nodes, plus 1, 2, 4 GPUs


@dataclass(frozen=True)
class Candidate:
    role: str
    datacenter: str
    gpu: str
    gpus_per_instance: int
    price_usd_per_hour: float  # one instance
    capacity_rps: float  # requests/s of this role's traffic one instance carries
    pruned: str = ""  # why it cannot be used (empty: usable)
    power_w: float = 0.0  # one instance, facility power (TDP x PUE)

    @property
    def key(self) -> str:
        return f"{self.role}_{self.datacenter}_{self.gpu}_x{self.gpus_per_instance}"


@dataclass(frozen=True)
class RoleDemand:
    """Per request of the whole stream: the share that uses a role and what it asks."""

    share: float  # fraction of requests that visit the role
    tokens_per_request: float  # decode tokens per visiting request (decode roles)
    context_tokens: float  # mean context of those tokens


def shapes(gpus_per_node: int, allowed: tuple[int, ...]) -> tuple[int, ...]:
    if allowed:
        return allowed
    small = tuple(n for n in (1, 2, 4) if n < gpus_per_node)
    return small + tuple(gpus_per_node * k for k in DEFAULT_NODE_MULTIPLES)


def role_demands(
    arch: str, classes: RequestClasses, routes: rt.Routes, rld_tokens: np.ndarray
) -> dict[str, RoleDemand]:
    """What each role of `arch` is asked per request, from the routes."""
    c, w = classes, classes.weight
    context = c.input_tokens + c.output_tokens / 2

    def demand(mask, tokens):
        share = float(w[mask].sum())
        mass = float(np.dot(w[mask], tokens[mask]))
        mean_ctx = float(np.dot(w[mask] * tokens[mask], context[mask]) / mass) if mass else 1.0
        return RoleDemand(share, mass / share if share else 0.0, mean_ctx)

    everyone = np.ones(len(c), bool)
    out = {ARCHITECTURE_ROLES[arch][0]: demand(everyone, c.output_tokens)}
    if arch == "colocated":
        return out
    if arch == "idc_pd":
        out["decode"] = demand(everyone, c.output_tokens)
        return out
    remote = routes.path != rt.LOCAL
    out["main_decode"] = demand(remote, np.maximum(c.output_tokens - rld_tokens, 0.0))
    if arch == "pdd":
        out["relay_decode"] = demand(routes.path != rt.DIRECT, rld_tokens)
    return out


def _decode_capacity_rps(
    inst: Instance, demand: RoleDemand, tpot_s: float | None, cap_frac: float
) -> tuple[float, str]:
    limit = inst.max_batch(demand.context_tokens)
    if limit < 1:
        return 0.0, "no request of this context fits in HBM beside the weights"
    if tpot_s is not None:
        limit = inst.max_batch_for_tpot(tpot_s, demand.context_tokens)
        if limit < 1:
            return 0.0, f"one decode step alone exceeds the TPOT limit ({tpot_s * 1e3:g} ms)"
    if demand.tokens_per_request <= 0:
        return float("inf"), ""
    step = float(inst.decode_step_s(limit, demand.context_tokens))
    return cap_frac * limit / (step * demand.tokens_per_request), ""


def _capacity_rps(inst, role, classes, demands, tpot, cap, batching=(None, "")):
    """Requests/s one instance carries; `batching`: (prefill token budget per GPU, the
    architecture), so a prefill pool is sized at the batched rate evaluate uses."""
    if role == "main_decode" or role == "relay_decode" or role == "decode":
        return _decode_capacity_rps(inst, demands[role], tpot, cap)
    if role == "prefill":
        return cap * prefill_capacity_rps(inst, classes, *batching), ""
    service = np.asarray(inst.prefill_time_s(classes.uncached_tokens, classes.cached_tokens), float)
    prefill = cap / classes.mean(service)
    # colocated: the same GPUs prefill and decode in turn, so the two times per request add
    decode, why = _decode_capacity_rps(inst, demands[role], tpot, cap)
    return (1.0 / (1.0 / prefill + 1.0 / decode) if decode > 0 else 0.0), why


def _over_power(dc, instance_power_w: float) -> str:
    """Why one instance alone breaks the datacenter's power budget ("" if it does not)."""
    if dc.power_budget_w is None or instance_power_w <= dc.power_budget_w:
        return ""
    return (
        f"one instance draws {instance_power_w / 1e3:,.1f} kW, more than {dc.id}'s power "
        f"budget of {dc.power_budget_w / 1e3:,.1f} kW"
    )


def candidates(
    scenario: Scenario,
    model: ModelSpec,
    gpus: dict,
    arch: str,
    classes: RequestClasses,
    demands: dict[str, RoleDemand],
) -> list[Candidate]:
    cap = scenario.policy.utilization_cap_frac
    tpot = min(scenario.sla.tpot_s.values(), default=None)
    out = []
    # (role, GPU, shape) -> (capacity, why): the same in every datacenter offering it
    known: dict[tuple[str, str, int], tuple[float, str]] = {}
    for dc in scenario.datacenters:
        for role in ARCHITECTURE_ROLES[arch]:
            if role not in dc.roles:
                continue
            for offer in dc.gpus:
                gpu = gpus[offer.gpu]
                for n in shapes(gpu.gpus_per_node, offer.gpus_per_instance):
                    if offer.max_gpus is not None and n > offer.max_gpus:
                        continue
                    inst = Instance(
                        model, gpu, n, scenario.kv_dtype, scenario.weight_dtype,
                        engine_profile=scenario.engine.profile,
                    )  # fmt: skip
                    # rental (quoted or the catalog's), and power too, if on
                    price = n * gpu_usd_per_gpu_hour(scenario, offer, gpu, dc.id)
                    power_w = n * gpu.facility_power_w(scenario.costs.pue)
                    why = _over_power(dc, power_w)
                    if not why and not inst.fits():
                        why = "the weights do not fit in HBM"
                    if why:
                        out.append(Candidate(role, dc.id, gpu.id, n, price, 0.0, why, power_w))
                        continue
                    budget = (scenario.engine.prefill_token_budget_per_gpu, arch)
                    key = (role, gpu.id, n)
                    if key not in known:
                        known[key] = _capacity_rps(inst, role, classes, demands, tpot, cap, budget)
                    capacity, why = known[key]
                    out.append(Candidate(role, dc.id, gpu.id, n, price, capacity, why, power_w))
    return out


def default_policy(scenario: Scenario) -> RoutingPolicy:
    return scenario_routing(scenario.policy)
