"""`pdd-plan sweep` and `pdd-plan report` on the command line: exit codes, one-line
errors before any point runs, the files of --out, and JSON equal to the API's rows."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image
import pytest
import yaml

from pdd_plan.stages.sweeping import sweep as sw

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

TINY = Path(__file__).with_name("tiny.yaml")


def _one_line_error(done, code: int, *words: str) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_unknown_key_exits_2_with_did_you_mean_before_any_point(run_cli, tmp_path):
    out = tmp_path / "out"
    done = run_cli("sweep", str(TINY), "--vary", "workload.arrival_rate_per_s=1,2",
                   "--vary", "workload.arival_rate_per_s=1,2", "--out", str(out))  # fmt: skip
    _one_line_error(
        done, 2, "--vary workload.arival_rate_per_s", "did you mean 'arrival_rate_per_s'"
    )
    assert not out.exists()  # nothing ran, nothing was written


def test_malformed_axis_and_architecture_exit_2(run_cli):
    done = run_cli("sweep", str(TINY), "--vary", "workload.arrival_rate_per_s=3:1:1")
    _one_line_error(done, 2, "START <= STOP")
    done = run_cli("sweep", str(TINY), "--vary", "architecture=pdd,idcpd")
    _one_line_error(done, 2, "did you mean 'idc_pd'")


def test_sweep_writes_csv_json_plots_and_matches_the_api(run_cli, tmp_path):
    out = tmp_path / "out"
    args = ["workload.arrival_rate_per_s=1,2", "workload.prefix_hit_rate.mean=0.5,0.9"]
    done = run_cli("sweep", str(TINY), "--vary", args[0], "--vary", args[1],
                   "--architecture", "idc_pd", "--jobs", "2", "--out", str(out),
                   "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["points_total"] == 4 and printed["points_failed"] == 0
    for name in ("sweep.csv", "sweep.json", "run.json", "bathtub.svg", "bathtub.png",
                 "pareto.svg", "composition.png", "cost.svg", "bcr.png"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    assert (out / "bathtub.svg").read_text().lstrip().startswith("<svg")
    assert matplotlib.image.imread(out / "bathtub.png").std() > 0.01
    assert len((out / "sweep.csv").read_text().splitlines()) == 1 + 4
    assert json.loads((out / "sweep.json").read_text())["points"] == printed["points"]
    api_rows = sw.run(sw.prepare(TINY, args, architecture="idc_pd"), jobs=1)

    def strip(rows):
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]

    assert strip(printed["points"]) == strip(api_rows)


def test_sweep_with_a_plan_evaluates_it_at_every_point(run_cli, tmp_path):
    solved = run_cli("solve", str(TINY), "--architecture", "idc_pd", "--format", "json")
    assert solved.returncode == 0, solved.stderr
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"plan": json.loads(solved.stdout)["plan"]}))
    done = run_cli("sweep", str(TINY), "--plan", str(plan), "--vary",
                   "workload.arrival_rate_per_s=0.5,1,200", "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    points = json.loads(done.stdout)["points"]
    assert [p["status"] for p in points[:2]] == ["evaluated", "evaluated"]
    assert points[0]["plan"] == points[1]["plan"] == json.loads(solved.stdout)["plan"]
    cost = {p["metrics"]["cost_usd_per_hour"] for p in points[:2]}
    assert len(cost) == 1  # the same plan costs the same at any demand
    over = points[2]["metrics"]  # far beyond what the plan carries: saturated, a failed point
    assert points[2]["status"] == "saturated" and over["sla_met"] is False
    assert over["goodput_rps"] < over["offered_rps"] == 200


def test_report_bad_hit_rates_exit_2_and_infeasible_exit_3(run_cli, tmp_path):
    out = tmp_path / "r.html"
    done = run_cli("report", str(TINY), "-o", str(out), "--hit-rates", "0.5,2")
    _one_line_error(done, 2, "--hit-rates")
    data = yaml.safe_load(TINY.read_text())
    data["workload"]["arrival_rate_per_s"] = 100000
    big = tmp_path / "big.yaml"
    big.write_text(yaml.safe_dump(data))
    done = run_cli("report", str(big), "-o", str(out), "--hit-rates", "0.5", "--jobs", "1")
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_run_json_names_the_engine_profile_every_point_used(run_cli, tmp_path):
    """Issue #13: a sweep's own record says which engine profile its absolute times are in
    (the name and fit error read from the profile file itself, not from the code)."""
    engines = Path(__file__).resolve().parents[2] / "hardware_catalog" / "engines"
    profile_file = engines / "vllm_0_20_b300_qwen3_32b.yaml"
    stated = yaml.safe_load(profile_file.read_text())
    for extra, name, identity in (
        (["--engine-profile", str(profile_file)], stated["name"], False),
        ([], "roofline_default", True),
    ):
        out = tmp_path / f"out_{name}"
        done = run_cli("sweep", str(TINY), "--vary", "workload.arrival_rate_per_s=1,2",
                       "--architecture", "idc_pd", "--out", str(out), *extra)  # fmt: skip
        assert done.returncode == 0, done.stderr
        run = json.loads((out / "run.json").read_text())
        assert run["engine_profile"]["name"] == name
        assert run["engine_profile"]["identity"] is identity
        if not identity:
            assert run["engine_profile"]["cv_error_frac"] == stated["cv_error_frac"]
