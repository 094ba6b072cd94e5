"""The main-decode side's read-back of a cached prefix from its cache tier (issue #23: DRAM
and SSD are not read alike).

A request whose prefix is resident in MD's tier (host DRAM or local NVMe) crosses the line
with only what MD lacks; before MD can decode it, the prefix must be copied from the tier
into the HBM of the instance that takes it, each GPU its share over its own link
(`CacheTier.read_bytes_per_s`). The read starts when the request is routed (prefill
start) and runs beside the prefill and the transfer, so MD holds the KV at
max(prefill end + transfer, prefill start + read-back). Without a tier (the prefix kept in
HBM) or with nothing cached there is nothing to read.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import numpy as np

from pdd_plan.model.caches import cache_tier


def read_back_s(setup, input_tokens, md_hit) -> np.ndarray:
    """Seconds to read each request's (or class's) cached prefix, `md_hit` x its input
    tokens, into one main-decode instance; zeros without a tier bought."""
    buy = setup.deployment.decode_cache
    cached = np.asarray(input_tokens, dtype=float) * np.asarray(md_hit, dtype=float)
    if buy is None or buy.tb <= 0 or setup.deployment.architecture not in ("pdd", "cdc_pd"):
        return np.zeros_like(cached)
    per_token = cache_tier.kv_bytes_per_token(setup.scenario, setup.model)
    gpus = setup.decode.group.gpus_per_instance
    return cache_tier.read_back_s(buy, cached, per_token, gpus)


def md_ready_after_prefill_s(transfer_s, read_back, service_s) -> np.ndarray:
    """Seconds after prefill end until MD holds the KV: the transfer, or the read-back
    started at prefill start if that ends later."""
    return np.maximum(np.asarray(transfer_s, float), np.asarray(read_back, float) - service_s)
