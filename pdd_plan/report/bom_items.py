"""The bill of materials as rows: what a plan rents, what to order and what it would cost to
buy, and where every price comes from.

The hourly rows are `model.setup.cost_items` (the one cost formula), so `total_hourly` is
the answer's `cost_usd_per_hour`. Besides them: the nodes rented per datacenter and GPU type
(instances packed onto `gpus_per_node`-GPU nodes, idle GPUs stated), the one-time line
installation, the order lines (report/bom_orders.py: one per datacenter and node
configuration, spares, power in kW and kWh a year), the ports and optics at each line end
(report/bom_line_ends.py), and rent or buy (report/bom_buy.py). Each row names its source,
basis and a flag where the figure is assumed or quoted. Rows are dicts keyed by
`bom.COLUMNS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdd_plan.model.caches.cache_tier import CacheBuy
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease, RoutingPolicy
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.setup import (
    cost_items,
    gpus_by_datacenter,
    line_price_usd_per_month,
    nodes_needed,
)
from pdd_plan.report.bom_buy import purchase_rows
from pdd_plan.report.bom_common import (
    HOURS_PER_YEAR,
    NO_PURCHASE_PRICE,
    line_ends,
    location,
    money,
    tier_product,
)
from pdd_plan.report.bom_line_ends import line_end_rows
from pdd_plan.report.bom_orders import order_rows
from pdd_plan.report.bom_sources import power_source, provenance, rental_source, sourced_price

__all__ = ["HOURS_PER_YEAR", "NO_PURCHASE_PRICE", "NOT_INCLUDED", "Bill", "bill", "cache_buy",
           "line_ends"]  # fmt: skip
NOT_INCLUDED = (
    ("cpus_and_host_memory", "CPUs, host memory and chassis beyond the order lines' node "
                             "configurations; a GPU purchase price is the GPU's alone unless a "
                             "node price is quoted"),
    ("storage", "model weights, KV offload and log storage beyond the nodes' NVMe"),
    ("spares", "spare nodes beyond costs.spares (N+k per role), spare GPUs and parts"),
    ("fabric", "inter-node networking beyond the nodes' NICs and the line-end optics: "
               "switches, cabling, and the WAN circuit and egress behind a cloud port"),
    ("software", "software licences and support contracts"),
    ("staff", "operations staff and on-call"),
    ("facility", "power (unless costs.include_power), cooling beyond the PUE, space, "
                 "taxes"),
)  # fmt: skip
LEASE = "price_usd_per_month"
INSTALL = "install_usd"
PURCHASE_KINDS = ("order", "cache_purchase")


@dataclass(frozen=True)
class Bill:
    rows: list[dict]
    total_hourly_usd: float
    total_one_time_usd: float
    total_purchase_usd: float  # the priced items only: see `unpriced`

    def _bought(self, priced: bool) -> list[str]:
        return sorted({r["item"] for r in self.rows if r["kind"] in PURCHASE_KINDS
                       and (r.get("flag") != NO_PURCHASE_PRICE) == priced})  # fmt: skip

    def priced(self) -> list[str]:
        """The GPU types (and cache tiers) whose order lines carry a purchase price."""
        return self._bought(True)

    def unpriced(self) -> list[str]:
        """Those without one: the purchase total leaves them out, so it is no price of the
        whole plan while this is not empty (and none at all when nothing is priced)."""
        return self._bought(False)


def deployment_of(plan: dict, lines) -> Deployment:
    """The plan dict (design.md §7) back as the Deployment the cost formula takes."""
    return Deployment(
        plan["architecture"],
        tuple(InstanceGroup(g["role"], g["datacenter"], g["gpu"], g["gpus_per_instance"],
                            g["count"]) for g in plan["instances"]),
        tuple(LineLease(x["tier"], lines[x["tier"]].capacity_bits_per_s, x["count"])
              for x in plan["lines"]),
        RoutingPolicy(decode_cache=cache_buy(plan.get("decode_cache"))),
    )  # fmt: skip


def cache_buy(entry: dict | None) -> CacheBuy | None:
    """A plan's `decode_cache` entry (deployment_json.plan_json) back as its CacheBuy."""
    if not entry:
        return None
    return CacheBuy(entry["tier"], entry["tb"], entry["price_usd_per_tb_month"])


def _line_row(row: dict, plan: dict, s: Scenario, catalog) -> dict:
    tier_id, ends = row["item"], line_ends(plan, s)
    price = line_price_usd_per_month(s, catalog.lines, tier_id)
    row.update(datacenter="-".join(ends), location=location(s, ends), role="wan_line",
               unit_price_usd=price, unit_price_per="line-month",
               **tier_product(catalog, tier_id))  # fmt: skip
    figure = catalog.lines[tier_id].provenance.get(LEASE)
    row.update(sourced_price(s.quotes.line(tier_id, LEASE), price, figure, s, catalog.sources,
                             f"wan.tier_prices_usd_per_month.{tier_id}"))  # fmt: skip
    return row


def hourly_rows(plan: dict, s: Scenario, catalog, deployment: Deployment) -> list[dict]:
    """One row per charge of `cost_items`, with its product, shape and source."""
    shapes = {(g.role, g.datacenter, g.gpu): g for g in deployment.instances}
    rows = []
    for c in cost_items(s, deployment, catalog.gpus, catalog.lines):
        row = {"datacenter": c.datacenter, "role": c.role, "item": c.item, "kind": c.kind,
               "units": c.units, "unit_price_usd": c.unit_usd_per_hour,
               "counts_in": "total_hourly"}  # fmt: skip
        if c.kind == "line_lease":
            rows.append(money(_line_row(row, plan, s, catalog), c.usd_per_hour))
            continue
        if c.kind == "decode_cache":
            rows.append(money(_cache_row(row, s, catalog, deployment), c.usd_per_hour))
            continue
        row.update(location=location(s, [c.datacenter]), product=catalog.gpus[c.item].name,
                   unit="GPU", unit_price_per="GPU-hour")  # fmt: skip
        if c.kind != "spare_gpus":
            g = shapes[(c.role, c.datacenter, c.item)]
            row.update(gpus_per_instance=g.gpus_per_instance, instances=g.count)
        if c.kind == "power":
            row.update(power_source(s, catalog, c.item, c.datacenter))
        else:
            row.update(rental_source(s, catalog, c.datacenter, c.item, c.unit_usd_per_hour))
        if c.kind == "spare_gpus":
            row["note"] = "idle GPUs of the last node, charged (costs.charge_whole_nodes)"
        rows.append(money(row, c.usd_per_hour))
    return rows


def _cache_product(catalog, tier_id: str) -> dict:
    tier = catalog.cache_tiers.get(tier_id)
    return {"product": tier.name if tier else tier_id, "unit": "TB (1e12 bytes)"}


def _cache_row(row: dict, s: Scenario, catalog, deployment: Deployment) -> dict:
    """The decode-side cache tier rented for the main-decode side."""
    buy = deployment.decode_cache
    row.update(location=location(s, [row["datacenter"]]), unit_price_per="TB-month",
               unit_price_usd=buy.price_usd_per_tb_month,
               **_cache_product(catalog, buy.tier))  # fmt: skip
    tier = catalog.cache_tiers.get(buy.tier)
    if tier is not None and tier.price_usd_per_tb_month == buy.price_usd_per_tb_month:
        row.update(provenance(tier.provenance.get("price_usd_per_tb_month"), catalog.sources))
    else:
        row.update(price_source="plan", basis="plan", flag="plan price",
                   note="the price per TB-month the plan file states")  # fmt: skip
    row["note"] = (f"{buy.tb:g} TB for the main-decode instances, pooled (the decode-side KV "
                   "cache tier the plan bought); " + row.get("note", ""))  # fmt: skip
    return row


def cache_purchase_rows(s: Scenario, catalog, deployment: Deployment) -> list[dict]:
    """Buying the cache tier instead of renting it: its purchase price per TB, amortised
    over `costs.amortization_years` (no power: a host tier's draw is small beside GPUs)."""
    years = s.costs.amortization_years
    rows = []
    for c in (c for c in cost_items(s, deployment, catalog.gpus, catalog.lines)
              if c.kind == "decode_cache"):  # fmt: skip
        tier = catalog.cache_tiers.get(c.item)
        row = {"datacenter": c.datacenter, "location": location(s, [c.datacenter]),
               "role": "buy", "item": c.item, "kind": "cache_purchase", "units": c.units,
               **_cache_product(catalog, c.item), "unit_price_per": "TB, once",
               "counts_in": "total_purchase"}  # fmt: skip
        price = tier.purchase_usd_per_tb if tier is not None else None
        if price is None:
            row.update(flag=NO_PURCHASE_PRICE, counts_in="")
            rows.append(row)
            continue
        row.update(provenance(tier.provenance.get("purchase_usd_per_tb"), catalog.sources))
        row.update(unit_price_usd=price, purchase_usd=c.units * price)
        row["note"] = (f"{row['note']}; per hour: {c.units:g} TB x ${price:,.0f} over {years:g} "
                       f"years").lstrip("; ")  # fmt: skip
        rows.append(money(row, c.units * price / (years * HOURS_PER_YEAR)))
    return rows


def node_rows(s: Scenario, catalog, deployment: Deployment) -> list[dict]:
    """What to rent: whole nodes per datacenter and GPU type, and the GPUs left idle."""
    rows = []
    for (dc, gpu_id), used in gpus_by_datacenter(deployment).items():
        gpu = catalog.gpus[gpu_id]
        nodes = nodes_needed(used, gpu.gpus_per_node)
        price = next(o for o in s.datacenter(dc).gpus if o.gpu == gpu_id).price_usd_per_gpu_hour
        spare = nodes * gpu.gpus_per_node - used
        charged = "charged" if s.costs.charge_whole_nodes else "not charged in total_hourly"
        row = {"datacenter": dc, "location": location(s, [dc]), "role": "order",
               "item": gpu_id, "kind": "nodes", "product": gpu.name, "gpus": used,
               "nodes": nodes, "spare_gpus": spare, "units": nodes,
               "unit": f"node of {gpu.gpus_per_node} GPUs",
               "unit_price_usd": gpu.gpus_per_node * price, "unit_price_per": "node-hour",
               "counts_in": ""}  # fmt: skip
        row.update(rental_source(s, catalog, dc, gpu_id, price))
        row["note"] = (f"{used} GPUs in use on {nodes} whole nodes, {spare} idle ({charged}); "
                       f"a node is {gpu.gpus_per_node} x the per-GPU price")  # fmt: skip
        rows.append(money(row, nodes * gpu.gpus_per_node * price))
    return rows


def install_rows(plan: dict, s: Scenario, catalog) -> list[dict]:
    """Line installation, paid once per line (the quoted price where there is one)."""
    ends = line_ends(plan, s)
    rows = []
    for lease in plan["lines"]:
        tier = catalog.lines[lease["tier"]]
        quote = s.quotes.line(tier.id, INSTALL)
        price = quote.value if quote is not None else tier.install_usd
        row = {"datacenter": "-".join(ends), "location": location(s, ends),
               "role": "wan_line", "item": tier.id, "kind": "line_install",
               **tier_product(catalog, tier.id), "units": lease["count"],
               "unit_price_usd": price, "unit_price_per": "line, once",
               "one_time_usd": lease["count"] * price, "counts_in": "total_one_time"}  # fmt: skip
        row.update(sourced_price(quote, price, tier.provenance.get(INSTALL), s, catalog.sources,
                                 "installation"))  # fmt: skip
        rows.append(row)
    return rows


def bill(plan: dict, s: Scenario, catalog) -> Bill:
    """Every row of the bill of materials and its three totals."""
    deployment = deployment_of(plan, catalog.lines)
    rows = hourly_rows(plan, s, catalog, deployment)
    rows += node_rows(s, catalog, deployment)
    rows += order_rows(s, catalog, deployment)
    rows += install_rows(plan, s, catalog)
    rows += line_end_rows(plan, s, catalog)
    rows += purchase_rows(s, catalog, deployment)
    rows += cache_purchase_rows(s, catalog, deployment)
    rows = [r for r in rows if r["units"]]  # a group or line of count 0 is nothing to order
    hourly = sum(r["cost_usd_per_hour"] for r in rows if r["counts_in"] == "total_hourly")
    once = sum(r["one_time_usd"] for r in rows if r["counts_in"] == "total_one_time")
    bought = sum(r["purchase_usd"] for r in rows if r["counts_in"] == "total_purchase")
    return Bill(rows, hourly, once, bought)
