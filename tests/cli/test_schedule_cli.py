"""`pdd-plan schedule` on the shipped diurnal day (issue #26's "done when"): a 4:1 curve on
`default` gives a schedule that meets the SLA in every hour, costs less than sizing for
the peak and says by how much; the Prometheus export of the same day plans the same;
the files it writes read back; a scenario without a curve is refused (exit 2)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow  # two schedules of the default's 24 hours: about 8 s
def test_the_diurnal_day_meets_the_sla_every_hour_and_costs_less_than_the_peak(run_cli, tmp_path):
    done = run_cli("schedule", str(EXAMPLES / "diurnal.yaml"), "--out", "run")
    assert done.returncode == 0, done.stderr
    assert "SLA met in 24 of 24 periods" in done.stdout
    assert "less (" in done.stdout and "than it all reserved" in done.stdout
    answer = json.loads((tmp_path / "run" / "schedule.json").read_text())
    assert answer["status"] == "optimal"
    assert all(row["sla_met"] for row in answer["schedule"])
    base = answer["baseline"]
    assert base["peak_rate_per_s"] == 80.0
    for kind in ("all_reserved", "all_on_demand"):
        assert base["savings_per_month_usd"][kind] > 0
        assert base["per_month_usd"][kind] - answer["cost"]["per_month_usd"] == pytest.approx(
            base["savings_per_month_usd"][kind]
        )
    rows = list(csv.DictReader((tmp_path / "run" / "schedule.csv").open()))
    assert len(rows) == 24 and {r["sla_met"] for r in rows} == {"true"}
    cycle = sum(float(r["cost_usd_per_hour"]) * float(r["duration_h"]) for r in rows)
    assert cycle == pytest.approx(answer["cost"]["per_cycle_usd"], abs=0.01 * 24)
    bom = (tmp_path / "run" / "bom.csv").read_text()
    assert "committed base, reserved prices" in bom
    exported = run_cli("schedule", str(EXAMPLES / "diurnal-prometheus.yaml"), "--format", "json")
    assert exported.returncode == 0, exported.stderr
    other = json.loads(exported.stdout)
    assert [r["roles"] for r in other["schedule"]] == [r["roles"] for r in answer["schedule"]]
    assert other["schedule"][0]["start"] == "2025-06-02T00:00:00Z"


def test_a_scenario_without_a_curve_is_one_error_line(run_cli):
    done = run_cli("schedule", "default")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "workload.load_curve" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # the day's schedule and 24 boundary replays: about 15 s
def test_the_diurnal_day_meets_the_sla_every_hour_in_a_replay(run_cli):
    """Each hour replayed from its boundary (the new hour's rate, counts changing there),
    new instances serving from the boundary (ordered a lag ahead)."""
    done = run_cli(
        "simulate", str(EXAMPLES / "diurnal.yaml"), "--schedule", "--lag-min", "2",
        "--order-ahead", "--settle-min", "1", "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    replay = json.loads(done.stdout)["replay"]
    assert replay["sla_met_periods"] == 24 and len(replay["periods"]) == 24
    assert all(p["requests"] >= 2000 for p in replay["periods"])
    assert replay["order_ahead_usd_per_month"] > 0


def test_simulate_needs_a_plan_or_the_schedule(run_cli):
    done = run_cli("simulate", "default")
    assert done.returncode == 2 and "--schedule" in done.stderr
