"""The `plan` object of design.md §7 from a Deployment."""

from __future__ import annotations

from pdd_plan.model.deployment import Deployment
from pdd_plan.model.units import GBIT_BITS


def plan_json(deployment: Deployment) -> dict:
    p = deployment.policy
    out = {
        "architecture": deployment.architecture,
        "instances": [
            {"role": g.role, "datacenter": g.datacenter, "gpu": g.gpu,
             "gpus_per_instance": g.gpus_per_instance, "count": g.count}
            for g in deployment.instances
        ],
        "lines": [
            {"tier": line.tier, "capacity_gbit_per_s": line.capacity_bits_per_s / GBIT_BITS,
             "count": line.count}
            for line in deployment.lines
        ],
        "policy": {"rld_hit_threshold": p.rld_hit_threshold, "handoff": p.handoff,
                   "short_output_cutoff": p.short_output_cutoff},
    }  # fmt: skip
    if p.decode_cache is not None:  # only when bought: plans without one read as before
        c = p.decode_cache
        out["decode_cache"] = {"tier": c.tier, "tb": c.tb,
                               "price_usd_per_tb_month": c.price_usd_per_tb_month}  # fmt: skip
    return out
