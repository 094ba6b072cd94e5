"""Whether a percentile found by root-finding is at most a limit, from the CDF's sign near
the limit: the SLA check's verdict without the root search (issue #15, speed).

A percentile is `brentq(gap, low, top, xtol, rtol)` with gap(t) = CDF(t) - q, CDF
non-decreasing. scipy's brentq returns a point r where gap(r) == 0, or one within
xtol + rtol |r| of a point where gap has the other sign (it stops when its bracket is
that narrow); every point it returns lies in [low, top]. So with reach = 2 (xtol + rtol
|limit|):
- gap(limit - reach) > 0: every sign change is below limit - reach, so r < limit;
- gap(limit + reach) < 0: every sign change is above limit + reach, so r > limit.
Either answers `r <= limit` as the root search would, after one or two CDF evaluations
instead of ten to twenty. Monotonicity holds for the exact CDF; the computed one may
wobble by a few ulps (exp, ndtr), so a sign counts only beyond SIGN_MARGIN; nearer, and
for limits the searches' brackets may not reach (above MAX_LIMIT_S), the caller runs the
root search itself. The printed percentiles (`sla_checks`) are always searched in full.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

# a CDF is a dot product of hundreds of terms in [0, 1] over their total weight: its
# rounding error is ~1e-15; a gap this far from 0 has the sign of the exact one
SIGN_MARGIN = 1e-12
# the TTFT search doubles its bracket up to 1e9 s, TPOT's up to 1e6 s: limits beyond a
# tenth of those (no SLA is) are left to the full search
MAX_LIMIT_S = 1e5
BRENTQ_DEFAULT_RTOL = 4 * np.finfo(float).eps  # scipy.optimize.brentq's rtol default


def sign_verdict(
    gap: Callable[[float], float], limit_s: float, xtol_s: float, rtol: float
) -> bool | None:
    """True when the root brentq(gap, ..., xtol_s, rtol) finds is <= limit_s, False when
    it is above, None when the gap's sign near the limit cannot tell (see the module)."""
    if not (math.isfinite(limit_s) and abs(limit_s) <= MAX_LIMIT_S):
        return None
    reach = 2.0 * (xtol_s + rtol * abs(limit_s))
    if gap(limit_s - reach) > SIGN_MARGIN:
        return True
    if gap(limit_s + reach) < -SIGN_MARGIN:
        return False
    return None
