"""A rate ceiling found by bisection, run only as far as each question needs, and the least
count meeting a monotone condition (bounds.py's prefill bounds ask both)."""

from __future__ import annotations

MAX_INSTANCES = 1_000_000


def smallest(ok, start: int) -> int | None:
    """The least n >= start with ok(n), for ok monotone in n (None: none below the cap)."""
    if ok(start):
        return start
    low, high = start, max(2 * start, start + 1)
    while not ok(high):
        low, high = high, 2 * high
        if high > MAX_INSTANCES:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high


class SupRate:
    """An upper bound (within 1e-9 of it) of the rates in (0, high) where ok holds, for ok
    monotone (true at low rates); 0 when it fails at the least rate tried: a bisection,
    run only as far as each question needs (the walk asks whether a ceiling is above a
    rate far more often than what it is, issue #15). The bisection's
    steps are fixed by ok's answers, so stopping early and going on later gives the same
    value; while ok(low) and not ok(high), the value lies in (low, high], so a rate at or
    above `high`, or at or below `low`, is settled without another step."""

    def __init__(self, ok, high: float):
        self.ok, self.low, self.high = ok, None, high

    def _converged(self) -> bool:
        return self.low is not None and not self.high - self.low > 1e-9 * self.high

    def _step(self) -> None:
        if self.low is None:  # the first question: ok at the least rate tried
            least = self.high * 1e-9
            if self.ok(least):
                self.low = least
            else:
                self.low = self.high = 0.0
            return
        mid = (self.low + self.high) / 2
        if self.ok(mid):
            self.low = mid
        else:
            self.high = mid

    def value(self) -> float:
        while not self._converged():
            self._step()
        return self.high

    def at_most(self, rate: float, strict: bool = False) -> bool:
        """value() <= rate (with `strict`: value() < rate), in as few steps as settle it."""
        while True:
            if self.high < rate or (not strict and self.high == rate):
                return True  # the value is at most `high`
            if self._converged():
                return False  # the value is `high`, above the rate
            if self.low is not None and rate <= self.low:
                return False  # the value is above `low`
            self._step()
