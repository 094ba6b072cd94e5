"""Workload distributions in scenario files -> model distributions, strictly checked.

One of: `fixed`, `bins` (shares over [low, high) intervals), truncated `lognormal`,
`beta` on [low, high], `empirical` (values with optional weights).
"""

from __future__ import annotations

import dataclasses

from pdd_plan.loaders.strict import Node
from pdd_plan.model.workload import workload as wl

_LENGTH_KEYS = ("input_tokens", "output_tokens")


def _bin_lengths(g: dict[str, Node], lengths: tuple[float, float]) -> tuple:
    """A joint bin's own length distributions (None where it has none); a length
    distribution is never itself joint."""
    out = []
    for key in _LENGTH_KEYS:
        node = g[key]
        parsed = None if node.is_missing else distribution(node, *lengths, integer=True)
        out.append(False if not node.is_missing and parsed is None else parsed)
    return tuple(out)


def _bins(f: dict[str, Node], lo: float, hi: float, integer: bool, lengths=None):
    bins = f["bins"].items(min_items=1) or []
    lows, highs, shares, per_bin = [], [], [], []
    for b in bins:
        g = b.mapping(required=("low", "high", "share"), optional=_LENGTH_KEYS if lengths else ())
        if g is None:  # reported; its share is unknown, so the sum is not checked
            shares.append(None)
            continue
        low = g["low"].number(required=True, minimum=lo, maximum=hi)
        high = g["high"].number(required=True, minimum=lo, maximum=hi)
        share = g["share"].fraction(required=True)
        if low is not None and high is not None and high < low:
            g["high"].fail(f"a number >= low ({low:g})")
        lows.append(low)
        highs.append(high)
        shares.append(share)
        per_bin.append(_bin_lengths(g, lengths) if lengths else (None, None))
    if None in lows + highs + shares or not bins or any(False in p for p in per_bin):
        return None
    total = sum(shares)
    if abs(total - 1.0) > 1e-3:
        f["bins"].problems.add(
            f["bins"].path, f"shares summing to {total:.4g}", "shares summing to 1"
        )
        return None
    joint = [tuple(p[i] for p in per_bin) for i in range(2)]
    if any(d is not None for column in joint for d in column) and len(bins) > wl.MAX_EXACT_BINS:
        f["bins"].fail(f"at most {wl.MAX_EXACT_BINS} bins where bins carry their own lengths")
        return None
    given = [None if all(d is None for d in column) else column for column in joint]
    return wl.Bins(
        tuple(lows),
        tuple(highs),
        tuple(s / total for s in shares),
        input_tokens=given[0],
        output_tokens=given[1],
    )


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


def distribution(node: Node, lo: float, hi: float, integer: bool = False, lengths=None):
    """One of: fixed, bins, lognormal (truncated), beta (on [low, high]), empirical.

    `lengths` (the (low, high) of token counts) lets each `bins` entry carry its own
    `input_tokens` / `output_tokens`: a hit rate joint with the lengths."""
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
        return _bins(f, lo, hi, integer, lengths)
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


def outputs_reaching_two_tokens(node: Node, outputs):
    """`outputs`, or None with the problem recorded on `node` when no output length reaches
    2 tokens: one token is the prefill's own, with no decode step and no TPOT to plan for
    (all-1-token outputs crashed the latency model)."""
    if outputs is not None and outputs.discretise(1000)[0].max() < 2:
        node.fail("output lengths that reach 2 tokens (1 token has no TPOT)")
        return None
    return outputs


def bins_carry_all(raw_hit_rate, key: str) -> bool:
    """Whether every bin of a raw `prefix_hit_rate` mapping has its own `key` (then the
    workload-level `key` may be left out)."""
    bins = raw_hit_rate.get("bins") if isinstance(raw_hit_rate, dict) else None
    return (
        isinstance(bins, list)
        and bool(bins)
        and all(isinstance(b, dict) and key in b for b in bins)
    )


def joint_lengths(hits, inputs, outputs):
    """A joint hit-rate `bins` with every bin's lengths filled in (the workload's where a bin
    has none) and the workload's lengths replaced by their mixture over the bins, so the
    workload's mean input is the mixture's. Anything else comes back unchanged."""
    if not (isinstance(hits, wl.Bins) and hits.is_joint):
        return hits, inputs, outputs
    filled = {}
    for key, fallback in (("input_tokens", inputs), ("output_tokens", outputs)):
        column = getattr(hits, key)
        if column is not None:
            filled[key] = tuple(fallback if d is None else d for d in column)
    if any(None in column for column in filled.values()):  # a fallback had a problem
        return hits, None, None
    hits = dataclasses.replace(hits, **filled)
    mixed = {k: wl.Mixture(column, hits.shares) for k, column in filled.items()}
    return hits, mixed.get("input_tokens", inputs), mixed.get("output_tokens", outputs)
