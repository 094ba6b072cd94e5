"""A continuous distribution's mean is remembered per distribution (the routing and cache
models ask for it for every plan): the remembered value is the 256-stratum mean computed
afresh, and a distribution that differs in any field gets its own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pdd_plan.model.workload.workload import BetaRange, TruncatedLognormal


def _fresh_mean(dist) -> float:
    values, weights = dist.discretise(256)
    return float(np.dot(values, weights))


DISTS = [
    TruncatedLognormal(low=100.0, high=120_000.0, median=8_000.0, sigma=1.2),
    TruncatedLognormal(low=1.0, high=5_000.0, median=300.0, sigma=0.8),
    BetaRange(low=0.02, high=0.99, alpha=2.0, beta=0.5),
]


@pytest.mark.parametrize("dist", DISTS)
def test_the_remembered_mean_is_the_fresh_one_bit_for_bit(dist):
    assert dist.mean() == _fresh_mean(dist)
    assert dist.mean() == _fresh_mean(dist)  # the second ask, from the memo


@pytest.mark.parametrize("dist", DISTS)
def test_each_field_is_part_of_the_key(dist):
    base = dist.mean()
    for field in dataclasses.fields(dist):
        value = getattr(dist, field.name)
        if isinstance(value, str):
            continue
        changed = dataclasses.replace(dist, **{field.name: value * 1.05})
        assert changed.mean() == _fresh_mean(changed)
        assert changed.mean() != base, field.name


def test_a_lognormal_mean_matches_its_closed_form_when_untruncated():
    """Independent check of the stratified mean: a lognormal truncated far out in both tails
    has mean median x exp(sigma^2 / 2)."""
    d = TruncatedLognormal(low=1e-6, high=1e12, median=1_000.0, sigma=0.5)
    assert d.mean() == pytest.approx(1_000.0 * np.exp(0.125), rel=2e-3)
