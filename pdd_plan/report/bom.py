"""The bill of materials as CSV: comment rows with the run's facts, one header row, one
row per item, the totals last; safe to open in a spreadsheet.

Comment rows start with `#` in their first cell (`# scenario`, then the value) and are as
wide as the header, so `pandas.read_csv(path, comment="#")` skips them and a spreadsheet
shows them as a small table above the items. Numbers are plain numbers (no `$`, no
thousands separators); text that a spreadsheet would run as a formula is quoted.
"""

from __future__ import annotations

import csv
import io
import os
from datetime import UTC, datetime
from pathlib import Path

from pdd_plan import __version__
from pdd_plan.errors import visible
from pdd_plan.loaders.catalog_digest import catalog_digest, catalog_files
from pdd_plan.loaders.catalog_overlay import provenance_facts
from pdd_plan.loaders.engine_profile import profile_facts
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import HOURS_PER_MONTH
from pdd_plan.report.bom_items import HOURS_PER_YEAR, NO_PURCHASE_PRICE, NOT_INCLUDED, Bill, bill
from pdd_plan.report.bom_orders import order_totals
from pdd_plan.report.bom_quotes import quote_facts

__all__ = ["HOURS_PER_YEAR", "COLUMNS", "bom_csv", "header_facts", "spreadsheet_safe"]

COLUMNS = (
    "datacenter", "role", "item", "kind", "location", "product", "gpus_per_instance",
    "instances", "gpus", "nodes", "spare_gpus", "units", "unit", "unit_price_usd",
    "unit_price_per", "cost_usd_per_hour", "cost_usd_per_month", "cost_usd_per_year",
    "one_time_usd", "purchase_usd", "counts_in", "price_source", "source_title",
    "source_reference", "source_accessed", "basis", "flag", "note",
    # issue #25: order lines, power, quotes and rent or buy (added at the end: the columns
    # above keep their places)
    "node_config", "configuration", "spare_nodes", "power_kw", "kwh_per_year",
    "lead_time_weeks", "contract_term_months", "quoted_by", "valid_until",
    "break_even_months", "cheaper",
)  # fmt: skip
# cells written to the cent; every other number keeps 6 decimals (a unit price of power)
_CENTS = {"cost_usd_per_month", "cost_usd_per_year", "one_time_usd", "purchase_usd"}
# A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell):
    """Text that a spreadsheet would run as a formula is prefixed with a quote."""
    if isinstance(cell, str) and cell.startswith(_FORMULA_START):
        return "'" + cell
    return cell


def generated_utc() -> str:
    """Now, in UTC, ISO 8601 to the second; `SOURCE_DATE_EPOCH` fixes it (reproducible
    files, the convention of reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    now = datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def header_facts(s: Scenario, catalog, architecture: str) -> list[tuple[str, str]]:
    """What the BOM and the sizing report print at their top, in this order."""
    cache = s.policy.decode_cache is not None  # its prices come from cache_tiers.yaml
    files = catalog_files(catalog.root, s.model, cache)
    gpus = sum(1 for f in files if f.parts[0] == "gpus")
    nodes = sum(1 for f in files if f.parts[0] == "nodes")
    ends = ["line_ends.yaml"] if Path("line_ends.yaml") in files else []
    models = [f.as_posix() for f in files if f.parts[0] == "models"]
    c = s.costs
    return [
        ("scenario", s.name),
        ("tool_version", f"pdd-plan {__version__}"),
        ("generated_utc", generated_utc()),
        ("catalog_sha256", catalog_digest(catalog.root, s.model, cache)),
        ("catalog_files", ", ".join(["sources.yaml", "lines.yaml",
                                     *(["cache_tiers.yaml"] if cache else []),
                                     f"gpus/*.yaml ({gpus} files)", *ends,
                                     *([f"nodes/*.yaml ({nodes} files)"] if nodes else []),
                                     *models]) + ", in that order (README: bill of materials)"),
        ("architecture", architecture),
        ("hourly_basis", "rental and lease prices; power "
                         + (f"included (PUE {c.pue:g}, ${c.power_usd_per_kwh:g}/kWh)"
                            if c.include_power else "not included (costs.include_power)")
                         + "; idle GPUs of partly used nodes "
                         + ("charged" if c.charge_whole_nodes else "not charged")
                         + " (costs.charge_whole_nodes)"),
        ("purchase_basis", "order lines at the quoted node price, else the GPU purchase price "
                           "(quoted, else the catalog's) x GPUs per node; rent or buy amortises "
                           f"it over {c.amortization_years:g} years (costs.amortization_years) "
                           f"plus power; {NO_PURCHASE_PRICE} is said where there is none"),
        *quote_facts(s),
        ("hours", f"a month is {HOURS_PER_MONTH:g} h, a year {HOURS_PER_YEAR:g} h"),
        *provenance_facts(getattr(catalog, "overlay", None), s.model_file),  # not in the digest
        *profile_facts(s.engine.profile),  # a profile kept with --accept-poor-fit says so
    ]  # fmt: skip


def total_rows(b: Bill) -> list[dict]:
    """The three totals, and the hourly cost if the nodes were bought (when every GPU type
    has a sourced purchase price)."""
    unpriced = b.unpriced()
    priced = " (GPU types with a purchase price only; "
    priced += f"{NO_PURCHASE_PRICE} for {', '.join(unpriced)})" if unpriced else "all priced)"
    purchase: dict = {"purchase_usd": b.total_purchase_usd,
                      "note": "the order lines' nodes, spares included" + priced}  # fmt: skip
    if unpriced and not b.priced():  # nothing to add up: an empty cell, not a price of $0
        purchase = {"note": f"not priced: {NO_PURCHASE_PRICE} for {', '.join(unpriced)}"}
    hourly = b.total_hourly_usd
    out = [
        {"kind": "total", "item": "total_hourly", "cost_usd_per_hour": hourly,
         "cost_usd_per_month": hourly * HOURS_PER_MONTH,
         "cost_usd_per_year": hourly * HOURS_PER_YEAR,
         "note": "rows counted in total_hourly: the answer's cost_usd_per_hour"},
        {"kind": "total", "item": "total_one_time", "one_time_usd": b.total_one_time_usd,
         "note": "line installation (and the line-end optics where priced), paid once"},
        {"kind": "total", "item": "total_purchase", **purchase},
    ]  # fmt: skip
    if not unpriced:
        bought = sum(r["cost_usd_per_hour"] for r in b.rows if r["kind"] == "purchase")
        bought += sum(r["cost_usd_per_hour"] for r in b.rows if r["kind"] == "line_lease")
        bought += sum(r["cost_usd_per_hour"] for r in b.rows if r["kind"] == "cache_purchase")
        note = "amortised purchase + power of the GPUs in use + the leased lines"
        if any(r["kind"] == "cache_purchase" for r in b.rows):
            note += " + the amortised decode-side cache tier"
        out.append({"kind": "total", "item": "total_hourly_if_bought",
                    "cost_usd_per_hour": bought, "cost_usd_per_month": bought * HOURS_PER_MONTH,
                    "cost_usd_per_year": bought * HOURS_PER_YEAR, "note": note})  # fmt: skip
    return out


def not_included_rows() -> list[dict]:
    return [{"kind": "not_included", "item": item, "note": text} for item, text in NOT_INCLUDED]


def bom_csv(plan: dict, s: Scenario, catalog) -> str:
    """The bill of materials of `plan` (design.md §7 shape) on scenario `s`."""
    b = bill(plan, s, catalog)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    pad = [""] * (len(COLUMNS) - 2)
    writer.writerow(["# pdd-plan bill of materials", "", *pad])
    for key, value in header_facts(s, catalog, plan["architecture"]):
        writer.writerow([f"# {key}", _cell(value), *pad])
    writer.writerow(COLUMNS)
    for row in b.rows + not_included_rows() + order_totals(b.rows) + total_rows(b):
        writer.writerow([_cell(row.get(c, ""), c) for c in COLUMNS])
    return out.getvalue()


def _cell(value, column: str = ""):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        text = f"{value:.2f}" if column in _CENTS else f"{value:.6f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "-0.00") else text
    if isinstance(value, int):
        return str(value)
    return spreadsheet_safe(visible(str(value)))  # one line: control characters escaped
