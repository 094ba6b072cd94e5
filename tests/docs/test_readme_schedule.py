"""The README's day-long example (issue #26): its figures are what `pdd-plan schedule
examples/diurnal.yaml` answers, read from the command's JSON, not typed twice."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_readme_quotes_the_schedule_of_the_diurnal_example():
    run = subprocess.run(
        [sys.executable, "-m", "pdd_plan", "schedule", str(REPO / "examples" / "diurnal.yaml"),
         "--format", "json"],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    answer = json.loads(run.stdout)
    text = " ".join((REPO / "README.md").read_text().split())
    said = re.search(r"`pdd-plan schedule examples/diurnal\.yaml` (.*?)Load curves", text).group(1)
    curve, cost, base = answer["curve"], answer["cost"], answer["baseline"]
    assert f"{curve['trough_rate_per_s']:g} to {curve['peak_rate_per_s']:g} req/s" in said
    assert curve["peak_rate_per_s"] / curve["trough_rate_per_s"] == 4  # "a 4:1 day"
    reserved = {i["role"]: i["count"] for i in answer["plan"]["instances"]}
    assert f"{reserved['prefill']} prefill and {reserved['main_decode']} main-decode" in said
    on_demand = [(r["role"], r["on_demand"]) for p in answer["schedule"] for r in p["roles"]]
    extra = {role: max(n for r, n in on_demand if r == role) for role in reserved}
    assert extra["prefill"] == extra["main_decode"] and f"up to {extra['prefill']} more" in said
    met = sum(p["sla_met"] for p in answer["schedule"])
    assert f"SLA met in {met} of {len(answer['schedule'])} hours" in said
    assert f"${cost['per_month_usd']:,.0f} a month" in said
    saving, frac = (
        base["savings_per_month_usd"]["all_reserved"],
        base["savings_frac"]["all_reserved"],
    )
    assert f"${saving:,.0f} ({frac * 100:.0f} %) less than the peak's plan all reserved" in said
