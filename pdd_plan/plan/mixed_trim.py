"""The MILP's mixed plan, trimmed with evaluate (`policy.mixed_pools`, formulate.py).

The MILP sizes every role at its linear capacity under the utilisation cap, which is
conservative (a prefill pool with a batch, a decode pool below its TPOT batch carry more
than that): its plan meets the SLA with instances to spare, and the exact walk, which
covers one type per role, then beats it with a single-type plan that the same slack
would have made a better mix. So a verified mixed plan is trimmed before it is offered:
group by group, the dearest per unit of capacity first (the type the router should lean
on least), the fewest instances that still meet the SLA at the rate it was verified for,
by bisection on the count (meeting the SLA is taken as monotone in each count, as the
walk takes it). A group of a mixed role may go to zero while another remains. Each plan
is checked by the search's own `meets`, so the result is verified like any seed.
"""

from __future__ import annotations

import dataclasses

from pdd_plan.model.decode.mixed_pool import MIXABLE_ROLES
from pdd_plan.model.deployment import Deployment


def is_mixed(d: Deployment) -> bool:
    return any(len(d.role(r)) > 1 for r in MIXABLE_ROLES)


def trim(d: Deployment, rate: float, meets, usd_per_unit_capacity: dict[str, float]):
    """`d` with each group at the fewest instances that keep `meets(plan, rate)`;
    `usd_per_unit_capacity`: by candidate key (role_dc_gpu_xN), the order of trimming."""
    groups = list(d.instances)

    def key(i: int) -> float:
        g = groups[i]
        return -usd_per_unit_capacity.get(_key(g), 0.0)

    for i in sorted(range(len(groups)), key=key):
        g = groups[i]
        others = sum(x.count for j, x in enumerate(groups) if j != i and x.role == g.role)
        low, high = (0 if others > 0 else 1), g.count  # `high` meets
        while low < high:
            mid = (low + high) // 2
            trial = groups[:i] + [dataclasses.replace(g, count=mid)] + groups[i + 1 :]
            if meets(_with(d, trial), rate):
                high = mid
            else:
                low = mid + 1
        groups[i] = dataclasses.replace(g, count=high)
    return _with(d, groups)


def _with(d: Deployment, groups) -> Deployment:
    return dataclasses.replace(d, instances=tuple(g for g in groups if g.count > 0))


def _key(g) -> str:
    return f"{g.role}_{g.datacenter}_{g.gpu}_x{g.gpus_per_instance}"
