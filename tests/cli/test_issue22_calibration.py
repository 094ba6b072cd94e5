"""Issue #22, point 6 (and the calibration inputs of points 9 and 12): a calibration that
is physically impossible (an efficiency above the datasheet peak, a parameter at a bound)
or fits its data badly (median error above 25 %) is refused, exit 2, naming the figures;
`--accept-poor-fit` keeps it, marked in the file and in every answer that uses it.

The data are made by the roofline at a known profile (as tests/cli/test_calibrate.py
and test_calibrate_serving.py make theirs), so what the fit must find is known: an
engine at 1.55 x b300's catalog BF16 GEMM efficiency (0.663) runs at 1.03 x the
datasheet peak, at 1.2 x its HBM efficiency (0.864) at 1.04 x the datasheet bandwidth.
"""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import pdd_plan
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.model.compute.engine_profile import EngineProfile
from pdd_plan.model.compute.roofline import Instance
from pdd_plan.sim.aggregated import Load, serve
from tests.cli.test_calibrate import TRUE, _fpm_text
from tests.conftest import cli_command

ROOT = Path(pdd_plan.__file__).parent.parent
PAPER = str(ROOT / "scenarios" / "pdd-paper.yaml")
PAPER_PDD = str(ROOT / "scenarios" / "plans" / "pdd-paper-pdd.yaml")
PAPER_IDC = str(ROOT / "scenarios" / "plans" / "pdd-paper-idc_pd.yaml")
CAT = Catalog()
# above the datasheet: 1.55 x 0.663 = 1.03 of b300's BF16 peak, 1.2 x 0.864 = 1.04 of its HBM
FASTER_THAN_THE_DATASHEET = replace(TRUE, compute_efficiency_frac=1.55, memory_efficiency_frac=1.2)
STEPS = ("calibrate", "steps", "fpm.csv.gz", "--model", "qwen3_32b", "--gpu", "b300")


def _one_line_each(result, parameters) -> list[str]:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and all(x.startswith("error: ") for x in lines)
    for name in parameters:
        assert any(f": {name}: found " in line for line in lines), (name, result.stderr)
    return lines


def _write_steps(folder: Path, profile=FASTER_THAN_THE_DATASHEET) -> None:
    (folder / "fpm.csv.gz").write_bytes(gzip.compress(_fpm_text(profile).encode()))


# ---- calibrate steps -------------------------------------------------------------------


@pytest.mark.slow
def test_steps_faster_than_the_datasheet_are_refused_with_the_figures(run_cli, tmp_path):
    _write_steps(tmp_path)
    result = run_cli(*STEPS, "-o", "p.yaml")
    lines = _one_line_each(result, ("compute_efficiency_frac", "memory_efficiency_frac"))
    compute = next(x for x in lines if "compute_efficiency_frac" in x)
    # the fitted value, its share of the datasheet peak and the physical range, by hand
    assert "found 1.55" in compute and "1.03 x b300's BF16 GEMM datasheet peak" in compute
    assert f"below {1 / 0.663:.4g}" in compute and "--accept-poor-fit" in compute
    memory = next(x for x in lines if "memory_efficiency_frac" in x)
    assert "found 1.2" in memory and f"below {1 / 0.864:.4g}" in memory
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.slow
def test_a_sound_fit_is_written_unmarked(run_cli, tmp_path):
    _write_steps(tmp_path, TRUE)  # memory 0.8 x 0.864: 0.69 of the datasheet bandwidth
    result = run_cli(*STEPS, "-o", "p.yaml", "--no-cv")
    assert result.returncode == 0, result.stderr
    assert "poor_fit" not in yaml.safe_load((tmp_path / "p.yaml").read_text())


@pytest.mark.slow
def test_a_fit_error_above_25_percent_is_refused(run_cli, tmp_path):
    """Step times of a sound engine, every other row twice as long: no profile times
    both halves within 25 % (the median error is about 1/3 whichever half it follows)."""
    text = _fpm_text(TRUE).splitlines()
    for i in range(4, len(text), 2):
        cells = text[i].split(",")
        cells[-1] = f"{2 * float(cells[-1]):.4f}"
        text[i] = ",".join(cells)
    (tmp_path / "fpm.csv.gz").write_bytes(gzip.compress(("\n".join(text) + "\n").encode()))
    result = run_cli(*STEPS, "-o", "p.yaml", "--no-cv")
    assert result.returncode == 2, result.stderr
    assert "median error on the data fitted: found 0." in result.stderr
    assert "expected at most 0.25 (25 %)" in result.stderr
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.slow
def test_accept_poor_fit_writes_the_profile_marked(run_cli, tmp_path):
    _write_steps(tmp_path)
    result = run_cli(*STEPS, "-o", "p.yaml", "--accept-poor-fit", "--format", "json")
    assert result.returncode == 0, result.stderr
    notes = yaml.safe_load((tmp_path / "p.yaml").read_text())["poor_fit"]
    assert any(n.startswith("compute_efficiency_frac 1.55") for n in notes), notes
    assert any(n.startswith("memory_efficiency_frac 1.2") for n in notes), notes
    assert json.loads(result.stdout)["profile"]["poor_fit"] == notes
    assert result.stderr.count("warning: poor fit kept (--accept-poor-fit)") == len(notes)


# ---- every answer made with a poor-fit profile says so ---------------------------------


def _cli(folder: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([*cli_command(), *args], cwd=folder, capture_output=True, text=True,
                          timeout=300, env={"COLUMNS": "200", **_env()})  # fmt: skip
    assert done.returncode == 0, (args, done.stderr)
    return done


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if k != "PDD_PLAN_DEBUG"}


@pytest.fixture(scope="module")
def poor(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("poor")
    _write_steps(folder)
    _cli(folder, *STEPS, "-o", "poor.yaml", "--accept-poor-fit", "--no-cv")
    return folder


ANSWERS = {
    "evaluate": ("evaluate", PAPER, PAPER_PDD),
    "simulate": ("simulate", PAPER, PAPER_PDD, "--requests", "2222"),
    "explain": ("explain", PAPER, "--architecture", "pdd"),
    "compare": ("compare", PAPER),
    "sweep": ("sweep", PAPER, "--plan", PAPER_PDD, "--vary",
              "workload.arrival_rate_per_s=40:50:10"),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("command", list(ANSWERS))
def test_every_answer_with_the_profile_says_poor_fit(poor, command):
    args = (*ANSWERS[command], "--engine-profile", "poor.yaml")
    assert "POOR FIT: engine profile " in _cli(poor, *args).stdout
    data = json.loads(_cli(poor, *args, "--format", "json").stdout)
    summaries = list(_profile_summaries(data))
    assert summaries and all(s["poor_fit"] for s in summaries), command


def _profile_summaries(node):
    """Every `engine_profile` mapping anywhere in a JSON answer."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "engine_profile" and isinstance(value, dict):
                yield value
            else:
                yield from _profile_summaries(value)
    elif isinstance(node, list):
        for value in node:
            yield from _profile_summaries(value)


@pytest.mark.slow
def test_the_bom_and_the_report_say_poor_fit(poor):
    _cli(poor, "solve", PAPER, "--architecture", "pdd", "--engine-profile", "poor.yaml",
         "--bom", "bom.csv", "--report", "report.md")  # fmt: skip
    facts = {row[0]: row[1] for row in csv.reader((poor / "bom.csv").open()) if row}
    assert facts["# engine_profile"].startswith("POOR FIT: engine profile ")
    assert "POOR FIT: engine profile " in (poor / "report.md").read_text()


@pytest.mark.slow
def test_a_sound_profile_adds_no_poor_fit_note(run_cli):
    out = json.loads(run_cli("evaluate", PAPER, PAPER_PDD, "--format", "json").stdout)
    assert "poor_fit" not in out["metrics"]["engine_profile"]


# ---- calibrate serving -----------------------------------------------------------------


def _vllm_run(n: int, profile) -> dict:
    """A `vllm bench serve` result simulated at `profile` on one H200 (qwen3_32b)."""
    inst = Instance(CAT.model("qwen3_32b"), CAT.gpus["h200_sxm"], 1, engine_profile=profile)
    s, count = serve(inst, Load(1000, 200, 10 * n, concurrency=n)).summary(), 10 * n
    out = {"backend": "vllm", "model_id": "qwen3_32b", "num_prompts": count,
           "request_rate": "inf", "max_concurrency": n, "duration": s["duration_s"],
           "completed": count, "total_input_tokens": count * 1000,
           "total_output_tokens": count * 200}  # fmt: skip
    for metric in ("ttft", "tpot"):
        out[f"median_{metric}_ms"] = 1e3 * s[f"{metric}_p50_s"]
        out[f"p99_{metric}_ms"] = 1e3 * s[f"{metric}_p99_s"]
    return out


SERVING = ("calibrate", "serving", "--model", "qwen3_32b", "--gpu", "h200_sxm", "--no-cv")


@pytest.mark.slow
def test_serving_faster_than_the_datasheet_bandwidth_is_refused(run_cli, tmp_path):
    """Runs of an engine at 1.22 x H200's catalog HBM efficiency 0.843, 1.03 x the
    datasheet bandwidth, with only the parameters a serving fit frees (so it finds them
    again: tests/cli/test_calibrate_serving.py)."""
    fast = EngineProfile(
        compute_efficiency_frac=0.7, memory_efficiency_frac=1.22, fixed_step_s=0.003,
        prefill_fixed_s=0.02,
    )  # fmt: skip
    for n in (1, 8, 32):
        (tmp_path / f"r{n}.json").write_text(json.dumps(_vllm_run(n, fast)))
    files = ("r1.json", "r8.json", "r32.json")
    result = run_cli(*SERVING, *files, "-o", "p.yaml")
    _one_line_each(result, ("memory_efficiency_frac",))
    assert "h200_sxm's HBM bandwidth datasheet peak" in result.stderr
    assert not (tmp_path / "p.yaml").exists()
    kept = run_cli(*SERVING, *files, "-o", "p.yaml", "--accept-poor-fit")
    assert kept.returncode == 0, kept.stderr
    notes = yaml.safe_load((tmp_path / "p.yaml").read_text())["poor_fit"]
    assert any(n.startswith("memory_efficiency_frac ") for n in notes), notes


@pytest.mark.slow
@pytest.mark.parametrize(
    "key, value, fragment",
    [
        ("duration", "abc", "duration: found 'abc'"),
        ("duration", float("nan"), "duration: found nan"),
        ("duration", -1, "duration: found -1"),
        ("num_prompts", "abc", "num_prompts: found 'abc'"),
        ("num_prompts", float("nan"), "num_prompts: found nan"),
        ("num_prompts", -1, "num_prompts: found -1"),
        ("num_prompts", "inf", "num_prompts: found inf"),
        ("num_prompts", 3, "completed: found 80; expected at most num_prompts (3)"),
    ],
)
def test_a_broken_count_or_duration_is_one_line(run_cli, tmp_path, key, value, fragment):
    run = _vllm_run(8, TRUE) | {key: value}  # `completed` is present: num_prompts unused
    (tmp_path / "r.json").write_text(json.dumps(run))
    result = run_cli(*SERVING, "r.json", "-o", "p.yaml")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: r.json: ") and fragment in lines[0], lines[0]
    assert not (tmp_path / "p.yaml").exists()


# ---- CSV fields over Python csv's 131,072-character limit ------------------------------

LONG = "9" * 140_000


def test_a_steps_csv_field_over_the_csv_limit_is_one_line(run_cli, tmp_path):
    text = _fpm_text(TRUE).splitlines()
    text[5] = f'"{LONG}"' + text[5]  # the 6th line
    (tmp_path / "big.csv").write_text("\n".join(text) + "\n")
    result = run_cli("calibrate", "steps", "big.csv", "--model", "qwen3_32b", "--gpu", "b300",
                     "-o", "p.yaml")  # fmt: skip
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: big.csv: line 6: found a row CSV cannot read")


def test_an_index_csv_field_over_the_limit_is_one_line(run_cli, tmp_path):
    (tmp_path / "run.csv").write_text(_fpm_text(TRUE))
    (tmp_path / "index.csv").write_text(f"file,model,gpu\nrun.csv,qwen3_32b,{LONG}\n")
    result = run_cli("calibrate", "steps", "run.csv", "-o", "p.yaml")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: index.csv: line 2: found a row CSV cannot read")


@pytest.mark.slow
def test_a_serving_csv_field_over_the_limit_is_one_line(run_cli, tmp_path):
    (tmp_path / "runs.csv").write_text(
        "model,gpu,input_tokens,output_tokens,concurrency,ttft_p50_ms,tpot_p50_ms\n"
        f"qwen3_32b,h200_sxm,1000,200,8,100,{LONG}\n"
    )
    result = run_cli("calibrate", "serving", "runs.csv", "-o", "p.yaml")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: runs.csv: line 2: found a row CSV cannot read")


# ---- calibrate observed ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "text, fragment",
    [
        ("offered_rps: null\nttft_s: {p50: 0.1, p90: 0.2}\n", "offered_rps: found nothing"),
        ("offered_rps: 5\nttft_s: {p50: null, p90: 0.2}\ntpot_ms: {p50: 30}\n",
         "ttft_s.p50: found nothing"),
        ("offered_rps: 5\nttft_s: {p50: 0.1}\ntpot_ms: {p50: 30, p99: ~}\n",
         "tpot_ms.p99: found nothing"),
        ("offered_rps: 5\nttft_s: {p50: 0.1}\ntpot_ms: {p50: 30}\ngoodput_rps: null\n",
         "goodput_rps: found nothing"),
    ],
)  # fmt: skip
def test_a_null_observation_is_one_line(run_cli, tmp_path, text, fragment):
    (tmp_path / "obs.yaml").write_text(text)
    result = run_cli("calibrate", "observed", PAPER, PAPER_IDC, "obs.yaml", "-o", "p.yaml")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: obs.yaml: ") and fragment in lines[0], lines[0]


@pytest.mark.slow
def test_observed_faster_than_the_datasheet_bandwidth_is_refused(run_cli, tmp_path):
    """The operating point of the IDC-PD plan evaluated at memory efficiency 1.24: its
    decode GPUs (H200, catalog HBM efficiency 0.843) would stream at 1.05 x the datasheet
    bandwidth; the fit finds it again and is refused, or kept marked."""
    true = {"compute_efficiency_frac": 0.8, "memory_efficiency_frac": 1.24}
    (tmp_path / "true.yaml").write_text(yaml.safe_dump({"name": "t", "parameters": true}))
    done = run_cli("evaluate", PAPER, PAPER_IDC, "--engine-profile", "true.yaml", "--format",
                   "json")  # fmt: skip
    m = json.loads(done.stdout)["metrics"]
    observed = {"offered_rps": m["offered_rps"], "ttft_s": dict(m["ttft_s"]),
                "tpot_ms": {q: 1e3 * v for q, v in m["tpot_s"].items()}}  # fmt: skip
    (tmp_path / "obs.yaml").write_text(yaml.safe_dump(observed))
    args = ("calibrate", "observed", PAPER, PAPER_IDC, "obs.yaml", "-o", "p.yaml")
    _one_line_each(run_cli(*args), ("memory_efficiency_frac",))
    assert not (tmp_path / "p.yaml").exists()
    kept = run_cli(*args, "--accept-poor-fit")
    assert kept.returncode == 0, kept.stderr
    notes = yaml.safe_load((tmp_path / "p.yaml").read_text())["poor_fit"]
    assert any(n.startswith("memory_efficiency_frac 1.2") for n in notes), notes
