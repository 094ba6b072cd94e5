"""Invariant: the plan `solve` recommends runs no GPU role above the scenario's
utilisation cap at the rate it is sized for (helper ha's bug hunt).

The template documents `policy.utilization_cap_frac` as the "planned utilisation ceiling of
every role" and docs/optimiser.md says the line "is held under the same utilisation cap as every
GPU role, in the MILP and in the search". The search held only the line under the cap: it
accepted any plan meeting the SLA percentiles, so with a loose SLA prefill was planned at
0.987 under a 0.85 cap (and decode above the 95 % regime warning evaluate then raised).
Now a plan's every GPU role must be within the cap at the rate every plan must carry
(plan/role_cap.py, search.py)."""

from __future__ import annotations

import pytest
import yaml

from pdd_plan import api
from pdd_plan.loaders.catalog import Catalog


def idc_pd(tmp_path, cap_frac: float) -> str:
    """IDC-PD of Llama-3.1-70B at 20 req/s, fixed lengths, loose SLA: solved in a moment."""
    data = {
        "name": "cap",
        "model": "llama_3_1_70b",
        "datacenters": [
            {"id": "dc_a", "roles": ["prefill", "decode"],
             "gpus": [{"gpu": "h100_sxm", "max_gpus": 64}]},
        ],
        "workload": {
            "arrival_rate_per_s": 20,
            "input_tokens": {"kind": "fixed", "value": 4000},
            "output_tokens": {"kind": "fixed", "value": 100},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 60, "tpot_p90_ms": 100},
        "objective": {"kind": "min_cost"},
        "policy": {"utilization_cap_frac": cap_frac},
        "architectures": ["idc_pd"],
    }  # fmt: skip
    path = tmp_path / f"cap_{cap_frac}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("cap_frac", [0.5, 0.85])
def test_no_gpu_role_is_planned_above_the_cap(tmp_path, cap_frac):
    out, _ = api.solve_scenario(idc_pd(tmp_path, cap_frac), catalog=Catalog(), jobs=1)
    assert out["status"] == "optimal"
    util = out["metrics"]["role_utilization_frac"]  # at the offered rate, = the demand here
    gpu_roles = {r: u for r, u in util.items() if r not in ("wan_line", "wan_pool")}
    assert gpu_roles and all(u <= cap_frac * (1 + 1e-9) for u in gpu_roles.values()), util


def test_a_cap_of_one_removes_no_plan_the_sla_accepts(tmp_path, monkeypatch):
    """At a cap of 1 the rule removes only plans with a role saturated at the floor rate;
    such a plan misses the SLA at any rate at or above it (a saturated queue grows without
    bound, so no latency percentile is finite: evaluate's meets_sla is False on saturation),
    so the answer is the SLA-only one: the same plan and cost as the search with the GPU
    roles' cap switched off. The scenario's SLA is loose enough that the SLA-only plan runs
    a role above 0.85 (the cap-0.85 case above is about something)."""
    from pdd_plan.plan import search as sr

    path = idc_pd(tmp_path, 1.0)
    capped, _ = api.solve_scenario(path, catalog=Catalog(), jobs=1)
    monkeypatch.setattr(sr, "roles_within_cap", lambda setup, rate, cap: True)
    free, _ = api.solve_scenario(path, catalog=Catalog(), jobs=1)
    assert capped["status"] == free["status"] == "optimal"
    assert capped["plan"] == free["plan"]
    assert capped["metrics"]["cost_usd_per_hour"] == free["metrics"]["cost_usd_per_hour"]
    util = free["metrics"]["role_utilization_frac"]
    assert max(util.values()) > 0.85, util


@pytest.mark.parametrize("arch", ["pdd", "cdc_pd", "idc_pd"])
@pytest.mark.parametrize("rate_frac", [0.3, 0.9])
def test_the_cap_reads_evaluates_own_loads(catalog, arch, rate_frac):
    """The cap's loads (evaluate.utilization_frac, computed without the percentiles) are
    exactly what evaluate's snapshot reports as utilization_frac, role for role, on the
    paper's three published plans at 30 % and 90 % of each plan's goodput: the search
    refuses a plan by the same figures a user reads in its answer."""
    from pdd_plan.loaders.plan_file import load_plan
    from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path, scenarios_dir
    from pdd_plan.model.evaluate import goodput_rps, prepare, snapshot, utilization_frac

    s = load_scenario(resolve_scenario_path("pdd-paper"), catalog)
    plan = load_plan(scenarios_dir() / "plans" / f"pdd-paper-{arch}.yaml", s, catalog)
    setup = prepare(s, plan, catalog.model_for(s), catalog.gpus, catalog.lines, (1, 10, 24))
    rate = rate_frac * goodput_rps(setup)
    assert utilization_frac(setup, rate) == snapshot(setup, rate).utilization_frac
