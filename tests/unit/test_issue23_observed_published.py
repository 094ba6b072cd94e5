"""The published operating points of the PDD deployment (issue #23 item 3): PDD at 11.5
req/s (its published SLA goodput) with TTFT P50/P90/P99 4.2 / 9.8 / 14.4 s and CDC-PD at
the same load with 6.7 / 18.3 / 29.7 s (../shared/pdd-system.md section 4 [pub]), fitted
jointly by `calibrate observed` with the prefill pool's compute efficiency and per-step
fixed time and the decode step's time per running request (the decode side's load, which
CDC-PD carries whole and PDD shares with its relay). Before issue #23 the command read one
point and one plan, and refused PDD's point alone (best fit TTFT P50 1.37 s against 4.2 s).

What is held: each fitted parameter inside its physical range and off its bounds, every
percentile within the issue's 20 %. (Without the decode term the best fit misses CDC-PD's
P90 by 22 %: the prefill terms move both plans alike, they share the prefill pool.)"""

import json
import re
from pathlib import Path

import pytest
import yaml

import pdd_plan
from pdd_plan.model.compute.engine_profile import PARAMETERS

ROOT = Path(pdd_plan.__file__).parent.parent
OBSERVED = ROOT / "scenarios" / "observed" / "pdd-paper-ttft.yaml"
PROFILE = ROOT / "scenarios" / "observed" / "pdd-paper-profile.yaml"
PLANS = ROOT / "scenarios" / "plans"
# ../shared/pdd-system.md section 4 [pub]; the rate is PDD's published SLA goodput (§7)
PUBLISHED = {
    "pdd-paper-pdd.yaml": {"p50": 4.2, "p90": 9.8, "p99": 14.4},
    "pdd-paper-cdc_pd.yaml": {"p50": 6.7, "p90": 18.3, "p99": 29.7},
}
RATE_RPS = 11.5
FIT = ("--fit", "compute_efficiency_frac", "--fit", "prefill_fixed_s",
       "--fit", "decode_request_s")  # fmt: skip
ACCEPTED_FRAC = 0.20  # the target, on every percentile


def test_the_shipped_points_are_the_published_ones_with_their_source():
    doc = yaml.safe_load(OBSERVED.read_text())
    for point in doc["points"]:
        plan = Path(point["plan"]).name
        assert point["ttft_s"] == PUBLISHED[plan] and point["offered_rps"] == RATE_RPS
        assert "section 4" in point["source"] and "[pub]" in point["source"]


def test_the_published_figures_are_those_of_the_system_notes(shared_dir):
    text = (shared_dir / "pdd-system.md").read_text()
    section = text[text.index("## 4.") : text.index("## 5.")]
    figures = [float(x) for x in re.findall(r"\*\*([\d.]+) s\*\*", section)]
    cdc, pdd = PUBLISHED["pdd-paper-cdc_pd.yaml"], PUBLISHED["pdd-paper-pdd.yaml"]
    assert figures == [*cdc.values(), *pdd.values()]


@pytest.mark.slow
def test_the_two_plans_are_fitted_jointly_within_20_percent(run_cli, tmp_path):
    done = run_cli("calibrate", "observed", "pdd-paper", str(PLANS / "pdd-paper-pdd.yaml"),
                   str(OBSERVED), *FIT, "-o", "p.yaml", "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for name, got in data["fitted"].items():
        low, high = PARAMETERS[name][1], PARAMETERS[name][2]
        assert low < got["fit"] < high and not got["at_bound"], (name, got)
        assert got["rel_std"] is not None and got["rel_std"] < 1.0, (name, got)
    for point in data["points"]:
        want = PUBLISHED[Path(point["plan"]).name]
        for q, value in want.items():
            got = point["figures"][f"ttft_{q}"]
            assert got["observed"] == value
            assert abs(got["ratio"] - 1) <= ACCEPTED_FRAC, (point["plan"], q, got)
    assert data["held_out"]["folds"] == 2  # each plan predicted from the other's fit


@pytest.mark.slow
@pytest.mark.parametrize("plan", sorted(PUBLISHED))
def test_the_shipped_profile_reproduces_the_points_through_evaluate(run_cli, tmp_path, plan):
    s = yaml.safe_load((ROOT / "scenarios" / "pdd-paper.yaml").read_text())
    s["workload"]["arrival_rate_per_s"] = RATE_RPS
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(s))
    done = run_cli("evaluate", "s.yaml", str(PLANS / plan), "--engine-profile", str(PROFILE),
                   "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    ttft = json.loads(done.stdout)["metrics"]["ttft_s"]
    for q, value in PUBLISHED[plan].items():
        assert ttft[q] == pytest.approx(value, rel=ACCEPTED_FRAC), (plan, q)
