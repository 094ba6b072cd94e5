"""`policy.decode_cache` of a scenario: the decode-side cache tiers and sizes the planner
may buy for the main-decode side (model/caches/cache_tier.py), checked strictly.

```yaml
policy:
  decode_cache:
    tiers: [dram, ssd]          # ids of the catalog's cache_tiers.yaml
    tb_total: [0, 2, 8, 32]     # TB (1e12 bytes) on the main-decode side, or `auto`
```
Absent: the cache is not a decision (unlimited, or `decode_cache_capacity_tokens`)."""

from __future__ import annotations

from pdd_plan.loaders.scenario_lists import refuse_repeats
from pdd_plan.loaders.strict import Node
from pdd_plan.model.caches.cache_tier import AUTO_TB_TOTAL, CacheOptions

MAX_TB = 100_000.0  # 100 PB: beyond any decode-side cache


def decode_cache_options(node: Node, fixed: Node, catalog) -> CacheOptions | None:
    """The options, or None when the key is absent; `fixed` is the sibling
    `decode_cache_capacity_tokens` (the two are alternatives)."""
    if node.is_missing or node.value is None:
        return None
    if not fixed.is_missing and fixed.value is not None:
        node.fail(
            "either decode_cache (the planner buys the cache) or decode_cache_capacity_tokens "
            "(a fixed capacity), not both"
        )
        return None
    f = node.mapping(required=("tiers",), optional=("tb_total",))
    if f is None:
        return None
    known = catalog.cache_tiers
    tier_nodes = f["tiers"].items(1) or []
    tiers = tuple(t.reference(known, "cache tier") for t in tier_nodes)
    refuse_repeats(zip(tier_nodes, tiers, strict=True), "a cache tier")
    sizes = _sizes(f["tb_total"])
    if None in tiers or sizes is None:
        return None
    return CacheOptions(tiers, sizes, tuple(known[t].price_usd_per_tb_month for t in tiers),
                        tuple(known[t].read_bytes_per_s() for t in tiers))  # fmt: skip


def _sizes(node: Node) -> tuple[float, ...] | None:
    if node.is_missing or node.value == "auto":
        return AUTO_TB_TOTAL
    items = node.items(1)
    if items is None:
        return None
    sizes = [i.number(minimum=0, maximum=MAX_TB, required=True) for i in items]
    refuse_repeats(zip(items, sizes, strict=True), "a size")
    if None in sizes:
        return None
    return tuple(sorted(sizes))
