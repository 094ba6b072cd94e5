"""The decode-side KV cache tier as a bought item: host DRAM or NVMe SSD per main-decode
instance (the tier Mooncake, LMCache and SGLang HiCache keep evicted prefixes in).

Pure numbers. A scenario offers options (`CacheOptions`: tiers x TB per instance); a plan
holds one `CacheBuy` (in its routing policy, so every search key and memo carries it);
its capacity in tokens is what the decode-side cache curve reads, its price a cost item.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pdd_plan.units import HOURS_PER_MONTH, TERA

MEDIA = ("dram", "ssd")
NO_TIER = "none"  # the option of no cache tier (0 TB): the decode side keeps nothing
# `tb_per_instance: auto`: none, then doubling from 1 TB to 8 TB, the range of host DRAM
# (1-4 TB in an 8-GPU server) and of a few local NVMe drives per server
AUTO_TB_PER_INSTANCE = (0.0, 1.0, 2.0, 4.0, 8.0)
MAIN_DECODE = "main_decode"


@dataclass(frozen=True)
class CacheTier:
    """A catalog cache tier (hardware_catalog/cache_tiers.yaml)."""

    id: str
    name: str
    medium: str  # dram | ssd
    price_usd_per_tb_month: float  # rental, per 1e12 bytes
    purchase_usd_per_tb: float | None
    provenance: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class CacheOptions:
    """`policy.decode_cache` of a scenario: the tiers and sizes the planner may buy."""

    tiers: tuple[str, ...]
    tb_per_instance: tuple[float, ...]  # ascending, distinct
    # each tier's price per TB-month, from the catalog when the scenario was read
    price_usd_per_tb_month: tuple[float, ...] = ()


@dataclass(frozen=True)
class CacheBuy:
    """What a plan buys: `tb_per_instance` TB of `tier` on every main-decode instance, at
    the price the catalog (or the plan file) gave when the plan was made."""

    tier: str
    tb_per_instance: float
    price_usd_per_tb_month: float = 0.0

    @property
    def usd_per_instance_hour(self) -> float:
        return self.tb_per_instance * self.price_usd_per_tb_month / HOURS_PER_MONTH

    def label(self) -> str:
        if self.tb_per_instance <= 0:
            return "no cache tier"
        return f"{self.tb_per_instance:g} TB {self.tier}"


def buy_options(options: CacheOptions) -> tuple[CacheBuy, ...]:
    """Every (tier, size) a scenario allows, 0 TB once (no tier), cheapest first."""
    out = [CacheBuy(NO_TIER, 0.0)] if 0.0 in options.tb_per_instance else []
    out += [
        CacheBuy(t, tb, price)
        for t, price in zip(options.tiers, options.price_usd_per_tb_month, strict=True)
        for tb in options.tb_per_instance
        if tb > 0
    ]
    return tuple(sorted(out, key=lambda b: (b.usd_per_instance_hour, -b.tb_per_instance)))


def kv_bytes_per_token(scenario, model) -> float:
    """Decode-side KV bytes a cached token takes: the engine's layout when the scenario
    states it (engine.decode_kv_bytes_per_token), else the model's KV at the scenario's
    dtype (host caches keep the engine's blocks as they are in HBM)."""
    stated = scenario.engine.decode_kv_bytes_per_token
    return float(stated) if stated else float(model.kv_bytes_per_token(scenario.kv_dtype))


def capacity_tokens(buy: CacheBuy, md_instances: int, bytes_per_token: float) -> float:
    """Tokens the main-decode side caches: instances x TB x 1e12 / bytes per token (each
    instance caches the conversations routed to it, so the capacities add)."""
    return md_instances * buy.tb_per_instance * TERA / bytes_per_token


def main_decode_instances(deployment) -> int:
    return sum(g.count for g in deployment.instances if g.role == MAIN_DECODE)


def deployment_capacity_tokens(scenario, deployment, model) -> float | None:
    """The decode-side cache capacity a plan has: from its cache tier when it buys one,
    else the scenario's fixed `policy.decode_cache_capacity_tokens` (None: unlimited)."""
    buy = getattr(deployment.policy, "decode_cache", None)
    if buy is None:
        return scenario.policy.decode_cache_capacity_tokens
    md = main_decode_instances(deployment)
    return capacity_tokens(buy, md, kv_bytes_per_token(scenario, model))
