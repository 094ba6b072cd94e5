"""`workload.load_curve`, strictly: the offered rate period by period.

Three ways to give it (model/workload/load_curve.py holds what they give):
- inline, a list of periods, or `{periods: [...]}` (load_curve.py);
- `{file: PATH}`: a CSV or YAML file of the same periods (load_curve_files.py);
- `{prometheus: PATH}`: the JSON a Prometheus `/api/v1/query_range` returns
  (prometheus.py), one series of a request-rate query.
Each mapping may add `scale` (every rate times it). Files are relative to the scenario.
"""

from __future__ import annotations

from pathlib import Path

from pdd_plan.errors import InputError
from pdd_plan.loaders import load_curve_files, prometheus
from pdd_plan.loaders.load_curve import periods_curve
from pdd_plan.loaders.strict import Node, Problems
from pdd_plan.model.workload.load_curve import LoadCurve

SOURCES = ("periods", "file", "prometheus")
PROMETHEUS_KEYS = ("metric", "series")


def load_curve(node: Node) -> LoadCurve | None:
    """The curve `node` (workload.load_curve) gives, or None with its problems recorded.
    Files are relative to the scenario file (`node.problems.file`)."""
    if node.is_missing or node.value is None:
        return None
    if isinstance(node.value, list):
        return periods_curve(node, "inline")
    f = node.mapping(optional=(*SOURCES, "scale", *PROMETHEUS_KEYS))
    if f is None:
        return None
    given = [k for k in SOURCES if not f[k].is_missing]
    if len(given) != 1:
        found = f"{' and '.join(given)}" if given else "none of them"
        node.problems.add(node.path, found, f"exactly one of {', '.join(SOURCES)}")
        return None
    for key in PROMETHEUS_KEYS:
        if given[0] != "prometheus" and not f[key].is_missing:
            f[key].fail(f"no {key} (it selects a series of a prometheus export)")
    scale = f["scale"].number(default=1.0, minimum=0, exclusive_minimum=True, maximum=1e6)
    curve = _from_source(given[0], f, node.problems)
    if curve is None or scale is None:
        return None
    return curve.scaled(scale) if scale != 1.0 else curve


def _from_source(kind: str, f: dict[str, Node], problems: Problems) -> LoadCurve | None:
    if kind == "periods":
        return periods_curve(f["periods"], "inline")
    path = curve_file_path(f[kind])
    wanted = prometheus.selector(f["metric"], f["series"]) if kind == "prometheus" else {}
    if path is None or wanted is None:
        return None
    try:
        if kind == "file":
            return load_curve_files.read_curve_file(path)
        return prometheus.read_export(path, wanted)
    except InputError as exc:  # the file's own problems, beside the scenario's
        problems.items.extend(exc.problems)
        return None


def curve_file_path(node: Node) -> Path | None:
    relative = node.string(required=True, expected="a path (relative to the scenario file)")
    if relative is None:
        return None
    return Path(node.problems.file).parent / Path(relative).expanduser()
