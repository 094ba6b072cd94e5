"""The bill of materials as rows: what a plan rents, what it would cost to buy, and where
every price comes from.

The hourly rows are `model.setup.cost_items` (the one cost formula), so `total_hourly` is
the answer's `cost_usd_per_hour`. Besides them: the nodes to order per datacenter and GPU
type (instances packed onto `gpus_per_node`-GPU nodes, spares stated), the one-time line
installation, and the purchase of those nodes where the catalog has a sourced price,
amortised over `costs.amortization_years`. Each row names its source, basis and a flag
where the figure is assumed. Rows are dicts keyed by `bom.COLUMNS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pdd_plan.model.caches.cache_tier import CacheBuy
from pdd_plan.model.compute.hardware import Sourced
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease, RoutingPolicy
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.setup import (
    cost_items,
    gpus_by_datacenter,
    line_price_usd_per_month,
    nodes_needed,
    power_usd_per_gpu_hour,
)
from pdd_plan.model.units import GBIT_BITS, HOURS_PER_MONTH

HOURS_PER_YEAR = 12 * HOURS_PER_MONTH
NO_PURCHASE_PRICE = "no sourced purchase price"
NOT_INCLUDED = (
    ("cpus_and_host_memory", "CPUs, host memory and chassis beyond what the rented node "
                             "includes; a purchase price is the GPU's alone"),
    ("storage", "model weights, KV offload and log storage"),
    ("spares", "spare nodes or GPUs held against failures (only the idle GPUs of the last "
               "node are listed)"),
    ("fabric", "inter-node networking beyond the catalog's NICs: switches, optics, cabling, "
               "and the WAN circuit and egress behind a cloud port"),
    ("software", "software licences and support contracts"),
    ("staff", "operations staff and on-call"),
    ("facility", "power (unless costs.include_power), cooling beyond the PUE, space, "
                 "taxes"),
)  # fmt: skip


PURCHASE_KINDS = ("purchase", "cache_purchase")


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
        """The GPU types (and cache tiers) whose purchase price is sourced."""
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


def provenance(figure: Sourced | None, sources: dict) -> dict:
    """The source columns of one catalog figure; flagged where it is not a fact."""
    if figure is None:
        return {}
    entry = sources.get(figure.source) or {}
    flag = {"assumed": "assumed", "low_confidence": "low confidence"}.get(figure.basis, "")
    return {
        "price_source": figure.source,
        "source_title": entry.get("title", ""),
        "source_reference": entry.get("reference", ""),
        "source_accessed": str(entry.get("accessed", "")),
        "basis": figure.basis,
        "flag": flag,
        "note": figure.note,
    }


def scenario_provenance(s: Scenario, what: str) -> dict:
    return {"price_source": "scenario", "source_title": f"scenario {s.name}",
            "source_reference": Path(s.source_file).name, "basis": "scenario",
            "flag": "scenario price", "note": what}  # fmt: skip


def _money(row: dict, hourly: float) -> dict:
    row.update(cost_usd_per_hour=hourly, cost_usd_per_month=hourly * HOURS_PER_MONTH,
               cost_usd_per_year=hourly * HOURS_PER_YEAR)  # fmt: skip
    return row


def _location(s: Scenario, dc_ids: list[str]) -> str:
    names = [s.datacenter(d).name for d in dc_ids if any(x.id == d for x in s.datacenters)]
    return " - ".join(names) if any(names) else ""


def line_ends(plan: dict, s: Scenario) -> list[str]:
    """The datacenters a line joins: prefill's and main decode's (all, if unclear)."""
    where = {g["role"]: g["datacenter"] for g in plan["instances"]}
    ends = [where[r] for r in ("prefill", "main_decode") if r in where]
    return ends if len(set(ends)) == 2 else [dc.id for dc in s.datacenters]


def _rental_source(s: Scenario, catalog, dc: str, gpu_id: str, price: float) -> dict:
    gpu = catalog.gpus[gpu_id]
    if price != gpu.rental_usd_per_gpu_hour:
        return scenario_provenance(s, f"price set in datacenters[{dc}].gpus[{gpu_id}]")
    return provenance(gpu.provenance.get("rental_usd_per_gpu_hour"), catalog.sources)


def _power_source(s: Scenario, catalog, gpu_id: str) -> dict:
    gpu = catalog.gpus[gpu_id]
    tdp = provenance(gpu.provenance.get("tdp_w"), catalog.sources)
    note = (f"{gpu.tdp_w:g} W TDP x PUE {s.costs.pue:g} x ${s.costs.power_usd_per_kwh:g}/kWh "
            "(costs.pue, costs.power_usd_per_kwh); the TDP's source is cited")  # fmt: skip
    return {**tdp, "basis": "derived", "note": note}


def _tier(catalog, tier_id: str) -> dict:
    """A line tier's product columns: the catalog's name, the capacity in the unit."""
    tier = catalog.lines[tier_id]
    gbit = tier.capacity_bits_per_s / GBIT_BITS
    return {"product": tier.name, "unit": f"line of {gbit:g} Gbit/s"}


def _line_row(row: dict, plan: dict, s: Scenario, catalog) -> dict:
    tier_id, ends = row["item"], line_ends(plan, s)
    row.update(datacenter="-".join(ends), location=_location(s, ends), role="wan_line",
               unit_price_usd=line_price_usd_per_month(s, catalog.lines, tier_id),
               unit_price_per="line-month", **_tier(catalog, tier_id))  # fmt: skip
    if tier_id in s.wan.tier_price_usd_per_month:
        row.update(scenario_provenance(s, f"wan.tier_prices_usd_per_month.{tier_id}"))
    else:
        figure = catalog.lines[tier_id].provenance.get("price_usd_per_month")
        row.update(provenance(figure, catalog.sources))
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
            rows.append(_money(_line_row(row, plan, s, catalog), c.usd_per_hour))
            continue
        if c.kind == "decode_cache":
            rows.append(_money(_cache_row(row, s, catalog, deployment), c.usd_per_hour))
            continue
        row.update(location=_location(s, [c.datacenter]), product=catalog.gpus[c.item].name,
                   unit="GPU", unit_price_per="GPU-hour")  # fmt: skip
        if c.kind != "spare_gpus":
            g = shapes[(c.role, c.datacenter, c.item)]
            row.update(gpus_per_instance=g.gpus_per_instance, instances=g.count)
        if c.kind == "power":
            row.update(_power_source(s, catalog, c.item))
        else:
            row.update(_rental_source(s, catalog, c.datacenter, c.item, c.unit_usd_per_hour))
        if c.kind == "spare_gpus":
            row["note"] = "idle GPUs of the last node, charged (costs.charge_whole_nodes)"
        rows.append(_money(row, c.usd_per_hour))
    return rows


def _cache_product(catalog, tier_id: str) -> dict:
    tier = catalog.cache_tiers.get(tier_id)
    return {"product": tier.name if tier else tier_id, "unit": "TB (1e12 bytes)"}


def _cache_row(row: dict, s: Scenario, catalog, deployment: Deployment) -> dict:
    """The decode-side cache tier rented for the main-decode side."""
    buy = deployment.decode_cache
    row.update(location=_location(s, [row["datacenter"]]), unit_price_per="TB-month",
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
        row = {"datacenter": c.datacenter, "location": _location(s, [c.datacenter]),
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
        rows.append(_money(row, c.units * price / (years * HOURS_PER_YEAR)))
    return rows


def node_rows(s: Scenario, catalog, deployment: Deployment) -> list[dict]:
    """What to order: whole nodes per datacenter and GPU type, and the GPUs left idle."""
    rows = []
    for (dc, gpu_id), used in gpus_by_datacenter(deployment).items():
        gpu = catalog.gpus[gpu_id]
        nodes = nodes_needed(used, gpu.gpus_per_node)
        price = next(o for o in s.datacenter(dc).gpus if o.gpu == gpu_id).price_usd_per_gpu_hour
        spare = nodes * gpu.gpus_per_node - used
        charged = "charged" if s.costs.charge_whole_nodes else "not charged in total_hourly"
        row = {"datacenter": dc, "location": _location(s, [dc]), "role": "order",
               "item": gpu_id, "kind": "nodes", "product": gpu.name, "gpus": used,
               "nodes": nodes, "spare_gpus": spare, "units": nodes,
               "unit": f"node of {gpu.gpus_per_node} GPUs",
               "unit_price_usd": gpu.gpus_per_node * price, "unit_price_per": "node-hour",
               "counts_in": ""}  # fmt: skip
        row.update(_rental_source(s, catalog, dc, gpu_id, price))
        row["note"] = (f"{used} GPUs in use on {nodes} whole nodes, {spare} idle ({charged}); "
                       f"a node is {gpu.gpus_per_node} x the per-GPU price")  # fmt: skip
        rows.append(_money(row, nodes * gpu.gpus_per_node * price))
    return rows


def install_rows(plan: dict, s: Scenario, catalog) -> list[dict]:
    """Line installation, paid once per line."""
    ends = line_ends(plan, s)
    rows = []
    for lease in plan["lines"]:
        tier = catalog.lines[lease["tier"]]
        row = {"datacenter": "-".join(ends), "location": _location(s, ends),
               "role": "wan_line", "item": tier.id, "kind": "line_install",
               **_tier(catalog, tier.id), "units": lease["count"],
               "unit_price_usd": tier.install_usd,
               "unit_price_per": "line, once", "one_time_usd": lease["count"] * tier.install_usd,
               "counts_in": "total_one_time"}  # fmt: skip
        row.update(provenance(tier.provenance.get("install_usd"), catalog.sources))
        rows.append(row)
    return rows


def purchase_rows(s: Scenario, catalog, deployment: Deployment) -> list[dict]:
    """Buying the ordered nodes instead: the GPUs' purchase price, amortised over
    `costs.amortization_years`, plus their power; "no sourced purchase price" where the
    catalog has none (no price is invented)."""
    years = s.costs.amortization_years
    rows = []
    for (dc, gpu_id), used in gpus_by_datacenter(deployment).items():
        gpu = catalog.gpus[gpu_id]
        bought = nodes_needed(used, gpu.gpus_per_node) * gpu.gpus_per_node
        row = {"datacenter": dc, "location": _location(s, [dc]), "role": "buy",
               "item": gpu_id, "kind": "purchase", "product": gpu.name, "gpus": used,
               "nodes": bought // gpu.gpus_per_node, "units": bought, "unit": "GPU",
               "unit_price_per": "GPU, once", "counts_in": "total_purchase"}  # fmt: skip
        row.update(provenance(gpu.provenance.get("purchase_usd_per_gpu"), catalog.sources))
        price = gpu.purchase_usd_per_gpu
        if price is None:
            row.update(flag=NO_PURCHASE_PRICE, counts_in="")
            rows.append(row)
            continue
        power = used * power_usd_per_gpu_hour(s, gpu)
        row.update(unit_price_usd=price, purchase_usd=bought * price)
        row["note"] = (f"{row['note']}; per hour: {bought} x ${price:,.0f} over {years:g} years "
                       f"({years:g} x {HOURS_PER_YEAR:g} h) + power of the {used} GPUs in use "
                       f"${power:,.2f}/h (TDP x PUE x $/kWh); rental, not purchase, is what "
                       "total_hourly charges").lstrip("; ")  # fmt: skip
        rows.append(_money(row, bought * price / (years * HOURS_PER_YEAR) + power))
    return rows


def bill(plan: dict, s: Scenario, catalog) -> Bill:
    """Every row of the bill of materials and its three totals."""
    deployment = deployment_of(plan, catalog.lines)
    rows = hourly_rows(plan, s, catalog, deployment)
    rows += node_rows(s, catalog, deployment)
    rows += install_rows(plan, s, catalog)
    rows += purchase_rows(s, catalog, deployment)
    rows += cache_purchase_rows(s, catalog, deployment)
    rows = [r for r in rows if r["units"]]  # a group or line of count 0 is nothing to order
    hourly = sum(r["cost_usd_per_hour"] for r in rows if r["counts_in"] == "total_hourly")
    once = sum(r["one_time_usd"] for r in rows if r["counts_in"] == "total_one_time")
    bought = sum(r["purchase_usd"] for r in rows if r["counts_in"] == "total_purchase")
    return Bill(rows, hourly, once, bought)
