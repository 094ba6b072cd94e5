"""`tpot._Holds.factor` (sorted holds with prefix sums: each window's integral split where
the holds pass it) equals the formula as first written, a windows x holds matrix:
np.where(s >= T, T T s / 2 - T^3 / 6, T s s / 2 - s^3 / 6), weighted and summed."""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.model.decode.tpot import _Holds


def _as_written(holds_s: np.ndarray, weights: np.ndarray, window_s: np.ndarray) -> np.ndarray:
    s, w = holds_s[None, :], weights[None, :]
    t = np.maximum(window_s, 1e-12)[:, None]
    inner = np.where(s >= t, t * t * s / 2 - t**3 / 6, t * s * s / 2 - s**3 / 6)
    mean_hold = float((w * s).sum() / w.sum())
    return (2.0 / t[:, 0] ** 2) * (w * inner).sum(axis=1) / float(w.sum()) / mean_hold


@pytest.mark.parametrize("seed", range(4))
def test_factor_equals_the_formula_as_written(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        holds_s = rng.uniform(0.0, 10.0 ** rng.uniform(-3, 3), int(rng.integers(1, 400)))
        holds_s[rng.random(len(holds_s)) < 0.1] = 0.0  # requests with nothing left to hold
        weights = rng.uniform(0.0, 1.0, len(holds_s))
        if not (holds_s * weights).sum() > 0:
            continue
        holds = _Holds(holds_s, weights)
        windows = np.concatenate([rng.uniform(0.0, 2 * holds_s.max() + 1e-6, 300), [0.0, 1e-13]])
        got, want = holds.factor(windows), _as_written(holds_s, weights, windows)
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
