"""The hardware at each end of the plan's leased lines: per line tier and end, a port of the
line's speed (one of your router's or switch's: not priced) and a transceiver (the catalog's
`line_ends.yaml`; priced only where a quote or a source gives a price, counted then in the
one-time total). Two ends per line, so each tier gives two port rows and two optic rows."""

from __future__ import annotations

from pdd_plan.model.scenario import Scenario
from pdd_plan.report.bom_common import line_ends, location
from pdd_plan.report.bom_sources import provenance, quote_provenance, quote_terms

OPTIC_PRICE = "optic_usd_each"


def _optic_price(s: Scenario, catalog, tier: str, end) -> tuple[float | None, dict]:
    quote = s.quotes.line(tier, OPTIC_PRICE)
    if quote is not None:
        return quote.value, quote_provenance(quote, s)
    figure = end.provenance.get(OPTIC_PRICE) if end is not None else None
    source = provenance(figure, catalog.sources)
    return (end.optic_usd_each if end is not None else None), source


def line_end_rows(plan: dict, s: Scenario, catalog) -> list[dict]:
    """A port row and an optic row per line tier and end (two ends a line)."""
    ends = line_ends(plan, s)[:2]
    rows = []
    for lease in plan["lines"]:
        tier_id, count = lease["tier"], lease["count"]
        end = catalog.orders.line_ends.get(tier_id)
        price, source = _optic_price(s, catalog, tier_id, end)
        for dc in ends:
            base = {"datacenter": dc, "location": location(s, [dc]), "role": "wan_line",
                    "item": tier_id, "units": count}  # fmt: skip
            rows.append({**base, "kind": "line_port", "unit": "port", "counts_in": "",
                         "product": end.port if end else f"a port for {tier_id}",
                         "note": f"one port per line at this end ({count} line"
                                 f"{'s' if count != 1 else ''}): a port of your router or "
                                 "switch, not priced here"})  # fmt: skip
            optic = {**base, "kind": "line_optic", "unit": "transceiver", "counts_in": "",
                     "product": end.optic if end else "no transceiver in the catalog for "
                                                      f"{tier_id} (line_ends.yaml)",
                     "unit_price_per": "transceiver, once", **source}  # fmt: skip
            if price is not None:
                optic.update(unit_price_usd=price, one_time_usd=count * price,
                             counts_in="total_one_time")  # fmt: skip
            else:
                said = optic.get("note") or "no price in our sources"
                optic["note"] = f"not priced (prices.lines[].optic_usd_each quotes it): {said}"
            optic.update(quote_terms(s.quotes.line(tier_id, OPTIC_PRICE)))
            rows.append(optic)
    return rows
