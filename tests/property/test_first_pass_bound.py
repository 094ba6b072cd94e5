"""PDD main decode's first-pass ceiling (plan/first_pass.py, bounds.FirstPassBound) against
the model itself, on small random PDD scenarios (small_scenarios.py: several models, GPU
types, shapes, routing policies, hit-rate alternatives).

- exact: `decode_side` (evaluate's own decode side) raises main decode's saturation just
  above the bound's rate for n instances and runs just below it, for every MD candidate,
  count and policy of the scenario: the bound is neither too strong nor loose;
- safe on a table of whole plans: every listed plan the bound refuses at the scenario's
  rate, at 0.5x or 2x it, or just above its own ceiling misses the SLA under `meets_sla`,
  and the table holds plans the bound refuses that the TPOT bound alone let through (the
  walk used to evaluate them).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from small_scenarios import RESOLUTION, by_cost, catalog, random_scenario

from pdd_plan.errors import SaturatedError
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.decode_cache import routed
from pdd_plan.model.decode_side import decode_side
from pdd_plan.model.evaluate import meets_sla, prepare
from pdd_plan.model.workload.workload import request_classes
from pdd_plan.plan import bounds as bd

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

# the small scenarios that plan PDD (small_scenarios.ARCHS draws the architecture)
SEEDS = (1, 2, 3, 4, 7, 8, 13, 14, 15, 16, 18, 21, 22, 23)
EDGE_REL = 1e-6  # how far either side of the bound's rate the model is asked
PLANS = 40  # per scenario


@functools.cache
def scenario(seed: int):
    s, arch = random_scenario(seed, "min_cost")
    assert arch == "pdd", "SEEDS must list PDD scenarios"
    return s


@functools.cache
def plans(seed: int) -> list:
    """One plan per (policy, MD candidate, MD count), the cheapest: all the first pass
    depends on, at the cost order the walk meets them in."""
    seen = {}
    for _, d in by_cost(scenario(seed), "pdd"):
        g = d.role("main_decode")[0]
        seen.setdefault((d.policy, g.gpu, g.gpus_per_instance, g.count), d)
    return list(seen.values())


def _md_bound(s, d, dist):
    """bounds.role_bound of `d`'s main decode, as space.py builds it, under hit mix `dist`."""
    cat, w = catalog(), s.workload
    model = cat.model_for(s)
    classes = request_classes(w.input_tokens, w.output_tokens, dist, RESOLUTION)
    c, routes = routed(s, "pdd", d.policy, classes, model)
    g = d.role("main_decode")[0]
    inst = Instance(model, cat.gpus[g.gpu], g.gpus_per_instance, s.kv_dtype, s.weight_dtype)
    b = bd.role_bound("pdd", "main_decode", inst, c, routes, s)
    assert isinstance(b, bd.CeilingOnly)
    return b, g.count


def _md_saturated(setup, rate: float) -> bool:
    """Whether evaluate's decode side calls main decode saturated at `rate` (the WAN's
    times do not reach MD's first pass: zero)."""
    try:
        decode_side(setup, rate, np.zeros(len(setup.classes)), 0.0)
    except SaturatedError as exc:
        return exc.what.startswith("main_decode")
    return False


@pytest.mark.parametrize("seed", SEEDS)
def test_the_ceiling_is_where_the_models_first_pass_saturates(seed):
    s = scenario(seed)
    cat, model = catalog(), catalog().model_for(s)
    checked = 0
    for d in plans(seed)[:PLANS]:
        setup = prepare(s, d, model, cat.gpus, cat.lines, RESOLUTION)
        b, n = _md_bound(s, d, s.workload.prefix_hit_rate)
        most = b.ceiling.max_rate(n)  # the least rate the bound refuses
        if not np.isfinite(most) or most <= 0:
            continue
        assert _md_saturated(setup, most * (1 + EDGE_REL)), (d, most, "refused, but runs")
        assert not _md_saturated(setup, most * (1 - EDGE_REL)), (d, most, "loose")
        checked += 1
    assert checked >= 1


def _verdicts(seed: int) -> tuple[int, int]:
    """(plans refused by the first pass at some rate, of which the TPOT bound let through);
    asserts each refused plan misses the SLA there."""
    s = scenario(seed)
    cat, model = catalog(), catalog().model_for(s)
    dists = (s.workload.prefix_hit_rate, *s.workload.hit_rate_alternatives.values())
    offered = s.workload.arrival_rate_per_s
    refused = new = 0
    for d in plans(seed)[:PLANS]:
        for dist in dists:
            b, n = _md_bound(s, d, dist)
            edge = b.ceiling.max_rate(n) * (1 + EDGE_REL)  # just refused
            for rate in (0.5 * offered, offered, 2.0 * offered, edge):
                if b.ceiling.max_rate(n) >= rate:
                    continue
                setup = prepare(s, d, model, cat.gpus, cat.lines, RESOLUTION, dist)
                assert not meets_sla(setup, rate), (d, rate, "refused, but the SLA holds")
                refused += 1
                new += b.sizing().max_rate(n) >= rate
    return refused, new


def test_a_plan_the_bound_refuses_misses_the_sla():
    refused = new = 0
    for seed in SEEDS:
        r, k = _verdicts(seed)
        refused, new = refused + r, new + k
    assert refused > 0 and new > 0  # the table exercises the bound, beyond the TPOT bound
