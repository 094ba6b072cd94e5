"""The sizing report's bill of materials: the facts at its top, the hourly cost table of
"2. The plan" and the "9. Bill of materials" section (nodes to order, one-time costs, rent
or buy, sources, what is not included). Formatting only: every figure is a row of
`report.bom_items.bill`, the same rows as `bom.csv`, so the two show the same totals.
"""

from __future__ import annotations

from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.report.bom_items import NO_PURCHASE_PRICE, NOT_INCLUDED, Bill
from pdd_plan.report.markdown_orders import (
    configurations,
    datacenter_totals,
    line_end_table,
    order_lines,
)
from pdd_plan.report.md_format import md_code, md_text, num, table, usd


def header_line(facts: list[tuple[str, str]]) -> str:
    """The BOM's comment rows on one line."""
    shown = dict(facts)
    return (
        f"Scenario {md_code(shown['scenario'])}; {md_text(shown['tool_version'])}; generated "
        f"{shown['generated_utc']} (UTC); catalog SHA-256 `{shown['catalog_sha256']}` "
        f"({md_text(shown['catalog_files'])})."
    )


def order_line(b: Bill) -> str:
    """The summary's line: nodes to order, idle GPUs, one-time and purchase totals."""
    nodes = "; ".join(
        f"{r['nodes']:,} node{'s' if r['nodes'] != 1 else ''} of "
        f"{(r['gpus'] + r['spare_gpus']) // r['nodes']} x {md_text(r['item'])} in "
        f"{md_text(r['datacenter'])} ({r['spare_gpus']:,} idle GPU"
        f"{'s' if r['spare_gpus'] != 1 else ''})"
        for r in b.rows if r["kind"] == "nodes"
    )  # fmt: skip
    once = "no one-time cost (no line)"
    if any(r["kind"] == "line_install" for r in b.rows):
        once = f"one-time {usd(b.total_one_time_usd, False)} (line installation)"
    orders = [r for r in b.rows if r["kind"] == "order"]
    spares = sum(r["spare_nodes"] for r in orders)
    kw = sum(r["power_kw"] for r in orders)
    extra = f"; {spares:,} spare node{'s' if spares != 1 else ''} (costs.spares)" if spares else ""
    return (f"- **Order**: {nodes}{extra}; power {num(kw)} kW at full draw; {once}; "
            f"{_purchase_clause(b)} (section 9).")  # fmt: skip


def _names(items: list[str]) -> str:
    return ", ".join(md_text(i) for i in items)


def _purchase_clause(b: Bill) -> str:
    """What buying instead would cost, never a total that leaves an item out unsaid."""
    priced, unpriced = b.priced(), b.unpriced()
    total = usd(b.total_purchase_usd, False)
    if not unpriced:
        return f"buying instead: {total}"
    if not priced:
        return f"buying instead: not priced, {NO_PURCHASE_PRICE} for {_names(unpriced)}"
    return (f"buying instead: {total} for {_names(priced)} only, {NO_PURCHASE_PRICE} for "
            f"{_names(unpriced)}")  # fmt: skip


def _purchase_total(b: Bill) -> str:
    """The purchase table's total cell: "not priced" rather than $0, a partial sum named."""
    priced, unpriced = b.priced(), b.unpriced()
    if not unpriced:
        return usd(b.total_purchase_usd, False)
    if not priced:
        return f"not priced ({NO_PURCHASE_PRICE}: {_names(unpriced)})"
    return (
        f"{usd(b.total_purchase_usd, False)} ({_names(priced)} only; not priced: "
        f"{_names(unpriced)})"
    )


def _units(row: dict) -> str:
    n = row["units"]
    if row["kind"] == "line_lease":
        return f"{n:,} line" + ("s" if n != 1 else "")
    if row["kind"] == "decode_cache":
        return f"{n:,.4g} TB"
    return f"{n:,} GPUs"


def _price(row: dict) -> str:
    per = row["unit_price_per"]
    return f"{usd(row['unit_price_usd'], per != 'line-month')}/{per}"


def _flag(row: dict) -> str:
    return f" **({md_text(row['flag'])})**" if row.get("flag") else ""


def cost_table(b: Bill) -> list[str]:
    """Every row counted in the hourly total (rental, power, idle GPUs charged, lines)."""
    label = {"power": "power", "spare_gpus": "idle GPUs", "line_lease": "WAN line",
             "decode_cache": "decode-side cache"}  # fmt: skip
    items, gpus = [], 0
    for r in (r for r in b.rows if r["counts_in"] == "total_hourly"):
        role = r["role"] if r["kind"] == "gpu_rental" else label[r["kind"]]
        gpus += r["units"] if r["kind"] == "gpu_rental" else 0
        items.append([role, md_text(r["datacenter"]), md_text(r["item"]),
                      r.get("gpus_per_instance", "-"), r.get("instances", "-"), _units(r),
                      _price(r) + _flag(r), usd(r["cost_usd_per_hour"]),
                      usd(r["cost_usd_per_month"], False)])  # fmt: skip
    hourly = b.total_hourly_usd
    items.append(["**total**", "", "", "", "", f"{gpus:,} GPUs", "", usd(hourly),
                  usd(hourly * HOURS_PER_MONTH, False)])  # fmt: skip
    return table(["role", "datacenter", "item", "GPUs per instance", "instances", "units",
                  "unit price", "$/h", "$/month"], items)  # fmt: skip


def _orders(b: Bill) -> list[str]:
    rows = [[md_text(r["datacenter"]), md_text(r["location"]) or "-", md_text(r["product"]),
             f"{r['nodes']:,} x {md_text(r['unit'])}", f"{r['gpus']:,}", f"{r['spare_gpus']:,}",
             _price(r), usd(r["cost_usd_per_hour"])]
            for r in b.rows if r["kind"] == "nodes"]  # fmt: skip
    return table(["datacenter", "location", "product", "nodes to rent or buy", "GPUs used",
                  "GPUs idle", "node price", "whole nodes $/h"], rows)  # fmt: skip


def _one_time(b: Bill) -> list[str]:
    rows = [[md_text(r["datacenter"]), md_text(r["product"]), f"{r['units']:,}",
             usd(r["unit_price_usd"], False) + _flag(r), usd(r["one_time_usd"], False)]
            for r in b.rows if r["counts_in"] == "total_one_time"]  # fmt: skip
    rows.append(["**total one-time**", "", "", "", usd(b.total_one_time_usd, False)])
    return table(["where", "item", "units", "price each", "one-time $"], rows)


def _purchase(b: Bill, years: float) -> list[str]:
    rows = []
    for r in (r for r in b.rows if r["kind"] == "purchase"):
        rent = next(x for x in b.rows if x["kind"] == "nodes" and x["item"] == r["item"]
                    and x["datacenter"] == r["datacenter"])  # fmt: skip
        bought = ("-", NO_PURCHASE_PRICE, "-")
        if r["flag"] != NO_PURCHASE_PRICE:
            bought = (usd(r["unit_price_usd"], False), usd(r["purchase_usd"], False),
                      usd(r["cost_usd_per_hour"]))  # fmt: skip
        rows.append([md_text(r["datacenter"]), md_text(r["product"]), f"{r['units']:,}",
                     usd(rent["cost_usd_per_hour"]), *bought, *_verdict(r)])  # fmt: skip
    for r in (r for r in b.rows if r["kind"] == "cache_purchase"):
        bought = ("-", NO_PURCHASE_PRICE, "-")
        if r["flag"] != NO_PURCHASE_PRICE:
            bought = (usd(r["unit_price_usd"], False) + "/TB", usd(r["purchase_usd"], False),
                      usd(r["cost_usd_per_hour"]))  # fmt: skip
        rows.append([md_text(r["datacenter"]), md_text(r["product"]), f"{r['units']:,.4g} TB",
                     "-", *bought, "-", "-"])  # fmt: skip
    rows.append(["**total purchase** (the order lines)", "", "", "", "", _purchase_total(b),
                 "", "", ""])  # fmt: skip
    return table(["datacenter", "product", "GPUs (whole nodes)", "rent $/h (whole nodes)",
                  "purchase per GPU", "purchase $", f"bought $/h ({num(years)} years + power)",
                  "cheaper", "break-even"], rows)  # fmt: skip


def _verdict(row: dict) -> tuple[str, str]:
    """Rent or buy, and after how many months buying has paid for itself."""
    if row.get("flag") == NO_PURCHASE_PRICE:
        return "-", "-"
    months = row.get("break_even_months", "")
    return row["cheaper"], f"{months:,.1f} months" if months != "" else "never"


def _sources(b: Bill) -> list[str]:
    seen, rows = set(), []
    for r in b.rows:
        key = (r["kind"], r["item"], r.get("price_source"))
        if key in seen or r["kind"] in ("nodes", "line_port") or not r.get("price_source"):
            continue
        seen.add(key)
        rows.append([md_text(r["item"]), r["kind"].replace("_", " "),
                     md_text(r["price_source"]), md_text(r.get("source_reference", "")),
                     md_text(r.get("source_accessed", "") or "-"), r.get("basis", ""),
                     md_text(r.get("flag", "")) or "-"])  # fmt: skip
    return table(["item", "figure", "source", "reference", "accessed", "basis", "flag"], rows)


def bom_section(data: dict, years: float) -> list[str]:
    """'9. Bill of materials': what to order, one-time costs, rent or buy, sources, and
    what is not included."""
    b: Bill = data["bom"]
    out = [header_line(data["bom_header"]), "",
           "Order lines: one per datacenter and node configuration, the whole nodes that hold "
           "the GPUs in use plus the spare nodes of `costs.spares` (N+k per role); power is the "
           "nodes' maximum draw, a year's energy that draw x PUE x 8,760 h. A price is the "
           "quoted node price, else the GPU purchase price (quoted, else the catalog's) x the "
           "GPUs per node.", ""]  # fmt: skip
    out += order_lines(b) + ["", "Configurations:", ""] + configurations(b)
    out += ["", "Per datacenter:", ""] + datacenter_totals(b)
    out += ["", "Nodes rented: instances packed onto whole nodes per datacenter and GPU type; "
                "the idle GPUs of the last node are stated (charged in the hourly total only "
                "with `costs.charge_whole_nodes: true`).", ""]  # fmt: skip
    out += _orders(b)
    if any(r["kind"] == "line_install" for r in b.rows):
        out += ["", "One-time costs:", ""] + _one_time(b)
        out += ["", "Line ends (two per line):", ""] + line_end_table(b)
    else:  # nothing to install: no table of a $0 total
        out += ["", "One-time costs: none (the plan leases no line)."]
    out += ["", f"Rent or buy: buying the nodes in use at the purchase price (quoted, else the "
                f"catalog's), amortised over {num(years)} years (`costs.amortization_years`), "
                "plus the power of the GPUs in use, against renting them; break-even: the "
                "months of rent less power the purchase costs. The hourly total above is "
                "rental.", ""]  # fmt: skip
    out += _purchase(b, years)
    out += ["", "Where each price comes from (`bom.csv` carries the full title and note):", ""]
    out += _sources(b)
    out += ["", "Not included: " + "; ".join(text for _, text in NOT_INCLUDED) + "."]
    return out
