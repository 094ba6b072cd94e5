"""Variants of a scenario the sizing report and sweeps plan for: the hit-rate mix moved to
another mean, every GPU or line price scaled."""

from __future__ import annotations

import dataclasses

import numpy as np

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.scenario import Scenario
from pdd_plan.model.workload.workload import Bins, Distribution, Empirical

HIT_MEAN_KEY = "workload.prefix_hit_rate.mean"  # the sweep key that moves the mean by this rule
HIT_RATE_MEANS = (0.7, 0.95)  # the report's other hit-rate cases
GPU_PRICE_FACTORS = (0.8, 1.2)
LINE_PRICE_FACTORS = (2.0,)
_HIT_RATE_POINTS = 256

HIT_RATE_RULE = (
    "The hit-rate distribution is moved to mean m by a monotone map of every request's hit "
    "rate h (mu is the scenario's mean): to raise it, each request's miss rate 1 - h is "
    "multiplied by (1 - m) / (1 - mu); to lower it, each hit rate is multiplied by m / mu. "
    "Rates stay in [0, 1], their order is kept, and any alternative mixes get the same map."
)


def _hit_points(d: Distribution) -> tuple[np.ndarray, np.ndarray]:
    values, weights = d.discretise(_HIT_RATE_POINTS)
    return np.asarray(values, float), np.asarray(weights, float) / np.sum(weights)


def hit_rate_mapper(d: Distribution, target_mean: float):
    """The map of HIT_RATE_RULE that takes `d`'s mean to `target_mean`."""
    values, weights = _hit_points(d)
    mu = float(np.dot(values, weights))
    if target_mean >= mu:
        k = (1.0 - target_mean) / (1.0 - mu) if mu < 1.0 else 1.0
        return lambda h: 1.0 - (1.0 - h) * k
    k = target_mean / mu if mu > 0.0 else 1.0
    return lambda h: h * k


def _mapped(d: Distribution, mapper) -> Distribution:
    if isinstance(d, Bins) and d.is_joint:  # keep each bin's lengths with its hit rates
        # the map is affine, so a bin uniform on [low, high) stays uniform on its image
        lows, highs = (
            tuple(float(v) for v in np.clip(mapper(np.array(x)), 0, 1)) for x in (d.lows, d.highs)
        )
        return dataclasses.replace(d, lows=lows, highs=highs)
    values, weights = _hit_points(d)
    mapped = np.clip(mapper(values), 0.0, 1.0)
    return Empirical(tuple(float(v) for v in mapped), tuple(float(w) for w in weights))


def with_hit_rate_mean(s: Scenario, target_mean: float) -> Scenario:
    """`s` with its hit-rate distribution (and alternatives) moved as HIT_RATE_RULE says."""
    w = s.workload
    mapper = hit_rate_mapper(w.prefix_hit_rate, target_mean)
    workload = dataclasses.replace(
        w,
        prefix_hit_rate=_mapped(w.prefix_hit_rate, mapper),
        hit_rate_alternatives={k: _mapped(v, mapper) for k, v in w.hit_rate_alternatives.items()},
    )
    return dataclasses.replace(s, workload=workload)


def with_gpu_prices(s: Scenario, factor: float) -> Scenario:
    """Every GPU offer of every datacenter at `factor` times its price."""
    dcs = tuple(
        dataclasses.replace(
            dc,
            gpus=tuple(
                dataclasses.replace(o, price_usd_per_gpu_hour=factor * o.price_usd_per_gpu_hour)
                for o in dc.gpus
            ),
        )
        for dc in s.datacenters
    )
    return dataclasses.replace(s, datacenters=dcs)


def line_prices_usd_per_month(s: Scenario, catalog: Catalog) -> dict[str, float]:
    """The monthly price of every line tier the scenario may lease (overrides applied)."""
    return {
        t: s.wan.tier_price_usd_per_month.get(t, catalog.lines[t].price_usd_per_month)
        for t in s.wan.tiers
    }


def with_line_prices(s: Scenario, factor: float, catalog: Catalog) -> Scenario:
    prices = {t: factor * p for t, p in line_prices_usd_per_month(s, catalog).items()}
    return dataclasses.replace(s, wan=dataclasses.replace(s.wan, tier_price_usd_per_month=prices))


def sensitivity_cases(s: Scenario, catalog: Catalog) -> list[tuple[str, str, Scenario]]:
    """(case, what changed, scenario) for the report's other hit rates and prices."""
    mean = s.workload.prefix_hit_rate.mean()
    cases = [
        (
            _hit_case(m),
            f"mean prefix-hit rate {m:g} (scenario {mean:.3g})",
            with_hit_rate_mean(s, m),
        )
        for m in HIT_RATE_MEANS
    ]
    cases += [
        (f"GPU x{f:g}", f"every GPU price x{f:g}", with_gpu_prices(s, f)) for f in GPU_PRICE_FACTORS
    ]
    if any(arch in ("pdd", "cdc_pd") for arch in s.architectures):
        cases += [
            (f"line x{f:g}", f"every line price x{f:g}", with_line_prices(s, f, catalog))
            for f in LINE_PRICE_FACTORS
        ]
    return cases


def _hit_case(mean: float) -> str:
    return f"hit rate {mean:g}"


def case_edits() -> dict[str, dict]:
    """The cases of `sensitivity_cases` that one scenario edit (`scenario_edit.edited`, as a
    sweep point names it) also makes, by case name: the hit-rate cases. The price cases
    scale every price at once, which no single edit does."""
    return {_hit_case(m): {HIT_MEAN_KEY: m} for m in HIT_RATE_MEANS}
