"""`pdd-plan estimate`: the JSON equals the library; bad options exit 2 with one line."""

import json

import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute.roofline import Instance


def test_estimate_json_equals_the_library(run_cli):
    result = run_cli(
        "estimate", "--model", "deepseek_v4_pro", "--gpu", "h200_sxm",
        "--gpus-per-instance", "16", "--isl", "8192", "--osl", "1000", "--batch", "64",
        "--kv-dtype", "fp8", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    cli = json.loads(result.stdout)
    catalog = Catalog()
    inst = Instance(catalog.model("deepseek_v4_pro"), catalog.gpus["h200_sxm"], 16, "fp8")
    assert cli["prefill_s"] == pytest.approx(inst.prefill_time_s(8192), rel=1e-12)
    assert cli["tpot_s"] == pytest.approx(inst.decode_step_s(64, 8192 + 500), rel=1e-12)
    assert cli["max_batch"] == inst.max_batch(8192 + 1000)
    assert cli["compute_dtype"] == "fp8"
    assert inst.parallel_mode() == "ep"  # auto: an MoE model on more than 8 GPUs
    assert cli["parallelism"] == "ep" and cli["parallelism_requested"] == "auto"
    assert cli["weight_bytes_per_gpu"] == pytest.approx(inst.weight_bytes_per_gpu())
    assert cli["kv_capacity_bytes"] == pytest.approx(inst.kv_capacity_bytes())
    for key in ("compute_s", "memory_s", "comm_s", "overhead_s", "total_s"):
        assert cli["prefill"][key] == pytest.approx(inst.prefill_breakdown(8192)[key])
        assert cli["decode"][key] == pytest.approx(inst.decode_breakdown(64, 8692)[key])
    assert cli["prefill"]["bound"] in ("compute", "memory")
    assert cli["prefill"]["parallelism"] == cli["decode"]["parallelism"] == "ep"
    assert cli["decode"]["total_s"] == cli["tpot_s"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["tp", "ep"])
def test_estimate_parallelism_option_equals_the_library(run_cli, mode):
    args = ["estimate", "--model", "deepseek_v3", "--gpu", "h100_sxm", "--gpus-per-instance"]
    args += ["32", "--isl", "4000", "--osl", "500", "--batch", "256", "--format", "json"]
    result = run_cli(*args, "--parallelism", mode)
    assert result.returncode == 0, result.stderr
    cli = json.loads(result.stdout)
    catalog = Catalog()
    inst = Instance(catalog.model("deepseek_v3"), catalog.gpus["h100_sxm"], 32, parallelism=mode)
    assert cli["parallelism"] == cli["parallelism_requested"] == mode
    assert cli["decode"]["parallelism"] == mode
    assert cli["prefill_s"] == pytest.approx(inst.prefill_time_s(4000), rel=1e-12)
    assert cli["tpot_s"] == pytest.approx(inst.decode_step_s(256, 4250), rel=1e-12)
    assert cli["max_batch"] == inst.max_batch(4500)
    assert cli["weight_bytes_per_gpu"] == pytest.approx(inst.weight_bytes_per_gpu())
    table = run_cli(*args[:-2], "--parallelism", mode)
    assert table.returncode == 0, table.stderr
    assert f"({mode})" in table.stdout


@pytest.mark.slow
def test_estimate_weight_dtype_override_and_table(run_cli):
    args = ["estimate", "--model", "llama_3_1_70b", "--gpu", "h200_sxm", "--isl", "2000"]
    args += ["--osl", "200", "--batch", "4"]
    fp8 = json.loads(run_cli(*args, "--weight-dtype", "fp8", "--format", "json").stdout)
    bf16 = json.loads(run_cli(*args, "--format", "json").stdout)
    assert fp8["weight_dtype"] == "fp8" and fp8["compute_dtype"] == "fp8"
    assert fp8["fits"] and not bf16["fits"]  # 141 GB of BF16 weights > 0.9 x 141 GiB
    assert bf16["max_batch"] == 0 and fp8["max_batch"] > 0
    assert fp8["tpot_s"] < bf16["tpot_s"]
    table = run_cli(*args)
    assert table.returncode == 0, table.stderr
    assert "compute" in table.stdout and "comm" in table.stdout and "does not fit" in table.stdout


@pytest.mark.parametrize(
    "change, where",
    [
        (("--model", "llama_3_1_7b"), "model"),
        (("--gpu", "h300"), "--gpu"),
        (("--batch", "0"), "--batch"),
        (("--isl", "0"), "--isl"),
        (("--gpus-per-instance", "0"), "--gpus-per-instance"),
        (("--weight-dtype", "fp7"), "--weight-dtype"),
        (("--kv-dtype", "f8"), "--kv-dtype"),
        (("--parallelism", "dp"), "--parallelism"),
        (("--parallelism", "ep"), "--parallelism"),  # llama_3_1_70b has no experts
    ],
)
def test_bad_options_exit_2_with_one_line(run_cli, change, where):
    options = {
        "--model": "llama_3_1_70b", "--gpu": "h200_sxm", "--isl": "100", "--osl": "10",
        "--batch": "1", "--gpus-per-instance": "2",
    }  # fmt: skip
    options.update({change[0]: change[1]})
    args = [x for kv in options.items() for x in kv]
    result = run_cli("estimate", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and where in lines[0] and "Traceback" not in result.stderr
