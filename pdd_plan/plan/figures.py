"""Figures a relaxation names, rounded towards the safe side.

A planner sets the scenario key to the figure an infeasible answer shows, so a figure
shown as "at least X" or "above X" is rounded up and one shown as "below X" rounded down:
rounded to the nearest, 10.53 ms read "at least 10.5" and setting 10.5 was refused again.
"""

from __future__ import annotations

import math

SIG_DIGITS = 3  # the `.3g` the messages print
_GUARD = 1e-12  # a figure a float's last bit above a step is that step, not the next


def _step(x: float) -> float:
    return 10.0 ** (math.floor(math.log10(abs(x))) - (SIG_DIGITS - 1))


def up_3g(x: float) -> str:
    """x to 3 significant digits, rounded up."""
    if not (math.isfinite(x) and x > 0):
        return f"{x:.3g}"
    q = _step(x)
    return f"{math.ceil(x / q * (1 - _GUARD)) * q:.3g}"


def down_3g(x: float) -> str:
    """x to 3 significant digits, rounded down."""
    if not (math.isfinite(x) and x > 0):
        return f"{x:.3g}"
    q = _step(x)
    return f"{math.floor(x / q * (1 + _GUARD)) * q:.3g}"


def up_fixed(x: float, decimals: int) -> str:
    """x with `decimals` decimals and thousands separators, rounded up."""
    scale = 10**decimals
    return f"{math.ceil(x * scale * (1 - _GUARD)) / scale:,.{decimals}f}"
