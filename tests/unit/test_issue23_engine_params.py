"""Issue #23 item 2: engine parameters with a physical meaning, each checked against
arithmetic done here from the catalog's own figures (not from the code's output)."""

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute import step_fit as sf
from pdd_plan.model.compute.engine_profile import IDENTITY, PARAMETERS, EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.stages.calibrating import calibration_checks as checks

CAT = Catalog()
QWEN = CAT.model("qwen3_32b")  # dense: 64 layers, 8 KV heads
B300 = CAT.gpus["b300"]


def _inst(gpus=1, profile=IDENTITY, model=QWEN, gpu=B300, parallelism="tp", **kw):
    return Instance(model, gpu, gpus, parallelism=parallelism, engine_profile=profile, **kw)


def test_every_new_parameter_has_an_identity_inside_its_range():
    new = ("expert_gemm_efficiency_frac", "attention_efficiency_frac", "kv_read_efficiency_frac")
    for name in (*new, "kernel_latency_s", "alltoall_overlap_frac"):
        identity, low, high = PARAMETERS[name]
        assert low <= identity <= high and low < high
    assert IDENTITY.is_identity()


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_kv_read_efficiency_slows_exactly_the_kv_reads(tp):
    """At half the KV-read efficiency a decode step's memory time grows by the KV bytes one
    GPU reads over the catalog's achievable bandwidth: batch x kv(context) / tp / (HBM x
    hbm_efficiency_frac), once more. The per-GPU KV falls as 1 / TP (8 KV heads split)."""
    batch, context = 16, 4096
    plain = _inst(tp).decode_breakdown(batch, context)
    slow = _inst(tp, EngineProfile(kv_read_efficiency_frac=0.5)).decode_breakdown(batch, context)
    kv_per_gpu = batch * QWEN.kv_bytes(context, "bf16", tp) / tp
    by_hand_s = kv_per_gpu / (B300.hbm_bytes_per_s * B300.hbm_efficiency_frac)
    assert slow["memory_s"] - plain["memory_s"] == pytest.approx(by_hand_s, rel=1e-9)
    assert slow["compute_s"] == plain["compute_s"] and slow["comm_s"] == plain["comm_s"]


@pytest.mark.parametrize("tp, collectives", [(1, 0), (2, 2 * 64), (8, 2 * 64)])
def test_kernel_floor_counts_the_kernels_launched(tp, collectives):
    """5 us per kernel: Qwen3-32B's 64 layers x (4 GEMMs + attention + 3 memory ops) = 512
    kernels, plus two all-reduces per layer under TP."""
    kernel_s = 5e-6
    plain = _inst(tp).decode_breakdown(4, 2000)
    floor = _inst(tp, EngineProfile(kernel_latency_s=kernel_s)).decode_breakdown(4, 2000)
    expected_s = kernel_s * (64 * 8 + collectives)
    assert floor["overhead_s"] - plain["overhead_s"] == pytest.approx(expected_s, rel=1e-9)


def test_alltoall_overlap_hides_at_most_the_gpu_time():
    """Two-batch overlap hides the all-to-all behind the other micro-batch's compute: with
    all of it overlappable, comm falls by min(comm, max(compute, memory)); tensor
    parallelism's all-reduces are not all-to-alls and do not move."""
    dsv3 = CAT.model("deepseek_v3")
    h200 = CAT.gpus["h200_sxm"]
    full = EngineProfile(alltoall_overlap_frac=1.0)
    for batch in (8, 4096):
        plain = _inst(16, model=dsv3, gpu=h200, parallelism="ep").decode_breakdown(batch, 2000)
        tbo = _inst(16, full, dsv3, h200, "ep").decode_breakdown(batch, 2000)
        gpu_s = max(plain["compute_s"], plain["memory_s"])
        assert plain["comm_s"] > 0
        assert tbo["comm_s"] == pytest.approx(plain["comm_s"] - min(plain["comm_s"], gpu_s))
    tp_plain = _inst(8).decode_breakdown(8, 2000)
    assert _inst(8, full).decode_breakdown(8, 2000)["comm_s"] == tp_plain["comm_s"]


def test_expert_gemm_efficiency_moves_only_the_routed_experts():
    """Qwen3-235B-A22B (94 layers, 128 experts, top-8, intermediate 1,536): half the grouped
    GEMM efficiency adds tokens x 2 x 94 x 8 x 3 x hidden x 1,536 FLOPs / (GPUs x the
    achievable BF16 rate, its native dtype): the routed experts' FLOPs once more."""
    model = CAT.model("qwen3_235b_a22b")
    h200 = CAT.gpus["h200_sxm"]
    tokens = 4096
    plain = _inst(8, model=model, gpu=h200).prefill_breakdown(tokens)
    slow = _inst(8, EngineProfile(expert_gemm_efficiency_frac=0.5), model, h200)
    routed_flops = tokens * 2 * 94 * 8 * 3 * model.hidden_size * 1536
    rate = h200.peak_flop_per_s("bf16") * h200.bf16_mfu_frac
    extra_s = slow.prefill_breakdown(tokens)["compute_s"] - plain["compute_s"]
    assert extra_s == pytest.approx(routed_flops / rate / 8, rel=1e-6)


def test_attention_efficiency_weighs_on_long_prompts():
    """Attention FLOPs grow as the square of the prompt, linears linearly: halving the
    attention efficiency slows a 32k prefill by a larger share than a 1k one."""
    slow = _inst(1, EngineProfile(attention_efficiency_frac=0.5))
    share = [slow.prefill_time_s(n) / _inst(1).prefill_time_s(n) for n in (1024, 32768)]
    assert 1.0 < share[0] < share[1]


def test_identity_profile_leaves_every_step_bit_for_bit():
    """Written as corrections that add share x 0.0: a profile of identity values in a new
    object answers exactly as the built-in identity."""
    fresh = EngineProfile(**{k: v[0] for k, v in PARAMETERS.items()})
    rng = np.random.default_rng(1)
    batch, context = rng.integers(0, 64, 50), rng.integers(1, 30000, 50)
    new, cached = rng.integers(0, 4096, 50), rng.integers(0, 8000, 50)
    for gpus in (1, 4):
        a = _inst(gpus)._step(batch, context, new, cached, 1.0)
        b = _inst(gpus, fresh)._step(batch, context, new, cached, 1.0)
        for key in ("compute_s", "memory_s", "comm_s", "overhead_s", "total_s"):
            assert np.array_equal(a[key], b[key]), key


def test_checks_bound_the_relative_efficiencies_by_the_datasheet_peak():
    """kv_read_efficiency_frac multiplies memory_efficiency_frac: at 0.9 of the catalog's,
    the KV reads reach the HBM peak at 1 / (0.864 x 0.9) = 1.286 (B300)."""
    inst = [_inst(1)]
    peak = 1.0 / (B300.hbm_efficiency_frac * 0.9)
    keys = lambda **v: [f.key for f in checks.parameter_findings(EngineProfile(**v), inst)]  # noqa: E731
    assert keys(memory_efficiency_frac=0.9, kv_read_efficiency_frac=0.98 * peak) == []
    assert keys(memory_efficiency_frac=0.9, kv_read_efficiency_frac=1.0 * peak) == [
        "kv_read_efficiency_frac"
    ]
    assert keys(kv_read_efficiency_frac=0.0501) == ["kv_read_efficiency_frac"]  # lower bound
    assert keys(alltoall_overlap_frac=1.0) == []  # all hidden: reachable
    assert keys(kernel_latency_s=50e-6) == ["kernel_latency_s"]  # the fit's ceiling


def _samples(tps, profile):
    """Decode steps at TP `tps` timed by the roofline with `profile` (a perfect engine)."""
    rng = np.random.default_rng(2)
    out = []
    for tp in tps:
        n = 200
        batch = rng.choice([1, 4, 16, 32], n).astype(float)
        context = rng.choice([1000.0, 4000.0, 12000.0], n)
        latency = _inst(tp, profile).decode_step_s(batch, context)
        zeros = np.zeros(n)
        out.append(sf.StepSamples(f"tp{tp}", "qwen3_32b", "b300", tp, 1, 1, "bf16", batch,
                                  context, zeros, zeros, zeros, latency))  # fmt: skip
    return sf.prepare(out, {"qwen3_32b": QWEN}, CAT.gpus)


def test_fit_finds_kv_efficiency_and_kernel_latency_across_tp_degrees():
    truth = EngineProfile(layer_latency_frac=0.0, kv_read_efficiency_frac=0.55,
                          kernel_latency_s=5e-6)  # fmt: skip
    fitted, _ = sf.fit_profile(_samples((1, 2, 8), truth))
    assert fitted.kv_read_efficiency_frac == pytest.approx(0.55, rel=0.03)
    assert fitted.kernel_latency_s == pytest.approx(5e-6, rel=0.05)


def test_one_layout_leaves_what_it_cannot_tell_apart():
    """One TP degree: the KV reads move with the batch as a per-request cost does, and the
    kernel count is one constant: both stay at their start values."""
    truth = EngineProfile(layer_latency_frac=0.0, kv_read_efficiency_frac=0.55)
    fitted, _ = sf.fit_profile(_samples((2,), truth))
    assert fitted.kv_read_efficiency_frac == 1.0 and fitted.kernel_latency_s == 0.0


def test_calibrate_names_what_it_held_and_why():
    one, three = _samples((2,), IDENTITY), _samples((1, 2, 8), IDENTITY)
    assert "one KV split" in sf.held_reasons(one)["kv_read_efficiency_frac"]
    assert "one kernel count" in sf.held_reasons(one)["kernel_latency_s"]
    assert "kv_read_efficiency_frac" not in sf.held_reasons(three)
    assert "kernel_latency_s" not in sf.held_reasons(three)
    assert set(sf.held_reasons(three)) == set(sf.HELD_BY_DEFAULT)
