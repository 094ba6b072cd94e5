"""Printing for the CLI: rich tables on a terminal, JSON when asked."""

from __future__ import annotations

import json
import sys
from enum import StrEnum

from rich.console import Console
from rich.table import Table

console = Console()


class Format(StrEnum):
    table = "table"
    json = "json"


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def table(title: str, columns: list[str], rows: list[list], caption: str = "") -> None:
    t = Table(title=title, caption=caption or None, show_lines=False)
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    for row in rows:
        t.add_row(*[fmt(v) for v in row])
    console.print(t)


def check_architecture(architecture: str) -> None:
    """`--architecture` must name one of the architectures the models know."""
    from pdd_plan.errors import InputError
    from pdd_plan.model.deployment import ARCHITECTURE_ROLES

    if architecture not in ARCHITECTURE_ROLES:
        raise InputError.single(
            "command line",
            "--architecture",
            repr(architecture),
            f"one of {', '.join(ARCHITECTURE_ROLES)}",
        )
