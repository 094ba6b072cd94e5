"""Issue #14 friction items 11, 12 and 14: verdicts first, warnings where the numbers stop
meaning what they say, and tables at 80 columns that keep what users must type."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from pdd_plan.stages.sweeping import sweep as sw
from tests.conftest import cli_command

TINY = Path(__file__).resolve().parent.parent / "sweep" / "tiny.yaml"
# a plan for tiny.yaml: 1 prefill H100 and 2 decode H100s carry about 2.6 req/s
PLAN = {
    "architecture": "idc_pd",
    "instances": [
        {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 1,
         "count": 1},
        {"role": "decode", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 1,
         "count": 2},
    ],
    "lines": [],
    "policy": {"rld_hit_threshold": 0.9, "handoff": "catch_up", "short_output_cutoff": False},
}  # fmt: skip


def run80(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The real CLI in an 80-column terminal, run from `tmp_path`."""
    env = {k: v for k, v in os.environ.items() if k != "PDD_PLAN_DEBUG"}
    env["COLUMNS"] = "80"
    return subprocess.run([*cli_command(), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def scenario_at(tmp_path: Path, rate_per_s: float, **sla) -> Path:
    data = yaml.safe_load(TINY.read_text())
    data["workload"]["arrival_rate_per_s"] = rate_per_s
    data["sla"].update(sla)
    path = tmp_path / f"tiny_{rate_per_s:g}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def plan_file(tmp_path) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({"plan": PLAN}))
    return path


# --- item 11 -------------------------------------------------------------------------


@pytest.mark.slow
def test_sweep_plan_marks_saturated_and_sla_missed_points_failed(tmp_path, plan_file):
    # 200 req/s on 1 prefill GPU saturates it; at 1 req/s a TTFT P90 limit of 1 ms cannot
    # be met (one pass over a 32B model's 64 GB of weights alone takes ~19 ms on an H100)
    scenario = scenario_at(tmp_path, 1, ttft_p90_s=0.001)
    done = run80(tmp_path, "sweep", str(scenario), "--plan", str(plan_file), "--jobs", "1",
                 "--vary", "workload.arrival_rate_per_s=1,200", "--format", "json")  # fmt: skip
    assert done.returncode == 3, done.stderr  # every point failed: infeasible's exit code
    assert "Traceback" not in done.stderr
    points = json.loads(done.stdout)["points"]
    assert [p["status"] for p in points] == ["sla_missed", "saturated"]
    assert points[0]["error"].startswith("SLA missed: ttft_p90_s")
    assert "prefill" in points[1]["error"] and "saturated" in points[1]["error"]
    assert json.loads(done.stdout)["points_failed"] == 2


def test_evaluated_status_only_when_the_sla_holds():
    met = {"offered_rps": 1, "goodput_rps": 2, "sla_met": True,
           "sla_checks": {"ttft_p90_s": {"value": 0.5, "limit": 1.0}}}  # fmt: skip
    missed = {**met, "sla_met": False,
              "sla_checks": {"ttft_p90_s": {"value": 2.0, "limit": 1.0},
                             "tpot_p90_s": {"value": 0.01, "limit": 0.1}}}  # fmt: skip
    assert sw.evaluated_status(met, None) == ("evaluated", None)
    status, error = sw.evaluated_status(missed, None)
    assert status == "sla_missed" and "ttft_p90_s 2 > 1" in error and "tpot" not in error
    sat = {"first": "decode (2 x 1 h100_sxm) is saturated: offered load 9 >= capacity 3"}
    assert sw.evaluated_status(missed, sat)[0] == "saturated"
    rows = [{"index": 0, "status": "sla_missed", "error": "SLA missed: x"}]
    assert sw.all_failed_error(rows, "s.yaml").exit_code == 3


def test_evaluate_saturated_leads_with_the_verdict_and_every_roles_load(tmp_path, plan_file):
    done = run80(tmp_path, "evaluate", str(scenario_at(tmp_path, 200)), str(plan_file))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("SATURATED: prefill")
    text = " ".join(done.stdout.split())
    # 76 times the rate the plan carries: both roles are named, each far above capacity
    assert "prefill 1," in text and "decode " in text
    loads = text.split("scaled by the rate): ")[1].split(" engine profile")[0]
    assert [part.split()[0] for part in loads.split(", ")][:2] == ["prefill", "decode"]
    assert all(float(part.split()[1].rstrip("%").replace(",", "")) > 100
               for part in loads.split(", ")[:2])  # fmt: skip


@pytest.mark.slow
def test_evaluate_lead_line_says_sla_missed_or_met(tmp_path, plan_file):
    missed = run80(tmp_path, "evaluate", str(scenario_at(tmp_path, 1, ttft_p90_s=0.001)),
                   str(plan_file))  # fmt: skip
    assert missed.returncode == 0, missed.stderr
    assert missed.stdout.startswith("SLA missed: ttft_p90_s")
    met = run80(tmp_path, "evaluate", str(scenario_at(tmp_path, 1)), str(plan_file))
    assert met.stdout.startswith("SLA met: ")


@pytest.mark.slow
@pytest.mark.parametrize("value", ["5-10", "a:b", "1:2:0", "", ","])
def test_malformed_vary_is_refused_before_any_work(tmp_path, plan_file, value):
    spec = f"workload.arrival_rate_per_s={value}"
    done = run80(tmp_path, "sweep", str(TINY), "--plan", str(plan_file), "--vary", spec)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("error: command line: --vary: found ")
    assert repr(spec) in lines[0]
    assert "START:STOP:STEP" in lines[0] or "V1,V2" in lines[0]
    assert "sweep (" not in done.stderr  # no progress bar: no point ran


# --- item 12 -------------------------------------------------------------------------
# Qwen3-32B (its config.json): 64 layers, 64 attention heads, 8 KV heads of 128 dims; bf16
# KV is 64 x 8 x 128 x 2 (K and V) x 2 bytes = 256 KiB a token, 1.25 GiB at 5,000 tokens.


def _estimate(tmp_path, gpus: int, batch: int, fmt: str = "table"):
    return run80(tmp_path, "estimate", "--model", "qwen3_32b", "--gpu", "h100_sxm",
                 "--gpus-per-instance", str(gpus), "--isl", "4000", "--osl", "1000",
                 "--batch", str(batch), "--format", fmt)  # fmt: skip


@pytest.mark.slow
def test_estimate_says_when_the_batch_exceeds_the_hbm_batch(tmp_path):
    # 1,000 requests x 1.25 GiB is 1.2 TiB of KV: no 80 GB H100 pair holds it; one holds
    over = _estimate(tmp_path, 2, 1000)
    assert over.returncode == 0, over.stderr
    text = " ".join(over.stdout.split())
    assert "warning: batch 1,000 exceeds the HBM batch" in text
    as_json = json.loads(_estimate(tmp_path, 2, 1000, "json").stdout)
    assert as_json["batch_exceeds_max_batch"] is True
    fits = json.loads(_estimate(tmp_path, 2, 1, "json").stdout)
    assert fits["batch_exceeds_max_batch"] is False
    assert not any("HBM batch" in w for w in fits["sizing_warnings"])


@pytest.mark.slow
def test_estimate_warns_when_tp_does_not_divide_the_heads(tmp_path):
    six = " ".join(_estimate(tmp_path, 6, 1).stdout.split())
    assert "64 attention heads are not divisible by the tensor-parallel degree 6" in six
    assert "8 KV heads are not divisible by the tensor-parallel degree 6" in six
    four = json.loads(_estimate(tmp_path, 4, 1, "json").stdout)  # 64 / 4 and 8 / 4: even
    assert not any("heads" in w for w in four["sizing_warnings"])
    sixteen = json.loads(_estimate(tmp_path, 16, 1, "json").stdout)  # 16 GPUs, 8 KV heads
    heads = [w for w in sixteen["sizing_warnings"] if "heads" in w]
    assert len(heads) == 1 and "8 KV heads" in heads[0] and "replicate" in heads[0]


# --- item 14 -------------------------------------------------------------------------
PDD_PLAN = {
    "architecture": "pdd",
    "instances": [
        {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 1,
         "count": 1},
        {"role": "relay_decode", "datacenter": "dc_a", "gpu": "h100_sxm",
         "gpus_per_instance": 1, "count": 1},
        {"role": "main_decode", "datacenter": "dc_b", "gpu": "l40s", "gpus_per_instance": 2,
         "count": 2},
    ],
    "lines": [{"tier": "wave_10g", "capacity_gbit_per_s": 10.0, "count": 1}],
    "policy": {"rld_hit_threshold": 0.8, "handoff": "catch_up", "short_output_cutoff": False},
}  # fmt: skip


def _table_rows(text: str, title: str) -> list[list[str]]:
    """The body rows of the table titled `title` in rich's box drawing, cells stripped."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title)
    rows, body = [], False
    for line in lines[start + 1 :]:
        if line.startswith("┡"):
            body = True
        elif line.startswith("└"):
            return rows
        elif body and line.startswith("│"):
            rows.append([c.strip() for c in line.strip("│").split("│")])
    return rows


def test_catalog_list_at_80_columns_shows_every_gpu_id_whole(tmp_path):
    ids = [g["id"] for g in json.loads(run80(tmp_path, "catalog", "list", "--format",
                                             "json").stdout)["gpus"]]  # fmt: skip
    assert "rtx_pro_6000_server" in ids and "h100_sxm" in ids  # the long ones are there
    done = run80(tmp_path, "catalog", "list")
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    first_cells = [row[0] for row in _table_rows(done.stdout, "GPUs")]
    assert first_cells == ids
    headers = done.stdout.split("┡")[0]
    assert "…" not in headers  # no header cut either: a column left out is named instead
    assert "not shown at this width" in " ".join(done.stdout.split())


@pytest.mark.slow
def test_evaluate_puts_the_line_in_its_own_table_and_rounds_the_rate(tmp_path):
    plan = tmp_path / "pdd.yaml"
    plan.write_text(yaml.safe_dump({"plan": PDD_PLAN}))
    done = run80(tmp_path, "evaluate", str(scenario_at(tmp_path, 1.23456)), str(plan))
    assert done.returncode == 0, done.stderr
    instances = _table_rows(done.stdout, "Instances")
    assert [r[0] for r in instances] == ["prefill", "relay_decode", "main_decode"]
    assert not any("wave_10g" in cell for row in instances for cell in row)
    assert _table_rows(done.stdout, "Lines") == [["wave_10g", "10", "1"]]
    assert "Gbit/s" in done.stdout.split("Lines")[1].split("┡")[0]
    assert "offered 1.23 req/s" in done.stdout and "1.23456" not in done.stdout
    # the largest inter-token gap: a row of per-request percentiles and the worst one
    gaps = [r for r in _table_rows(done.stdout, "Latency") if r[0] == "largest gap"]
    assert len(gaps) == 1 and all(cell.endswith(("ms", " s")) for cell in gaps[0][1:])
    assert "largest inter-token gap: " in done.stdout


@pytest.mark.slow
def test_simulator_trace_csv_writes_counts_as_integers(tmp_path, plan_file):
    trace = tmp_path / "trace.csv"
    done = run80(tmp_path, "simulate", str(TINY), str(plan_file), "--requests", "2222",
                 "--trace-out", str(trace))  # fmt: skip
    assert done.returncode == 0, done.stderr
    header, *rows = [line.split(",") for line in trace.read_text().splitlines()]
    counts = [k for k in header if k == "request" or k.endswith(("_tokens", "_instance",
                                                                  "_bytes"))]  # fmt: skip
    assert len(counts) == 10
    for name in counts:
        cells = [row[header.index(name)] for row in rows if row[header.index(name)]]
        assert all(cell.isdigit() for cell in cells), name
