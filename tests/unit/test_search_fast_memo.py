"""Set-up memos of the search (issue #15, large catalogs): a prefill bound answers
min_count once per rate (every routing policy's space asks it at the same least rate), and
`candidates` sizes a (role, GPU, shape) once however many datacenters offer it. Each must
equal the path without the memo, and miss when a part of its key changes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model import routing as rt
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.workload.workload import request_classes
from pdd_plan.plan import bounds as bd
from pdd_plan.plan import candidates as cd

RESOLUTION = (4, 6, 10)  # coarse classes: each bound a few milliseconds


@pytest.fixture(scope="module")
def default(catalog):
    return load_scenario(resolve_scenario_path("default"), catalog)


def _classes(s):
    w = s.workload
    return request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate, RESOLUTION)


@pytest.mark.parametrize("arch", ["pdd", "colocated"])  # batched, and the G/G/c prefill
def test_a_prefill_bound_answers_a_rate_once_and_as_without_the_memo(catalog, default, arch):
    role = "prefill" if arch == "pdd" else "colocated"
    s = default
    # 32 H100 (the default's prefill shape): the weights fit beside a decode batch
    inst = Instance(catalog.model_for(s), catalog.gpus["h100_sxm"], 32, s.kv_dtype,
                    s.weight_dtype, engine_profile=s.engine.profile)  # fmt: skip
    classes = _classes(s)
    b = bd.role_bound(arch, role, inst, classes, None, s)
    reference = bd.role_bound(arch, role, inst, classes, None, s)
    calls = []
    ok = b.ok
    b.ok = lambda n, rate: calls.append(rate) or ok(n, rate)
    for rate in (5.0, 20.0, 60.0):
        calls.clear()
        got = b.min_count(rate)
        assert got is not None and got == reference._fewest(rate)  # the bisection itself, no memo
        assert calls and all(r == rate for r in calls)  # a new rate: a miss, bisected
        calls.clear()
        assert b.min_count(rate) == got and not calls  # the same rate: no bisection
    assert b.min_count(60.0) > b.min_count(5.0)  # the rate is in the key


def test_candidates_size_a_shape_once_whatever_datacenter_offers_it(catalog, default):
    """The default with a second main-decode room offering the same GPUs at other prices:
    each of its candidates has the capacity of the first room's and of _capacity_rps."""
    dc_b = next(dc for dc in default.datacenters if dc.id == "dc_b")
    dc_c = dataclasses.replace(
        dc_b, id="dc_c", gpus=tuple(dataclasses.replace(o, price_usd_per_gpu_hour=1.0)
                                    for o in dc_b.gpus),
    )  # fmt: skip
    s = dataclasses.replace(default, datacenters=(*default.datacenters, dc_c))
    model, classes = catalog.model_for(s), _classes(s)
    policy, mean_input = cd.default_policy(s), s.workload.input_tokens.mean()
    routes = rt.route("pdd", classes, policy, rt.resolved_cutoff(s), model, s.kv_dtype,
                      threshold_input_tokens=mean_input)  # fmt: skip
    demands = cd.role_demands("pdd", classes, routes, np.zeros(len(classes)))
    got = cd.candidates(s, model, catalog.gpus, "pdd", classes, demands)
    tpot = min(s.sla.tpot_s.values())
    budget = (s.engine.prefill_token_budget_per_gpu, "pdd")
    by_key = {}
    for c in got:
        if c.pruned:
            continue
        inst = Instance(model, catalog.gpus[c.gpu], c.gpus_per_instance, s.kv_dtype,
                        s.weight_dtype, engine_profile=s.engine.profile)  # fmt: skip
        want, _ = cd._capacity_rps(inst, c.role, classes, demands, tpot,
                                   s.policy.utilization_cap_frac, budget)  # fmt: skip
        assert c.capacity_rps == want  # as computed without the memo
        by_key.setdefault((c.role, c.gpu, c.gpus_per_instance), set()).add(c.datacenter)
    md = {k: v for k, v in by_key.items() if k[0] == "main_decode"}
    assert md and all(v == {"dc_b", "dc_c"} for v in md.values())  # both rooms sized
    h200 = {
        c.gpus_per_instance: c.capacity_rps
        for c in got
        if (c.role, c.gpu, c.datacenter) == ("main_decode", "h200_sxm", "dc_b") and not c.pruned
    }
    assert len(set(h200.values())) == len(h200) > 1  # the shape is in the key
