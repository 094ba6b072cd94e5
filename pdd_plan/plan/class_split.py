"""How one role's instances are bought over a load curve: a reserved base for the whole
horizon, and per period an on-demand and spot top-up, at least cost (issue #26).

The role needs n_t instances in period t (h_t hours; H = sum h_t). Reserving R costs
H x P_r x R; in period t the top-up m_t = max(0, n_t - R) is covered by o on-demand
instances and spot instances that cover the rest, c = m_t - o, with their headroom
(s = S(c), capacity_classes.spot_instances_for), at h_t x (P_o x o + P_s x s), with spot
at most a share `max_share` of the role's R + o + s instances. The roles' costs add up
(each role's prices and counts are its own), so each role is split alone.

Exact by enumeration: R runs over 0..max n_t (past the peak a reserved instance is never
used), and for each R every period's o over 0..m_t; the cheapest (the fewest reserved of
equal cost) wins. Tiny: a role's counts are tens.

Without spot the split has a closed form, which tests/unit/test_class_split.py checks the
enumeration against. The cost is C(R) = H P_r R + P_o sum_t h_t max(0, n_t - R), so
C(R + 1) - C(R) = H P_r - P_o x hours(n_t > R): the (R+1)-th reserved instance saves one
on-demand instance in exactly the hours that need more than R. hours(n_t > R) never grows
with R, so the differences never shrink (C is convex in R) and the cheapest R is the
largest whose last step still paid: reserve the j-th instance iff it is needed in more
than r = P_r / P_o of the hours (hours(n_t >= j) > r x H). An instance needed in fewer
than that share of the hours is bought on demand.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pdd_plan.model.capacity_classes import SpotTerms

COST_REL_TOL = 1e-12  # equal costs: the fewer reserved instances win


@dataclass(frozen=True)
class Prices:
    """One instance-hour of a role's candidate in each class, and its spot terms."""

    on_demand_usd_per_hour: float
    reserved_usd_per_hour: float
    spot: SpotTerms | None = None

    @property
    def spot_usd_per_hour(self) -> float | None:
        return None if self.spot is None else self.spot.price_frac * self.on_demand_usd_per_hour


@dataclass(frozen=True)
class Split:
    reserved: int
    on_demand: tuple[int, ...]  # per period
    spot: tuple[int, ...]  # per period, headroom included
    cost_usd: float  # over the horizon (sum of h_t)

    def instances(self, t: int) -> int:
        """Instances running in period t (spot headroom included)."""
        return self.reserved + self.on_demand[t] + self.spot[t]


@lru_cache(maxsize=65536)  # the schedule's bound asks for the same needs of many structures
def split(needs: tuple[int, ...], hours: tuple[float, ...], prices: Prices) -> Split:
    """The cheapest reserved / on-demand / spot split of `needs` (module doc)."""
    horizon_h = sum(hours)
    best = None
    for reserved in range(0, max(needs, default=0) + 1):
        cost = horizon_h * prices.reserved_usd_per_hour * reserved
        tops = [_top_up(n - reserved, reserved, prices) for n in needs]
        cost += sum(h * c for h, (_, _, c) in zip(hours, tops, strict=True))
        if best is None or cost < best.cost_usd * (1 - COST_REL_TOL):
            best = Split(reserved, tuple(o for o, _, _ in tops), tuple(s for _, s, _ in tops),
                         cost)  # fmt: skip
    return best


def _top_up(missing: int, reserved: int, prices: Prices) -> tuple[int, int, float]:
    """(on-demand, spot, $/h) covering `missing` instances above `reserved` at least cost."""
    if missing <= 0:
        return 0, 0, 0.0
    best = (missing, 0, missing * prices.on_demand_usd_per_hour)
    if prices.spot is None:
        return best
    spot_price = prices.spot_usd_per_hour
    for on_demand in range(missing - 1, -1, -1):
        spot = prices.spot.instances_for(missing - on_demand)
        if spot is None:
            break  # covering more with spot needs still more: none can
        if spot > prices.spot.max_share_frac * (reserved + on_demand + spot) + 1e-9:
            continue
        cost = on_demand * prices.on_demand_usd_per_hour + spot * spot_price
        if cost < best[2] * (1 - COST_REL_TOL):
            best = (on_demand, spot, cost)
    return best


def least_cost_usd(needs: tuple[int, ...], hours: tuple[float, ...], prices: Prices) -> float:
    """`split(...).cost_usd`. It never falls when a need rises (a split of the larger needs
    covers the smaller: the same reserved and on-demand, and spot's headroom S(c) never
    falls with c), so fed each period's fewest possible instances it bounds the cost of
    any plan from below (schedule.py's bound)."""
    return split(needs, hours, prices).cost_usd
