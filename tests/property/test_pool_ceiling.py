"""The connection pool's ceiling (plan/pool_ceiling.py) never refuses a plan the model runs:
on small random PDD and CDC-PD scenarios (small_scenarios.py), as drawn and with transfers
striped over 2 connections and streamed during prefill, the dearest plans' goodputs
(evaluate's bisection) are at or below their pool ceilings, and where the pool binds the
ceiling is that goodput (it takes the least hold, at full flow rate: it may be loose, never
too strong). On the default at 175 req/s it refuses every PDD plan (the walk used to
evaluate 372 of them, each missing at the pool).
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
from small_scenarios import RESOLUTION, by_cost, catalog, random_scenario

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.evaluate import goodput_rps, prepare
from pdd_plan.plan import solve as sv
from pdd_plan.plan.pool_ceiling import pool_max_rps

SEEDS = (1, 3, 9, 11)  # PDD, then CDC-PD (small_scenarios.ARCHS draws the arch)
ABOVE_REL = 1e-6
PLANS = 4  # per scenario and variant: one per (policy, line), the dearest


@functools.cache
def scenario(seed: int, striped: bool):
    s, arch = random_scenario(seed, "min_cost")
    assert arch in ("pdd", "cdc_pd"), "SEEDS must list scenarios that cross the WAN"
    if striped:
        wan = dataclasses.replace(s.wan, stripes_per_transfer=2, stream_during_prefill=True)
        s = dataclasses.replace(s, wan=wan)
    return s, arch


def _rich_plans(s, arch):
    """The dearest plan of each (policy, line): the most GPUs, so the WAN binds it."""
    seen = {}
    for _, d in reversed(by_cost(s, arch)):
        seen.setdefault((d.policy, d.line_capacity_bits_per_s), d)
    return list(seen.values())[:PLANS]


@functools.cache
def ratios(seed: int, striped: bool) -> tuple[float, ...]:
    """Pool ceiling / goodput of the scenario's dearest plans; asserts each is >= 1."""
    s, arch = scenario(seed, striped)
    cat = catalog()
    out = []
    for d in _rich_plans(s, arch):
        x = prepare(s, d, cat.model_for(s), cat.gpus, cat.lines, RESOLUTION)
        carried = goodput_rps(x, rel_tol=1e-4)  # the largest rate the plan meets the SLA at
        capacity = d.line_capacity_bits_per_s
        most = pool_max_rps(s, arch, x.classes, x.routes, capacity, x.link.rtt_s)
        assert carried <= most, (d, carried, most, "refused, but runs")
        if carried > 0:
            out.append(most / carried)
    return tuple(out)


@pytest.mark.slow
@pytest.mark.parametrize("striped", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_the_pool_ceiling_is_above_every_rate_a_plan_carries(seed, striped):
    assert ratios(seed, striped)


def test_the_pool_ceiling_binds_where_the_pool_does():
    """CDC-PD's seed 9 ships whole prompts: its pool binds, and the ceiling is its goodput
    to within the bisection's tolerance (the least hold is nearly the hold there)."""
    assert min(ratios(9, False)) < 1.01 and min(ratios(9, True)) < 1.01


def test_the_default_at_175_rps_is_refused_at_the_pool(catalog):
    s = load_scenario(resolve_scenario_path("default"), catalog)
    s = dataclasses.replace(s, workload=dataclasses.replace(s.workload, arrival_rate_per_s=175))
    walk = sv.sr.Search(s, catalog.model_for(s), catalog.gpus, catalog.lines, "pdd",
                        sv._policies(s, "pdd"), (2, 2, 2))  # fmt: skip
    out = walk.run()
    # every group's corner is above its pool ceiling: none needs an evaluation
    assert out.proven and out.deployment is None and out.evaluations == 0
    assert out.groups_cut > 0
