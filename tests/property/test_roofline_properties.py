"""Properties of the instance roofline that hold for every catalog model and GPU."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute.roofline import PARALLELISMS, Instance

CATALOG = Catalog()
MODELS = {m: CATALOG.model(m) for m in CATALOG.model_ids()}
MOE_MODELS = sorted(m for m, spec in MODELS.items() if spec.routed_expert_params())
GPUS = CATALOG.gpus


def _instance(model: str, gpu: str, gpus: int, kv: str, parallelism: str) -> Instance:
    spec = MODELS[model]
    if parallelism == "ep" and not spec.routed_expert_params():
        parallelism = "tp"  # ep needs routed experts
    return Instance(spec, GPUS[gpu], gpus, kv_dtype=kv, parallelism=parallelism)


instances = st.builds(
    _instance,
    st.sampled_from(sorted(MODELS)),
    st.sampled_from(sorted(GPUS)),
    st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
    st.sampled_from(["bf16", "fp8"]),
    st.sampled_from(PARALLELISMS),
)
tokens = st.integers(1, 300_000)
SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(inst=instances, batch=st.integers(1, 1024), context=tokens, factor=st.floats(1.0, 4.0))
def test_more_hbm_bandwidth_never_lengthens_a_decode_step(inst, batch, context, factor):
    faster_gpu = dataclasses.replace(inst.gpu, hbm_bytes_per_s=inst.gpu.hbm_bytes_per_s * factor)
    faster = dataclasses.replace(inst, gpu=faster_gpu)
    assert faster.decode_step_s(batch, context) <= inst.decode_step_s(batch, context)


@SETTINGS
@given(inst=instances, a=tokens, b=tokens, cached=st.integers(0, 200_000))
def test_a_longer_prompt_never_shortens_prefill(inst, a, b, cached):
    short, long = sorted((a, b))
    assert inst.prefill_time_s(short, cached) <= inst.prefill_time_s(long, cached)


@SETTINGS
@given(inst=instances, new=tokens, a=st.integers(0, 300_000), b=st.integers(0, 300_000))
def test_more_cached_tokens_never_shorten_prefill(inst, new, a, b):
    fewer, more = sorted((a, b))
    assert inst.prefill_time_s(new, fewer) <= inst.prefill_time_s(new, more)


@SETTINGS
@given(inst=instances, a=st.integers(0, 4096), b=st.integers(0, 4096), context=tokens)
def test_a_bigger_batch_never_shortens_a_decode_step(inst, a, b, context):
    """The bisection of max_batch_for_tpot rests on this."""
    small, big = sorted((a, b))
    assert inst.decode_step_s(small, context) <= inst.decode_step_s(big, context)


@SETTINGS
@given(
    inst=instances,
    a=st.floats(1e-3, 1.0),
    b=st.floats(1e-3, 1.0),
    context=st.integers(1, 200_000),
)
def test_max_batch_for_tpot_is_monotone_in_tpot(inst, a, b, context):
    tight, loose = sorted((a, b))
    found = inst.max_batch_for_tpot(tight, context)
    assert found <= inst.max_batch_for_tpot(loose, context) <= inst.max_batch(context)
    if found:
        assert inst.decode_step_s(found, context) <= tight


@SETTINGS
@given(inst=instances, new=tokens, cached=st.integers(0, 100_000), a=st.integers(0, 64),
       b=st.integers(0, 64))  # fmt: skip
def test_more_prompts_in_a_prefill_pass_never_shorten_it(inst, new, cached, a, b):
    fewer, more = sorted((a, b))
    assert inst.prefill_time_s(new, cached, fewer) <= inst.prefill_time_s(new, cached, more)


@SETTINGS
@given(
    model=st.sampled_from(MOE_MODELS),
    gpu=st.sampled_from(sorted(GPUS)),
    a=st.integers(1, 256),
    b=st.integers(1, 256),
    context=tokens,
    kv=st.sampled_from(["bf16", "fp8"]),
)
def test_in_ep_more_gpus_never_lower_max_batch(model, gpu, a, b, context, kv):
    """Each GPU holds ceil(E / gpus) experts, never more with more GPUs, so each GPU's KV
    room never shrinks and there are more GPUs: max_batch and fits() never drop."""
    few, many = (_instance(model, gpu, n, kv, "ep") for n in sorted((a, b)))
    assert few.weight_bytes_per_gpu() >= many.weight_bytes_per_gpu()
    assert few.max_batch(context) <= many.max_batch(context)
    assert many.fits() or not few.fits()


@SETTINGS
@given(
    model=st.sampled_from(MOE_MODELS),
    gpu=st.sampled_from(sorted(GPUS)),
    gpus=st.integers(1, 256),
    kv=st.sampled_from(["bf16", "fp8"]),
)
def test_ep_never_has_more_kv_room_than_tp(model, gpu, gpus, kv):
    """Replicating the non-expert weights costs memory: on the same GPUs ep holds at least
    tp's weights per GPU, so never more KV room. (The tp model splits all KV over the
    GPUs; real engines replicate it beyond the KV heads, so tp's edge is overstated.)"""
    ep = _instance(model, gpu, gpus, kv, "ep")
    tp = _instance(model, gpu, gpus, kv, "tp")
    assert ep.weight_bytes_per_gpu() >= tp.weight_bytes_per_gpu() * (1 - 1e-12)
    assert ep.kv_capacity_bytes() <= tp.kv_capacity_bytes() + 1e-6 * abs(tp.kv_capacity_bytes())
