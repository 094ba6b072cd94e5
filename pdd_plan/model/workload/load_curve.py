"""A day's (or a week's) load: the offered rate period by period, each period optionally
with its own prefix-hit mix and lengths (`workload.load_curve`, loaders/load_curve.py).

The curve is one cycle that repeats (a typical day): its periods are contiguous, and a
month is 730 h / the cycle's hours of them. Plain data in SI units; the planner sizes each
period as the single-rate planner sizes a workload (`period_workload`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime

S_PER_HOUR = 3600.0
# a period of no traffic is planned as this rate (model/scenario.py MIN_ARRIVAL_RATE_PER_S:
# the service stays up at its least plan; the schedule shows the period's own rate, 0)
LEAST_PLANNED_RATE_PER_S = 1e-6


@dataclass(frozen=True)
class CurvePeriod:
    start_s: float  # from the curve's origin
    duration_s: float
    arrival_rate_per_s: float  # >= 0
    # the period's own distributions; None: the workload's
    prefix_hit_rate: object = None
    input_tokens: object = None
    output_tokens: object = None

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s

    @property
    def hours(self) -> float:
        return self.duration_s / S_PER_HOUR

    @property
    def planned_rate_per_s(self) -> float:
        return max(self.arrival_rate_per_s, LEAST_PLANNED_RATE_PER_S)

    def same_workload(self, other: CurvePeriod) -> bool:
        """Whether the two periods ask for the same sizing (rate and distributions)."""
        return self.workload_key() == other.workload_key()

    def workload_key(self) -> tuple:
        return (
            self.planned_rate_per_s,
            self.prefix_hit_rate,
            self.input_tokens,
            self.output_tokens,
        )


@dataclass(frozen=True)
class LoadCurve:
    periods: tuple[CurvePeriod, ...]  # contiguous, in time order, the first at start 0
    # the absolute time of start 0 (seconds since the Unix epoch, UTC) where the curve
    # gave one (`start:` timestamps, a Prometheus export); None for `start_h` curves
    origin_unix_s: float | None = None
    # inline, or the file it was read from (where it came from, not what it is: a resolved
    # scenario writes the same curve inline)
    source: str = field(default="inline", compare=False)

    @property
    def horizon_s(self) -> float:
        return self.periods[-1].end_s - self.periods[0].start_s

    @property
    def horizon_hours(self) -> float:
        return self.horizon_s / S_PER_HOUR

    @property
    def peak_rate_per_s(self) -> float:
        return max(p.arrival_rate_per_s for p in self.periods)

    @property
    def trough_rate_per_s(self) -> float:
        return min(p.arrival_rate_per_s for p in self.periods)

    @property
    def mean_rate_per_s(self) -> float:
        """Time-weighted: the requests of a cycle over its length."""
        return sum(p.arrival_rate_per_s * p.duration_s for p in self.periods) / self.horizon_s

    def scaled(self, factor: float) -> LoadCurve:
        """Every period's rate times `factor` (the loader's `scale`)."""
        periods = tuple(
            dataclasses.replace(p, arrival_rate_per_s=p.arrival_rate_per_s * factor)
            for p in self.periods
        )
        return dataclasses.replace(self, periods=periods)


def iso_utc(unix_s: float) -> str:
    """`2025-06-02T00:00:00Z`: a Unix time as a curve's `start` writes it."""
    return datetime.fromtimestamp(unix_s, UTC).isoformat().replace("+00:00", "Z")


def period_workload(workload, period: CurvePeriod):
    """The single-rate workload the planner sizes `period` with: its rate, its own
    distributions where it has them. A period with its own hit mix is planned for that
    mix alone (the measured mix of that hour, not the scenario's robust alternatives)."""
    changes = {"arrival_rate_per_s": period.planned_rate_per_s, "load_curve": None}
    if period.prefix_hit_rate is not None:
        changes["prefix_hit_rate"] = period.prefix_hit_rate
        changes["hit_rate_alternatives"] = {}
    for key in ("input_tokens", "output_tokens"):
        if getattr(period, key) is not None:
            changes[key] = getattr(period, key)
    return dataclasses.replace(workload, **changes)
