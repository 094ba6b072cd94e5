"""`solve --confidence P` (issue #23 item 6): the profile's held-out error at its P quantile
is bought as a latency margin. A higher confidence never costs less; the answer (JSON,
table, BOM, report) names the margin and its cost against the plan without it; without
--confidence nothing changes; a profile with no held-out error is one line, exit 2."""

import json

import numpy as np
import pytest
import yaml

SCENARIO = {
    "name": "conf",
    "model": "qwen3_32b",
    "datacenters": [{"id": "dc_a", "roles": ["prefill", "decode"],
                     "gpus": [{"gpu": "h100_sxm", "max_gpus": 256, "gpus_per_instance": [1, 2]}]}],
    "workload": {
        "arrival_rate_per_s": 20,
        "input_tokens": {"kind": "lognormal", "median": 4000, "sigma": 0.5, "low": 256,
                         "high": 16384},
        "output_tokens": {"kind": "lognormal", "median": 200, "sigma": 0.5, "low": 8,
                          "high": 1024},
        "prefix_hit_rate": {"kind": "bins", "bins": [{"low": 0.0, "high": 0.5, "share": 0.5},
                                                     {"low": 0.5, "high": 0.99, "share": 0.5}]},
    },
    "sla": {"ttft_p90_s": 1.0, "tpot_p90_ms": 40},
    "objective": {"kind": "min_cost"},
    "architectures": ["idc_pd"],
}  # fmt: skip
HELD_OUT = {"ttft": [0.9, 1.0, 1.2, 1.5], "tpot": [0.95, 1.05, 1.1, 1.3]}
PARAMETERS = {"compute_efficiency_frac": 0.8, "memory_efficiency_frac": 0.85}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SCENARIO))
    profile = {"name": "conf_profile", "parameters": PARAMETERS, "held_out_ratio": HELD_OUT}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(profile))
    return tmp_path


def _solve(run_cli, *extra) -> dict:
    done = run_cli("solve", "s.yaml", "--engine-profile", "p.yaml", "--format", "json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_confidence_costs_more_the_higher_it_is_and_names_its_margin(run_cli, files):
    plain = _solve(run_cli)
    assert "confidence" not in plain  # without --confidence: the answer as before
    base = plain["metrics"]["cost_usd_per_hour"]
    costs = [base]
    for level in (0.5, 0.75, 0.95):
        got = _solve(run_cli, "--confidence", str(level))["confidence"]
        # the margin is the held-out ratios' quantile (numpy's linear), never below 1
        for metric, ratios in HELD_OUT.items():
            want = max(1.0, float(np.quantile(ratios, level)))
            assert got["latency_factor"][metric] == pytest.approx(want), (level, metric)
        assert got["cost_without_margin_usd_per_hour"] == pytest.approx(base)
        assert got["margin_cost_usd_per_hour"] == pytest.approx(got["cost_usd_per_hour"] - base)
        assert f"confidence {level:g}" in got["text"] and "conf_profile" in got["text"]
        costs.append(got["cost_usd_per_hour"])
    assert costs == sorted(costs), costs  # a larger margin never buys a cheaper plan
    assert costs[-1] > costs[0], costs  # and at 0.95 (TTFT x1.46) this one costs more


def test_the_table_bom_and_report_say_the_margin(run_cli, files):
    done = run_cli("solve", "s.yaml", "--engine-profile", "p.yaml", "--confidence", "0.9",
                   "--bom", "bom.csv", "--report", "r.md")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "margin bought: confidence 0.9" in " ".join(done.stdout.split())
    bom = (files / "bom.csv").read_text().splitlines()
    assert bom[1].startswith("# confidence margin,") and "without" in bom[1]
    report = (files / "r.md").read_text()
    assert "## Confidence margin" in report and "TTFT x1.41" in report


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["none", "no_held_out"])
def test_a_profile_without_held_out_error_is_one_line(run_cli, files, profile):
    args = ["solve", "s.yaml", "--confidence", "0.9", "--out", "out"]
    if profile == "no_held_out":
        (files / "q.yaml").write_text(yaml.safe_dump({"name": "q", "parameters": PARAMETERS}))
        args += ["--engine-profile", "q.yaml"]
    done = run_cli(*args)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: command line: --confidence: found 0.9 with engine profile")
    assert "held_out_ratio" in lines[0] and "Traceback" not in done.stderr
    assert not (files / "out").exists()


@pytest.mark.slow
def test_a_margin_no_plan_meets_says_so_and_the_cost_without(run_cli, files):
    """Held-out ratios of 4-5 divide the 40 ms TPOT limit to about 8 ms: below one decode
    step of Qwen3-32B on two H100 (over 65 GB of weights read at about 6 TB/s), so no plan;
    the one line (exit 3) says the margin and the cost of the plan without it."""
    huge = {"name": "huge", "parameters": PARAMETERS,
            "held_out_ratio": {"ttft": [4.0, 5.0], "tpot": [4.0, 5.0]}}  # fmt: skip
    (files / "h.yaml").write_text(yaml.safe_dump(huge))
    base = _solve(run_cli)["metrics"]["cost_usd_per_hour"]
    done = run_cli("solve", "s.yaml", "--engine-profile", "h.yaml", "--confidence", "0.9")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1, done.stderr
    assert "sized with a margin: confidence 0.9" in lines[0] and "TPOT x4.9" in lines[0]
    assert f"no plan meets the SLA with it (${base:,.2f}/h without it)" in lines[0]
