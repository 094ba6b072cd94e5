"""The decode-side KV cache tier as a bought item: host DRAM or NVMe SSD on the
main-decode side (the tier Mooncake, LMCache and SGLang HiCache keep evicted prefixes in).

Pure numbers. A scenario offers options (`CacheOptions`: tiers x TB); a plan holds one
`CacheBuy` (in its routing policy, so every search key and memo carries it); its capacity
in tokens is what the decode-side cache curve reads, its price a cost item.

The size is the main-decode side's total, pooled over its instances (Mooncake Store pools
host DRAM and SSD across nodes; conversations stick to the instance holding their prefix,
so per-instance caches add up the same way). A total, not a size per instance, keeps the
bytes that cross the WAN a property of the policy alone: the exact search's line bounds
and WAN ceilings (space.py, ceilings.py) stay proofs, whatever the instance counts. What
one host can hold (1-4 TB of DRAM in an 8-GPU server) is not checked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pdd_plan.model.units import HOURS_PER_MONTH, TERA

MEDIA = ("dram", "ssd")
NO_TIER = "none"  # the option of no cache tier (0 TB): the decode side keeps nothing
# `tb_total: auto`: none, then 2 TB (the host DRAM of one 8-GPU server) in steps of 4x to
# 128 TB (a rack of NVMe servers): a few options spanning two and a half decades, as the
# line tiers span 1-400 Gbit/s
AUTO_TB_TOTAL = (0.0, 2.0, 8.0, 32.0, 128.0)
MAIN_DECODE = "main_decode"
# Bandwidth at which a cached prefix is read back into HBM, per GPU, where the catalog
# gives none (issue #23: DRAM and SSD are not alike). Assumptions from datasheets, not
# measurements: host DRAM -> HBM is one pinned host-to-device copy over the GPU's PCIe
# Gen5 x16 link (64 GB/s raw each way; copies reach about 50 GB/s); an NVMe SSD is one
# PCIe Gen4 x4 data-centre drive per GPU (about 7 GB/s sequential read, e.g. 6.9 GB/s
# for a Samsung PM9A3), the drive, not the GPU link, the limit. Optimistic for SSD reads
# of scattered small blocks (random reads run below sequential), and for DRAM when
# several GPUs share a host's memory channels.
READ_BYTES_PER_S_PER_GPU = {"dram": 50e9, "ssd": 7e9}


@dataclass(frozen=True)
class CacheTier:
    """A catalog cache tier (hardware_catalog/cache_tiers.yaml)."""

    id: str
    name: str
    medium: str  # dram | ssd
    price_usd_per_tb_month: float  # rental, per 1e12 bytes
    purchase_usd_per_tb: float | None
    provenance: dict = field(default_factory=dict, compare=False, repr=False)
    # the catalog's `read_gbyte_per_s_per_gpu` (bytes/s); None: READ_BYTES_PER_S_PER_GPU
    read_bytes_per_s_per_gpu: float | None = None

    def read_bytes_per_s(self) -> float:
        """Read-back bandwidth into HBM of one GPU: the catalog's, else by medium."""
        if self.read_bytes_per_s_per_gpu:
            return self.read_bytes_per_s_per_gpu
        return READ_BYTES_PER_S_PER_GPU[self.medium]

    def read_back_s(self, tokens, bytes_per_token: float, gpus: int = 1):
        """Seconds to read `tokens` tokens of cached KV back into the HBM of `gpus` GPUs,
        each reading its share over its own link (vectorised over tokens)."""
        return _read_seconds(tokens, bytes_per_token, gpus, self.read_bytes_per_s())


@dataclass(frozen=True)
class CacheOptions:
    """`policy.decode_cache` of a scenario: the tiers and sizes the planner may buy."""

    tiers: tuple[str, ...]
    tb_total: tuple[float, ...]  # ascending, distinct
    # each tier's price per TB-month, from the catalog when the scenario was read
    price_usd_per_tb_month: tuple[float, ...] = ()
    # each tier's read-back bandwidth into one GPU's HBM (CacheTier.read_bytes_per_s)
    read_bytes_per_s_per_gpu: tuple[float, ...] = ()


@dataclass(frozen=True)
class CacheBuy:
    """What a plan buys: `tb` TB of `tier` on the main-decode side, at the price the
    catalog (or the plan file) gave when the plan was made."""

    tier: str
    tb: float
    price_usd_per_tb_month: float = 0.0
    # read-back into one GPU's HBM (issue #23: DRAM and SSD are not alike); None where the
    # buy is only priced (the BOM), never evaluated
    read_bytes_per_s_per_gpu: float | None = None

    @property
    def usd_per_hour(self) -> float:
        return self.tb * self.price_usd_per_tb_month / HOURS_PER_MONTH

    def label(self) -> str:
        return "no cache tier" if self.tb <= 0 else f"{self.tb:g} TB {self.tier}"


def buy_options(options: CacheOptions) -> tuple[CacheBuy, ...]:
    """Every (tier, size) a scenario allows, 0 TB once (no tier), cheapest first."""
    out = [CacheBuy(NO_TIER, 0.0)] if 0.0 in options.tb_total else []
    reads = options.read_bytes_per_s_per_gpu or (None,) * len(options.tiers)
    out += [
        CacheBuy(t, tb, price, read)
        for t, price, read in zip(
            options.tiers, options.price_usd_per_tb_month, reads, strict=True
        )  # fmt: skip
        for tb in options.tb_total
        if tb > 0
    ]
    return tuple(sorted(out, key=lambda b: (b.usd_per_hour, -b.tb)))


def kv_bytes_per_token(scenario, model) -> float:
    """Decode-side KV bytes a cached token takes (long-context limit): the decode engine's
    layout (`model` as `Catalog.model_for` gives it: engine.kv_uncompressed_tokens, else
    the model's own), at the scenario's dtype (host caches keep the engine's blocks as they
    are in HBM)."""
    return float(model.decode_kv_bytes_per_token(scenario.kv_dtype))


def capacity_tokens(buy: CacheBuy, bytes_per_token: float) -> float:
    """Tokens the main-decode side caches: TB x 1e12 / bytes per token."""
    return buy.tb * TERA / bytes_per_token


def scenario_at(scenario, buy: CacheBuy | None, model):
    """The scenario with the capacity a cache buy gives as its fixed decode-side capacity
    (what the cache curve reads); unchanged without a buy."""
    if buy is None:
        return scenario
    tokens = capacity_tokens(buy, kv_bytes_per_token(scenario, model))
    policy = dataclasses.replace(scenario.policy, decode_cache_capacity_tokens=tokens)
    return dataclasses.replace(scenario, policy=policy)


def deployment_capacity_tokens(scenario, deployment, model) -> float | None:
    """The decode-side cache capacity a plan has: from its cache tier when it buys one,
    else the scenario's fixed `policy.decode_cache_capacity_tokens` (None: unlimited)."""
    buy = getattr(deployment.policy, "decode_cache", None)
    if buy is None:
        return scenario.policy.decode_cache_capacity_tokens
    return capacity_tokens(buy, kv_bytes_per_token(scenario, model))


def read_back_s(buy: CacheBuy | None, cached_tokens, bytes_per_token: float, gpus: int):
    """Seconds for a main-decode instance of `gpus` GPUs to read each request's cached
    prefix (`cached_tokens`) from the tier back into HBM, each GPU its share over its own
    link; 0 without a tier (the prefix stays in HBM) or a known bandwidth."""
    import numpy as np  # here: `catalog list` reads the tiers and starts without numpy

    tokens = np.asarray(cached_tokens, dtype=float)
    if buy is None or buy.tb <= 0 or not buy.read_bytes_per_s_per_gpu:
        return np.zeros_like(tokens)
    return _read_seconds(tokens, bytes_per_token, gpus, buy.read_bytes_per_s_per_gpu)


def _read_seconds(tokens, bytes_per_token: float, gpus: int, bytes_per_s_per_gpu: float):
    """The tokens' KV bytes over `gpus` links of `bytes_per_s_per_gpu` each."""
    return tokens * bytes_per_token / (max(gpus, 1) * bytes_per_s_per_gpu)
