"""Where each price of the bill of materials comes from: the source columns of a catalog
figure, of a quote (basis "quoted", with its note, who quoted it, until when, its lead time
and term) and of a price the scenario changed by other means (a sensitivity case)."""

from __future__ import annotations

from pathlib import Path

from pdd_plan.model.compute.hardware import Sourced
from pdd_plan.model.prices import QUOTED, Quote
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.setup import power_usd_per_kwh

RENTAL = "rental_usd_per_gpu_hour"


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


def quote_terms(q: Quote | None) -> dict:
    """The quote's terms columns (empty cells where it says none)."""
    if q is None:
        return {}
    terms = {"quoted_by": q.quoted_by, "valid_until": q.valid_until}
    if q.lead_time_weeks is not None:
        terms["lead_time_weeks"] = q.lead_time_weeks
    if q.contract_term_months is not None:
        terms["contract_term_months"] = q.contract_term_months
    return terms


def quote_provenance(q: Quote, s: Scenario) -> dict:
    """The source columns of a quoted figure: the file and key path it was written at."""
    name = Path(q.file).name
    what = f"scenario {s.name}" if q.file == s.source_file else f"price file {name}"
    by = f" by {q.quoted_by}" if q.quoted_by else ""
    return {"price_source": "quote", "source_title": f"quoted{by}, in {what}",
            "source_reference": f"{name}: {q.where}", "source_accessed": "",
            "basis": QUOTED, "flag": QUOTED, "note": q.note or "a quoted price",
            **quote_terms(q)}  # fmt: skip


def scenario_provenance(s: Scenario, what: str) -> dict:
    """A price the scenario object carries but no file states (a sensitivity case)."""
    return {"price_source": "scenario", "source_title": f"scenario {s.name}",
            "source_reference": Path(s.source_file).name, "basis": "scenario",
            "flag": "scenario price", "note": what}  # fmt: skip


def sourced_price(q: Quote | None, value: float | None, figure: Sourced | None, s: Scenario,
                  sources: dict, otherwise: str) -> dict:  # fmt: skip
    """The source of `value`: its quote when the quote holds it, the catalog figure when
    that does, else the scenario (`otherwise` says how it was set)."""
    if q is not None and q.value == value:
        return quote_provenance(q, s)
    if figure is not None and figure.value == value:
        return provenance(figure, sources)
    return scenario_provenance(s, otherwise)


def rental_source(s: Scenario, catalog, dc: str, gpu_id: str, price: float) -> dict:
    figure = catalog.gpus[gpu_id].provenance.get(RENTAL)
    q = s.quotes.gpu(gpu_id, dc, RENTAL)
    return sourced_price(q, price, figure, s, catalog.sources,
                         f"price set in datacenters[{dc}].gpus[{gpu_id}]")  # fmt: skip


def power_source(s: Scenario, catalog, gpu_id: str, dc: str) -> dict:
    """Power is derived: TDP x PUE x the datacenter's tariff; both sources are named."""
    gpu = catalog.gpus[gpu_id]
    tdp = provenance(gpu.provenance.get("tdp_w"), catalog.sources)
    kwh = power_usd_per_kwh(s, dc)
    tariff = s.quotes.tariff(dc)
    said = "costs.power_usd_per_kwh"
    if tariff is not None and tariff.value == kwh:
        said = f"quoted in {Path(tariff.file).name}: {tariff.where}" + (
            f", {tariff.note}" if tariff.note else ""
        )
    note = (f"{gpu.tdp_w:g} W TDP x PUE {s.costs.pue:g} x ${kwh:g}/kWh (costs.pue; tariff "
            f"{said}); the TDP's source is cited")  # fmt: skip
    return {**tdp, "basis": "derived", "note": note}
