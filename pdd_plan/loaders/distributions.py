"""Workload distributions in scenario files -> model distributions, strictly checked.

One of: `fixed`, `bins` (shares over [low, high) intervals), truncated `lognormal`,
`beta` on [low, high], `empirical` (values with optional weights).
"""

from __future__ import annotations

from pdd_plan.loaders.strict import Node
from pdd_plan.model import workload as wl


def _bins(f: dict[str, Node], lo: float, hi: float, integer: bool):
    bins = f["bins"].items(min_items=1) or []
    lows, highs, shares = [], [], []
    for b in bins:
        g = b.mapping(required=("low", "high", "share"))
        if g is None:
            continue
        low = g["low"].number(required=True, minimum=lo, maximum=hi)
        high = g["high"].number(required=True, minimum=lo, maximum=hi)
        share = g["share"].fraction(required=True)
        if low is not None and high is not None and high < low:
            g["high"].fail(f"a number >= low ({low:g})")
        lows.append(low)
        highs.append(high)
        shares.append(share)
    if None in lows + highs + shares or not bins:
        return None
    total = sum(shares)
    if abs(total - 1.0) > 1e-3:
        f["bins"].problems.add(
            f["bins"].path, f"shares summing to {total:.4g}", "shares summing to 1"
        )
        return None
    return wl.Bins(tuple(lows), tuple(highs), tuple(s / total for s in shares))


def _empirical(f: dict[str, Node], lo: float, hi: float):
    values = [v.number(required=True, minimum=lo, maximum=hi) for v in f["values"].items(1) or []]
    if f["weights"].is_missing:
        weights = [1.0] * len(values)
    else:
        weights = [w.number(required=True, minimum=0) for w in f["weights"].items(1) or []]
        if len(weights) != len(values):
            f["weights"].fail(f"a list as long as values ({len(values)})")
            return None
    if not values or None in values or None in weights:
        return None
    if sum(weights) <= 0:
        f["weights"].fail("weights with a positive sum")
        return None
    total = sum(weights)
    return wl.Empirical(tuple(values), tuple(w / total for w in weights))


def _range(f: dict[str, Node], lo: float, hi: float) -> tuple[float, float] | None:
    low = f["low"].number(required=True, minimum=lo, maximum=hi)
    high = f["high"].number(required=True, minimum=lo, maximum=hi)
    if low is None or high is None:
        return None
    if high <= low:
        f["high"].fail(f"a number > low ({low:g})")
        return None
    return low, high


def distribution(node: Node, lo: float, hi: float, integer: bool = False):
    """One of: fixed, bins, lognormal (truncated), beta (on [low, high]), empirical."""
    if node.is_missing:
        node.problems.add(node.path, "nothing", "a distribution (this key is required)")
        return None
    f = node.mapping(
        required=("kind",),
        optional=(
            "value",
            "bins",
            "median",
            "sigma",
            "low",
            "high",
            "alpha",
            "beta",
            "values",
            "weights",
        ),
    )
    if f is None:
        return None
    fields = {
        "fixed": ("value",),
        "bins": ("bins",),
        "lognormal": ("median", "sigma", "low", "high"),
        "beta": ("alpha", "beta", "low", "high"),
        "empirical": ("values", "weights"),
    }
    kind = f["kind"].choice(tuple(fields), required=True)
    if kind is None:
        return None
    node.mapping(
        required=("kind",) + tuple(k for k in fields[kind] if k != "weights"),
        optional=("weights",) if kind == "empirical" else (),
    )
    if kind == "fixed":
        value = f["value"].number(required=True, minimum=lo, maximum=hi, integer=integer)
        return None if value is None else wl.Fixed(value)
    if kind == "bins":
        return _bins(f, lo, hi, integer)
    if kind == "empirical":
        return _empirical(f, lo, hi)
    bounds = _range(f, lo, hi)
    if kind == "lognormal":
        median = f["median"].number(required=True, minimum=0, exclusive_minimum=True, maximum=hi)
        sigma = f["sigma"].number(required=True, minimum=0, exclusive_minimum=True, maximum=10)
        if None in (bounds, median, sigma):
            return None
        return wl.TruncatedLognormal(bounds[0], bounds[1], median=median, sigma=sigma)
    alpha = f["alpha"].number(required=True, minimum=0, exclusive_minimum=True, maximum=1e4)
    beta = f["beta"].number(required=True, minimum=0, exclusive_minimum=True, maximum=1e4)
    if None in (bounds, alpha, beta):
        return None
    return wl.BetaRange(bounds[0], bounds[1], alpha=alpha, beta=beta)
