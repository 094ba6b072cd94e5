"""`costs.capacity_classes`, strictly (model/capacity_classes.py: what each class means).

```yaml
costs:
  capacity_classes:
    reserved: {price_frac: 0.6, term_years: 1, basis: "our 1-year quote, 2025-05"}
    spot: {price_frac: 0.4, interruptions_per_hour: 0.05, replacement_min: 10,
           confidence: 0.99, max_share_frac: 0.5, basis: "..."}   # absent: no spot
    offers:   # one datacenter's GPU type on its own terms
      - {datacenter: dc_b, gpu: h20_96g, reserved_price_frac: 0.5, spot: false}
```
"""

from __future__ import annotations

import dataclasses

from pdd_plan.loaders.strict import Node
from pdd_plan.model.capacity_classes import CapacityClasses, OfferClasses, SpotTerms

_SPOT_KEYS = (
    "price_frac",
    "interruptions_per_hour",
    "replacement_min",
    "confidence",
    "max_share_frac",
    "basis",
)
_OFFER_SPOT = tuple(f"spot_{k}" for k in _SPOT_KEYS if k != "basis")


def capacity_classes(node: Node, datacenters) -> CapacityClasses:
    """The classes; every problem recorded on `node`'s file (defaults where absent).
    `datacenters`: the scenario's, to check each offer names one of its GPU offers."""
    if node.is_missing or node.value is None:
        return CapacityClasses()
    f = node.mapping(optional=("reserved", "spot", "offers"))
    if f is None:
        return CapacityClasses()
    out = _reserved(f["reserved"])
    if not f["spot"].is_missing and f["spot"].value is not None:
        out = dataclasses.replace(out, spot=_spot(f["spot"], SpotTerms()))
    by_offer = {}
    for item in [] if f["offers"].is_missing else f["offers"].items(min_items=1) or []:
        key, terms = _offer(item, out, datacenters)
        if key is not None:
            if key in by_offer:
                item.fail("an offer not named by another item")
            by_offer[key] = terms
    return dataclasses.replace(out, by_offer=by_offer)


def _reserved(node: Node) -> CapacityClasses:
    default = CapacityClasses()
    if node.is_missing or node.value is None:
        return default
    f = node.mapping(optional=("price_frac", "term_years", "basis"))
    if f is None:
        return default
    frac = _price_frac(f["price_frac"], default.reserved_price_frac)
    years = f["term_years"].number(default=1.0, minimum=0, exclusive_minimum=True, maximum=10)
    basis = f["basis"].string(default=None)
    if basis is None and not f["price_frac"].is_missing:
        basis = "the scenario's figure"
    return CapacityClasses(frac, years or 1.0, basis or default.reserved_basis)


def _price_frac(node: Node, default: float) -> float:
    """A class's price as a share of on-demand: above 0, at most 1 (a dearer class than
    on-demand would never be bought)."""
    value = node.number(default=default, minimum=0, exclusive_minimum=True, maximum=1.0)
    return default if value is None else value


def _spot(node: Node, base: SpotTerms) -> SpotTerms:
    f = node.mapping(optional=_SPOT_KEYS)
    return base if f is None else _spot_terms(f, base)


def _spot_terms(f: dict[str, Node], base: SpotTerms) -> SpotTerms:
    """Spot terms from their nodes by short name (`spot.price_frac`, or an offer's
    `spot_price_frac`), `base`'s where absent."""
    replacement_min = f["replacement_min"].number(minimum=0, maximum=24 * 60)
    figures = [k for k in ("price_frac", "interruptions_per_hour", "replacement_min")
               if not f[k].is_missing]  # fmt: skip
    basis = f["basis"].string(default=None)
    return SpotTerms(
        price_frac=_price_frac(f["price_frac"], base.price_frac),
        interruptions_per_hour=f["interruptions_per_hour"].number(
            default=base.interruptions_per_hour, minimum=0, maximum=100
        ),
        replacement_s=base.replacement_s if replacement_min is None else replacement_min * 60,
        confidence=f["confidence"].number(default=base.confidence, minimum=0.5, maximum=0.999999),
        max_share_frac=f["max_share_frac"].number(
            default=base.max_share_frac, minimum=0, exclusive_minimum=True, maximum=1.0
        ),
        basis=basis or _basis(figures, base.basis),
    )


def _basis(figures: list[str], assumed: str) -> str:
    """Where spot's figures come from, when the scenario does not say."""
    if not figures:
        return assumed
    if len(figures) == 3:
        return "the scenario's figures"
    return f"the scenario's {', '.join(figures)}; the rest {assumed}"


def _offer(item: Node, classes: CapacityClasses, datacenters):
    """((datacenter, gpu), OfferClasses) of one `offers` item; (None, None) on a problem."""
    f = item.mapping(
        required=("datacenter", "gpu"), optional=("reserved_price_frac", "spot", *_OFFER_SPOT)
    )
    if f is None:
        return None, None
    offers = {dc.id: {o.gpu for o in dc.gpus} for dc in datacenters}
    dc = f["datacenter"].reference(offers, "datacenter")
    gpu = f["gpu"].reference(offers.get(dc, ()), f"{dc} GPU") if dc else None
    reserved = _price_frac(f["reserved_price_frac"], classes.reserved_price_frac)
    spot_on = f["spot"].boolean(default=classes.spot is not None or _names_spot(f))
    spot = None
    if spot_on:
        terms = {k[len("spot_") :]: f[k] for k in _OFFER_SPOT}
        terms["basis"] = Node.absent(f"{item.path}.basis", item.problems)
        spot = _spot_terms(terms, classes.spot or SpotTerms())
    elif _names_spot(f):
        f["spot"].fail("true, or no spot_* keys (spot: false buys no spot here)")
    if dc is None or gpu is None:
        return None, None
    return (dc, gpu), OfferClasses(reserved, spot)


def _names_spot(f: dict[str, Node]) -> bool:
    return any(not f[k].is_missing for k in _OFFER_SPOT)
