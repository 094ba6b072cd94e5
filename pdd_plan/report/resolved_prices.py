"""The resolved scenario's `prices:` section and `costs.spares`: the quotes a run used (its
`--prices` file's or the scenario's own section), written back in the section's shape so
`solve scenario.json` prices the same. Figures the scenario sets in place (an offer's
`price_usd_per_gpu_hour`, `wan.tier_prices_usd_per_month`) are written there already."""

from __future__ import annotations

from pdd_plan.model.prices import ANY_DATACENTER, Quote, Quotes
from pdd_plan.model.scenario import ROLES, Scenario


def _terms(q: Quote) -> dict:
    out = {k: getattr(q, k) for k in ("note", "quoted_by", "valid_until") if getattr(q, k)}
    out.update({k: getattr(q, k) for k in ("lead_time_weeks", "contract_term_months")
                if getattr(q, k) is not None})  # fmt: skip
    return out


def prices_section(s: Scenario) -> dict:
    """One entry per quoted figure (so each keeps its own note and terms); {} if none."""
    q: Quotes = s.quotes

    def written_here(quote: Quote) -> bool:  # not set in place: those are written there
        return quote.file != s.source_file or quote.where.startswith("prices.")

    out: dict[str, list] = {}
    for (gpu, dc), figures in q.gpus.items():
        for figure, quote in figures.items():
            if written_here(quote):
                place = {"datacenter": dc} if dc != ANY_DATACENTER else {}
                out.setdefault("gpus", []).append(
                    {"gpu": gpu, **place, figure: quote.value, **_terms(quote)})  # fmt: skip
    for tier, figures in q.lines.items():
        for figure, quote in figures.items():
            if written_here(quote):
                out.setdefault("lines", []).append({"tier": tier, figure: quote.value,
                                                    **_terms(quote)})  # fmt: skip
    for dc, quote in q.power.items():
        place = {"datacenter": dc} if dc != ANY_DATACENTER else {}
        out.setdefault("power", []).append({**place, "usd_per_kwh": quote.value, **_terms(quote)})
    return out


def spares(s: Scenario) -> dict:
    """`costs.spares` as a mapping role -> k (absent when none)."""
    per_role = s.costs.spare_nodes_per_role
    return {"spares": {r: per_role[r] for r in ROLES if per_role.get(r)}} if per_role else {}
