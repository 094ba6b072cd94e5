"""`pdd-plan calibrate observed`: a plan evaluated at a known profile is the observation;
the fit recovers the profile's efficiencies within 5 % and `evaluate` with the fitted
profile reproduces the observed percentiles within 10 % (issue #13, Done-when). Bad or
contradictory observations are one line, exit 2."""

import json
from pathlib import Path

import pytest
import yaml

import pdd_plan

ROOT = Path(pdd_plan.__file__).parent.parent
SCENARIO = str(ROOT / "scenarios" / "pdd-paper.yaml")
PLAN = str(ROOT / "scenarios" / "plans" / "pdd-paper-idc_pd.yaml")
TRUE = {"compute_efficiency_frac": 0.8, "memory_efficiency_frac": 0.85}


def _evaluate(run_cli, profile: str) -> dict:
    result = run_cli("evaluate", SCENARIO, PLAN, "--engine-profile", profile, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["metrics"]


def _observed(metrics: dict) -> dict:
    return {
        "offered_rps": metrics["offered_rps"],
        "ttft_s": dict(metrics["ttft_s"]),
        "tpot_ms": {q: 1e3 * v for q, v in metrics["tpot_s"].items()},
    }


def test_fit_recovers_the_efficiencies_and_evaluate_reproduces_the_percentiles(run_cli, tmp_path):
    (tmp_path / "true.yaml").write_text(
        yaml.safe_dump({"name": "true_profile", "parameters": TRUE})
    )
    truth = _evaluate(run_cli, "true.yaml")
    (tmp_path / "observed.yaml").write_text(yaml.safe_dump(_observed(truth)))
    result = run_cli(
        "calibrate", "observed", SCENARIO, PLAN, "observed.yaml", "-o", "fitted.yaml",
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    fitted = yaml.safe_load((tmp_path / "fitted.yaml").read_text())["parameters"]
    for key, value in TRUE.items():
        assert fitted[key] == pytest.approx(value, rel=0.05), key
    data = json.loads(result.stdout)
    quantiles = ("p50", "p90", "p99")
    assert set(data["figures"]) == {f"{m}_{q}" for m in ("ttft", "tpot") for q in quantiles}
    again = _evaluate(run_cli, "fitted.yaml")
    for metric in ("ttft_s", "tpot_s"):
        for q, value in truth[metric].items():
            assert again[metric][q] == pytest.approx(value, rel=0.10), (metric, q)
    assert again["engine_profile"]["source"].endswith("fitted.yaml")


def _refused(run_cli, tmp_path, observed) -> str:
    text = observed if isinstance(observed, str) else yaml.safe_dump(observed)
    (tmp_path / "obs.yaml").write_text(text)
    result = run_cli("calibrate", "observed", SCENARIO, PLAN, "obs.yaml", "-o", "p.yaml")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: obs.yaml") and "Traceback" not in result.stderr
    assert not (tmp_path / "p.yaml").exists()
    return lines[0]


@pytest.mark.slow
def test_contradictory_observations_are_refused(run_cli, tmp_path):
    """A P50 TTFT fifty times its own P99 cannot come from any profile."""
    observed = {"offered_rps": 50, "ttft_s": {"p50": 5.0, "p99": 0.1}, "tpot_ms": {"p50": 36}}
    line = _refused(run_cli, tmp_path, observed)  # refused as read: a CDF cannot decrease
    assert "ttft_s.p99: found 0.1" in line and "percentiles do not decrease" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    "observed, fragment",
    [
        ({"offered_rps": 50, "tpot_ms": {"p50": 36}}, "at least 2"),
        ({"offered_rps": 50}, "ttft_s"),
        ({"ttft_s": {"p50": 0.1}, "tpot_ms": {"p50": 36}}, "offered_rps"),
        ({"offered_rps": -3, "ttft_s": {"p50": 0.1, "p90": 0.2}}, "offered_rps"),
        ({"offered_rps": 50, "ttft_s": {"p50": "fast", "p90": 0.2}}, "ttft_s.p50"),
        ({"offered_rps": 50, "ttft_s": {"p95": 0.1}, "tpot_ms": {"p50": 3}}, "ttft_s.p95"),
        ({"offered_rps": 50, "ttft_ms": {"p50": 100}}, "ttft_ms"),
        ("offered_rps: [\n", "YAML"),
        ("", "empty"),
    ],
)
def test_bad_observations_are_one_line(run_cli, tmp_path, observed, fragment):
    line = _refused(run_cli, tmp_path, observed)
    assert fragment in line, line
