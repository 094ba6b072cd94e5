"""The sizing report's order tables: the order lines (one per datacenter and node
configuration, with spares, power and the quote's terms), the totals per datacenter, and
the ports and optics at each line end. Formatting only: every figure is a row of
`report.bom_items.bill` (the rows of `bom.csv`)."""

from __future__ import annotations

from pdd_plan.report.bom_common import NO_PURCHASE_PRICE
from pdd_plan.report.bom_items import Bill
from pdd_plan.report.bom_orders import order_totals
from pdd_plan.report.md_format import md_text, num, table, usd


def _flag(row: dict) -> str:
    return f" **({md_text(row['flag'])})**" if row.get("flag") else ""


def _terms(row: dict) -> str:
    """Lead time and contract term, as the quote gives them ('-' where it does not)."""
    lead, term = row.get("lead_time_weeks", ""), row.get("contract_term_months", "")
    said = [f"{num(lead)} weeks" if lead != "" else "", f"{num(term)}-month term" if term != ""
            else ""]  # fmt: skip
    return ", ".join(x for x in said if x) or "-"


def _price(row: dict) -> str:
    if row.get("flag") == NO_PURCHASE_PRICE:
        return f"not priced ({NO_PURCHASE_PRICE})"
    return usd(row["unit_price_usd"], False) + _flag(row)


def order_lines(b: Bill) -> list[str]:
    """One row per order line."""
    rows = []
    for r in (r for r in b.rows if r["kind"] == "order"):
        spare = f" ({r['spare_nodes']:,} spare)" if r["spare_nodes"] else ""
        bought = usd(r["purchase_usd"], False) if "purchase_usd" in r else "-"
        config = md_text(r["product"]) + (f" (`{r['node_config']}`)" if r["node_config"] else "")
        rows.append([md_text(r["datacenter"]), config, f"{r['nodes']:,}{spare}", f"{r['gpus']:,}",
                     _price(r), bought, num(r["power_kw"]), num(r["kwh_per_year"] / 1e3),
                     _terms(r)])  # fmt: skip
    headers = ["datacenter", "node configuration", "nodes", "GPUs used", "price per node",
               "purchase $", "power kW (max)", "MWh a year", "lead time, term"]  # fmt: skip
    return table(headers, rows)


def configurations(b: Bill) -> list[str]:
    """What each ordered node holds, once per configuration."""
    seen = dict.fromkeys((r["product"], r["configuration"]) for r in b.rows if r["kind"] == "order")
    return [f"- {md_text(name)}: {md_text(config)}" for name, config in seen]


def datacenter_totals(b: Bill) -> list[str]:
    rows = []
    for t in order_totals(b.rows):
        where = md_text(t["datacenter"]) if t["item"] == "datacenter_total" else "**all**"
        nodes = f"{t['nodes']:,}" if "nodes" in t else ""
        bought = usd(t["purchase_usd"], False) if "purchase_usd" in t else "-"
        rows.append([where, nodes, num(t["power_kw"]), num(t["kwh_per_year"] / 1e3), bought])
    return table(["datacenter", "nodes", "power kW (max)", "MWh a year", "purchase $"], rows)


def line_end_table(b: Bill) -> list[str]:
    """Per line end: the port and the optic, how many, and the optic's price if any."""
    rows = []
    ports = {(r["datacenter"], r["item"]): r for r in b.rows if r["kind"] == "line_port"}
    for r in (r for r in b.rows if r["kind"] == "line_optic"):
        port = ports.get((r["datacenter"], r["item"]), {})
        price = usd(r["unit_price_usd"], False) + _flag(r) if "unit_price_usd" in r else "-"
        rows.append([md_text(r["datacenter"]), md_text(r["item"]), f"{r['units']:,}",
                     md_text(port.get("product", "-")), md_text(r["product"]), price])  # fmt: skip
    return table(["end", "line tier", "lines", "port (each)", "optic (each)", "optic price"], rows)
