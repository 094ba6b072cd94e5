"""`tpot_rows._merge_equal_rows` rounds each distinct row once (#15 Build 1, speed): the
merge must equal rounding every row on its own to 9 significant digits, the rule its
docstring states, written out here row by row."""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.model.tpot_rows import _merge_equal_rows


def _by_the_rule(weights: np.ndarray, values: np.ndarray):
    keep = weights > 0
    weights, values = weights[keep], values[keep]
    if not len(values):
        return np.zeros(0), values
    keys = np.array([[float(f"{v:.9g}") for v in row] for row in values])
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    return np.bincount(inverse.ravel(), weights=weights, minlength=len(unique)), unique


@pytest.mark.parametrize("seed", range(4))
def test_merge_equals_rounding_every_row(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        rows = int(rng.integers(0, 300))
        base = rng.random((int(rng.integers(1, 25)), 6)) * 10.0 ** rng.integers(-3, 3)
        base[rng.random(base.shape) < 0.1] = 0.0
        values = base[rng.integers(0, len(base), rows)]
        # some rows differ from their twin below the 9th digit: they merge too
        values = values + (rng.random(values.shape) < 0.05) * 1e-13 * values
        weights = rng.uniform(0.1, 1.0, rows) * (rng.random(rows) > 0.1)  # 0 or well above
        want_w, want_rows = _by_the_rule(weights, values)
        got_w, got_rows = _merge_equal_rows(weights, values)
        assert np.array_equal(got_rows, want_rows)
        assert np.array_equal(got_w, want_w)
        if rows and weights.sum() > 0:
            assert got_w.sum() == pytest.approx(weights.sum())
