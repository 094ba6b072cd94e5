"""Every GPU role of a plan under the utilisation cap at the rate every plan must carry.

`policy.utilization_cap_frac` is the planned ceiling of every role: the MILP sizes its
capacities under it, the search (search.py) refuses a line above it (ceilings.py) and, with
this check, a plan any of whose GPU roles evaluate reports above it. The figures are
evaluate's own (`evaluate.utilization_frac`, what `role_utilization_frac` shows), so
the search never recommends a plan that its own report shows above the cap (helper ha's bug
hunt: prefill planned at 0.987 under a 0.85 cap; decode above the 95 % regime warning).
"""

from __future__ import annotations

from pdd_plan.errors import SaturatedError
from pdd_plan.model.evaluate import utilization_frac
from pdd_plan.plan.bounds import BatchedPrefillBound
from pdd_plan.plan.ceilings import CAP_REL_SLACK
from pdd_plan.plan.sup_rate import smallest

# the line and its connection pool keep their own check (ceilings.line_within_cap): their
# load does not depend on the GPU counts the search's corners raise
LINE_ROLES = frozenset({"wan_line", "wan_pool"})


def gpu_role_utilizations(setup, rate_rps: float) -> dict[str, float] | None:
    """Each GPU role's utilisation at `rate_rps`, as evaluate reports it; None when a
    queue saturates (a saturated role is above any cap)."""
    try:
        util = utilization_frac(setup, rate_rps)
    except SaturatedError:
        return None
    return {role: u for role, u in util.items() if role not in LINE_ROLES}


def roles_within_cap(setup, rate_rps: float, cap_frac: float) -> bool:
    """Whether every GPU role runs at most `cap_frac` busy at `rate_rps`."""
    util = gpu_role_utilizations(setup, rate_rps)
    return util is not None and all(u <= cap_frac * (1 + CAP_REL_SLACK) for u in util.values())


def fewest_within_cap(bound, rate_rps: float, cap_frac: float, start: int) -> int | None:
    """The fewest instances (at least `start`) of a batched prefill pool whose load at
    `rate_rps` is within the cap; `start` for any other bound (no floor from the cap).
    Exact, and a proof the search may size by: the pool's load is evaluate's own figure
    (the same prefill_queue, the bound's `queue`), rate x one full step's time / the
    instances, so it falls as instances are added and depends on no other role, line or
    policy; a plan with fewer has its prefill above the cap. None: no count is within."""
    if not isinstance(bound, BatchedPrefillBound):
        return start

    def within(n: int) -> bool:
        try:
            return bound.queue(n, rate_rps)[2] <= cap_frac * (1 + CAP_REL_SLACK)
        except SaturatedError:
            return False

    return smallest(within, max(start, 1))
