"""The walk with the connection pool's ceiling and without a dead row's bigger lines
queued (issue #15, 150-175 req/s on the default): the same plans won, in the same order.

- PDD's main decode has no ceiling beyond the requests that skip the relay: with the
  relay taking what MD has no slot for, a plan whose main decode could not carry every
  remote output is still served (decode_side's settled slot wait);
- the walk with the pool ceiling takes the same best plans in the same order, with the
  same values, as the walk without it;
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


def test_main_decode_past_its_every_output_rate_is_not_saturated(catalog, default):
    """Main decode's bound counts only the direct requests' tokens; at 1.1 x the rate at
    which MD alone would carry every remote output (n K / step(K) / T, by hand from the
    slot count and the step), the decode side still answers: RLD keeps the rest."""
    s = _cutting(default)
    policy = _policy(s, True)
    c, routes = _classes(catalog, s, policy)
    groups = (InstanceGroup("prefill", "dc_a", "h100_sxm", 24, 6),
              InstanceGroup("relay_decode", "dc_a", "h100_sxm", 24, 1),
              InstanceGroup("main_decode", "dc_b", "h20_96g", 16, 3))  # fmt: skip
    d = Deployment("pdd", groups, (LineLease("wave_100g", 100e9, 4),), policy)
    setup = prepare(s, d, catalog.model_for(s), catalog.gpus, catalog.lines, RESOLUTION)
    cs = setup.classes
    remote = setup.routes.path != rt.LOCAL
    every_output = float(np.dot(cs.weight * remote, cs.output_tokens))
    probe = decode_side(setup, 1.0, np.zeros(len(cs)), 0.0)
    k = probe.md.max_batch
    context = float(np.dot(cs.weight * remote * cs.output_tokens,
                            cs.input_tokens + cs.output_tokens / 2)) / every_output  # fmt: skip
    all_on_md = 3 * k / float(_md(catalog, s).decode_step_s(k, context)) / every_output
    b = bd.role_bound("pdd", "main_decode", _md(catalog, s), c, routes, s)
    assert b.max_rate(3) > 1.1 * all_on_md  # the bound no longer stops there
    try:
        decode_side(setup, 1.1 * all_on_md, np.zeros(len(cs)), 0.0)
    except SaturatedError as exc:
        assert not exc.what.startswith("main_decode"), str(exc)


def _walk(catalog, s, monkeypatch, *, ceilings=True, prune=True):
    """(every best taken: plan, cost, value; evaluations (plan, rate) in order; outcome).
    `ceilings`: with the connection pool's ceiling."""
    taken, asked = [], []
    take, meets_sla = gl.Goal.take, sr.meets_sla
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
    assert len(asked) <= len(ref_asked)


def test_a_dead_rows_bigger_lines_are_never_queued(catalog, default, monkeypatch):
    taken, asked, out = _walk(catalog, default, monkeypatch)
    all_taken, all_asked, everything = _walk(catalog, default, monkeypatch, prune=False)
    assert asked == all_asked and taken == all_taken  # every evaluation, in order
    assert out.deployment == everything.deployment and out.value == everything.value
    assert out.steps * 10 < everything.steps  # the queue no longer holds them
