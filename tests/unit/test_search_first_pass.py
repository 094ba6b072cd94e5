"""The walk with PDD main decode's first-pass ceiling, the connection pool's ceiling and
without a dead row's bigger lines queued (issue #15, 150-175 req/s on the default): the
same plans won, in the same order.

- first_pass: the remote output tokens per request are the outputs of every class that
  is not cut off (hand sums), so turning the cut-off on changes the figure; the bound's
  ceiling is where evaluate's decode side calls main decode saturated, cut-off included;
- the walk with both ceilings takes the same best plans in the same order, with the same
  values, as the walk without them, on far fewer evaluations; a variant that also raised
  the fewest instances (the walk's sizing) would not: that is what the test tells apart;
- a dead row's bigger lines left unqueued: every evaluation is the same, in the same order.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from pdd_plan.errors import SaturatedError
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model import routing as rt
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.decode_cache import routed
from pdd_plan.model.decode_side import decode_side
from pdd_plan.model.deployment import Deployment, InstanceGroup, LineLease
from pdd_plan.model.evaluate import prepare
from pdd_plan.model.workload.workload import request_classes
from pdd_plan.plan import bounds as bd
from pdd_plan.plan import goal as gl
from pdd_plan.plan import prune as pr
from pdd_plan.plan import search as sr
from pdd_plan.plan import solve as sv
from pdd_plan.plan.first_pass import first_pass

RESOLUTION = (2, 2, 2)  # 8 classes (x MD residency): the walk in well under a second
RATE_RPS = 100.0  # the default at 100 req/s: the first pass refuses most of the plans met


@pytest.fixture(scope="module")
def default(catalog):
    s = load_scenario(resolve_scenario_path("default"), catalog)
    w = dataclasses.replace(s.workload, arrival_rate_per_s=RATE_RPS)
    # the GPU roles' cap at 1 (it then removes nothing the SLA accepts): at 0.85 it sizes
    # prefill first (search.py `_capped`) and leaves the ceilings tested here little to cut
    p = dataclasses.replace(s.policy, utilization_cap_frac=1.0)
    return dataclasses.replace(s, workload=w, policy=p)


def _policy(s, cutoff: bool):
    base = sv._policies(s, "pdd")[0]
    return dataclasses.replace(base, short_output_cutoff=cutoff)


def _cutting(s):
    """The default whose cut-off takes relayed requests above 20 kB of uncached prompt per
    output token (its derived 750 kB takes none of the coarse classes)."""
    cut = dataclasses.replace(s.policy.short_output_cutoff, enabled=True,
                              min_uncached_bytes_per_output_token=20e3)  # fmt: skip
    return dataclasses.replace(s, policy=dataclasses.replace(s.policy, short_output_cutoff=cut))


def _md(catalog, s):
    return Instance(catalog.model_for(s), catalog.gpus["h20_96g"], 16, s.kv_dtype,
                    s.weight_dtype, engine_profile=s.engine.profile)  # fmt: skip


def _classes(catalog, s, policy):
    w = s.workload
    c = request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate, RESOLUTION)
    return routed(s, "pdd", policy, c, catalog.model_for(s))


def test_the_first_pass_counts_every_output_but_the_cut_offs(catalog, default):
    s = _cutting(default)
    inst = _md(catalog, s)
    sums = {}
    for cutoff in (False, True):
        c, routes = _classes(catalog, s, _policy(s, cutoff))
        sent = [k for k in range(len(c)) if routes.path[k] != rt.LOCAL]
        hand = sum(float(c.weight[k]) * float(c.output_tokens[k]) for k in sent)
        got = first_pass(inst, c, routes, s)
        assert got.tokens_per_request == pytest.approx(hand, rel=1e-12)
        assert got.slots >= 1 and got.step_s > 0
        sums[cutoff] = (hand, int(np.sum(routes.path == rt.LOCAL)))
    assert sums[False][1] == 0 and sums[True][1] > 0  # the cut-off takes classes
    assert sums[True][0] < sums[False][0]  # a key part changed: another figure


def test_the_ceiling_is_evaluates_saturation_edge_with_the_cut_off(catalog, default):
    s = _cutting(default)
    policy = _policy(s, True)
    c, routes = _classes(catalog, s, policy)
    b = bd.role_bound("pdd", "main_decode", _md(catalog, s), c, routes, s)
    groups = (InstanceGroup("prefill", "dc_a", "h100_sxm", 24, 6),
              InstanceGroup("relay_decode", "dc_a", "h100_sxm", 24, 1),
              InstanceGroup("main_decode", "dc_b", "h20_96g", 16, 3))  # fmt: skip
    d = Deployment("pdd", groups, (LineLease("wave_100g", 100e9, 4),), policy)
    setup = prepare(s, d, catalog.model_for(s), catalog.gpus, catalog.lines, RESOLUTION)
    most = b.ceiling.max_rate(3)

    def md_saturated(rate: float) -> bool:
        try:
            decode_side(setup, rate, np.zeros(len(setup.classes)), 0.0)
        except SaturatedError as exc:
            return exc.what.startswith("main_decode")
        return False

    assert md_saturated(most * (1 + 1e-6)) and not md_saturated(most * (1 - 1e-6))
    assert b.sizing().max_rate(3) > most  # the TPOT bound alone let these rates through


def _walk(catalog, s, monkeypatch, *, ceilings=True, raise_sizing=False, prune=True):
    """(every best taken: plan, cost, value; evaluations (plan, rate) in order; outcome).
    `ceilings`: with the first pass's and the connection pool's ceilings."""
    real = bd.role_bound

    class Raised(bd.CeilingOnly):  # the first pass also sizing the walk: the tie order moves
        def min_count(self, rate):
            need = [self.sizing().min_count(rate), self.ceiling.min_count(rate)]
            return None if None in need else max(need)

    def role_bound(*args):
        b = real(*args)
        if isinstance(b, bd.CeilingOnly) and not ceilings:
            return b.sizing()
        return (
            Raised(b.sizing(), b.ceiling) if isinstance(b, bd.CeilingOnly) and raise_sizing else b
        )

    taken, asked = [], []
    take, meets_sla = gl.Goal.take, sr.meets_sla
    monkeypatch.setattr(bd, "role_bound", role_bound)
    if not ceilings:
        monkeypatch.setattr(pr, "pool_max_rps", lambda *args: math.inf)
    monkeypatch.setattr(
        gl.Goal, "take", lambda g, d, c, r, v: taken.append((d, c, v)) or take(g, d, c, r, v)
    )
    monkeypatch.setattr(
        sr, "meets_sla", lambda x, r: asked.append((x.deployment, r)) or meets_sla(x, r)
    )
    walk = sr.Search(s, catalog.model_for(s), catalog.gpus, catalog.lines, "pdd",
                     sv._policies(s, "pdd"), RESOLUTION, prune_dead_lines=prune)  # fmt: skip
    out = walk.run()
    monkeypatch.undo()
    return taken, asked, out


@pytest.mark.slow
def test_the_ceilings_keep_every_best_and_its_order(catalog, default, monkeypatch):
    taken, asked, out = _walk(catalog, default, monkeypatch)
    ref_taken, ref_asked, ref = _walk(catalog, default, monkeypatch, ceilings=False)
    assert out.proven and ref.proven and taken == ref_taken  # the same bests, values, order
    assert (out.deployment, out.cost_usd_per_hour, out.value) == (
        ref.deployment,
        ref.cost_usd_per_hour,
        ref.value,
    )
    assert len(asked) * 3 < len(ref_asked)  # most evaluations were plans MD cannot carry
    raised, _, _ = _walk(catalog, default, monkeypatch, raise_sizing=True)
    assert raised != ref_taken  # sizing by it would move the walk: ceiling only


def test_a_dead_rows_bigger_lines_are_never_queued(catalog, default, monkeypatch):
    taken, asked, out = _walk(catalog, default, monkeypatch)
    all_taken, all_asked, everything = _walk(catalog, default, monkeypatch, prune=False)
    assert asked == all_asked and taken == all_taken  # every evaluation, in order
    assert out.deployment == everything.deployment and out.value == everything.value
    assert out.steps * 10 < everything.steps  # the queue no longer holds them
