"""The capacity ceiling (plan/capacity_ceiling.py) is a proof, never a heuristic: on small
random scenarios of every architecture (small_scenarios.py), the plans with the most GPUs
carry at most the ceiling of each role (evaluate's own goodput bisection, under every
hit-rate distribution), and a rate just above the ceiling has no plan in the search run
without the refusal. On a scenario worked out by hand, the figure is the instances the
availability allows times one instance's prefill capacity (the model's), and 1e7 req/s
is refused before any instance count is bounded (issue #22: 14 s to refuse)."""

from __future__ import annotations

import dataclasses
import functools
import math

import pytest
from small_scenarios import RESOLUTION, by_cost, catalog, random_scenario

from pdd_plan.errors import InfeasibleError
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.evaluate import goodput_rps, prepare
from pdd_plan.model.queueing.prefill_batch import prefill_capacity_rps
from pdd_plan.model.workload import workload as wl
from pdd_plan.plan import bounds as bd
from pdd_plan.plan import capacity_ceiling as cc
from pdd_plan.plan import solve as sv
from pdd_plan.plan.goal import Goal
from pdd_plan.plan.space import Spaces

SEEDS = (1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 19, 20, 24)  # every architecture among them
RICHEST = 4  # plans per scenario: the dearest of each policy, the nearest the ceiling


def spaces(s, arch: str) -> Spaces:
    cat, w = catalog(), s.workload
    dists = (w.prefix_hit_rate, *w.hit_rate_alternatives.values())
    classes = [wl.request_classes(w.input_tokens, w.output_tokens, d, RESOLUTION) for d in dists]
    model = cat.model_for(s)
    return Spaces(s, model, cat.gpus, cat.lines, arch, classes, Goal.of(s).floor_rps)


@functools.cache
def ceilings(seed: int) -> tuple:
    s, arch = random_scenario(seed, "max_bcr")
    found = cc.role_ceilings(spaces(s, arch), sv._policies(s, arch))
    return s, arch, found


def carried(s, d) -> float:
    """The most the plan carries under every hit-rate distribution (evaluate's bisection)."""
    cat = catalog()
    dists = (s.workload.prefix_hit_rate, *s.workload.hit_rate_alternatives.values())
    return min(
        goodput_rps(
            prepare(s, d, cat.model_for(s), cat.gpus, cat.lines, RESOLUTION, h), rel_tol=1e-4
        )  # fmt: skip
        for h in dists
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_no_plan_carries_more_than_a_role_ceiling(seed):
    s, arch, found = ceilings(seed)
    least = min(found.values())
    plans = {}
    for _, d in reversed(by_cost(s, arch)):  # the dearest first: the most GPUs
        plans.setdefault(d.policy, d)
    assert plans
    for d in list(plans.values())[:RICHEST]:
        assert carried(s, d) <= least, (seed, arch, d, found)


@pytest.mark.parametrize("seed", (1, 4, 5, 9, 19))
def test_just_above_the_ceiling_the_search_itself_finds_no_plan(seed, monkeypatch):
    s, arch, found = ceilings(seed)
    rate = min(v for v in found.values() if v > 0) * (1 + 1e-4)
    s = dataclasses.replace(s, workload=dataclasses.replace(s.workload, arrival_rate_per_s=rate))
    cat = catalog()
    run = (s, cat.model_for(s), cat.gpus, cat.lines, arch, RESOLUTION, 30.0)
    with pytest.raises(cc.CapacityError):
        sv.solve(*run)
    monkeypatch.setattr(sv.sr, "refuse_beyond_capacity", lambda *a: None)
    try:
        result = sv.solve(*run)
    except InfeasibleError:
        return  # refused another way: no plan either
    assert result.deployment is None and result.status == "infeasible", result.status


def one_dc(rate: float) -> dict:
    """IDC-PD of Qwen3-32B: 8 single-GPU H100 instances at most, fixed 4000-token prompts
    with no prefix hits, every request the same."""
    return {
        "name": "one",
        "model": "qwen3_32b",
        "datacenters": [{"id": "dc_a", "roles": ["prefill", "decode"],
                         "gpus": [{"gpu": "h100_sxm", "max_gpus": 8,
                                   "gpus_per_instance": [1]}]}],
        "workload": {
            "arrival_rate_per_s": rate,
            "input_tokens": {"kind": "fixed", "value": 4000},
            "output_tokens": {"kind": "fixed", "value": 200},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 600, "tpot_p90_ms": 1000},
        "objective": {"kind": "min_cost"},
        "architectures": ["idc_pd"],
    }  # fmt: skip


def load(data: dict, tmp_path):
    import yaml

    from pdd_plan.loaders.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path, catalog())


def test_the_prefill_figure_is_the_instances_times_one_instance_capacity(tmp_path, monkeypatch):
    s = load(one_dc(1e7), tmp_path)
    cat = catalog()
    inst = Instance(cat.model_for(s), cat.gpus["h100_sxm"], 1, s.kv_dtype, s.weight_dtype,
                    engine_profile=s.engine.profile)  # fmt: skip
    w = s.workload
    (c,) = [wl.request_classes(w.input_tokens, w.output_tokens, w.prefix_hit_rate, RESOLUTION)]
    budget = s.engine.prefill_token_budget_per_gpu
    by_hand = 8 * prefill_capacity_rps(inst, c, budget, "idc_pd")  # 8 instances of 1 GPU

    def never(*args, **kwargs):
        raise AssertionError("an instance count was bounded before the refusal")

    for bound in (bd.PrefillBound, bd.BatchedPrefillBound, bd.DecodeBound):
        monkeypatch.setattr(bound, "min_count", never)
    with pytest.raises(cc.CapacityError) as refused:
        sv.solve(s, cat.model_for(s), cat.gpus, cat.lines, "idc_pd", RESOLUTION, 30.0)
    (prefill,) = [c for c in refused.value.ceilings if c["limit"] == "prefill saturation"]
    assert prefill["has"] == pytest.approx(by_hand, rel=1e-9)
    assert prefill["needs"] == 1e7
    assert f"{by_hand:,.3g} req/s" in str(refused.value)


def test_a_rate_the_gpus_carry_is_not_refused_near_the_ceiling(tmp_path):
    """Just below the prefill ceiling the check lets the search run (it decides), and a
    plan exists at half of it: the bound is near what the model carries."""
    s = load(one_dc(1.0), tmp_path)
    cat = catalog()
    run = (cat.model_for(s), cat.gpus, cat.lines, "idc_pd", RESOLUTION, 60.0)
    top = min(cc.role_ceilings(spaces(s, "idc_pd"), sv._policies(s, "idc_pd")).values())
    assert math.isfinite(top) and top > 0
    half = dataclasses.replace(s.workload, arrival_rate_per_s=top / 2)
    result = sv.solve(dataclasses.replace(s, workload=half), *run)
    assert result.deployment is not None, result.status
