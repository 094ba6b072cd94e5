"""Rent or buy, per datacenter and GPU type: the whole nodes in use (spares aside) bought at
the user's purchase price (report/bom_orders.node_price: a quoted node price, else the GPU
price quoted or the catalog's), amortised over `costs.amortization_years` plus the power of
the GPUs in use, against renting the same nodes; which is cheaper over that term, and after
how many months the purchase has cost what the rent less the power would have (break-even).
"no sourced purchase price" where there is none: no price is invented."""

from __future__ import annotations

from pdd_plan.model.deployment import Deployment
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.setup import gpus_by_datacenter, nodes_needed, power_usd_per_gpu_hour
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.report.bom_common import HOURS_PER_YEAR, NO_PURCHASE_PRICE, location, money
from pdd_plan.report.bom_orders import node_price


def break_even_months(purchase_usd: float, rent_usd_per_hour: float,
                      power_usd_per_hour: float) -> float | None:  # fmt: skip
    """Months of rent, less the power an owner pays, that add up to the purchase; None
    when renting costs no more than that power (buying never pays back)."""
    saving = (rent_usd_per_hour - power_usd_per_hour) * HOURS_PER_MONTH
    return purchase_usd / saving if saving > 0 else None


def purchase_rows(s: Scenario, catalog, deployment: Deployment) -> list[dict]:
    """One rent-or-buy row per datacenter and GPU type (the order lines are the purchase)."""
    years = s.costs.amortization_years
    rows = []
    for (dc, gpu_id), used in gpus_by_datacenter(deployment).items():
        gpu = catalog.gpus[gpu_id]
        bought = nodes_needed(used, gpu.gpus_per_node) * gpu.gpus_per_node
        row = {"datacenter": dc, "location": location(s, [dc]), "role": "buy",
               "item": gpu_id, "kind": "purchase", "product": gpu.name, "gpus": used,
               "nodes": bought // gpu.gpus_per_node, "units": bought, "unit": "GPU",
               "unit_price_per": "GPU, once", "counts_in": ""}  # fmt: skip
        node_usd, source = node_price(s, catalog, gpu_id, dc)
        row.update(source)
        if node_usd is None:
            rows.append({**row, "flag": NO_PURCHASE_PRICE})
            continue
        per_gpu = node_usd / gpu.gpus_per_node
        power = used * power_usd_per_gpu_hour(s, gpu, dc)
        owned = bought * per_gpu / (years * HOURS_PER_YEAR) + power
        offer = next(o for o in s.datacenter(dc).gpus if o.gpu == gpu_id)
        rent = bought * offer.price_usd_per_gpu_hour + (power if s.costs.include_power else 0)
        months = break_even_months(bought * per_gpu, rent, power)
        cheaper = "buy" if owned < rent else "rent"
        row.update(unit_price_usd=per_gpu, purchase_usd=bought * per_gpu, cheaper=cheaper,
                   break_even_months=months if months is not None else "")  # fmt: skip
        after = f"{months:,.1f} months" if months is not None else "never (rent <= power)"
        row["note"] = (f"per hour: {bought} x ${per_gpu:,.0f} over {years:g} years "
                       f"({years:g} x {HOURS_PER_YEAR:g} h) + power of the {used} GPUs in use "
                       f"${power:,.2f}/h (TDP x PUE x $/kWh) = ${owned:,.2f}/h against renting "
                       f"the same nodes ${rent:,.2f}/h: {cheaper} is cheaper over the term; "
                       f"break-even after {after}; rental, not purchase, is what total_hourly "
                       f"charges; {row.get('note', '')}").rstrip("; ")  # fmt: skip
        rows.append(money(row, owned))
    return rows
