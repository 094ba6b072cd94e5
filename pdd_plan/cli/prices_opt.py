"""`--prices FILE`: the quotes a user was given, for one run (docs/bom.md, quoted prices).

The file has the shape of a scenario's `prices:` section and takes its place for the run and
the worker processes it starts (loaders/prices_apply.py): the optimiser's costs, the answer
and the bill of materials all use the quotes.
"""

from __future__ import annotations

import typer

HELP = ("a price file of quotes (the shape of a scenario's `prices:` section: rental, "
        "purchase and node prices, line lease and install, power tariff); it replaces that "
        "section for this run")  # fmt: skip


def prices_option():
    return typer.Option(None, "--prices", help=HELP)


def use_prices(path: str | None) -> None:
    """Check the file now (one line, exit 2, before any work) and make it the run's."""
    if path is None:
        return
    from pdd_plan.loaders.prices_apply import use_price_file

    use_price_file(path)
