"""Issue #13, Done-when: results name the engine profile they were computed with, its
source and its cross-validated error (here: `explain`, which did not)."""

import json

import pytest
import yaml

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

PROFILE = {
    "name": "fitted_here",
    "engine": "vllm",
    "engine_version": "0.20",
    "gpu": "h200_sxm",
    "parameters": {"memory_efficiency_frac": 0.9},
    "cv_error_frac": {"ttft": 0.07, "tpot": 0.03},
}


def test_explain_names_the_profile(run_cli, tmp_path):
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    args = ["explain", "--time-limit", "5", "--engine-profile", "p.yaml"]
    result = run_cli(*args, "--format", "json")
    assert result.returncode == 0, result.stderr
    named = json.loads(result.stdout)["engine_profile"]
    assert named["name"] == "fitted_here" and named["source"].endswith("p.yaml")
    assert named["cv_error_frac"] == {"ttft": 0.07, "tpot": 0.03}
    assert named["identity"] is False
    table = run_cli(*args)
    assert table.returncode == 0, table.stderr
    text = " ".join(table.stdout.split())
    assert "engine profile: fitted_here" in text and "ttft 7 %, tpot 3 %" in text


def test_explain_without_a_profile_says_it_is_the_plain_roofline(run_cli):
    result = run_cli("explain", "--time-limit", "5", "--format", "json")
    assert result.returncode == 0, result.stderr
    named = json.loads(result.stdout)["engine_profile"]
    assert named["identity"] is True and named["source"] == "built-in"


def test_sweep_points_name_the_profile_when_evaluating_a_plan(run_cli, tmp_path):
    import pdd_plan

    root = __import__("pathlib").Path(pdd_plan.__file__).parent.parent
    plan = str(root / "scenarios" / "plans" / "pdd-paper-idc_pd.yaml")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    result = run_cli(
        "sweep", "pdd-paper", "--plan", plan, "--vary", "workload.arrival_rate_per_s=30,40",
        "--engine-profile", "p.yaml", "--jobs", "1", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    points = json.loads(result.stdout)["points"]
    assert len(points) == 2
    for point in points:
        named = point["metrics"]["engine_profile"]
        assert named["name"] == "fitted_here" and named["cv_error_frac"]["tpot"] == 0.03
