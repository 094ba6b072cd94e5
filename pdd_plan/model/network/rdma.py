"""Moving KV cache inside a datacenter over RDMA (`rdma_transfer_s`).

payload / (gpus x NIC rate x efficiency) + a fixed latency. The payload is assumed striped
evenly over the NICs of all GPUs of the sending instance (each GPU ships its own shard to its
peer, as Mooncake/NIXL do), so the NICs run in parallel. This is the time for the whole
payload to cross; overlap with prefill (KV streamed layer by layer as it is produced) is the
caller's business: it can hide all but the last layer's share. The WAN is model/network/network.py.
Pure: numpy only, no I/O.
"""

from __future__ import annotations

import numpy as np

from pdd_plan.model.compute.hardware import Gpu
from pdd_plan.model.units import BITS_PER_BYTE

# Mooncake's transfer engine moves 87 GB/s over 4 x 200 Gbit/s RoCE, 87 % of the NICs' rate
# (kvcache-ai/Mooncake doc/en/transfer-engine.md; its 190 GB/s over 8 x 400 Gbit/s is 48 %, host
# bound); perftest ib_write_bw reaches 90-97 % for large messages. 0.85 errs low.
RDMA_EFFICIENCY_FRAC = 0.85
# One RDMA write's completion latency inside a datacenter: a few microseconds per hop
# (NIC ~1 us each side, ~0.5 us per switch, a 3-tier fabric); 10 us is a safe round figure.
RDMA_LATENCY_S = 10e-6


def rdma_transfer_s(
    payload_bytes,
    gpus: int,
    gpu: Gpu,
    efficiency_frac: float = RDMA_EFFICIENCY_FRAC,
    latency_s: float = RDMA_LATENCY_S,
):
    """Time to move `payload_bytes` over the RDMA NICs of `gpus` GPUs of type `gpu`.

    payload x 8 / (gpus x scale_out_bits_per_s x efficiency) + latency, vectorised; a zero
    payload takes no time (nothing is sent). Assumes the payload is striped evenly over the
    GPUs' NICs; overlap with prefill (layer-by-layer streaming) is left to the caller.
    """
    if int(gpus) != gpus or gpus < 1:
        raise ValueError(f"gpus must be a positive integer, got {gpus}")
    if not 0.0 < efficiency_frac <= 1.0:
        raise ValueError(f"efficiency_frac must be in (0, 1], got {efficiency_frac}")
    if not latency_s >= 0.0:
        raise ValueError(f"latency_s must be >= 0, got {latency_s}")
    if not gpu.scale_out_bits_per_s > 0:
        raise ValueError(f"GPU {gpu.id} has no scale-out NIC bandwidth")
    x = np.asarray(payload_bytes, dtype=float)
    if np.any(~np.isfinite(x)) or np.any(x < 0):
        raise ValueError("payload_bytes must be finite and >= 0")
    rate_bits_per_s = gpus * gpu.scale_out_bits_per_s * efficiency_frac
    t = np.where(x > 0, x * BITS_PER_BYTE / rate_bits_per_s + latency_s, 0.0)
    return float(t) if np.ndim(payload_bytes) == 0 else t
