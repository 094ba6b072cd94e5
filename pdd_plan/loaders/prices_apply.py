"""Quoted prices applied to a scenario: the `prices:` hook of loaders/scenario.py and the
run's `--prices FILE`.

A quoted rental becomes the offer's `price_usd_per_gpu_hour`, a quoted lease the tier's
`wan.tier_price_usd_per_month`, a quoted tariff the datacenter's (or, for every
datacenter, `costs.power_usd_per_kwh`): the fields every cost already reads, so the
optimiser, the answer and the bill charge one price per figure. A figure the scenario sets
in place and a quote set at another value are refused, naming both. `--prices FILE` takes
the place of the scenario's section (checked still) for the whole run, worker processes
included: it travels in `PRICES_ENV`, as `--engine-profile` does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pdd_plan.errors import InputError, Problem
from pdd_plan.loaders.input_files import read_input_bytes
from pdd_plan.loaders.prices import parse_quotes
from pdd_plan.loaders.strict import Node, Problems, load_yaml, max_file_bytes
from pdd_plan.model.prices import ANY_DATACENTER, Quote, Quotes
from pdd_plan.model.scenario import Scenario

PRICES_ENV = "PDD_PLAN_PRICES"
PRICE_FILE = "a pdd-plan price file"
RENTAL = "rental_usd_per_gpu_hour"
LEASE = "price_usd_per_month"
SET_IN_SCENARIO = "set in the scenario"


def read_price_file(path: str | Path, catalog, dc_ids: set[str] | None) -> Quotes:
    """A `--prices` file, strictly (`dc_ids` None: datacenter ids checked later)."""
    problems = Problems(str(path))
    root = Node(load_yaml(path, PRICE_FILE), "", problems)
    quotes = parse_quotes(root, catalog, dc_ids, str(path))
    problems.raise_if_any()
    digest = hashlib.sha256(read_input_bytes(path, PRICE_FILE, max_file_bytes(PRICE_FILE)))
    return dataclasses.replace(quotes, file=str(path), file_sha256=digest.hexdigest())


def use_price_file(path: str, catalog=None) -> None:
    """`--prices FILE`: checked now (one line, exit 2, before any work; datacenter ids when
    a scenario loads), then every scenario the process and its workers load takes it."""
    if catalog is None:
        from pdd_plan.loaders.catalog import Catalog

        catalog = Catalog()
    read_price_file(path, catalog, None)
    os.environ[PRICES_ENV] = str(Path(path).resolve())


@contextmanager
def run_prices(path: str | None, catalog=None) -> Iterator[None]:
    """`use_price_file` for a block (library callers, tests): the variable is restored."""
    before = os.environ.get(PRICES_ENV)
    try:
        if path is not None:
            use_price_file(path, catalog)
        yield
    finally:
        if before is None:
            os.environ.pop(PRICES_ENV, None)
        else:
            os.environ[PRICES_ENV] = before


def scenario_with_prices(s: Scenario, raw: dict, section: Node, catalog) -> Scenario:
    """The scenario with its quotes applied (the run's `--prices` file over its section);
    unchanged while the scenario has problems of its own (they are reported first)."""
    dc_ids = {dc.id for dc in s.datacenters}
    quotes = Quotes()
    if not section.is_missing and section.value is not None:
        quotes = parse_quotes(section, catalog, dc_ids, s.source_file)
    if os.environ.get(PRICES_ENV):
        quotes = read_price_file(os.environ[PRICES_ENV], catalog, dc_ids)
    if section.problems.items:
        return s
    found: list[Problem] = []
    out = _apply(s, quotes, raw, catalog, found)
    if found:
        raise InputError(found)
    return out


def _conflict(found: list, quote: Quote, file: str, where: str, value) -> None:
    found.append(Problem(quote.file, quote.where, f"{quote.value:g}",
                         f"the value {file}: {where} sets ({value:g}), or no quote: one "
                         "value per figure"))  # fmt: skip


def _apply(s: Scenario, quotes: Quotes, raw: dict, catalog, found: list) -> Scenario:
    gpus = {key: dict(figures) for key, figures in quotes.gpus.items()}
    datacenters = []
    for i, (dc, raw_dc) in enumerate(zip(s.datacenters, raw["datacenters"], strict=True)):
        offers = []
        for j, (offer, raw_offer) in enumerate(zip(dc.gpus, raw_dc["gpus"], strict=True)):
            written = raw_offer.get("price_usd_per_gpu_hour")
            where = f"datacenters[{i}].gpus[{j}].price_usd_per_gpu_hour"
            quote = quotes.gpu(offer.gpu, dc.id, RENTAL)
            if quote is not None and written is not None and written != quote.value:
                _conflict(found, quote, s.source_file, where, written)
            elif quote is not None:
                offer = dataclasses.replace(offer, price_usd_per_gpu_hour=quote.value)
            elif written is not None and written != catalog.gpus[offer.gpu].rental_usd_per_gpu_hour:
                # a price set in place is a quote too; one equal to the catalog's (a resolved
                # scenario.json writes every price) keeps the catalog's source
                figures = gpus.setdefault((offer.gpu, dc.id), {})
                figures[RENTAL] = Quote(float(written), s.source_file, where, SET_IN_SCENARIO)
            offers.append(offer)
        tariff = quotes.power.get(dc.id)
        kwh = tariff.value if tariff else None
        datacenters.append(dataclasses.replace(dc, gpus=tuple(offers), power_usd_per_kwh=kwh))
    _unoffered(s, quotes, found)
    wan, lines = _lines(s, quotes, raw, found)
    costs = _tariff(s, quotes, raw, found)
    applied = dataclasses.replace(quotes, gpus=gpus, lines=lines)
    return dataclasses.replace(s, datacenters=tuple(datacenters), wan=wan, costs=costs,
                               quotes=applied)  # fmt: skip


def _unoffered(s: Scenario, quotes: Quotes, found: list) -> None:
    """A datacenter's own quote for a GPU it does not offer would price nothing: a slip."""
    for (gpu, dc_id), figures in quotes.gpus.items():
        if dc_id == ANY_DATACENTER or any(o.gpu == gpu for o in s.datacenter(dc_id).gpus):
            continue
        quote = next(iter(figures.values()))
        offered = ", ".join(o.gpu for o in s.datacenter(dc_id).gpus)
        entry = quote.where.rsplit(".", 1)[0]
        found.append(Problem(quote.file, f"{entry}.gpu", repr(gpu),
                             f"a GPU datacenter {dc_id} offers ({offered})"))  # fmt: skip


def _lines(s: Scenario, quotes: Quotes, raw: dict, found: list):
    """The WAN with quoted leases applied, and every line quote (set-in-place ones too)."""
    written = ((raw.get("wan") or {}).get("tier_prices_usd_per_month")) or {}
    prices = dict(s.wan.tier_price_usd_per_month)
    lines = {tier: dict(figures) for tier, figures in quotes.lines.items()}
    for tier, figures in quotes.lines.items():
        quote = figures.get(LEASE)
        if quote is None:
            continue
        if tier in written and written[tier] != quote.value:
            where = f"wan.tier_prices_usd_per_month.{tier}"
            _conflict(found, quote, s.source_file, where, written[tier])
        prices[tier] = quote.value
    for tier, value in written.items():
        if LEASE not in lines.get(tier, {}):
            where = f"wan.tier_prices_usd_per_month.{tier}"
            lines.setdefault(tier, {})[LEASE] = Quote(float(value), s.source_file, where,
                                                      SET_IN_SCENARIO)  # fmt: skip
    return dataclasses.replace(s.wan, tier_price_usd_per_month=prices), lines


def _tariff(s: Scenario, quotes: Quotes, raw: dict, found: list):
    """`costs` with a tariff quoted for every datacenter applied."""
    quote = quotes.power.get(ANY_DATACENTER)
    if quote is None:
        return s.costs
    written = (raw.get("costs") or {}).get("power_usd_per_kwh")
    if written is not None and written != quote.value:
        _conflict(found, quote, s.source_file, "costs.power_usd_per_kwh", written)
    return dataclasses.replace(s.costs, power_usd_per_kwh=quote.value)
