"""A load curve in its own file (`workload.load_curve: {file: PATH}`): CSV, one period a
row under a header naming the columns, or YAML, a list of periods or `{periods: [...]}`
(what `pdd-plan trace analyze --load-curve` writes). The periods read as inline ones do
(load_curve.py); a CSV cell is a number where it reads as one."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders.input_files import MIB, read_input_bytes, shown_path, utf8_text
from pdd_plan.loaders.load_curve import MAX_PERIODS, assemble, periods_curve, read_period
from pdd_plan.loaders.strict import Node, Problems, load_yaml
from pdd_plan.loaders.suggest import did_you_mean
from pdd_plan.model.workload.load_curve import LoadCurve

CSV_WHAT = "a load curve (CSV with a header row)"
YAML_WHAT = "a load curve (YAML: a list of periods, or periods: [...])"
CSV_COLUMNS = ("start_h", "start", "duration_h", "duration_min", "arrival_rate_per_s")
SUFFIXES = (".csv", ".yaml", ".yml", ".json")


def read_curve_file(path: Path) -> LoadCurve:
    """The curve in `path` (by its suffix); InputError naming the file and the row or key."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError.single(
            shown_path(path), "", f"a file named {path.name!r}", "a .csv, .yaml or .json file"
        )
    problems = Problems(shown_path(path))
    curve = _csv_curve(path, problems) if suffix == ".csv" else _yaml_curve(path, problems)
    problems.raise_if_any()
    return curve


def _yaml_curve(path: Path, problems: Problems) -> LoadCurve | None:
    root = Node(load_yaml(path, YAML_WHAT), "", problems)
    if isinstance(root.value, list):
        return periods_curve(root, str(path))
    f = root.mapping(required=("periods",))
    return None if f is None else periods_curve(f["periods"], str(path))


def _csv_curve(path: Path, problems: Problems) -> LoadCurve | None:
    name = shown_path(path)
    text = utf8_text(read_input_bytes(path, CSV_WHAT, 16 * MIB), name, CSV_WHAT)
    lines = [
        (n, line)
        for n, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    rows = list(csv.reader(io.StringIO("\n".join(line for _, line in lines))))
    header = [h.strip() for h in rows[0]]
    for column in header:
        if column not in CSV_COLUMNS:
            problems.add(
                f"line {lines[0][0]}, column {column!r}",
                "an unknown column",
                f"one of {', '.join(CSV_COLUMNS)} (a period's own mix or lengths: a YAML curve)",
                did_you_mean(column, CSV_COLUMNS),
            )
    if problems.items:
        return None
    if len(rows) < 2:
        problems.add(f"line {lines[0][0]}", "a header and no periods", "at least one period row")
        return None
    if len(rows) - 1 > MAX_PERIODS:
        problems.add("", f"{len(rows) - 1:,} period rows", f"at most {MAX_PERIODS:,} periods")
        return None
    raws = []
    for (n, _), row in zip(lines[1:], rows[1:], strict=True):
        if len(row) != len(header):
            problems.add(f"line {n}", f"{len(row)} cells", f"{len(header)} cells, one a column")
            continue
        cells = {k: _cell(v) for k, v in zip(header, row, strict=True) if v.strip()}
        raws.append(read_period(Node(cells, f"line {n}", problems)))
    if problems.items or None in raws:
        return None
    return assemble(raws, str(path))


def _cell(text: str):
    """A number where the cell reads as one, else its text (`start`, or a problem)."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return text
