"""How a mixed decode role splits its requests (model/decode/mixed_pool.py), for `explain` and
the report: each group's share and its load at the offered rate."""

from __future__ import annotations

import dataclasses

from pdd_plan.errors import SaturatedError
from pdd_plan.model.evaluate import prepare, snapshot


def decode_split(scenario, model, gpus, tiers, deployment, resolution) -> list[dict]:
    """One entry per group of the finishing decode role when it holds several (else
    none): its share of the role's requests and, unless a queue saturates at the offered
    rate, its batch, slots, utilisation and slot wait there."""
    setup = prepare(scenario, deployment, model, gpus, tiers, resolution)
    if not setup.mixed:
        return []
    try:
        snap = snapshot(setup, scenario.workload.arrival_rate_per_s)
    except SaturatedError:
        return [
            {"gpu": p.group.gpu, "gpus_per_instance": p.group.gpus_per_instance,
             "count": p.group.count, "share_frac": s}
            for s, p in zip(setup.decode_shares_frac, setup.decode_groups, strict=True)
        ]  # fmt: skip
    return [
        {k: float(v) if k not in ("gpu",) and not isinstance(v, int) else v
         for k, v in dataclasses.asdict(g).items()}
        for g in snap.decode_groups
    ]  # fmt: skip
