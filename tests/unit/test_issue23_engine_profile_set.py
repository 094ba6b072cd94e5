"""Issue #23 item 4: a profile set, one fitted profile per GPU type; a GPU without one runs
the member of the nearest datasheet, carried by the ratios, and every answer says which."""

import json

import pytest

from pdd_plan.errors import InputError
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.engine_profile import (
    load_engine_profile,
    profile_line,
    profile_summary,
    transfer_notes,
)
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance

CAT = Catalog()


def _member(folder, name, gpu, **params):
    lines = [f"name: {name}", "engine: vllm", f"gpu: {gpu}", "model: qwen3_32b", "parameters:"]
    lines += [f"  {k}: {v}" for k, v in params.items()]
    (folder / f"{name}.yaml").write_text("\n".join(lines) + "\n")


def _set(folder, *files):
    text = "name: qwen_set\nprofiles:\n" + "".join(f"  - {f}\n" for f in files)
    (folder / "set.yaml").write_text(text)
    return folder / "set.yaml"


@pytest.fixture
def profile_set(tmp_path):
    _member(tmp_path, "on_b300", "b300", fixed_step_s=0.002, memory_efficiency_frac=0.8)
    _member(tmp_path, "on_h100", "h100_sxm", fixed_step_s=0.004, kernel_latency_s=5e-6)
    return _set(tmp_path, "on_b300.yaml", "on_h100.yaml")


def test_each_gpu_runs_its_member_or_the_nearest_datasheet(profile_set):
    """H200 (989 TFLOP/s BF16, 4.8 TB/s) is nearer H100 (989, 3.35: |ln 1| + |ln 1.43| =
    0.36) than B300 (2,250, 7.75: 0.82 + 0.48 = 1.30); B200 (2,250, 7.7) is B300's twin."""
    loaded = load_engine_profile(profile_set)
    assert [m.name for m, _, _ in loaded.members] == ["on_b300", "on_h100"]
    expected = {"b300": "on_b300", "h100_sxm": "on_h100", "h200_sxm": "on_h100", "b200": "on_b300"}
    model = CAT.model("qwen3_32b")
    for gpu, member in expected.items():
        via_set = Instance(model, CAT.gpus[gpu], 2, engine_profile=loaded)
        assert via_set.engine_profile.name == member
        direct = Instance(model, CAT.gpus[gpu], 2, engine_profile=load_engine_profile(
            profile_set.parent / f"{member}.yaml"))  # fmt: skip
        assert via_set.decode_step_s(8, 3000) == direct.decode_step_s(8, 3000)
        assert via_set.prefill_time_s(2000) == direct.prefill_time_s(2000)


def test_every_answer_names_the_member_per_gpu_and_how(profile_set):
    loaded = load_engine_profile(profile_set)
    summary = profile_summary(loaded, ["h200_sxm", "b300", "b300"])
    assert summary["per_gpu"]["b300"]["profile"] == "on_b300"
    assert summary["per_gpu"]["b300"]["how"] == "fitted"
    assert summary["per_gpu"]["h200_sxm"]["how"] == "datasheet ratios from h100_sxm"
    assert not summary["identity"]
    line = profile_line(summary)
    assert "b300: on_b300 (fitted)" in line
    assert "h200_sxm: on_h100 (datasheet ratios from h100_sxm)" in line
    notes = transfer_notes(loaded, ["h200_sxm", "b300"], "qwen3_32b")
    assert len(notes) == 1 and "applied to h200_sxm" in notes[0]
    json.dumps(summary)  # plain data


@pytest.mark.slow
def test_estimate_json_and_table_name_the_member(run_cli, profile_set):
    args = ("estimate", "--model", "qwen3_32b", "--gpu", "h200_sxm", "--gpus-per-instance",
            "2", "--isl", "1000", "--osl", "100", "--engine-profile", str(profile_set))  # fmt: skip
    result = run_cli(*args, "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    per_gpu = data["engine_profile"]["per_gpu"]
    assert list(per_gpu) == ["h200_sxm"]
    assert per_gpu["h200_sxm"]["profile"] == "on_h100" and not per_gpu["h200_sxm"]["fitted"]
    table = run_cli(*args)
    assert "h200_sxm: on_h100 (datasheet ratios from h100_sxm)" in table.stdout


@pytest.mark.parametrize(
    "files, found",
    [
        (("on_b300.yaml", "missing.yaml"), "'missing.yaml'"),
        (("on_b300.yaml", "b300_again.yaml"), "'b300_again.yaml'"),
        (("on_b300.yaml", "anygpu.yaml"), "'anygpu.yaml'"),
    ],
)
def test_bad_members_are_one_line_naming_the_set(tmp_path, files, found):
    _member(tmp_path, "on_b300", "b300", fixed_step_s=0.002)
    _member(tmp_path, "b300_again", "b300", fixed_step_s=0.003)
    _member(tmp_path, "anygpu", "any", fixed_step_s=0.003)
    path = _set(tmp_path, *files)
    with pytest.raises(InputError) as err:
        load_engine_profile(path)
    text = str(err.value)
    assert len(text.strip().splitlines()) == 1, text
    assert "set.yaml" in text and "profiles[1]" in text and found in text


def test_bad_set_on_the_command_line_exits_2(run_cli, tmp_path):
    _member(tmp_path, "on_b300", "b300", fixed_step_s=0.002)
    path = _set(tmp_path, "on_b300.yaml", "missing.yaml")
    result = run_cli("estimate", "--model", "qwen3_32b", "--gpu", "b300", "--isl", "10",
                     "--osl", "10", "--engine-profile", str(path))  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "profiles[1]" in result.stderr


def test_a_single_profile_is_its_own_member():
    p = EngineProfile(name="x", gpu="b300", fixed_step_s=0.001)
    assert p.for_gpu("h100_sxm", 1.0, 1.0) is p


@pytest.mark.slow
def test_solve_names_the_member_for_every_gpu_of_its_plan(run_cli, profile_set):
    result = run_cli("solve", "--engine-profile", str(profile_set), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    plan_gpus = {i["gpu"] for i in data["plan"]["instances"]}
    per_gpu = data["metrics"]["engine_profile"]["per_gpu"]
    assert set(per_gpu) == plan_gpus
    for gpu, entry in per_gpu.items():
        assert entry["fitted"] == (gpu in ("b300", "h100_sxm"))
    assert data["solver"]["engine_profile"] == data["metrics"]["engine_profile"]
