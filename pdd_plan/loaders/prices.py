"""The quoted prices of a scenario's `prices:` section or a `--prices FILE`, strictly.

Both have one shape: lists `gpus` (per GPU type and, optionally, datacenter: rental,
purchase per GPU, purchase per node), `lines` (per line tier: lease, installation, optics)
and `power` (the tariff, optionally per datacenter). Every entry may say `note`,
`quoted_by`, `valid_until`, `lead_time_weeks` and `contract_term_months`. Unknown keys get
a did-you-mean; a GPU, tier or datacenter id must exist; a figure must be a finite number
within its bounds; one figure quoted twice with two values is refused (which would hold?).
"""

from __future__ import annotations

import re

from pdd_plan.loaders.strict import Node
from pdd_plan.model.prices import (
    ANY_DATACENTER,
    GPU_FIGURES,
    LINE_FIGURES,
    POWER_FIGURES,
    Quote,
    Quotes,
)

# (minimum, exclusive, maximum) per figure: far beyond any real price, so only a slip
# (a price per cluster typed as a price per GPU-hour, a sign, a unit off by 1e6) is refused
BOUNDS = {
    "rental_usd_per_gpu_hour": (0.0, True, 1e4),  # as datacenters[].gpus[].price_usd_per_gpu_hour
    "purchase_usd_per_gpu": (0.0, True, 1e7),  # an H200 lists at $32,000
    "purchase_usd_per_node": (0.0, True, 1e8),  # a whole NVL72 rack is about $3 million
    "price_usd_per_month": (0.0, False, 1e9),  # as wan.tier_prices_usd_per_month
    "install_usd": (0.0, False, 1e8),
    "optic_usd_each": (0.0, False, 1e6),
    "usd_per_kwh": (0.0, False, 100.0),  # as costs.power_usd_per_kwh
}
META = ("note", "quoted_by", "valid_until", "lead_time_weeks", "contract_term_months")
SECTIONS = ("gpus", "lines", "power")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
MAX_LEAD_TIME_WEEKS = 520  # ten years
MAX_CONTRACT_TERM_MONTHS = 240  # twenty years


def _meta(f: dict[str, Node], file: str, where: str) -> dict:
    """The entry's note and terms, shared by every figure it quotes."""
    until = f["valid_until"].string(default="", expected="a date YYYY-MM-DD", pattern=_DATE)
    lead = f["lead_time_weeks"].number(minimum=0, maximum=MAX_LEAD_TIME_WEEKS, unit="weeks")
    term = f["contract_term_months"].number(
        minimum=0, exclusive_minimum=True, maximum=MAX_CONTRACT_TERM_MONTHS, unit="months"
    )
    return {"file": file, "note": f["note"].string(default="") or "",
            "quoted_by": f["quoted_by"].string(default="") or "", "valid_until": until or "",
            "lead_time_weeks": lead, "contract_term_months": term}  # fmt: skip


def _figures(f: dict[str, Node], figures: tuple[str, ...], meta: dict, entry: Node) -> dict:
    """figure -> Quote for each figure the entry sets; an entry setting none is refused."""
    out = {}
    for key in figures:
        low, exclusive, high = BOUNDS[key]
        value = f[key].number(minimum=low, exclusive_minimum=exclusive, maximum=high)
        if value is not None:
            out[key] = Quote(value, where=f[key].path, **meta)
    if all(f[k].is_missing for k in figures):
        entry.fail(f"an entry quoting at least one of {', '.join(figures)}")
    return out


def _merge(into: dict[str, Quote], key_node: Node, quotes: dict[str, Quote]) -> None:
    """Add an entry's quotes; a figure already quoted at another value is refused."""
    for figure, quote in quotes.items():
        first = into.get(figure)
        if first is not None and first.value != quote.value:
            key_node.problems.add(
                quote.where, f"{quote.value:g}",
                f"one value per figure (the same figure is {first.value:g} at {first.where})",
            )  # fmt: skip
        elif first is None:
            into[figure] = quote


def _datacenter(f: dict[str, Node], dc_ids) -> str | None:
    """The entry's datacenter (ANY when not given); None when it names none of them."""
    if f["datacenter"].is_missing:
        return ANY_DATACENTER
    if dc_ids is None:  # the scenario's datacenters are not known yet: the id only
        return f["datacenter"].identifier(required=True)
    return f["datacenter"].reference(dc_ids, "datacenter")


def parse_quotes(node: Node, catalog, dc_ids: set[str] | None, file: str) -> Quotes:
    """The quotes of a `prices:` section (or a price file's top level, `node.path` empty);
    `dc_ids` None: datacenter ids are checked later, against the scenario."""
    f = node.mapping(optional=SECTIONS)
    if f is None:
        return Quotes()
    gpus: dict[tuple[str, str], dict[str, Quote]] = {}
    for item in _items(f["gpus"]):
        g = item.mapping(required=("gpu",), optional=("datacenter", *GPU_FIGURES, *META))
        if g is None:
            continue
        gpu = g["gpu"].reference(catalog.gpus, "GPU")
        dc = _datacenter(g, dc_ids)
        quotes = _figures(g, GPU_FIGURES, _meta(g, file, item.path), item)
        if gpu is not None and dc is not None:
            _merge(gpus.setdefault((gpu, dc), {}), item, quotes)
    lines: dict[str, dict[str, Quote]] = {}
    for item in _items(f["lines"]):
        t = item.mapping(required=("tier",), optional=(*LINE_FIGURES, *META))
        if t is None:
            continue
        tier = t["tier"].reference(catalog.lines, "line tier")
        quotes = _figures(t, LINE_FIGURES, _meta(t, file, item.path), item)
        if tier is not None:
            _merge(lines.setdefault(tier, {}), item, quotes)
    power: dict[str, Quote] = {}
    for item in _items(f["power"]):
        p = item.mapping(optional=("datacenter", *POWER_FIGURES, *META))
        if p is None:
            continue
        dc = _datacenter(p, dc_ids)
        quotes = _figures(p, POWER_FIGURES, _meta(p, file, item.path), item)
        if dc is not None and quotes:
            _merge(power, item, {dc: quotes["usd_per_kwh"]})
    return Quotes(gpus, lines, power)


def _items(node: Node) -> list[Node]:
    return [] if node.is_missing or node.value is None else node.items() or []
