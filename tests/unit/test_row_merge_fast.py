"""The TPOT rows' fast merge (model/workload/row_merge.py, issue #15 speed) gives the reference's
arrays bit for bit: its numpy rounding equals Python's `.9g` formatting value by value,
its merge equals the formatting-and-np.unique merge table by table, and a hash collision
or a row the fast path cannot vouch for (NaN, -0.0) falls back to the reference."""

from __future__ import annotations

import numpy as np
import pytest

from pdd_plan.model.workload import row_merge as rm


def _formatted(values: np.ndarray) -> np.ndarray:
    """The rule itself: each value through Python's formatting."""
    return np.array([float(f"{v:.9g}") for v in values.ravel().tolist()]).reshape(values.shape)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float).view(np.uint64)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(_bits(a), _bits(b))


@pytest.mark.parametrize("seed", range(3))
def test_rounding_equals_python_formatting(seed):
    rng = np.random.default_rng(seed)
    mags = 10.0 ** rng.uniform(-300, 300, 20_000)
    signs = rng.choice([-1.0, 1.0], 20_000)
    x = mags * signs
    # decimal ties and near-ties at the 10th digit, whole numbers, powers of ten and
    # their neighbours: where an inexact scaling would round the wrong way
    ties = (rng.integers(10**9, 10**10, 5_000) // 10 * 10 + 5) * 10.0 ** rng.integers(
        -20, 12, 5_000
    )
    tens = 10.0 ** np.arange(-30, 31)
    odd = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2.2e-308, 1.7e308, 999999999.5, 0.5]
    x = np.concatenate([x, ties, -ties, tens, np.nextafter(tens, 0), np.nextafter(tens, 2 * tens),
                        rng.integers(0, 10**12, 2_000).astype(float), odd])  # fmt: skip
    assert _same(rm.rounded_9g(x), _formatted(x))
    assert _same(
        rm.rounded_9g(x.reshape(-1, 7)[: len(x) // 7]),
        _formatted(x[: len(x) // 7 * 7].reshape(-1, 7)),
    )


def _table(rng, rows: int, cols: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """A TPOT-like table: a few distinct rows repeated, some only below the 9th digit
    apart, zeros, negative values, weights of which some are negligible."""
    base = rng.random((int(rng.integers(1, 40)), cols)) * 10.0 ** rng.integers(-4, 4, cols)
    base[rng.random(base.shape) < 0.05] *= -1
    base[rng.random(base.shape) < 0.15] = 0.0  # +0.0 (a -0.0 takes the reference)
    values = base[rng.integers(0, len(base), rows)]
    values = values * (1 + (rng.random(values.shape) < 0.1) * 1e-13)
    weights = rng.uniform(0.01, 1.0, rows) * (rng.random(rows) > 0.05)
    return weights, values


@pytest.mark.parametrize("seed", range(4))
def test_fast_merge_equals_the_reference(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(40):
        weights, values = _table(rng, int(rng.integers(1, 3_000)))
        assert rm._merged_fast(*_kept(weights, values)) is not None  # the fast path ran
        got_w, got_rows = rm.merge_equal_rows(weights, values)
        want_w, want_rows = rm.merge_equal_rows_reference(weights, values)
        assert _same(got_w, want_w) and _same(got_rows, want_rows)
        assert got_rows.flags.c_contiguous == want_rows.flags.c_contiguous


def _kept(weights, values):
    keep = weights > 1e-12 * weights.sum()
    return weights[keep], np.ascontiguousarray(values[keep])


def test_merged_rows_are_ordered_and_rounded_as_the_rule_says():
    """The reference itself against the rule written out: rows sorted lexicographically
    by their values rounded to 9 digits, weights summed."""
    values = np.array([[2.0, 1.0], [1.0, 3.0], [2.0000000000001, 1.0], [1.0, 2.0], [1.0, 3.0]])
    weights = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    got_w, got_rows = rm.merge_equal_rows(weights, values)
    assert got_rows.tolist() == [[1.0, 2.0], [1.0, 3.0], [2.0, 1.0]]
    assert got_w.tolist() == [8.0, 18.0, 5.0]


def test_a_hash_collision_falls_back_to_the_reference(monkeypatch):
    """With a multiplier of 0 the hash keeps only the last column: rows differing before
    it collide, the bitwise check sees it, and the reference answers."""
    rng = np.random.default_rng(7)
    weights, values = _table(rng, 500)
    values[:, -1] = 1.0  # every row hashes alike
    monkeypatch.setattr(rm, "_HASH_MULT", np.uint64(0))
    assert rm._distinct_rows(_kept(weights, values)[1].view(np.uint64)) is None
    got_w, got_rows = rm.merge_equal_rows(weights, values)
    want_w, want_rows = rm.merge_equal_rows_reference(weights, values)
    assert _same(got_w, want_w) and _same(got_rows, want_rows)


@pytest.mark.parametrize("odd", [np.nan, -0.0])
def test_nan_or_negative_zero_takes_the_reference(odd):
    rng = np.random.default_rng(3)
    weights, values = _table(rng, 300)
    values[::7, 2] = odd
    values[1::7, 2] = 0.0
    assert rm._merged_fast(*_kept(weights, values)) is None
    got_w, got_rows = rm.merge_equal_rows(weights, values)
    want_w, want_rows = rm.merge_equal_rows_reference(weights, values)
    assert _same(got_w, want_w) and _same(got_rows, want_rows)


def test_no_rows_of_weight():
    got_w, got_rows = rm.merge_equal_rows(np.zeros(3), np.ones((3, 6)))
    assert got_w.shape == (0,) and got_rows.shape == (0, 6)
