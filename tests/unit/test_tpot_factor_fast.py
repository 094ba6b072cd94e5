"""`tpot._Holds.factor` with its halvings moved onto the windows and its products made in
place (issue #15 speed) gives the doubles of the formula as first written, bit for bit:
np.where(s >= T, T T s / 2 - T^3 / 6, T s s / 2 - s^3 / 6), weighted and summed."""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.model.tpot import _Holds


def _as_written(holds: _Holds, window_s: np.ndarray) -> np.ndarray:
    s, w = holds.s, holds.w
    windows, back = np.unique(np.round(np.asarray(window_s, float), 6), return_inverse=True)
    t = np.maximum(windows, 1e-12)[:, None]
    inner = np.where(s >= t, t * t * s / 2 - t**3 / 6, t * s * s / 2 - holds.s3_6)
    factor = (2.0 / t[:, 0] ** 2) * (w * inner).sum(axis=1) / holds.w_sum / holds.mean_hold
    return factor[back.reshape(np.shape(window_s))]


@pytest.mark.parametrize("seed", range(4))
def test_factor_equals_the_formula_as_written(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        holds_s = rng.uniform(0.0, 10.0 ** rng.uniform(-3, 3), int(rng.integers(1, 400)))
        holds_s[rng.random(len(holds_s)) < 0.1] = 0.0  # requests with nothing left to hold
        holds = _Holds(holds_s, rng.uniform(0.0, 1.0, len(holds_s)))
        windows = np.concatenate([rng.uniform(0.0, 2 * holds_s.max() + 1e-6, 300), [0.0, 1e-13]])
        got, want = holds.factor(windows), _as_written(holds, windows)
        assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
