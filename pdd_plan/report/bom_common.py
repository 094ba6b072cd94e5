"""What every part of the bill of materials shares: the hours of a year, the words for a
missing price, and the columns of where and how much."""

from __future__ import annotations

from pdd_plan.model.scenario import Scenario
from pdd_plan.model.units import GBIT_BITS, HOURS_PER_MONTH

HOURS_PER_YEAR = 12 * HOURS_PER_MONTH
NO_PURCHASE_PRICE = "no sourced purchase price"


def money(row: dict, hourly: float) -> dict:
    """`row` with its hourly cost and the month and year it makes."""
    row.update(cost_usd_per_hour=hourly, cost_usd_per_month=hourly * HOURS_PER_MONTH,
               cost_usd_per_year=hourly * HOURS_PER_YEAR)  # fmt: skip
    return row


def location(s: Scenario, dc_ids: list[str]) -> str:
    """The datacenters' `name:` (their sites), joined; empty where none has one."""
    names = [s.datacenter(d).name for d in dc_ids if any(x.id == d for x in s.datacenters)]
    return " - ".join(names) if any(names) else ""


def line_ends(plan: dict, s: Scenario) -> list[str]:
    """The datacenters a line joins: prefill's and main decode's (all, if unclear)."""
    where = {g["role"]: g["datacenter"] for g in plan["instances"]}
    ends = [where[r] for r in ("prefill", "main_decode") if r in where]
    return ends if len(set(ends)) == 2 else [dc.id for dc in s.datacenters]


def tier_product(catalog, tier_id: str) -> dict:
    """A line tier's product columns: the catalog's name, the capacity in the unit."""
    tier = catalog.lines[tier_id]
    gbit = tier.capacity_bits_per_s / GBIT_BITS
    return {"product": tier.name, "unit": f"line of {gbit:g} Gbit/s"}
