"""A deployment to evaluate: instances by role, datacenter and GPU; leased lines; policy.

Plain data in SI units; `plan/` produces these, `evaluate` measures them, plan files
(`loaders/plan_file.py`) spell them out.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan.model.caches.cache_tier import CacheBuy

# roles each architecture runs, in the order requests meet them
ARCHITECTURE_ROLES = {
    "pdd": ("prefill", "relay_decode", "main_decode"),
    "cdc_pd": ("prefill", "main_decode"),
    "idc_pd": ("prefill", "decode"),
    "colocated": ("colocated",),
}


@dataclass(frozen=True)
class InstanceGroup:
    role: str
    datacenter: str
    gpu: str
    gpus_per_instance: int
    count: int

    @property
    def gpus(self) -> int:
        return self.gpus_per_instance * self.count


@dataclass(frozen=True)
class LineLease:
    tier: str
    capacity_bits_per_s: float
    count: int


@dataclass(frozen=True)
class RoutingPolicy:
    # a request whose KV missing on MD exceeds a mean prompt's at this hit rate takes
    # P -> RLD -> MD (routing.route)
    rld_hit_threshold: float = 0.9
    handoff: str = "catch_up"  # catch_up | one_shot
    short_output_cutoff: bool = False
    # the decode-side cache tier bought for the main-decode side (model/caches/cache_tier.py);
    # None: not a decision (the scenario's fixed capacity, unlimited by default). Kept in
    # the policy so every search key and memo that holds the policy tells plans apart.
    decode_cache: CacheBuy | None = None


def scenario_routing(policy) -> RoutingPolicy:
    """The routing a scenario's `policy` (model/scenario.py `Policy`) fixes, the defaults
    where it leaves a choice to the planner (`auto`): where the solver starts, and what a
    plan file's absent policy keys take (loaders/plan_policy.py)."""
    default = RoutingPolicy()
    return RoutingPolicy(
        rld_hit_threshold=default.rld_hit_threshold
        if policy.rld_hit_threshold is None
        else policy.rld_hit_threshold,
        handoff=policy.handoff if policy.handoff != "auto" else default.handoff,
        short_output_cutoff=policy.short_output_cutoff.enabled,
    )


@dataclass(frozen=True)
class Deployment:
    architecture: str
    instances: tuple[InstanceGroup, ...]
    lines: tuple[LineLease, ...] = ()
    policy: RoutingPolicy = RoutingPolicy()

    @property
    def decode_cache(self) -> CacheBuy | None:
        return self.policy.decode_cache

    def role(self, role: str) -> tuple[InstanceGroup, ...]:
        return tuple(g for g in self.instances if g.role == role and g.count > 0)

    @property
    def line_capacity_bits_per_s(self) -> float:
        return sum(line.capacity_bits_per_s * line.count for line in self.lines)
