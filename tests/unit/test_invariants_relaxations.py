"""Invariant: a relaxation an infeasible answer names is enough (helper ha's bug hunt).

docs/guarantees.md: exit 3 "always a proof (the limit that cannot be met, by how much)", and each
shortfall carries the `relaxation` to make. A planner sets the key to the figure shown, so
an "at least X" or "above X" figure must not be below the exact threshold, a "below X" rate
not above it (rounding to the nearest figure broke this: "needs 10.5 ms, the limit is 10.5
ms (relax: sla.tpot_p90_ms at least 10.5)" after setting 10.5), and a value the scenario
loader refuses (a utilisation cap above 1) is no relaxation. The exact thresholds below
come from each shortfall's own `needs` and `has` and the scenario's figures."""

from __future__ import annotations

import re

import pytest
import yaml
from llama_two_dc import two_dc_llama

from pdd_plan import api
from pdd_plan.errors import InfeasibleError
from pdd_plan.loaders.catalog import Catalog


def scenario(tmp_path, **over) -> dict:
    return two_dc_llama(**over)


def shortfalls(tmp_path, data: dict, arch: str) -> list[dict]:
    path = tmp_path / "relax.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InfeasibleError) as refused:
        api.solve_scenario(str(path), architecture=arch, catalog=Catalog())
    return refused.value.shortfalls


def figure(text: str, before: str) -> float:
    found = re.search(re.escape(before) + r" ([0-9.,e+-]+)", text)
    assert found, (before, text)
    return float(found.group(1).replace(",", "").rstrip("."))


def test_the_tpot_floor_figure_is_rounded_up_and_is_enough(tmp_path):
    """IDC-PD, 1,000-token prompts: one decode step at batch 1 takes 10.53 ms (the
    shortfall's `needs`); the figure to set must be at least that, and setting it clears
    the TPOT floor."""
    data = scenario(tmp_path, sla__tpot_p90_ms=3, **{"workload__arrival_rate_per_s": 2.0})
    (tpot,) = shortfalls(tmp_path, data, "idc_pd")
    shown = figure(tpot["relaxation"], "sla.tpot_p90_ms at least")
    assert shown >= tpot["needs"]
    data["sla"]["tpot_p90_ms"] = shown
    path = tmp_path / "relax.yaml"
    path.write_text(yaml.safe_dump(data))
    out, _ = api.solve_scenario(str(path), architecture="idc_pd", catalog=Catalog())
    assert out["status"] == "optimal"


def test_the_pool_figures_are_on_the_safe_side_and_the_cap_stays_at_most_1(tmp_path):
    """CDC-PD at 30 req/s of 1,000-token prompts through a pool of 4 x 1 Gbit/s: the
    per-connection rate must be above needs / 4, the arrival rate below rate x has /
    needs; the line would need a utilisation cap above 1, which is no relaxation."""
    data = scenario(tmp_path, workload__arrival_rate_per_s=30.0)
    found = {s["limit"].split(" (")[0]: s for s in shortfalls(tmp_path, data, "cdc_pd")}
    pool = found["WAN connection pool"]
    per_connection = figure(pool["relaxation"], "wan.per_connection_gbit_per_s above")
    assert per_connection >= pool["needs"] / 4
    rate = figure(pool["relaxation"], "an arrival rate below")
    assert rate <= 30.0 * pool["has"] / pool["needs"]
    line = found["WAN line"]
    assert line["needs"] > line["has"] / 0.85  # the cap would have to pass 1
    assert "utilization_cap_frac" not in line["relaxation"]


def test_rounding_towards_the_safe_side_by_hand():
    from pdd_plan.plan.figures import down_3g, up_3g, up_fixed

    assert up_3g(10.532041) == "10.6"  # nearest would be 10.5, below the need
    assert up_3g(10.5) == "10.5"  # a figure already at 3 digits stays
    assert up_3g(78.6432) == "78.7"
    assert down_3g(1.52588) == "1.52"  # nearest would be 1.53, above the limit
    assert down_3g(0.381) == "0.381"
    assert up_fixed(42158.321, 2) == "42,158.33"
    assert up_fixed(99.95, 1) == "100.0"
