"""The bill of materials: one row per line item, safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io

from pdd_plan.model.scenario import Scenario
from pdd_plan.units import HOURS_PER_MONTH

HOURS_PER_YEAR = 12 * HOURS_PER_MONTH
COLUMNS = (
    "datacenter", "role", "item", "kind", "gpus_per_instance", "instances", "units", "unit",
    "unit_price_usd", "unit_price_per", "cost_usd_per_hour", "cost_usd_per_month",
    "cost_usd_per_year",
)  # fmt: skip
# A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell):
    """Text that a spreadsheet would run as a formula is prefixed with a quote."""
    if isinstance(cell, str) and cell.startswith(_FORMULA_START):
        return "'" + cell
    return cell


def bom_rows(plan: dict, scenario: Scenario, line_prices_usd_per_month: dict[str, float]) -> list:
    rows = []
    for g in plan["instances"]:
        offer = next(o for o in scenario.datacenter(g["datacenter"]).gpus if o.gpu == g["gpu"])
        gpus = g["gpus_per_instance"] * g["count"]
        hourly = gpus * offer.price_usd_per_gpu_hour
        rows.append(
            [
                g["datacenter"],
                g["role"],
                g["gpu"],
                "gpu",
                g["gpus_per_instance"],
                g["count"],
                gpus,
                "GPU",
                offer.price_usd_per_gpu_hour,
                "GPU-hour",
                hourly,
                hourly * HOURS_PER_MONTH,
                hourly * HOURS_PER_YEAR,
            ]
        )
    ends = "-".join(dc.id for dc in scenario.datacenters)
    for line in plan["lines"]:
        monthly_each = line_prices_usd_per_month[line["tier"]]
        monthly = monthly_each * line["count"]
        rows.append(
            [
                ends,
                "wan_line",
                line["tier"],
                "line",
                "",
                "",
                line["count"],
                "line",
                monthly_each,
                "line-month",
                monthly / HOURS_PER_MONTH,
                monthly,
                monthly * 12,
            ]
        )
    return rows


def bom_csv(plan: dict, scenario: Scenario, line_prices_usd_per_month: dict[str, float]) -> str:
    rows = bom_rows(plan, scenario, line_prices_usd_per_month)
    total = [sum(r[i] for r in rows) for i in (10, 11, 12)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows + [["total", "", "", "", "", "", "", "", "", "", *total]]:
        writer.writerow([spreadsheet_safe(c) if isinstance(c, str) else _number(c) for c in row])
    return out.getvalue()


def _number(value) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)
