"""Monotonicity of the WAN model for any link, mix of payloads and load that it can carry.

- more line capacity never lengthens a transfer or the wait for a connection;
- a larger connection pool never lengthens the wait (and leaves transfers alone);
- a bigger payload never transfers faster;
- line and pool utilisation rise with the arrival rate.
Cases the link cannot carry (SaturatedError) are discarded, except where saturating is itself
an allowed outcome (a bigger payload may saturate: "never faster" holds).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pdd_plan.errors import SaturatedError
from pdd_plan.model.network.network import WanLink, send_time_s, wan_transfer

REL = 1e-9  # rounding slack


@st.composite
def links(draw) -> WanLink:
    return WanLink(
        capacity_bits_per_s=draw(st.floats(1e9, 4e11)),
        rtt_s=draw(st.floats(0.0, 0.2)),
        per_connection_bits_per_s=draw(st.floats(1e7, 2e10)),
        connection_pool_size=draw(st.integers(1, 1000)),
        mtu_bytes=draw(st.sampled_from([1500, 4000, 9000])),
        initial_window_segments=draw(st.integers(1, 100)),
        slow_start_after_idle=draw(st.booleans()),
    )


@st.composite
def mixes(draw) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 12))
    payload = st.one_of(st.just(0.0), st.floats(1.0, 1e9))  # bytes: none, or at least one
    x = np.array(draw(st.lists(payload, min_size=n, max_size=n)))
    w = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
    assume(x.max() > 0)
    return x, w


@st.composite
def cases(draw):
    """A link, a mix and an arrival rate loading the line to `u` of its goodput."""
    lk, (x, w) = draw(links()), draw(mixes())
    u = draw(st.floats(0.01, 0.98))
    mean_bits = 8 * float(w @ x) / w.sum()
    rate = u * lk.goodput_bits_per_s / mean_bits
    cv2 = draw(st.one_of(st.just(0.0), st.floats(0.01, 4.0)))  # squared CV of arrivals
    return lk, x, w, rate, cv2


def carried(lk, x, w, rate, cv2=1.0):
    try:
        return wan_transfer(lk, x, w, rate, cv2)
    except SaturatedError:
        return None


def _replace(lk: WanLink, **kw) -> WanLink:
    fields = {f: getattr(lk, f) for f in lk.__dataclass_fields__}
    return WanLink(**{**fields, **kw})


def _not_longer(new, old):
    return np.all(new <= old * (1 + REL) + 1e-12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(cases(), st.floats(1.0, 10.0))
def test_more_line_capacity_never_lengthens_transfer_or_wait(case, factor):
    lk, x, w, rate, cv2 = case
    base = carried(lk, x, w, rate, cv2)
    assume(base is not None)
    bigger = wan_transfer(
        _replace(lk, capacity_bits_per_s=lk.capacity_bits_per_s * factor), x, w, rate, cv2
    )
    assert _not_longer(bigger.transfer_s, base.transfer_s)
    assert _not_longer(bigger.connection_wait.mean_s(), base.connection_wait.mean_s())
    for t in (0.0, 0.1, 1.0, 10.0, 100.0):
        assert bigger.connection_wait.tail(t) <= base.connection_wait.tail(t) * (1 + REL) + 1e-15
    assert bigger.line_utilization_frac <= base.line_utilization_frac * (1 + REL)
    assert bigger.pool_utilization_frac <= base.pool_utilization_frac * (1 + REL)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(cases(), st.integers(1, 500))
def test_larger_pool_never_lengthens_the_wait(case, extra):
    lk, x, w, rate, cv2 = case
    base = carried(lk, x, w, rate, cv2)
    assume(base is not None)
    bigger_pool = _replace(lk, connection_pool_size=lk.connection_pool_size + extra)
    more = wan_transfer(bigger_pool, x, w, rate, cv2)
    assert _not_longer(more.connection_wait.mean_s(), base.connection_wait.mean_s())
    for t in (0.0, 0.1, 1.0, 10.0):
        assert more.connection_wait.tail(t) <= base.connection_wait.tail(t) * (1 + REL) + 1e-15
    np.testing.assert_array_equal(more.transfer_s, base.transfer_s)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(cases(), st.data(), st.floats(1.0, 5.0))
def test_bigger_payload_never_transfers_faster(case, data, factor):
    lk, x, w, rate, cv2 = case
    base = carried(lk, x, w, rate, cv2)
    assume(base is not None)
    k = data.draw(st.integers(0, len(x) - 1))
    grown = x.copy()
    grown[k] = grown[k] * factor + 1.0
    after = carried(lk, grown, w, rate, cv2)
    if after is None:
        return  # the bigger payload saturates the line or the pool: no faster either
    assert after.transfer_s[k] >= base.transfer_s[k] * (1 - REL)
    assert _not_longer(base.transfer_s, after.transfer_s)  # more load slows every class


@settings(max_examples=300, deadline=None)
@given(links(), st.floats(1.0, 1e10), st.floats(1.0, 1e10), st.floats(1e6, 1e10))
def test_one_connection_time_grows_with_payload(lk, a, b, rate):
    lo, hi = sorted((a, b))
    t_lo, t_hi = send_time_s(np.array([lo, hi]), rate, lk)
    assert t_hi >= t_lo * (1 - REL)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(cases(), st.floats(1.0, 3.0))
def test_utilisations_rise_with_the_arrival_rate(case, factor):
    lk, x, w, rate, cv2 = case
    more = carried(lk, x, w, rate * factor, cv2)
    assume(more is not None)
    base = wan_transfer(lk, x, w, rate, cv2)  # less load than a carried one: carried too
    assert more.line_utilization_frac >= base.line_utilization_frac * (1 - REL)
    assert more.pool_utilization_frac >= base.pool_utilization_frac * (1 - REL)
    assert more.mean_load_bits_per_s >= base.mean_load_bits_per_s * (1 - REL)
