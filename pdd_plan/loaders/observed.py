"""OBSERVED.yaml for `pdd-plan calibrate observed`: a running deployment's operating
points (a load sweep), one or several.

    points:
      - offered_rps: 11.5                  # the request rate it was serving (required)
        ttft_s: {p50: 4.2, p90: 9.8, p99: 14.4}   # any of p50, p90, p99
        tpot_ms: {p50: 32, p90: 33, p99: 35}      # any of p50, p90, p99
        goodput_rps: 58                    # optional: requests/s within the SLA
        throughput_rps: 11.5               # optional: requests/s completed
        mean_batch: 40                     # optional: running requests per decode instance
        plan: plans/pdd.yaml               # optional: this point's plan (relative to this
                                           # file); default the command's PLAN
        source: "where the figures come from"      # optional, free text
      - ...

The single-point form of earlier releases (the keys of one point at the top level, no
`points`) is read as a list of one. Every point has a figure (a point past saturation,
where no latency is defined, may have its throughput alone). Read through the
strict loader: unknown keys, wrong types and values out of range are each one line
naming the file and key path (`points[1].ttft_s.p90`; exit 2).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pdd_plan.loaders.input_files import read_input_bytes, shown_path
from pdd_plan.loaders.strict import Node, Problems, load_yaml, max_file_bytes
from pdd_plan.model.units import MS_S

WHAT = "observed operating points (offered_rps, ttft_s, tpot_ms, goodput_rps)"
QUANTILES = ("p50", "p90", "p99")
MAX_RPS = 1e9
MAX_LATENCY_S = 86_400.0
MAX_BATCH = 1e7
MAX_POINTS = 1_000
# a figure's metric -> (its key in the file, seconds per unit of that key)
METRIC_KEYS = {"ttft": ("ttft_s", 1.0), "tpot": ("tpot_ms", MS_S)}
RATE_KEYS = ("goodput_rps", "throughput_rps")
FIGURE_KEYS = ("ttft_s", "tpot_ms", *RATE_KEYS, "mean_batch")
POINT_KEYS = (*FIGURE_KEYS, "plan", "source")


@dataclass(frozen=True)
class ObservedPoint:
    offered_rps: float
    # (("ttft_p50", 0.09), ("tpot_p99", 0.035), ("goodput_rps", 58.0), ("mean_batch", 40))
    figures: tuple[tuple[str, float], ...]
    plan: str | None = None  # this point's plan file; None: the command's PLAN
    label: str = ""  # where the file holds it ("points[1]"; "" in the single-point form)
    source: str = ""

    @property
    def figures_s(self) -> tuple[tuple[str, float], ...]:
        """The latency figures (seconds) alone."""
        return tuple((k, v) for k, v in self.figures if k.partition("_")[0] in METRIC_KEYS)

    @property
    def goodput_rps(self) -> float | None:
        return dict(self.figures).get("goodput_rps")


@dataclass(frozen=True)
class Observed:
    file: str
    sha256: str
    points: tuple[ObservedPoint, ...]

    @property
    def figure_count(self) -> int:
        return sum(len(p.figures) for p in self.points)


def _quantiles(node: Node, scale: float, metric: str) -> list[tuple[str, float]]:
    if node.is_missing:
        return []
    f = node.mapping(optional=QUANTILES)
    if f is None:
        return []
    out, below = [], None
    for q in QUANTILES:
        value = f[q].number(  # a key written null is refused, not taken as absent
            minimum=0, exclusive_minimum=True, maximum=MAX_LATENCY_S / scale,
            required=not f[q].is_missing,
        )  # fmt: skip
        if value is None:
            continue
        if below is not None and value < below[1]:  # a CDF does not decrease: P50 <= P90
            f[q].fail(f"a number >= {below[0]} ({below[1]:g}): percentiles do not decrease")
        below = (q, value)
        out.append((f"{metric}_{q}", value * scale))
    return out


def file_key(figure: str, label: str = "") -> tuple[str, float]:
    """Where the file says a figure, and that key's unit in seconds: `tpot_p90` ->
    (`tpot_ms.p90`, MS_S); `goodput_rps` -> (`goodput_rps`, 1); under a point's label
    (`points[1]`) its path in the list form."""
    metric, _, q = figure.partition("_")
    key, unit_s = METRIC_KEYS.get(metric, (figure, 1.0))
    key = key if metric not in METRIC_KEYS else f"{key}.{q}"
    return (f"{label}.{key}" if label else key), unit_s


def _rates(f: dict[str, Node]) -> list[tuple[str, float]]:
    out = []
    for key in RATE_KEYS:
        value = f[key].number(minimum=0, maximum=MAX_RPS, required=not f[key].is_missing)
        if value is not None:
            out.append((key, value))
    batch = f["mean_batch"].number(
        minimum=0, exclusive_minimum=True, maximum=MAX_BATCH,
        required=not f["mean_batch"].is_missing,
    )  # fmt: skip
    return out + ([("mean_batch", batch)] if batch is not None else [])


def _point(node: Node, folder: Path, label: str) -> ObservedPoint | None:
    f = node.mapping(required=("offered_rps",), optional=POINT_KEYS)
    if f is None:
        return None
    offered = f["offered_rps"].number(
        minimum=0, exclusive_minimum=True, maximum=MAX_RPS, required=True
    )
    figures = [x for m, (key, unit_s) in METRIC_KEYS.items() for x in _quantiles(f[key], unit_s, m)]
    figures += _rates(f)
    plan = f["plan"].string(expected="a plan file name (relative to this file)")
    source = f["source"].string(expected="where the figures come from (text)") or ""
    plan_path = None if plan is None else str(folder / plan)
    return ObservedPoint(offered or 0.0, tuple(figures), plan_path, label, source)


def load_observed(path: Path | str) -> Observed:
    name = shown_path(path)
    problems = Problems(name)
    root = Node(load_yaml(path, WHAT), "", problems)
    folder = Path(path).parent
    if isinstance(root.value, dict) and "points" in root.value:
        f = root.mapping(required=("points",), optional=("source",))
        f["source"].string(expected="where the points come from (text)")
        problems.raise_if_any()
        nodes = f["points"].items(min_items=1) or []
        if len(nodes) > MAX_POINTS:
            f["points"].fail(f"a list of at most {MAX_POINTS:,} points")
        problems.raise_if_any()
        points = [_point(n, folder, n.path) for n in nodes]
    else:
        points = [_point(root, folder, "")]
    problems.raise_if_any()  # a misspelt key is the one line, not its consequence below
    for p in points:  # a point past saturation may hold its throughput alone
        if not p.figures:
            where = f"{p.label}.ttft_s" if p.label else "ttft_s"
            problems.add(where, "nothing", f"one of {', '.join(FIGURE_KEYS)} (a figure)")
    problems.raise_if_any()
    sha = hashlib.sha256(read_input_bytes(path, WHAT, max_file_bytes(WHAT))).hexdigest()
    return Observed(name, sha, tuple(points))
