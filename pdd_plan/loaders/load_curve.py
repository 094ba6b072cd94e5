"""A load curve's periods, strictly (load_curve_source.py reads `workload.load_curve`
and hands each way of giving it here). A period is `start_h` (hours) or `start` (an ISO
8601 time), `duration_h` or `duration_min`, `arrival_rate_per_s`, and optionally its own
`prefix_hit_rate`, `input_tokens`, `output_tokens` (distributions as the workload writes
them). Periods are contiguous: each starts where the one before ends.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from pdd_plan.loaders.distributions import distribution, outputs_reaching_two_tokens
from pdd_plan.loaders.strict import Node
from pdd_plan.model.workload.load_curve import S_PER_HOUR, CurvePeriod, LoadCurve, iso_utc

MAX_TOKENS = 10_000_000  # as scenario_demand.MAX_TOKENS (which imports this module)
MAX_PERIODS = 2_016  # a week at 5-minute periods; each distinct period is sized apart
MIN_PERIOD_S = 60.0
MAX_PERIOD_S = 24 * S_PER_HOUR
MAX_RATE_PER_S = 1e7
# two periods meet when the second starts within this of the first's end (timestamps
# written to the millisecond, hours written to 4 decimals: 0.36 s)
CONTIGUOUS_TOL_S = 0.5
PERIOD_KEYS = (
    "start_h",
    "start",
    "duration_h",
    "duration_min",
    "arrival_rate_per_s",
    "prefix_hit_rate",
    "input_tokens",
    "output_tokens",
)


@dataclass(frozen=True)
class RawPeriod:
    """One period as read, before the curve is assembled (times still as written)."""

    node: Node
    start: float  # hours (start_h) or Unix seconds (start)
    absolute: bool  # `start:` a timestamp
    duration_s: float
    period: CurvePeriod  # start_s not yet set


def periods_curve(node: Node, source: str) -> LoadCurve | None:
    """A list of period mappings (inline, or a YAML curve file's `periods`)."""
    items = node.items(min_items=1)
    if items is None:
        return None
    if len(items) > MAX_PERIODS:
        node.fail(f"at most {MAX_PERIODS:,} periods")
        return None
    raws = [read_period(item) for item in items]
    if None in raws:
        return None
    return assemble(raws, source)


def read_period(item: Node) -> RawPeriod | None:
    f = item.mapping(required=("arrival_rate_per_s",), optional=PERIOD_KEYS)
    if f is None:
        return None
    start, absolute = _start(item, f)
    duration_s = _duration_s(item, f)
    rate = f["arrival_rate_per_s"].number(
        required=True, minimum=0, maximum=MAX_RATE_PER_S, unit="req/s"
    )
    hits = _own(f["prefix_hit_rate"], 0.0, 1.0, False)
    inputs = _own(f["input_tokens"], 1, MAX_TOKENS, True)
    outputs = _own(f["output_tokens"], 1, MAX_TOKENS, True)
    if outputs is not None and outputs is not False:  # checked as the workload's own are
        checked = outputs_reaching_two_tokens(f["output_tokens"], outputs)
        outputs = False if checked is None else checked
    if None in (start, duration_s, rate) or False in (hits, inputs, outputs):
        return None
    period = CurvePeriod(0.0, duration_s, rate, hits, inputs, outputs)
    return RawPeriod(item, start, absolute, duration_s, period)


def _own(node: Node, low: float, high: float, integer: bool):
    """A period's own distribution: None when absent, False when it has a problem."""
    if node.is_missing:
        return None
    parsed = distribution(node, low, high, integer=integer)
    return False if parsed is None else parsed


def _start(item: Node, f: dict[str, Node]) -> tuple[float | None, bool]:
    if f["start_h"].is_missing == f["start"].is_missing:
        item.fail("a mapping with one of start_h (hours) or start (an ISO 8601 time)")
        return None, False
    if not f["start_h"].is_missing:
        return f["start_h"].number(required=True, minimum=0, maximum=1e6), False
    return timestamp_s(f["start"]), True


def timestamp_s(node: Node) -> float | None:
    """Seconds since the Unix epoch of an ISO 8601 time with a time zone."""
    expected = "an ISO 8601 time with its zone, e.g. 2025-06-02T00:00:00Z"
    text = node.string(required=True, expected=expected)
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        node.fail(expected)
        return None
    if when.tzinfo is None:
        node.fail(expected + " (a time without a zone is ambiguous)")
        return None
    return when.timestamp()


def _duration_s(item: Node, f: dict[str, Node]) -> float | None:
    if f["duration_h"].is_missing == f["duration_min"].is_missing:
        item.fail("a mapping with one of duration_h or duration_min")
        return None
    low_h, high_h = MIN_PERIOD_S / S_PER_HOUR, MAX_PERIOD_S / S_PER_HOUR
    if not f["duration_h"].is_missing:
        hours = f["duration_h"].number(required=True, minimum=low_h, maximum=high_h)
        return None if hours is None else hours * S_PER_HOUR
    minutes = f["duration_min"].number(required=True, minimum=1, maximum=high_h * 60)
    return None if minutes is None else minutes * 60.0


def assemble(raws: list[RawPeriod], source: str) -> LoadCurve | None:
    """The curve of periods read in order: one way of writing starts, each period starting
    where the one before ends (a gap or an overlap is named at the period)."""
    if len({r.absolute for r in raws}) > 1:
        odd = next(r for r in raws if r.absolute != raws[0].absolute)
        first = "start" if raws[0].absolute else "start_h"
        odd.node.fail(f"a period with {first}, as the first period has")
        return None
    starts_s = [r.start if r.absolute else r.start * S_PER_HOUR for r in raws]
    origin = starts_s[0]
    periods = []
    for i, raw in enumerate(raws):
        if i and abs(starts_s[i] - (starts_s[i - 1] + raws[i - 1].duration_s)) > CONTIGUOUS_TOL_S:
            raw.node.fail(_contiguity(raws[i - 1], starts_s[i - 1], starts_s[i]))
            return None
        start_s = starts_s[i] - origin if raw.absolute else starts_s[i]
        periods.append(replace(raw.period, start_s=start_s))
    origin_unix = origin if raws[0].absolute else None
    return LoadCurve(tuple(periods), origin_unix, source)


def _contiguity(before: RawPeriod, before_start_s: float, start_s: float) -> str:
    end_s = before_start_s + before.duration_s
    gap = "a gap" if start_s > end_s else "an overlap"
    if before.absolute:
        return (
            f"a start at the previous period's end, {iso_utc(end_s)} "
            f"({gap} of {abs(start_s - end_s):g} s)"
        )
    return (
        f"a start_h at the previous period's end, {end_s / S_PER_HOUR:g} "
        f"({gap} of {abs(start_s - end_s) / S_PER_HOUR:g} h)"
    )
