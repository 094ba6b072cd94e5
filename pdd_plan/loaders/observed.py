"""OBSERVED.yaml for `pdd-plan calibrate observed`: a running deployment's operating point.

    offered_rps: 40                      # the request rate it was serving (required)
    ttft_s: {p50: 0.09, p90: 0.2, p99: 0.6}     # any of p50, p90, p99
    tpot_ms: {p50: 32, p90: 33, p99: 35}        # any of p50, p90, p99
    goodput_rps: 58                      # optional: requests/s within the SLA

At least one of ttft_s and tpot_ms. Read through the strict loader: unknown keys, wrong
types and values out of range are each one line naming the file and key path (exit 2).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pdd_plan.loaders.input_files import read_input_bytes, shown_path
from pdd_plan.loaders.strict import Node, Problems, load_yaml, max_file_bytes
from pdd_plan.units import MS_S

WHAT = "an observed operating point (offered_rps, ttft_s, tpot_ms, goodput_rps)"
QUANTILES = ("p50", "p90", "p99")
MAX_RPS = 1e9
MAX_LATENCY_S = 86_400.0
# a figure's metric -> (its key in the file, seconds per unit of that key)
METRIC_KEYS = {"ttft": ("ttft_s", 1.0), "tpot": ("tpot_ms", MS_S)}


@dataclass(frozen=True)
class Observed:
    file: str
    sha256: str
    offered_rps: float
    figures_s: tuple[tuple[str, float], ...]  # (("ttft_p50", 0.09), ("tpot_p99", 0.035))
    goodput_rps: float | None


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


def file_key(figure: str) -> tuple[str, float]:
    """Where the file says a figure, and that key's unit in seconds: `tpot_p90` ->
    (`tpot_ms.p90`, MS_S); `goodput_rps` -> (`goodput_rps`, 1)."""
    metric, _, q = figure.partition("_")
    if metric not in METRIC_KEYS:
        return figure, 1.0
    key, unit_s = METRIC_KEYS[metric]
    return f"{key}.{q}", unit_s


def load_observed(path: Path | str) -> Observed:
    name = shown_path(path)
    problems = Problems(name)
    root = Node(load_yaml(path, WHAT), "", problems)
    f = root.mapping(required=("offered_rps",), optional=("ttft_s", "tpot_ms", "goodput_rps"))
    if f is None:
        problems.raise_if_any()
    offered = f["offered_rps"].number(
        minimum=0, exclusive_minimum=True, maximum=MAX_RPS, required=True
    )
    figures = [x for m, (key, unit_s) in METRIC_KEYS.items() for x in _quantiles(f[key], unit_s, m)]
    goodput = f["goodput_rps"].number(
        minimum=0, maximum=MAX_RPS, required=not f["goodput_rps"].is_missing
    )
    problems.raise_if_any()  # a misspelt key is the one line, not its consequence below
    if f["ttft_s"].is_missing and f["tpot_ms"].is_missing:
        problems.add("ttft_s", "nothing", "ttft_s or tpot_ms (at least one percentile)")
    problems.raise_if_any()
    sha = hashlib.sha256(read_input_bytes(path, WHAT, max_file_bytes(WHAT))).hexdigest()
    return Observed(name, sha, offered, tuple(figures), goodput)
