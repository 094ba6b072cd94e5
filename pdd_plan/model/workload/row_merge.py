"""Rows with the same values (to 9 significant digits) merged into one, weights summed:
the TPOT rows' merge (model/tpot_rows.py), fast and bit for bit the reference's result.

The reference (`merge_equal_rows_reference`) rounds every value by formatting it
(Python's `.9g`, correctly rounded) and sorts the rows with `np.unique(axis=0)`; on a
TPOT table (~10,000 rows of 6 columns, ~2,000 distinct) that cost ~7 ms a call, ten
calls a sweep point. The fast path (`merge_equal_rows`) gives the same arrays: exact
duplicates found by a hash of the rows' bits (each group then checked bitwise, so a
collision only sends the call to the reference), each distinct row rounded in numpy
(`rounded_9g`, exact: see its doc), and the rounded rows ordered by `np.lexsort`,
which orders distinct rows as `np.unique(axis=0)` does. Rows holding NaN or -0.0 (where
"equal" is not "bitwise equal") take the reference.
"""

from __future__ import annotations

import numpy as np

# 10**k for k <= 22 is exact in a double (5**22 < 2**53): the scale is no rounding step
_POW10 = np.array([float(10**k) for k in range(23)])
# y = |x| 10**k is one correctly rounded product (or quotient): within half an ulp of the
# exact value, at most 2**-24 < 6e-8 below 1e9; a fraction farther than this from .5
# rounds the same way as the exact value would
_HALF_MARGIN = 1e-6
_SIGN_BIT = np.uint64(1 << 63)
_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio, odd: a mixing multiplier


def rounded_9g(values: np.ndarray) -> np.ndarray:
    """Each value rounded to 9 significant digits exactly as `float(f"{v:.9g}")` does.

    For a normal |x| in [1e-280, 1e280]: k = 8 - floor(log10 |x|), y = |x| 10**k
    (10**|k| exact), r = y rounded to an integer; the result r / 10**k (or r 10**-k) is
    one correctly rounded operation on exact operands: the double nearest the decimal
    r 10**-k, which is what float() of the formatted text is. That holds when y's
    integer part has 9 digits (y in [1e8 + 1, 1e9 - 2]: log10's estimate was right and
    no carry to a 10th digit) and y's fraction is not within _HALF_MARGIN of .5 (the
    rounding direction is the exact value's); every other value (zeros kept as they are,
    ties, near powers of ten, NaN, inf, tiny or huge) is formatted by Python."""
    x = np.asarray(values, dtype=float)
    mag = np.abs(x)
    ok = (mag >= 1e-280) & (mag <= 1e280)  # False for 0, NaN and inf
    safe = np.where(ok, mag, 1.0)
    k = 8.0 - np.floor(np.log10(safe))
    ok &= np.abs(k) <= 22
    scale = _POW10[np.where(ok, np.abs(k), 0.0).astype(np.intp)]
    up = k >= 0
    y = np.where(up, safe * scale, safe / scale)
    ok &= (y >= 1e8 + 1) & (y <= 1e9 - 2)
    whole = np.floor(y)
    frac = y - whole
    ok &= np.abs(frac - 0.5) > _HALF_MARGIN
    r = whole + (frac > 0.5)
    out = np.copysign(np.where(up, r / scale, r * scale), x)
    zero = x == 0
    out[zero] = x[zero]  # 0.0 and -0.0 format as themselves
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    for i in np.flatnonzero(~(ok | zero).reshape(-1)).tolist():
        flat_out[i] = float(f"{flat_x[i]:.9g}")
    return out


def merge_equal_rows(weights: np.ndarray, values: np.ndarray):
    """(weights summed per merged row, the merged rows sorted): rows whose values agree to
    9 significant digits are one; rows of negligible weight are dropped first."""
    keep = weights > 1e-12 * weights.sum()  # e.g. the overflowed share when nothing overflows
    weights, values = weights[keep], np.ascontiguousarray(values[keep], dtype=float)
    fast = _merged_fast(weights, values) if len(weights) else None
    return fast if fast is not None else _merged_reference(weights, values)


def merge_equal_rows_reference(weights: np.ndarray, values: np.ndarray):
    """`merge_equal_rows` by the plain rule: every value formatted, `np.unique(axis=0)`."""
    keep = weights > 1e-12 * weights.sum()
    return _merged_reference(weights[keep], values[keep])


def _merged_reference(weights: np.ndarray, values: np.ndarray):
    keys = np.array(values, dtype=float)
    for column in keys.T:  # a view: rounded in place
        column[:] = _rounded_9g_formatted(column)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=weights, minlength=len(unique))
    return merged, unique


def _rounded_9g_formatted(values: np.ndarray) -> np.ndarray:
    """Each value rounded by Python's formatting, once per bitwise-distinct value."""
    bits, at = np.unique(np.ascontiguousarray(values).view(np.uint64), return_inverse=True)
    rounded = np.array([float(f"{v:.9g}") for v in bits.view(float).tolist()])
    return rounded[at.ravel()]


def _merged_fast(weights: np.ndarray, values: np.ndarray):
    """The reference's result, or None where the fast path cannot vouch for it."""
    distinct = _distinct_rows(values.view(np.uint64))
    if distinct is None:
        return None
    first_of, group_of = distinct  # a row of each group; each row's group
    keys = rounded_9g(values[first_of])
    if np.isnan(keys).any() or (keys.view(np.uint64) == _SIGN_BIT).any():
        return None  # NaN or -0.0: equality is not bitwise there
    order = np.lexsort(keys.T[::-1])  # the first column the primary key, as np.unique's
    ordered = keys[order]
    starts = np.ones(len(ordered), dtype=bool)
    starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.cumsum(starts) - 1
    unique = ordered[starts]
    inverse = rank[group_of]
    return np.bincount(inverse, weights=weights, minlength=len(unique)), unique


def _distinct_rows(bits: np.ndarray):
    """(one row index per group of bitwise-equal rows, each row's group), grouped by a
    hash of the row's bits; None when two different rows share a hash."""
    h = bits[:, 0].copy()
    for column in bits.T[1:]:
        h *= _HASH_MULT
        h ^= h >> np.uint64(29)
        h += column
    _, group_of = np.unique(h, return_inverse=True)
    group_of = group_of.ravel()
    first_of = np.empty(int(group_of.max()) + 1, dtype=np.intp)
    first_of[group_of] = np.arange(len(group_of))
    if not np.array_equal(bits, bits[first_of][group_of]):
        return None
    return first_of, group_of
