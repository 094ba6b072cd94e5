"""The roofline's scalar fast path (plain floats, memoised) against its vectorised path,
and `max_batch_for_tpot`'s bisection against a linear search.

The expectation is independent of the fast path: the vectorised path is numpy over
arrays, and the same step asked as one element of an array must give the same number
(to 1e-12 relative: numpy's and the scalar path's arithmetic are the same IEEE operations
in the same order, so in practice they agree to the last bit).
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from pdd_plan.model.compute.engine_profile import IDENTITY, PARAMETERS, EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.model.compute.roofline_memo import STEP_KEYS

REL = 1e-12
DTYPES = ("bf16", "fp8")


def _random_profile(rng: random.Random) -> EngineProfile:
    """A non-identity engine profile with every parameter drawn inside its bounds."""
    values = {k: rng.uniform(low, min(high, 2.0)) for k, (_, low, high) in PARAMETERS.items()}
    values["comm_overlap_frac"] = rng.uniform(0.0, 0.9)
    return EngineProfile(name="random", **values)


def _random_instance(rng: random.Random, catalog) -> Instance:
    model = catalog.model(rng.choice(catalog.model_ids()))
    gpu = catalog.gpus[rng.choice(sorted(catalog.gpus))]
    gpus = rng.choice((1, 2, 4, 8, 16, 32, 72))
    modes = ["tp", "auto"] + (["ep"] if model.routed_expert_params() else [])
    profile = IDENTITY if rng.random() < 0.5 else _random_profile(rng)
    kv = rng.choice(DTYPES)
    weight = rng.choice((None, "fp8")) if gpu.fp8_flop_per_s else None
    return Instance(
        model, gpu, gpus, kv, weight, step_overhead_s=rng.choice((0.0, 1e-3)),
        parallelism=rng.choice(modes), engine_profile=profile,
    )  # fmt: skip


def _random_args(rng: random.Random) -> tuple:
    """(batch, context, new, cached, prompts): decode-only, prefill-only, mixed and empty
    steps, with fractional batches and token counts that round (half to even)."""
    kind = rng.choice(("decode", "prefill", "mixed", "extend", "empty"))
    batch = rng.choice((rng.randint(1, 512), rng.uniform(0.5, 300.0)))
    context = rng.choice((rng.randint(0, 200_000), rng.uniform(1, 50_000), 2.5, 3.5))
    new = rng.choice((rng.randint(1, 30_000), rng.uniform(1, 9000), 0.5))
    cached = rng.choice((0, rng.randint(0, 100_000), rng.uniform(0, 20_000)))
    prompts = rng.choice((1, 1.0, rng.randint(1, 16), rng.uniform(0.1, 4.0)))
    if kind == "decode":
        return batch, context, 0, 0, 1.0
    if kind == "prefill":
        return 0.0, 0, new, cached, prompts
    if kind == "extend":
        return batch, context, new, context, 1.0
    if kind == "empty":
        return 0.0, context, 0, cached, prompts
    return batch, context, new, cached, prompts


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= REL * max(abs(a), abs(b))


@pytest.mark.parametrize("seed", range(6))
def test_scalar_steps_equal_the_vectorised_path(catalog, seed):
    rng = random.Random(seed)
    for _ in range(25):
        inst = _random_instance(rng, catalog)
        calls = [_random_args(rng) for _ in range(12)]
        columns = [np.array([c[i] for c in calls], dtype=float) for i in range(5)]
        vector = inst._step(*columns)
        for i, call in enumerate(calls):
            scalar = inst._step(*call)
            for key in STEP_KEYS:
                assert isinstance(scalar[key], float), key
                want = float(vector[key][i])
                assert _close(scalar[key], want), (inst.model.id, inst.gpu.id, call, key)
            # asked again, the memo answers the same
            assert inst._step(*call) == scalar


def test_public_methods_give_floats_equal_to_one_element_arrays(catalog):
    rng = random.Random(11)
    for _ in range(40):
        inst = _random_instance(rng, catalog)
        b, ctx, new, cached, _ = _random_args(rng)
        pairs = [
            (inst.decode_step_s(b, ctx), inst.decode_step_s(np.array([b]), ctx)),
            (inst.prefill_time_s(new, cached), inst.prefill_time_s(np.array([new]), cached)),
            (
                inst.extend_decode_s(b, new, ctx),
                inst.extend_decode_s(np.array([b]), np.array([new]), ctx),
            ),
            (
                inst.mixed_step_s(b, ctx, new, cached, 2),
                inst.mixed_step_s(b, ctx, new, cached, [2]),
            ),
        ]
        for scalar, vector in pairs:
            assert isinstance(scalar, float)
            assert _close(scalar, float(vector[0]))


def test_numpy_scalars_take_the_same_path_as_python_numbers(catalog):
    inst = Instance(catalog.model("llama_3_1_70b"), catalog.gpus["h200_sxm"], 4)
    python = inst.decode_step_s(37, 4321.0)
    assert inst.decode_step_s(np.int64(37), np.float64(4321.0)) == python
    assert inst.decode_step_s(np.array(37.0), 4321) == python  # a 0-d array: vectorised


def test_instances_that_differ_do_not_share_memoised_steps(catalog):
    """The memo is keyed by every field of the instance: a different shape, profile or KV
    dtype on the same model object gets its own steps (each checked against a fresh
    vectorised evaluation)."""
    model, gpu = catalog.model("deepseek_v3"), catalog.gpus["h200_sxm"]
    base = Instance(model, gpu, 8)
    variants = [
        base,
        Instance(model, gpu, 16),
        dataclasses.replace(base, engine_profile=_random_profile(random.Random(3))),
        dataclasses.replace(base, kv_dtype="fp8"),
        dataclasses.replace(base, step_overhead_s=2e-3),
        dataclasses.replace(base, parallelism="tp", gpus=16),
    ]
    values = []
    for inst in variants:
        scalar = inst.decode_step_s(64, 8000)
        assert _close(scalar, float(inst.decode_step_s(np.array([64.0]), 8000)[0]))
        values.append(scalar)
    assert len(set(values)) == len(values)  # every variant is a different step time
    # a new Instance equal to the first reuses its memo and agrees with it
    assert Instance(model, gpu, 8).decode_step_s(64, 8000) == values[0]


def test_scalar_path_refuses_negative_counts_like_the_vectorised_one(catalog):
    inst = Instance(catalog.model("qwen3_32b"), catalog.gpus["h100_sxm"], 1)
    for args in ((-1.0, 10, 0, 0, 1.0), (1.0, -5, 0, 0, 1.0), (0.0, 0, 10, 0, -1.0)):
        with pytest.raises(ValueError):
            inst._step(*args)
        with pytest.raises(ValueError):
            inst._step(*(np.array([a], dtype=float) for a in args))


def test_non_finite_arguments_answer_as_the_vectorised_path_does(catalog):
    inst = Instance(catalog.model("qwen3_32b"), catalog.gpus["h100_sxm"], 1)
    for batch in (float("nan"), float("inf")):
        scalar = inst.decode_step_s(batch, 1000)
        vector = float(inst.decode_step_s(np.array([batch]), 1000)[0])
        assert scalar == vector or (np.isnan(scalar) and np.isnan(vector))
    with pytest.raises(ValueError):  # a NaN context has no KV size, either way
        inst.decode_step_s(np.array([8.0]), float("nan"))
    with pytest.raises(ValueError):
        inst.decode_step_s(8.0, float("nan"))


def _linear_search(inst: Instance, tpot_s: float, context) -> int:
    """The largest batch b <= max_batch with every step of 1..b within `tpot_s`, by
    walking the batches one by one (the vectorised path, so no memo is involved)."""
    high = inst.max_batch(context)
    if high == 0:
        return 0
    steps = np.asarray(inst.decode_step_s(np.arange(1, high + 1, dtype=float), context))
    over = np.nonzero(steps > tpot_s)[0]
    return int(over[0]) if len(over) else high


@pytest.mark.parametrize("seed", range(4))
def test_max_batch_for_tpot_equals_the_linear_search(catalog, seed):
    rng = random.Random(100 + seed)
    checked = 0
    for _ in range(40):
        inst = _random_instance(rng, catalog)
        if not inst.fits() or inst.max_batch(1000) > 50_000:
            continue
        context = rng.choice((rng.randint(100, 60_000), rng.uniform(100, 20_000)))
        one = float(inst.decode_step_s(np.array([1.0]), context)[0])
        # limits from below a single step to far above the largest batch's step
        for tpot in (0.5 * one, one, one * rng.uniform(1.0, 3.0), one * 50, 10.0):
            assert inst.max_batch_for_tpot(tpot, context) == _linear_search(inst, tpot, context)
            checked += 1
    assert checked >= 50


def test_memoised_vector_calls_answer_afresh_and_cannot_be_corrupted(catalog):
    """A repeated vectorised call gives what a fresh instance computes; writing into a
    returned array leaves the memo intact; a differently shaped call is its own entry."""
    model, gpu = catalog.model("llama_3_1_70b"), catalog.gpus["h200_sxm"]
    inst = Instance(model, gpu, 4, parallelism="tp")
    new = np.array([100.0, 2000.0, 513.0, 7.0])
    cached = np.array([0.0, 100.0, 4096.0, 0.0])
    first = inst.prefill_time_s(new, cached)
    want = [inst.prefill_time_s(float(n), float(c)) for n, c in zip(new, cached, strict=True)]
    assert all(_close(float(a), b) for a, b in zip(first, want, strict=True))
    first[:] = -1.0  # a caller writing into its result
    again = inst.prefill_time_s(new, cached)
    assert all(_close(float(a), b) for a, b in zip(again, want, strict=True))
    column = inst.prefill_time_s(new[:, None], cached[:, None])
    assert column.shape == (4, 1)
    batches = np.arange(1.0, 65.0)
    steps = inst.decode_step_s(batches, 3000)
    assert steps.shape == (64,) and np.all(np.diff(steps) >= 0)
    assert _close(float(inst.decode_step_s(batches, 3001)[10]), inst.decode_step_s(11.0, 3001))
