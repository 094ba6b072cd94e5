"""The order lines of the bill of materials: one per datacenter and node configuration.

Each line orders the whole nodes that hold the GPUs in use plus the spare nodes of
`costs.spares` (N+k per role: k nodes of each GPU type a role uses, in its datacenter, since
a spare must match the node it replaces), states the configuration (catalog `nodes/*.yaml`),
the unit price (a quoted node price; else the GPU purchase price, quoted or the catalog's,
times the GPUs per node: the GPUs alone), the power in kW (nodes x the node's maximum; GPU
boards only where the catalog has no node) and the energy a year (kW x PUE x 8,760 h: the
facility's draw at full load, the convention of the power price), and the quote's lead time
and term. Spares are ordered here only, never charged in the answer's hourly cost.
"""

from __future__ import annotations

from pdd_plan.model.deployment import Deployment
from pdd_plan.model.orders import HOURS_PER_YEAR
from pdd_plan.model.prices import order_terms
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.setup import gpus_by_datacenter, nodes_needed
from pdd_plan.report.bom_common import NO_PURCHASE_PRICE, location
from pdd_plan.report.bom_sources import provenance, quote_provenance, quote_terms

NODE_PRICE = "purchase_usd_per_node"
GPU_PRICE = "purchase_usd_per_gpu"


def spare_nodes(s: Scenario, deployment: Deployment) -> dict[tuple[str, str], list[str]]:
    """(datacenter, GPU) -> the roles whose N+k spares it holds, one entry per spare node."""
    per_role = s.costs.spare_nodes_per_role
    held: dict[tuple[str, str], list[str]] = {}
    for role, dc, gpu in sorted({(g.role, g.datacenter, g.gpu) for g in deployment.instances
                                 if g.count > 0 and per_role.get(g.role)}):  # fmt: skip
        held.setdefault((dc, gpu), []).extend([role] * per_role[role])
    return held


def node_price(s: Scenario, catalog, gpu_id: str, dc: str) -> tuple[float | None, dict]:
    """A node's purchase price and its source columns: quoted per node, the catalog's node
    price, else the GPU purchase price (quoted, then the catalog's) x the GPUs per node."""
    node = catalog.orders.nodes.get(gpu_id)
    gpu = catalog.gpus[gpu_id]
    quote = s.quotes.gpu(gpu_id, dc, NODE_PRICE)
    if quote is not None:
        return quote.value, quote_provenance(quote, s)
    if node is not None and node.purchase_usd_per_node is not None:
        return node.purchase_usd_per_node, provenance(node.provenance[NODE_PRICE], catalog.sources)
    quote = s.quotes.gpu(gpu_id, dc, GPU_PRICE)
    per_gpu = quote.value if quote is not None else gpu.purchase_usd_per_gpu
    source = (quote_provenance(quote, s) if quote is not None
              else provenance(gpu.provenance.get(GPU_PRICE), catalog.sources))  # fmt: skip
    if per_gpu is None:  # nothing to price: say what to quote, the node's price first
        if node is not None:
            source = provenance(node.provenance[NODE_PRICE], catalog.sources)
            source["note"] = f"{source['note']}; no GPU purchase price either"
        return None, source
    source["note"] = (f"{gpu.gpus_per_node} x the GPU's purchase price ${per_gpu:,.0f}: the "
                      f"GPUs alone, the host is not priced; {source.get('note', '')}")  # fmt: skip
    return gpu.gpus_per_node * per_gpu, source


def node_power(s: Scenario, catalog, gpu_id: str, nodes: int) -> tuple[dict, str]:
    """The nodes' power columns and how they were found."""
    node, gpu = catalog.orders.nodes.get(gpu_id), catalog.gpus[gpu_id]
    if node is not None:
        kw = nodes * node.max_power_kw
        figure = node.provenance["max_power_kw"]
        how = (f"{nodes} nodes x {node.max_power_kw:g} kW, the node's maximum "
               f"({figure.source}, {figure.basis})")  # fmt: skip
    else:
        kw = nodes * gpu.gpus_per_node * gpu.tdp_w / 1e3
        how = (f"{nodes * gpu.gpus_per_node} GPUs x {gpu.tdp_w:g} W TDP: the GPU boards alone "
               "(no node configuration in the catalog; the host draws more)")  # fmt: skip
    kwh = kw * s.costs.pue * HOURS_PER_YEAR
    how += f"; a year at full draw x PUE {s.costs.pue:g} x {HOURS_PER_YEAR:g} h"
    return {"power_kw": kw, "kwh_per_year": kwh}, how


def order_rows(s: Scenario, catalog, deployment: Deployment) -> list[dict]:
    """One order line per datacenter and node configuration (there is one per GPU type)."""
    spares = spare_nodes(s, deployment)
    rows = []
    for (dc, gpu_id), used in gpus_by_datacenter(deployment).items():
        gpu, node = catalog.gpus[gpu_id], catalog.orders.nodes.get(gpu_id)
        held = nodes_needed(used, gpu.gpus_per_node)
        spare_roles = spares.get((dc, gpu_id), [])
        nodes = held + len(spare_roles)
        row = {"datacenter": dc, "location": location(s, [dc]), "role": "order",
               "item": gpu_id, "kind": "order",
               "product": node.name if node else f"{gpu.name} node",
               "node_config": node.id if node else "",
               "configuration": node.summary() if node else "no node configuration in the "
                                                            "catalog (hardware_catalog/nodes)",
               "gpus": used, "nodes": nodes, "spare_gpus": held * gpu.gpus_per_node - used,
               "spare_nodes": len(spare_roles), "units": nodes,
               "unit": f"node of {gpu.gpus_per_node} GPUs", "unit_price_per": "node, once",
               "counts_in": "total_purchase"}  # fmt: skip
        power, how = node_power(s, catalog, gpu_id, nodes)
        price, source = node_price(s, catalog, gpu_id, dc)
        row.update(power, **source)
        row.update(quote_terms(order_terms(s.quotes, gpu_id, dc)))
        if price is None:
            row.update(flag=NO_PURCHASE_PRICE, counts_in="")
        else:
            row.update(unit_price_usd=price, purchase_usd=nodes * price)
        row["note"] = "; ".join(x for x in (_what(held, used, spare_roles), f"power: {how}",
                                            source.get("note", "")) if x)  # fmt: skip
        rows.append(row)
    return rows


def _what(held: int, used: int, spare_roles: list[str]) -> str:
    text = f"{held} nodes hold the {used} GPUs in use"
    if spare_roles:
        counts = {r: spare_roles.count(r) for r in dict.fromkeys(spare_roles)}
        each = ", ".join(f"{k} for {r}" for r, k in counts.items())
        text += f", + {len(spare_roles)} spare (costs.spares: {each}; ordered, not in total_hourly)"
    return text


def order_totals(rows: list[dict]) -> list[dict]:
    """Per datacenter: nodes, GPUs, spares, kW, kWh a year and the purchase (when every line
    there is priced); then the power of the whole order."""
    orders = [r for r in rows if r["kind"] == "order"]
    out = []
    for dc in dict.fromkeys(r["datacenter"] for r in orders):
        mine = [r for r in orders if r["datacenter"] == dc]
        unpriced = [r["item"] for r in mine if r.get("flag") == NO_PURCHASE_PRICE]
        row = {"datacenter": dc, "location": mine[0]["location"], "kind": "total",
               "item": "datacenter_total", "nodes": sum(r["nodes"] for r in mine),
               "gpus": sum(r["gpus"] for r in mine),
               "spare_nodes": sum(r["spare_nodes"] for r in mine),
               "power_kw": sum(r["power_kw"] for r in mine),
               "kwh_per_year": sum(r["kwh_per_year"] for r in mine),
               "note": f"the order lines of {dc}"}  # fmt: skip
        if unpriced:
            row["note"] += f"; purchase not totalled: {NO_PURCHASE_PRICE} for {', '.join(unpriced)}"
        else:
            row["purchase_usd"] = sum(r["purchase_usd"] for r in mine)
        out.append(row)
    if orders:
        out.append({"kind": "total", "item": "total_power",
                    "power_kw": sum(r["power_kw"] for r in orders),
                    "kwh_per_year": sum(r["kwh_per_year"] for r in orders),
                    "note": "every order line's nodes at full draw (spares included); the "
                            "energy a year x PUE: the facility's"})  # fmt: skip
    return out
