"""Capacity classes: how a GPU-hour is bought (`costs.capacity_classes`).

- **on-demand**: the offer's own price (`price_usd_per_gpu_hour`), paid for the hours used;
- **reserved**: committed for the whole horizon (every hour of the curve's cycle, used or
  not) at `price_frac` of on-demand (a 1- or 3-year commitment's discount);
- **spot** (preemptible): at `price_frac` of on-demand, for the hours used, but each
  instance is reclaimed at `interruptions_per_hour` and takes `replacement_s` to be
  replaced. The plan absorbs the losses with headroom, N+k at a stated confidence: at any
  moment an instance is down (interrupted within the last replacement time) with
  probability p = 1 - exp(-rate x replacement), independently, so of s spot instances
  Binomial(s, p) are down; covering a need of c instances with spot buys the fewest s with
  P(Binomial(s, p) <= s - c) >= confidence (`spot_instances_for`). Independence is the
  optimistic part (a provider reclaims in waves): `max_share_frac` caps the share of a
  role's instances in a period that may be spot.

Lines and the decode-side cache are committed (leased for the horizon) in every class.
Plain data; the defaults are assumptions, said so with their reasoning (`basis`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

RESERVED_BASIS = (
    "assumed: a 1-year commitment at 40% off on-demand, within the 30-50% that clouds list "
    "for 1-year GPU commitments; set costs.capacity_classes.reserved.price_frac to your quote"
)
SPOT_BASIS = (
    "assumed: 60% off on-demand; one interruption per instance every 20 h (0.05/h, well above "
    "the monthly rates clouds publish, since GPU capacity is reclaimed in waves) and 10 min "
    "to replace one (a node's boot and weight load); set your market's figures"
)
MAX_SPOT_PER_NEED = 100  # headroom search stops here (p near 1: spot cannot cover a need)


@dataclass(frozen=True)
class SpotTerms:
    price_frac: float = 0.4
    interruptions_per_hour: float = 0.05
    replacement_s: float = 600.0
    confidence: float = 0.99
    max_share_frac: float = 1.0
    # where the figures come from (a text, not a figure: two terms that differ only in it
    # price the same)
    basis: str = field(default=SPOT_BASIS, compare=False)

    @property
    def down_frac(self) -> float:
        """The probability a spot instance is down at a given moment."""
        return 1.0 - math.exp(-self.interruptions_per_hour * self.replacement_s / 3600.0)

    def instances_for(self, need: int) -> int | None:
        """Spot instances that cover `need` at the confidence (None: none can)."""
        return spot_instances_for(need, self.down_frac, self.confidence)


@lru_cache(maxsize=4096)
def spot_instances_for(need: int, down_frac: float, confidence: float) -> int | None:
    """The fewest s >= need with P(Binomial(s, down_frac) <= s - need) >= confidence."""
    from scipy import special  # bdtr: the binomial CDF, without scipy.stats' import time

    if need <= 0:
        return 0
    if down_frac <= 0:
        return need
    for s in range(need, need * MAX_SPOT_PER_NEED + 1):
        if special.bdtr(s - need, s, down_frac) >= confidence:
            return s
    return None


@dataclass(frozen=True)
class OfferClasses:
    """The classes one datacenter's GPU type can be bought in."""

    reserved_price_frac: float
    spot: SpotTerms | None  # None: no spot market for it


@dataclass(frozen=True)
class CapacityClasses:
    reserved_price_frac: float = 0.6
    reserved_term_years: float = 1.0
    reserved_basis: str = field(default=RESERVED_BASIS, compare=False)
    spot: SpotTerms | None = None  # None: no spot unless the scenario prices it
    # (datacenter, gpu) -> its own terms, where the scenario gives them
    by_offer: dict = field(default_factory=dict)

    def offer(self, datacenter: str, gpu: str) -> OfferClasses:
        return self.by_offer.get(
            (datacenter, gpu), OfferClasses(self.reserved_price_frac, self.spot)
        )
