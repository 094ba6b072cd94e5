"""The plans a scenario allows, as the exact search (search.py) walks them.

Per routing policy: for each role, its candidates (datacenter, GPU, instance shape whose
weights fit), each with its price, the fewest instances any plan meeting the SLA at the
objective's least rate can have (bounds.py) and the most the availability allows; and
the line mixes within wan.max_lines that could carry the WAN bytes, less those with no
more capacity than a cheaper one (with monotonicity in the line capacity, never better).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

from pdd_plan.model.caches.cache_tier import scenario_at
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.decode_cache import routed
from pdd_plan.model.deployment import ARCHITECTURE_ROLES, Deployment, InstanceGroup, LineLease
from pdd_plan.model.network.network import WanLink
from pdd_plan.model.placement import placement_problem
from pdd_plan.model.setup import gpu_usd_per_gpu_hour
from pdd_plan.plan import bounds as bd
from pdd_plan.plan.candidates import shapes
from pdd_plan.plan.formulate import line_price_usd_per_hour

MAX_COUNT = 10_000  # instances of one candidate where the scenario gives no availability
# how a candidate pruned by its count limit (availability or power) reads: several such
# candidates of a mixed role may still serve it together (solve._mix_may_serve)
COUNT_LIMITED = "needs at least"


class OutOfTime(Exception):
    """The solve's deadline passed while candidates were being bounded (set-up counts
    against --time-limit)."""


CROSSING = ("pdd", "cdc_pd")


@dataclass(frozen=True)
class Choice:
    """One candidate of a role: what an instance costs and how many a plan may have."""

    role: str
    datacenter: str
    gpu: str
    gpus_per_instance: int
    price_usd_per_hour: float
    min_count: int
    max_count: int


@dataclass(frozen=True)
class LineOption:
    counts: tuple[int, ...]  # lines per tier, in the order of scenario.wan.tiers
    capacity_bits_per_s: float
    cost_usd_per_hour: float
    max_rate_rps: float  # the line saturates at this rate


@dataclass
class Space:
    policy: object
    choices: tuple[tuple[Choice, ...], ...]  # per role, by cost at the fewest instances
    lines: tuple[LineOption, ...]  # by cost, capacity rising
    pruned: dict[str, str]  # candidate -> why no plan can use it
    bounds: dict = field(default_factory=dict)  # choice -> its RoleBound per distribution
    # what every plan of the policy pays whatever its counts (the decode-side cache tier)
    fixed_usd_per_hour: float = 0.0


class Spaces:
    """Builds the Space of each policy, sharing instances and bounds between policies."""

    def __init__(self, scenario, model, gpus, tiers, arch, classes, floor_rps: float):
        self.scenario, self.model, self.gpus, self.tiers = scenario, model, gpus, tiers
        self.arch, self.classes, self.floor_rps = arch, classes, floor_rps
        self.roles = ARCHITECTURE_ROLES[arch]
        self.deadline = math.inf  # time.perf_counter() past which `space` raises OutOfTime
        self._instances: dict = {}
        self._bounds: dict = {}
        self._cache_scenarios: dict = {}  # policy -> scenario at its cache's capacity
        self._max_gpus = {
            (dc.id, o.gpu): o.max_gpus for dc in scenario.datacenters for o in dc.gpus
        }

    def check_time(self) -> None:
        """OutOfTime once the deadline has passed (bounding candidates counts)."""
        if time.perf_counter() > self.deadline:
            raise OutOfTime

    def _classes_routes(self, policy, c):
        """The classes split by MD residency and their routes (decode_cache.routed)."""
        return routed(self.scenario_for(policy), self.arch, policy, c, self.model)

    def scenario_for(self, policy):
        """The scenario as the policy's routes read it: where the policy buys a cache tier,
        its capacity as the fixed decode-side capacity (cache_tier.py: a total, so the
        routes, bounds and line options of the policy hold for every plan of it)."""
        if policy.decode_cache is None:
            return self.scenario
        if policy not in self._cache_scenarios:
            at = scenario_at(self.scenario, policy.decode_cache, self.model)
            self._cache_scenarios[policy] = at
        return self._cache_scenarios[policy]

    def _routes(self, policy, c):
        return self._classes_routes(policy, c)[1]

    def _instance(self, gpu: str, n: int) -> Instance:
        key = (gpu, n)
        if key not in self._instances:
            s = self.scenario
            self._instances[key] = Instance(
                self.model, self.gpus[gpu], n, s.kv_dtype, s.weight_dtype,
                engine_profile=s.engine.profile,
            )  # fmt: skip
        return self._instances[key]

    def _role_bound(self, role, inst, policy, dist: int, c, routes) -> bd.RoleBound:
        """bounds.role_bound, once per candidate and distribution (and, for decode roles
        whose bound reads the routes, per hit threshold)."""
        key = (role, inst.gpu.id, inst.gpus, dist)
        if role in ("main_decode", "decode"):
            key += (policy.rld_hit_threshold, policy.short_output_cutoff,
                    self.scenario_for(policy).policy.decode_cache_capacity_tokens)  # fmt: skip
        if key not in self._bounds:  # `c`: distribution `dist`'s classes, split as `routes`
            self._bounds[key] = bd.role_bound(self.arch, role, inst, c, routes, self.scenario)
        return self._bounds[key]

    def power_w(self, gpu_id: str) -> float:
        return self.gpus[gpu_id].facility_power_w(self.scenario.costs.pue)

    def _most_instances(self, dc, offer, gpus_per_instance: int) -> tuple[int, str]:
        """Instances of a shape the datacenter's availability and power budget allow, and
        which of the two limits it."""
        most = MAX_COUNT if offer.max_gpus is None else offer.max_gpus // gpus_per_instance
        limit = "available"
        if dc.power_budget_w is not None:
            per_instance = gpus_per_instance * self.power_w(offer.gpu)
            powered = int(dc.power_budget_w // per_instance)
            if powered < most:
                most, limit = powered, f"within {dc.id}'s power budget"
        return most, limit

    def per_gpu_hour(self, offer, datacenter: str) -> float:
        return gpu_usd_per_gpu_hour(self.scenario, offer, self.gpus[offer.gpu], datacenter)

    def space(self, policy) -> Space:
        s, rate = self.scenario, self.floor_rps
        per_dist = [self._classes_routes(policy, c) for c in self.classes]
        choices, pruned, bounds = [], {}, {}
        for role in self.roles:
            mine = []
            for dc, offer in ((d, o) for d in s.datacenters if role in d.roles for o in d.gpus):
                gpu = self.gpus[offer.gpu]
                for n in shapes(gpu.gpus_per_node, offer.gpus_per_instance):
                    if offer.max_gpus is not None and n > offer.max_gpus:
                        continue
                    self.check_time()
                    key = f"{role}_{dc.id}_{gpu.id}_x{n}"
                    inst = self._instance(gpu.id, n)
                    if not inst.fits():
                        pruned[key] = "the weights do not fit in HBM"
                        continue
                    found = [
                        self._role_bound(role, inst, policy, i, c, r)
                        for i, (c, r) in enumerate(per_dist)
                    ]
                    need = [b.min_count(rate) for b in found]
                    most, limit = self._most_instances(dc, offer, n)
                    if None in need:
                        pruned[key] = _hopeless(role)
                    elif max(need) > most:
                        pruned[key] = f"{COUNT_LIMITED} {max(need)} instances, {most} {limit}"
                    else:
                        price = n * self.per_gpu_hour(offer, dc.id)
                        ch = Choice(role, dc.id, gpu.id, n, price, max(need), most)
                        mine.append(ch)
                        bounds[ch] = tuple(found)
            choices.append(tuple(sorted(mine, key=lambda ch: ch.price_usd_per_hour * ch.min_count)))
        lines = (LineOption((), 0.0, 0.0, math.inf),)
        if self.arch in CROSSING:
            bits = max(bd.wan_bits_per_request(self.arch, c, r) for c, r in per_dist)
            lines = self._lines(bits, rate)
        fixed = policy.decode_cache.usd_per_hour if policy.decode_cache is not None else 0.0
        return Space(policy, tuple(choices), lines, pruned, bounds, fixed)

    def _lines(self, bits_per_request: float, rate: float) -> tuple[LineOption, ...]:
        """Every line mix within wan.max_lines that could carry the load, less those with
        no more capacity than a cheaper (or equal) one."""
        wan = self.scenario.wan
        caps = tuple(self.tiers[t].capacity_bits_per_s for t in wan.tiers)
        prices = tuple(line_price_usd_per_hour(self.scenario, self.tiers[t]) for t in wan.tiers)
        frac = WanLink(1.0, 0.0, wan.per_connection_bits_per_s, wan.connection_pool_size)
        # the line saturates at the rate where the bits reach its goodput
        options = (
            (
                counts,
                cap,
                cost,
                cap * frac.goodput_frac / bits_per_request if bits_per_request else math.inf,
            )
            for counts, cap, cost in _line_mixes(caps, prices, wan.max_lines)
        )
        return tuple(LineOption(*o) for o in options if o[3] > rate * (1 - 1e-9))

    def deployment(self, space: Space, picks, counts, line: LineOption) -> Deployment:
        groups = tuple(
            InstanceGroup(ch.role, ch.datacenter, ch.gpu, ch.gpus_per_instance, n)
            for ch, n in zip(picks, counts, strict=True)
        )
        leases = (
            tuple(
                LineLease(t, self.tiers[t].capacity_bits_per_s, k)
                for t, k in zip(self.scenario.wan.tiers, line.counts, strict=True)
                if k
            )
            if line.counts
            else ()
        )
        return Deployment(self.arch, groups, leases, space.policy)

    def allowed(self, groups, policy=None) -> bool:
        """GPU availability per datacenter and type, each datacenter's power and budget
        (the policy's decode-side cache counts in the main-decode datacenter's budget),
        and the architecture's placement (model/placement.py)."""
        if placement_problem(self.arch, groups):
            return False
        used, spent = {}, {}
        for g in groups:
            used[g.datacenter, g.gpu] = used.get((g.datacenter, g.gpu), 0) + g.gpus
        for dc in self.scenario.datacenters:
            for offer in dc.gpus:
                if offer.max_gpus is not None and used.get((dc.id, offer.gpu), 0) > offer.max_gpus:
                    return False
            if dc.power_budget_w is not None:
                drawn = sum(g.gpus * self.power_w(g.gpu) for g in groups if g.datacenter == dc.id)
                if drawn > dc.power_budget_w * (1 + 1e-12):
                    return False
            if dc.budget_usd_per_hour is not None:
                prices = {o.gpu: self.per_gpu_hour(o, dc.id) for o in dc.gpus}
                spent = sum(g.gpus * prices[g.gpu] for g in groups if g.datacenter == dc.id)
                spent += _cache_spend(groups, policy, dc.id)
                if spent > dc.budget_usd_per_hour * (1 + 1e-12):
                    return False
        return True

    def no_candidate(self, spaces: list[Space]) -> str:
        """Why no plan exists when, under every policy, some role has no candidate ("" if
        every policy has a candidate for every role)."""
        empty = [
            (role, sp)
            for sp in spaces
            for role, choices in zip(self.roles, sp.choices, strict=True)
            if not choices
        ]
        if not spaces or len({id(sp) for _, sp in empty}) < len(spaces):
            return ""
        roles = sorted({role for role, _ in empty})
        reasons = sorted(
            {
                why
                for role, sp in empty
                for key, why in sp.pruned.items()
                if key.startswith(role + "_")
            }
        )
        why = "; ".join(reasons) or "no GPU offered for the role"
        return f"no candidate can serve {', '.join(roles)}: {why}"

    def within_availability(self, picks, counts) -> list[int]:
        """Each role's count no higher than the GPUs of its type left by the others' least."""
        out = []
        for r, (ch, n) in enumerate(zip(picks, counts, strict=True)):
            most = self._max_gpus[ch.datacenter, ch.gpu]
            if most is not None:
                others = sum(
                    o.min_count * o.gpus_per_instance
                    for q, o in enumerate(picks)
                    if q != r and (o.datacenter, o.gpu) == (ch.datacenter, ch.gpu)
                )
                n = min(n, (most - others) // ch.gpus_per_instance)
            out.append(max(n, ch.min_count))
        return out


@functools.lru_cache(maxsize=64)  # keyed on all it reads; a sweep has a few line menus
def _line_mixes(caps: tuple, prices: tuple, max_lines: int) -> tuple:
    """(counts per tier, capacity, $/h) of every mix of at most `max_lines` lines not
    beaten by another of at least its capacity at no more cost, cheapest first: the same
    for every policy of a solve and every point of a sweep (it reads neither the bytes
    nor the rate), so found once per menu, not six times a solve."""
    layer = {tuple(0 for _ in caps): (0.0, 0.0)}
    found = []
    for _ in range(max_lines):
        grown = {}
        for counts, (cap, cost) in layer.items():
            for i in range(len(caps)):
                more = counts[:i] + (counts[i] + 1,) + counts[i + 1 :]
                grown[more] = (cap + caps[i], cost + prices[i])
        layer = dict(_pareto(grown.items()))
        found += layer.items()
    ranked = sorted(_pareto(found), key=lambda kv: kv[1][1])
    return tuple((counts, cap, cost) for counts, (cap, cost) in ranked)


def _pareto(items):
    """(counts, (capacity, cost)) pairs not beaten by another of at least the capacity at
    no more cost."""
    out, cheapest = [], math.inf
    for counts, (cap, cost) in sorted(items, key=lambda kv: (-kv[1][0], kv[1][1])):
        if cost < cheapest:
            out.append((counts, (cap, cost)))
            cheapest = cost
    return out


def _cache_spend(groups, policy, dc_id: str) -> float:
    """$/h of the policy's cache tier charged to datacenter `dc_id`: where the first
    main-decode group is, as `cost_items` charges it."""
    buy = getattr(policy, "decode_cache", None)
    md = [g for g in groups if g.role == "main_decode" and g.count > 0]
    return buy.usd_per_hour if buy is not None and md and md[0].datacenter == dc_id else 0.0


def _hopeless(role: str) -> str:
    if role in ("prefill", "colocated"):
        return "cannot meet the SLA at any count (prefill time alone, or with a decode step)"
    return "cannot meet the SLA at any count (no request fits, or a step misses the TPOT limit)"
