"""The batched prefill pool's fast paths (model/queueing/prefill_mix.py): the step figures from one
vectorised step over the distinct chunk rows equal the scalar step and the all-rows
`own_s`; the step law built from them is the docstring's law; the memos return what a
fresh computation gives and miss whenever any part of their key changes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.queueing import prefill_batch as pb
from pdd_plan.model.queueing import prefill_mix as pm
from pdd_plan.model.workload.workload import RequestClasses

# a profile with every adjustment that touches a prefill step (fixed, per request,
# efficiency, overlap, eager steps) so the vector path meets all of them
PROFILE = EngineProfile(fixed_step_s=0.002, prefill_request_s=0.001, prefill_fixed_s=0.003,
                        compute_efficiency_frac=0.8, comm_overlap_frac=0.3,
                        eager_mode_step_s=0.05)  # fmt: skip


def _classes(input_tokens, hit_rate, weight=None, outputs=(100.0,)) -> RequestClasses:
    """Each (input, hit) pair once per output length (prefill does not see the output:
    equal chunk rows, as the workload's classes have them)."""
    n, k = len(input_tokens), len(outputs)
    return RequestClasses(
        input_tokens=np.repeat(np.asarray(input_tokens, float), k),
        output_tokens=np.tile(np.asarray(outputs, float), n),
        hit_rate=np.repeat(np.asarray(hit_rate, float), k),
        weight=np.full(n * k, 1.0 / (n * k)) if weight is None else np.repeat(weight, k),
    )


MIXED = dict(
    input_tokens=[300, 2_000, 9_000, 40_000, 120_000],
    hit_rate=[0.0, 0.5, 0.9, 0.3, 0.97],
    weight=np.array([0.3, 0.3, 0.2, 0.15, 0.05]),
    outputs=(50.0, 400.0, 2_000.0),
)
SHAPES = [  # (model, gpus, profile, budget per GPU)
    ("qwen3_32b", 1, None, 2048),  # dense, one GPU: no communication
    ("llama_3_1_70b", 4, PROFILE, 8192),  # "tp" all-reduces, a fitted profile
    ("deepseek_v3", 32, None, 512),  # "ep": per-GPU weights and all-to-alls
]


def _mix(catalog, model, gpus, profile, budget_per_gpu, classes=None):
    kw = {} if profile is None else {"engine_profile": profile}
    inst = Instance(catalog.model(model), catalog.gpus["h200_sxm"], gpus, **kw)
    c = _classes(**MIXED) if classes is None else classes
    budget = pb.budget_tokens(inst, budget_per_gpu)
    # built directly: an empty memo, not the process-wide one
    return pm.PrefillMix.build(inst, c.uncached_tokens, c.cached_tokens, c.weight, budget)


@pytest.mark.parametrize(("model", "gpus", "profile", "budget_per_gpu"), SHAPES)
def test_point_is_the_scalar_step_and_the_all_rows_added_time(
    catalog, model, gpus, profile, budget_per_gpu
):
    mix = _mix(catalog, model, gpus, profile, budget_per_gpu)
    assert len(mix.distinct_rows) < len(mix.row_new)  # the output lengths share rows
    n, budget = mix.mean_chunk_tokens, mix.budget_tokens
    for b in (1.0, 0.5 * n, n, n + 1.0, 0.37 * budget, budget - 1.0, budget, 1.5 * budget):
        added = mix.added_s(b)  # the reference: scalar S(b - n̄), every row's own step
        want = (mix.step_s(b), mix.weight @ added, mix.weight @ added**2)
        assert mix.point(b) == pytest.approx(want, rel=1e-12, abs=0.0), b


@pytest.mark.parametrize(("model", "gpus", "profile", "budget_per_gpu"), SHAPES)
def test_the_rows_parts_are_every_rows_own(catalog, model, gpus, profile, budget_per_gpu):
    """The mix computes each distinct (new, cached) chunk's parts once: they equal
    `chunk_parts` of every row."""
    mix = _mix(catalog, model, gpus, profile, budget_per_gpu)
    c = _classes(**MIXED)
    _, new, cached = pb.chunk_rows(c.uncached_tokens, c.cached_tokens, mix.budget_tokens)
    compute_s, kv_bytes = pb.chunk_parts(mix.inst, new, cached)
    assert np.array_equal(mix.row_compute_s, compute_s)
    assert np.array_equal(mix.row_kv_bytes, kv_bytes)
    assert len(mix.distinct_rows) * 3 == len(new)  # three output lengths per (input, hit)


@pytest.mark.parametrize(("model", "gpus", "profile", "budget_per_gpu"), SHAPES)
def test_the_step_law_is_the_docstring_law(catalog, model, gpus, profile, budget_per_gpu):
    """S(b); composition (Λ S(b) E[x²] + (b - Λ S(b)) Var(x)) / N̄ with the arrivals
    capped at b; feedback Λ dS/db, dS/db the chord from one chunk to a full step; the
    restart n̄ dS/db; λ = Λ c / N̄: from the reference figures, by hand."""
    mix = _mix(catalog, model, gpus, profile, budget_per_gpu)
    n, budget, mean = mix.mean_chunk_tokens, mix.budget_tokens, mix.mean_tokens
    slope = (mix.step_s(budget) - mix.step_s(n)) / (budget - n)
    full_per_s = budget / mix.step_s(budget)  # tokens per second at full steps
    for frac, b, servers in [(0.2, n, 1), (0.6, 0.4 * budget, 3), (0.95, budget, 2)]:
        per_s = frac * full_per_s
        law = mix.step_law(per_s, b, servers)
        step, added = mix.step_s(b), mix.added_s(b)
        ex, ex2 = mix.weight @ added, mix.weight @ added**2
        arrived = min(per_s * step, b)
        assert law.mean_s == pytest.approx(step, rel=1e-12)
        assert law.composition_var_s2 == pytest.approx(
            (arrived * ex2 + (b - arrived) * (ex2 - ex**2)) / mean, rel=1e-9
        )
        assert law.feedback == pytest.approx(per_s * slope, rel=1e-12)
        assert (law.lone_s, law.full_s) == (mix.step_s(n), mix.step_s(budget))
        assert law.restart_s == pytest.approx(n * slope, rel=1e-12)
        assert law.rate_per_s == pytest.approx(per_s * servers / mean, rel=1e-12)
        assert law.servers == servers


def test_remembered_pools_equal_fresh_ones(catalog):
    """A pool whose mix has already solved other rates (its step figures and laws
    remembered, their brentq points shared) equals the pool from an empty memo, at every
    rate: the memos change no figure."""
    shape = SHAPES[1]
    warm = _mix(catalog, *shape)
    cap = warm.capacity_rps()
    rates = [f * 3 * cap for f in (0.1, 0.5, 0.8, 0.95)]
    for rate in rates:  # fill the memo at every rate first
        pb.pool(warm, rate, 3, 1.5, "prefill")
    for rate in reversed(rates):
        fresh = pb.pool(_mix(catalog, *shape), rate, 3, 1.5, "prefill")
        again = pb.pool(warm, rate, 3, 1.5, "prefill")
        assert again.step_tokens == fresh.step_tokens
        assert again.wait == fresh.wait
        assert again.utilization_frac == fresh.utilization_frac
        assert np.array_equal(again.service_s, fresh.service_s)


def test_the_queue_is_remembered_per_rate_servers_burstiness_and_pool(catalog):
    inst = Instance(catalog.model("qwen3_32b"), catalog.gpus["h200_sxm"], 1)
    c = _classes([1_000, 6_000], [0.5, 0.9])
    args = (c, 2, 4.0, 1.0, 2048, "pdd")
    service, wait, load = pb.prefill_queue(inst, *args)
    service[:] = -1.0  # a caller's array: the remembered one is not touched
    again = pb.prefill_queue(inst, *args)
    assert np.all(again[0] > 0) and again[1] == wait and again[2] == load
    mix = pb.prefill_mix(inst, c, pb.budget_tokens(inst, 2048))
    assert len(mix.memo["pool"]) == 1  # asked twice, solved once
    # one key part changed at a time: a new entry with its own figures
    changed = [(c, 3, 4.0, 1.0, 2048, "pdd"), (c, 2, 5.0, 1.0, 2048, "pdd"),
               (c, 2, 4.0, 2.0, 2048, "pdd")]  # fmt: skip
    for i, other in enumerate(changed, start=2):
        got = pb.prefill_queue(inst, *other)
        assert got[1] != wait and len(mix.memo["pool"]) == i


def test_equal_instances_share_a_mix_and_any_change_misses(catalog):
    model, gpu = catalog.model("llama_3_1_70b"), catalog.gpus["h200_sxm"]
    # a long cached context under a short chunk: memory-bound, the KV dtype shows
    c = _classes([2_000, 30_000], [0.5, 0.999])
    inst = Instance(model, gpu, 4)
    mix = pb.prefill_mix(inst, c, 8192)
    assert (
        pb.prefill_mix(Instance(model, gpu, 4), _classes([2_000, 30_000], [0.5, 0.999]), 8192)
        is mix
    )
    others = [
        (replace(inst, gpus=8), c, 8192),
        (replace(inst, gpu=catalog.gpus["h100_sxm"]), c, 8192),
        (replace(inst, kv_dtype="fp8"), c, 8192),
        (replace(inst, weight_dtype="fp8"), c, 8192),
        (replace(inst, step_overhead_s=inst.step_overhead_s + 0.01), c, 8192),
        (replace(inst, engine_profile=PROFILE), c, 8192),
        (replace(inst, model=catalog.model("qwen3_32b")), c, 8192),
        (inst, c, 4096),
        (inst, _classes([2_000, 30_000], [0.5, 0.99]), 8192),
        (inst, _classes([2_000, 31_000], [0.5, 0.999]), 8192),
        (inst, _classes([2_000, 30_000], [0.5, 0.999], weight=np.array([0.9, 0.1])), 8192),
    ]  # fmt: skip
    figures = (mix.full_step_cost_s(), *mix.alone_s)
    for other_inst, other_c, budget in others:
        other = pb.prefill_mix(other_inst, other_c, budget)
        assert other is not mix
        # each part moves a figure (a full step, or a class's steps alone)
        assert (other.full_step_cost_s(), *other.alone_s) != figures


def test_the_memos_are_bounded(catalog):
    store: dict = {}
    for i in range(3 * pm._ENTRY_MEMO_LIMIT):
        assert pm.remember(store, i, lambda i=i: i * 2.0) == i * 2.0
        assert len(store) <= pm._ENTRY_MEMO_LIMIT
    inst = Instance(catalog.model("qwen3_32b"), catalog.gpus["h200_sxm"], 1)
    c = _classes([1_000], [0.5])
    for budget in range(1024, 1024 + 2 * pm._MIX_MEMO_LIMIT):
        pb.prefill_mix(inst, c, budget)
        assert len(pm._MIXES) <= pm._MIX_MEMO_LIMIT
