"""Prices the user was quoted: plain records of each figure with where it was written,
its note, who quoted it, until when, the lead time and the contract term.

A quote comes from the scenario's `prices:` section, a `--prices FILE` of the same shape,
or a figure the scenario already set in place (`datacenters[].gpus[].price_usd_per_gpu_hour`,
`wan.tier_prices_usd_per_month`). The figures the optimiser charges (rental, line lease,
tariff) are applied by loaders/prices_apply.py to the scenario's own fields, so each figure
has one value that every cost reads (`model.setup.gpu_usd_per_gpu_hour`); these records
only say where it came from. The purchase figures (per GPU, per node), installation and
optics price the bill of materials alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ANY_DATACENTER = ""  # an entry without `datacenter:`: every datacenter offering the GPU

GPU_FIGURES = ("rental_usd_per_gpu_hour", "purchase_usd_per_gpu", "purchase_usd_per_node")
LINE_FIGURES = ("price_usd_per_month", "install_usd", "optic_usd_each")
POWER_FIGURES = ("usd_per_kwh",)
QUOTED = "quoted"  # the basis a quoted figure shows in the bill of materials


@dataclass(frozen=True)
class Quote:
    """One quoted figure, in the unit its key names."""

    value: float
    file: str  # the file it was written in (the scenario or the --prices file)
    where: str  # its key path in that file
    note: str = ""
    quoted_by: str = ""
    valid_until: str = ""
    lead_time_weeks: float | None = None
    contract_term_months: float | None = None


@dataclass(frozen=True)
class Quotes:
    """Every quote of a scenario; a datacenter's own entry wins over one for any datacenter."""

    gpus: dict[tuple[str, str], dict[str, Quote]] = field(default_factory=dict)
    lines: dict[str, dict[str, Quote]] = field(default_factory=dict)
    power: dict[str, Quote] = field(default_factory=dict)  # datacenter (or ANY) -> tariff
    file: str = ""  # the --prices file, when one replaced the scenario's section
    file_sha256: str = ""  # its bytes' digest (the bill of materials names it)

    def gpu(self, gpu_id: str, datacenter: str, figure: str) -> Quote | None:
        for key in ((gpu_id, datacenter), (gpu_id, ANY_DATACENTER)):
            found = self.gpus.get(key, {}).get(figure)
            if found is not None:
                return found
        return None

    def line(self, tier: str, figure: str) -> Quote | None:
        return self.lines.get(tier, {}).get(figure)

    def tariff(self, datacenter: str) -> Quote | None:
        return self.power.get(datacenter) or self.power.get(ANY_DATACENTER)

    def __bool__(self) -> bool:
        return bool(self.gpus or self.lines or self.power)

    def every(self) -> list[Quote]:
        """Every quoted figure."""
        return [q for figures in (*self.gpus.values(), *self.lines.values()) for q in
                figures.values()] + list(self.power.values())  # fmt: skip


NO_QUOTES = Quotes()


def order_terms(quotes: Quotes, gpu_id: str, datacenter: str) -> Quote | None:
    """The quote whose lead time and term an order line of `gpu_id` in `datacenter` shows:
    its node price, else its GPU purchase price, else its rental (the first quoted)."""
    for figure in ("purchase_usd_per_node", "purchase_usd_per_gpu", "rental_usd_per_gpu_hour"):
        found = quotes.gpu(gpu_id, datacenter, figure)
        if found is not None:
            return found
    return None
