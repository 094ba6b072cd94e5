"""`sweep` and `report` read a scenario's load curve (issue #26 item 4): they load the
scenario through scenario_edit, from a copy in a temporary folder, so a curve file
relative to the scenario must still be found; `workload.load_curve.scale` is sweepable,
and each point's single rate is its curve's peak."""

from __future__ import annotations

from pathlib import Path

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.plan.scenario_edit import edited

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diurnal-prometheus.yaml"


def test_an_edited_curve_scenario_finds_its_export_and_scales():
    data = load_yaml(EXAMPLE, "a pdd-plan scenario")
    catalog = Catalog()
    plain, _ = edited(data, {}, str(EXAMPLE), catalog)
    doubled, _ = edited(data, {"workload.load_curve.scale": 2}, str(EXAMPLE), catalog)
    rates = [p.arrival_rate_per_s for p in plain.workload.load_curve.periods]
    assert [p.arrival_rate_per_s for p in doubled.workload.load_curve.periods] == [
        2 * r for r in rates
    ]
    assert plain.workload.arrival_rate_per_s == max(rates) == 80.0  # sweep's single rate
    assert doubled.workload.arrival_rate_per_s == 160.0
