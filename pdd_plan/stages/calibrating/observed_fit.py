"""The joint least-squares fit behind `calibrate observed`: parameters, their uncertainty,
whether the points identify each one, and the held-out error (leave one point out).

The residuals are log(evaluated / observed) of every figure of every point, so a figure
counts by its relative error whatever its unit. At the optimum x* with Jacobian J (the
residuals' derivatives in the parameters), the parameters' covariance is that of a
linearised least-squares fit, s² (JᵀJ)⁻¹, computed through the singular values of J,
where s² is the residuals' variance: their sum of squares over m - n degrees of freedom
(m figures, n parameters), and never below FIGURE_NOISE_FRAC² (with as many figures as
parameters the fit is exact and says nothing of the noise; a published percentile is
itself known to a few per cent). A parameter held at a bound has no such uncertainty (the
data push it past the bound): it is reported at the bound, outside the covariance.

Identifiability: a parameter the figures do not move (its Jacobian column below
UNSEEN_JAC), or one with a relative standard error above REL_STD_MAX (a near-zero singular
direction of J: the figures move it only together with another one, in a ratio they
cannot tell apart), is not identified and is named.

Held-out error: each point in turn is left out, the others fitted (from x*), and the
left-out point's figures predicted; the ratios observed / predicted are the model's error
on data it was not fitted to (`solve --confidence` sizes from their quantiles).

Pure: numpy and scipy only, no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

FIGURE_NOISE_FRAC = 0.05  # the least noise a published percentile carries (relative)
REL_STD_MAX = 1.0  # a standard error above the value itself: not identified
UNSEEN_JAC = 1e-6  # a log residual moved by less per unit of the parameter: unseen
DIFF_STEP = 1e-3
GRID_POINTS = 6
GRID_MAX_PARAMETERS = 3

Residuals = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Fit:
    names: tuple[str, ...]
    x: np.ndarray
    std: np.ndarray  # standard error of each parameter (nan at a bound or unseen)
    residuals: np.ndarray  # log(evaluated / observed) at x
    at_bound: tuple[str, ...]
    unidentified: tuple[str, ...]
    noise_frac: float  # s, the residuals' standard deviation used for the covariance

    def rel_std(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(np.abs(self.x) > 0, self.std / np.abs(self.x), np.inf)


def fit(residuals: Residuals, names: Sequence[str], x0, low, high) -> Fit:
    """Least squares of `residuals` over the parameters `names` within [low, high],
    started from the best of `x0` and a coarse grid (`grid_start`)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    start = grid_start(residuals, np.asarray(x0, float), low, high)
    result = least_squares(residuals, start, bounds=(low, high), x_scale="jac", diff_step=DIFF_STEP)
    r = np.asarray(result.fun, float)
    jac = np.asarray(result.jac, float)
    bound = _at_bound(result.x, low, high, result.active_mask)
    unseen = (np.abs(jac).max(axis=0, initial=0.0) < UNSEEN_JAC) & ~bound
    std, noise, weak = _identify(jac, r, result.x, ~bound & ~unseen)
    bad = unseen | weak
    return Fit(tuple(names), result.x, std, r, _named(names, bound), _named(names, bad), noise)


def _identify(jac, r, x, free) -> tuple[np.ndarray, float, np.ndarray]:
    """(standard errors, s, the parameters not identified): while a free parameter's
    relative standard error exceeds REL_STD_MAX, the one that weighs most in the weakest
    direction of J (in relative units, J x) is not identified; it is set aside (held)
    and the others' errors computed again without it."""
    free = free.copy()
    weak = np.zeros_like(free)
    while True:
        std, noise = _std(jac, r, free)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(np.abs(x) > 0, std / np.abs(x), np.inf)
        if not free.any() or not (rel[free] > REL_STD_MAX).any():
            return std, noise, weak
        worst = _weakest_parameter(jac * np.abs(x), free)
        free[worst], weak[worst] = False, True


def _weakest_parameter(scaled_jac: np.ndarray, free: np.ndarray) -> int:
    """The free column that weighs most in the smallest singular direction."""
    index = np.flatnonzero(free)
    _, _, vt = np.linalg.svd(scaled_jac[:, free], full_matrices=True)
    return int(index[np.argmax(np.abs(vt[-1]))])


def _grid_axis(low: float, high: float) -> np.ndarray:
    """GRID_POINTS values spread evenly in log over [low, high] (from high / 1e3 where
    low is 0, with 0 itself): a queue's delay moves by orders of magnitude."""
    bottom = low if low > 0 else high * 1e-3
    axis = np.geomspace(bottom, high, GRID_POINTS)
    return np.concatenate([[0.0], axis[:-1]]) if low == 0 else axis


def grid_start(residuals: Residuals, x0, low, high) -> np.ndarray:
    """The start of the descent: `x0` or the point of a coarse grid (GRID_POINTS per
    parameter, up to GRID_MAX_PARAMETERS of them) with the least sum of squares. Near
    saturation the delays are steep and a saturated trial is a flat penalty: a descent
    from a far start stops on the plateau."""
    inside = lambda x: np.clip(x, low + 1e-9 * (high - low), high - 1e-9 * (high - low))  # noqa: E731
    best, best_cost = inside(x0), _cost(residuals, inside(x0))
    if len(x0) > GRID_MAX_PARAMETERS:
        return best
    axes = [_grid_axis(lo, hi) for lo, hi in zip(low, high, strict=True)]
    for x in itertools.product(*axes):
        cost = _cost(residuals, inside(np.array(x)))
        if cost < best_cost:
            best, best_cost = inside(np.array(x)), cost
    return best


def _cost(residuals: Residuals, x) -> float:
    r = residuals(x)
    return float(r @ r)


def _at_bound(x, low, high, active) -> np.ndarray:
    span = high - low
    near = (x - low <= 1e-6 * span) | (high - x <= 1e-6 * span)
    return near | (np.asarray(active) != 0)


def _named(names: Sequence[str], mask) -> tuple[str, ...]:
    return tuple(n for n, m in zip(names, mask, strict=True) if m)


def _std(jac: np.ndarray, r: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, float]:
    """Each free parameter's standard error, s sqrt(diag((JᵀJ)⁻¹)), by the SVD of J over
    the free columns (a zero singular value gives an infinite error); nan elsewhere."""
    m, n = jac.shape[0], int(free.sum())
    dof = m - n
    s2 = float(r @ r) / dof if dof > 0 else 0.0
    s2 = max(s2, FIGURE_NOISE_FRAC**2)
    std = np.full(jac.shape[1], np.nan)
    if n == 0:
        return std, float(np.sqrt(s2))
    _, sv, vt = np.linalg.svd(jac[:, free], full_matrices=False)
    with np.errstate(divide="ignore"):
        inv2 = np.where(sv > sv.max(initial=0.0) * 1e-12, 1.0 / sv**2, np.inf)
    if len(sv) < n:  # fewer figures than free parameters: no direction is pinned down
        return np.where(free, np.inf, np.nan), float(np.sqrt(s2))
    with np.errstate(invalid="ignore"):
        var = (vt**2 * inv2[:, None]).sum(axis=0) * s2
    var = np.where(np.isnan(var), np.inf, var)
    std[free] = np.sqrt(var)
    return std, float(np.sqrt(s2))


@dataclass(frozen=True)
class HeldOut:
    """Observed / predicted of each figure when its point was left out of the fit."""

    ratios: tuple[tuple[str, float], ...]  # (figure, ratio), e.g. ("ttft_p90", 1.12)
    folds: int  # points left out in turn and predicted

    def by_metric(self) -> dict[str, tuple[float, ...]]:
        out: dict[str, list[float]] = {}
        for figure, ratio in self.ratios:
            out.setdefault(figure.partition("_")[0], []).append(ratio)
        return {k: tuple(sorted(v)) for k, v in out.items()}


def held_out(
    point_residuals: Sequence[Residuals], figures: Sequence[Sequence[str]], x, low, high
) -> HeldOut:
    """Leave each point out in turn (module docstring). `point_residuals[i](x)`: point i's
    log(evaluated / observed) per figure, named by `figures[i]`. A fold whose remaining
    figures are fewer than the parameters predicts nothing (it could not be fitted)."""
    ratios: list[tuple[str, float]] = []
    folds = 0
    n = len(np.atleast_1d(x))
    for i, own in enumerate(point_residuals):
        rest = [r for j, r in enumerate(point_residuals) if j != i]
        if sum(len(figures[j]) for j in range(len(figures)) if j != i) < n or not rest:
            continue
        fold = least_squares(
            lambda v, rest=rest: np.concatenate([r(v) for r in rest]),
            np.clip(x, low, high), bounds=(low, high), x_scale="jac", diff_step=DIFF_STEP,
        )  # fmt: skip
        # residual = log(evaluated / observed): the ratio observed / predicted is exp(-r)
        ratios += [(f, float(np.exp(-r))) for f, r in zip(figures[i], own(fold.x), strict=True)]
        folds += 1
    return HeldOut(tuple(ratios), folds)
