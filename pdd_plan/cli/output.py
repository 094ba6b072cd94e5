"""Printing for the CLI: rich tables on a terminal, JSON or YAML when asked.

User text (scenario names, file paths, catalog names, values echoed back) reaches the
terminal only through `safe` (in a markup string) or `table` (plain cells): its rich markup
is escaped and its control characters are shown as escapes, so it can neither style the
output, nor move the cursor, nor start a line of its own.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from pdd_plan.errors import visible


class _VisibleConsole(Console):
    """A console whose printed strings never carry a control character (ESC, CR, a
    newline): the guard for a call site that forgot `safe`. No print here needs one."""

    def print(self, *objects, **kwargs) -> None:
        super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **kwargs)


console = _VisibleConsole()


def safe(value) -> str:
    """User text for a rich markup string: `[bold]` shown as written, controls escaped."""
    return escape(visible(str(value)))


class Format(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"

    @property
    def structured(self) -> bool:
        """JSON or YAML: the answer as data for a program, no tables or bars."""
        return self is not Format.table


FORMAT_HELP = "table, json or yaml (the JSON's content as YAML)"


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def yaml_text(data) -> str:
    """`data` as YAML with the content its JSON has, key for key and in its order: it goes
    through JSON first (tuples become lists, keys strings, as `json.dumps` makes them)."""
    import yaml

    plain = json.loads(json.dumps(data))
    return yaml.safe_dump(plain, sort_keys=False, allow_unicode=True)


def print_structured(data, format: Format) -> None:
    """The answer as `--format json` or `--format yaml` asks."""
    if format is Format.yaml:
        sys.stdout.write(yaml_text(data))
    else:
        print_json(data)


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def plain(value) -> Text | object:
    """A table cell or title: a rich renderable as it is, anything else as plain text
    (no markup), formatted by `fmt`, with its control characters shown as escapes."""
    if isinstance(value, Text) or hasattr(value, "__rich_console__"):
        return value
    return Text(visible(fmt(value)))


def table(title: str, columns: list[str], rows: list[list], caption: str = "") -> None:
    """Cells are plain text (`plain`): pass a `rich.text.Text` to style one.

    No column is narrowed below its longest word, and the first (the ids users type) is
    never wrapped: when the terminal is too narrow for that, the rightmost columns are
    left out and the caption says which (#14 item 14)."""
    cells = [[plain(v) for v in row] for row in rows]
    shown = len(columns)
    while True:
        t = _build(title, columns[:shown], [r[:shown] for r in cells], caption, columns[shown:])
        if shown <= 2 or _fit_widths(t):
            break
        shown -= 1
    console.print(t)


def _build(title, columns, rows, caption, dropped) -> Table:
    if dropped:
        shown = ", ".join(dropped)
        note = f"not shown at this width: {shown} (widen the terminal or --format json)"
        caption = f"{caption}; {note}" if caption else note
    t = Table(title=plain(title), caption=plain(caption) if caption else None, show_lines=False)
    for i, c in enumerate(columns):
        t.add_column(plain(c), justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in rows:
        t.add_row(*row)
    return t


def _fit_widths(t: Table) -> bool:
    """False when `t` cannot print without cutting a word (an id in its first column)
    at the console's width. Else True, with the widths set where rich's own narrowing
    (which evens out the widest columns whatever their words) would cut one: each column
    gets its longest word, and the room left goes in proportion to what each wants more."""
    from rich.measure import Measurement

    options = console.options.update(no_wrap=False)
    spans = [[Measurement.get(console, options, cell) for cell in (c.header, *c.cells)]
             for c in t.columns]  # fmt: skip
    low = [max(m.minimum for m in col) for col in spans]
    high = [max(m.maximum for m in col) for col in spans]
    low[0] = high[0]  # the first column unwrapped
    room = console.width - 3 * len(t.columns) - 1  # 2 padding + 1 border a column
    if sum(high) <= room:
        return True
    if sum(low) > room:
        return False
    spare, want = room - sum(low), sum(h - lo for h, lo in zip(high, low, strict=True))
    for column, lo, hi in zip(t.columns, low, high, strict=True):
        column.width = lo + (hi - lo) * spare // want
    return True


def check_architecture(architecture: str) -> None:
    """`--architecture` must name one of the architectures the models know."""
    from pdd_plan.errors import InputError
    from pdd_plan.loaders.suggest import did_you_mean
    from pdd_plan.model.deployment import ARCHITECTURE_ROLES

    if architecture not in ARCHITECTURE_ROLES:
        raise InputError.single(
            "command line",
            "--architecture",
            repr(architecture),
            f"one of {', '.join(ARCHITECTURE_ROLES)}",
            did_you_mean(architecture, ARCHITECTURE_ROLES),
        )
