"""The assumptions of the models and the optimiser, each with the direction it biases the
results: one Markdown table, assumptions.md beside this module, shipped with the package,
read here for the sizing report and included whole by the docs page (docs/assumptions.md),
so the two cannot disagree."""

from __future__ import annotations

import re
from pathlib import Path

TABLE_FILE = Path(__file__).with_name("assumptions.md")
HEADER = ["assumption", "bias"]


def table_rows(text: str) -> list[list[str]]:
    """The rows of the Markdown table in `text` (header first, the --- line left out), cells
    stripped; a pipe escaped as \\| stays inside its cell."""
    return [
        [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in text.splitlines()
        if line.startswith("|") and not line.startswith("|---")
    ]


def _read(path: Path = TABLE_FILE) -> tuple[tuple[str, str], ...]:
    rows = table_rows(path.read_text(encoding="utf-8"))
    if not rows or rows[0] != HEADER or any(len(r) != 2 or not all(r) for r in rows[1:]):
        raise ValueError(f"{path}: expected a two-column table | assumption | bias |")
    return tuple((a, b) for a, b in rows[1:])


# (assumption, bias), in the table's order; Markdown inline code is kept as written
ASSUMPTIONS: tuple[tuple[str, str], ...] = _read()
