"""Engine profiles: the identity profile is today's roofline; a fit recovers known
parameters; profile files are read strictly."""

import dataclasses

import numpy as np
import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute import step_fit as sf
from pdd_plan.model.compute.engine_profile import PARAMETERS, EngineProfile
from pdd_plan.model.compute.roofline import Instance

CAT = Catalog()


def _instances():
    qwen = CAT.model("qwen3_32b")
    dsv4 = CAT.model("deepseek_v4_flash")
    llama = CAT.model("llama_3_1_70b")
    return [
        Instance(qwen, CAT.gpus["b300"], 1),
        Instance(qwen, CAT.gpus["h100_sxm"], 4),
        Instance(llama, CAT.gpus["h200_sxm"], 8, "fp8", "fp8"),
        Instance(dsv4, CAT.gpus["b300"], 8, "fp8", parallelism="ep"),
        Instance(dsv4, CAT.gpus["h200_sxm"], 16),
    ]


@pytest.mark.parametrize("plain", _instances(), ids=lambda i: f"{i.model.id}-{i.gpu.id}-{i.gpus}")
def test_identity_profile_is_todays_roofline(plain):
    # the default field is the identity; an explicit identity profile built field by field
    # from PARAMETERS' identity values must give the same floats, bit for bit
    identity = EngineProfile(**{k: v[0] for k, v in PARAMETERS.items()}, name="explicit")
    assert identity.is_identity() and plain.engine_profile.is_identity()
    other = dataclasses.replace(plain, engine_profile=identity)
    batch, context = np.array([1, 4, 32, 128]), np.array([100, 4096, 9000, 70000])
    assert np.array_equal(plain.decode_step_s(batch, context), other.decode_step_s(batch, context))
    new, cached = np.array([1, 128, 4096, 16384]), np.array([0, 0, 2048, 60000])
    assert np.array_equal(plain.prefill_time_s(new, cached), other.prefill_time_s(new, cached))
    assert plain.extend_decode_s(8, 300, 5000) == other.extend_decode_s(8, 300, 5000)


def test_identity_total_is_max_plus_comm_plus_overhead():
    # the plain roofline's sum, written out by hand from the breakdown's parts
    inst = _instances()[1]
    b = inst.decode_breakdown(16, 3000)
    expected = max(b["compute_s"], b["memory_s"]) + b["comm_s"] + inst.layer_latency_s()
    assert b["total_s"] == pytest.approx(expected, rel=1e-12)


def test_profile_terms_add_what_they_say():
    # each seconds term, alone, adds exactly its amount to a step (hand arithmetic)
    inst = _instances()[0]
    base_d = inst.decode_step_s(8, 2000)
    base_p = inst.prefill_time_s(1000, 0, prompts=2)
    p = EngineProfile(fixed_step_s=0.003, decode_request_s=1e-4, prefill_fixed_s=0.02)
    with_p = dataclasses.replace(inst, engine_profile=p)
    assert with_p.decode_step_s(8, 2000) == pytest.approx(base_d + 0.003 + 8e-4)
    assert with_p.prefill_time_s(1000, 0, prompts=2) == pytest.approx(base_p + 0.003 + 0.02)


def test_slower_memory_slows_a_memory_bound_step_in_proportion():
    inst = _instances()[0]
    b = inst.decode_breakdown(1, 4000)
    assert b["bound"] == "memory"
    half = dataclasses.replace(inst, engine_profile=EngineProfile(memory_efficiency_frac=0.5))
    slow = half.decode_breakdown(1, 4000)
    assert slow["memory_s"] == pytest.approx(2 * b["memory_s"])


def test_out_of_range_parameter_is_refused():
    with pytest.raises(ValueError, match="comm_overlap_frac"):
        EngineProfile(comm_overlap_frac=1.5)
    with pytest.raises(ValueError, match="fixed_step_s"):
        EngineProfile(fixed_step_s=float("nan"))


KNOWN = EngineProfile(
    fixed_step_s=0.004,
    layer_latency_frac=0.0,
    compute_efficiency_frac=0.8,
    memory_efficiency_frac=0.7,
    comm_overlap_frac=0.3,
    prefill_fixed_s=0.02,
    prefill_request_s=0.002,
    decode_request_s=2e-4,
    serial_token_s=5e-6,
    eager_mode_step_s=0.06,  # above the GPU time of many eager grid steps: it binds
)


def _grid_samples(profile: EngineProfile) -> list[sf.StepSamples]:
    """Decode-only, prefill-only and mixed steps on a grid, at TP 1, 2 and 4, timed by
    the roofline with `profile` (the measurements a perfect engine would give)."""
    rng = np.random.default_rng(7)
    model = CAT.model("qwen3_32b")
    out = []
    for tp in (1, 2, 4):
        n = 240
        batch = rng.choice([0, 1, 4, 16, 32], n)
        prompts = np.where(batch == 0, rng.choice([1, 2, 3], n), rng.choice([0, 0, 1, 2], n))
        new = prompts * rng.choice([64, 512, 2048, 4096], n)
        cached = prompts * rng.choice([0, 1000, 8000], n)
        context = np.where(batch > 0, rng.choice([500, 4000, 12000], n), 0)
        inst = Instance(model, CAT.gpus["b300"], tp, parallelism="tp", engine_profile=profile)
        per = np.maximum(prompts, 1)
        latency = inst._step(batch, context, new / per, cached / per, prompts)["total_s"]
        out.append(
            sf.StepSamples(f"tp{tp}", "qwen3_32b", "b300", tp, 1, 1, "bf16",
                           batch.astype(float), context.astype(float), prompts.astype(float),
                           new.astype(float), cached.astype(float), latency)
        )  # fmt: skip
    return out


def test_fit_recovers_known_parameters_within_5_percent():
    samples = _grid_samples(KNOWN)
    data = sf.prepare(samples, {"qwen3_32b": CAT.model("qwen3_32b")}, CAT.gpus)
    fitted, keep = sf.fit_profile(data)
    assert keep.all()
    for name in sf.free_parameters():
        assert getattr(fitted, name) == pytest.approx(getattr(KNOWN, name), rel=0.05), name
    errors = sf.phase_errors(sf.predict_s(fitted.vector(), data), data.latency_s, data.phase)
    assert set(errors) == {"decode", "prefill", "mixed"}
    assert max(errors.values()) < 0.01


def test_phase_errors_by_hand():
    phase = np.array(["decode", "decode", "decode", "prefill"])
    errors = sf.phase_errors([1.1, 0.8, 1.0, 3.0], [1.0, 1.0, 1.0, 2.0], phase)
    assert errors == pytest.approx({"decode": 0.1, "prefill": 0.5})


# ---- profile files ---------------------------------------------------------------------
from pdd_plan.errors import InputError  # noqa: E402
from pdd_plan.loaders.engine_profile import load_engine_profile  # noqa: E402
from pdd_plan.report.engine_profile_file import profile_yaml  # noqa: E402


def test_profile_file_round_trip(tmp_path):
    written = dataclasses.replace(
        KNOWN, name="my_engine", engine="vllm", engine_version="0.20.1", gpu="b300",
        model="qwen3_32b", parallelism=(("tp", 2), ("ep", 1), ("dp", 1)),
        fitted_on=(("a.csv.gz", "ab" * 32, 100),), cv_error_frac=(("decode", 0.05),),
    )  # fmt: skip
    path = tmp_path / "p.yaml"
    path.write_text(profile_yaml(written))
    read = load_engine_profile(path)
    assert read.vector() == pytest.approx(written.vector(), rel=1e-5)
    assert dataclasses.replace(read, source="", fixed_step_s=written.fixed_step_s,
                               serial_token_s=written.serial_token_s) == dataclasses.replace(
        written, source="")  # fmt: skip


def test_partial_parameters_keep_identity_values(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: fast\nengine_version: 0.20\nparameters: {fixed_step_s: 0.002}\n")
    p = load_engine_profile(path)
    assert p.fixed_step_s == 0.002 and p.engine_version == "0.2"
    assert p.with_vector(IDENTITY_VECTOR) == dataclasses.replace(p, fixed_step_s=0.0)


IDENTITY_VECTOR = [v[0] for v in PARAMETERS.values()]


@pytest.mark.parametrize(
    "text, path, found",
    [
        ("name: x\nparameters: {fixed_step: 0.1}\n", "parameters.fixed_step", "did you mean"),
        ("name: x\nparameters: {comm_overlap_frac: 2}\n", "parameters.comm_overlap_frac", "2"),
        ("name: x\nparameters: {fixed_step_s: fast}\n", "parameters.fixed_step_s", "'fast'"),
        ("name: X Y\nparameters: {}\n", "name", "'X Y'"),
        ("parameters: {}\n", "name", "nothing"),
        ("name: x\nparameters: {}\nparallelism: {tp: 0}\n", "parallelism.tp", "0"),
        ("name: x\nparameters: {}\ncv_error_frac: {prefil: 0.1}\n", "cv_error_frac.prefil",
         "did you mean"),
    ],
)  # fmt: skip
def test_strict_profile_errors_name_the_key(tmp_path, text, path, found):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        load_engine_profile(f)
    assert len(err.value.problems) == 1
    line = str(err.value)
    assert path in line and found in line and str(f) in line


def test_shipped_profiles_load_and_the_default_is_the_identity():
    from pdd_plan.loaders.engine_profile import engines_dir

    files = sorted(engines_dir().glob("*.yaml"))
    assert {f.stem for f in files} >= {"roofline_default", "vllm_0_20_b300_qwen3_32b"}
    for f in files:
        p = load_engine_profile(f)
        assert p.name == f.stem
        assert p.is_identity() == (f.stem == "roofline_default")
        if not p.is_identity():
            assert p.gpu in CAT.gpus and p.fitted_on and dict(p.cv_error_frac).keys() == {
                "decode", "prefill", "mixed"}  # fmt: skip
            assert all(len(sha) == 64 for _, sha, _ in p.fitted_on)


@pytest.mark.slow
def test_real_qwen3_32b_held_out_configuration_within_10_percent(shared_dir):
    """vLLM 0.20.1 on B300 (../shared/data/perf/fpm): fitted on TP 1, 2 and 8, the TP4 run's
    iterations are predicted within the issue's target, 10 % median error per phase (the
    plain roofline misses TP4 by 7-15 %: the test can fail)."""
    from pdd_plan.stages.calibrating.calibration import prepared, read_measurements

    folder = shared_dir / "data" / "perf" / "fpm"
    files = sorted(folder.glob("fpm_upfront_qwen32_full_once_*__tp[1248]_ep1_past4096.csv.gz"))
    assert len(files) == 4
    data = prepared(read_measurements(files, {}, CAT), CAT)
    held = data.group == 2  # sorted: tp1, tp2, tp4, tp8
    profile, _ = sf.fit_profile(data.select(~held))
    test = data.select(held)
    errors = sf.phase_errors(sf.predict_s(profile.vector(), test), test.latency_s, test.phase)
    assert set(errors) == {"decode", "prefill", "mixed"}
    assert max(errors.values()) <= 0.10, errors
