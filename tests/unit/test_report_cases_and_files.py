"""The sizing report: the sensitivity cases, rendering from the golden result (no solve),
and `--report` / `--out` writing only on success."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from report_scenarios import fast_scenario_text, section, table_rows

from pdd_plan import api
from pdd_plan.api import (
    HIT_RATE_MEANS,
    report_summary,
    with_gpu_prices,
    with_hit_rate_mean,
    with_line_prices,
)
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.plan import variants
from pdd_plan.report.bom import header_facts
from pdd_plan.report.bom_items import bill
from pdd_plan.report.markdown import composition, render_report

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"


# --- the sensitivity cases ----------------------------------------------------------


@pytest.fixture(scope="module")
def default(catalog):
    return load_scenario(resolve_scenario_path("default"), catalog)


@pytest.mark.parametrize("target", [*HIT_RATE_MEANS, 0.3, 0.99])
def test_hit_rate_cases_have_the_asked_mean_and_keep_the_order(catalog, target):
    s = load_scenario(resolve_scenario_path("template"), catalog)  # has an alternative mix
    moved = with_hit_rate_mean(s, target)
    d = moved.workload.prefix_hit_rate
    assert d.mean() == pytest.approx(target, abs=1e-9)
    values = np.array(d.values)
    assert values.min() >= 0.0 and values.max() <= 1.0
    original = np.array(variants._mapped(s.workload.prefix_hit_rate, lambda h: h).values)
    assert (np.diff(original) > 0).any()  # the order check below has something to check
    assert np.all(np.diff(values)[np.diff(original) > 0] >= 0)  # order kept
    assert set(moved.workload.hit_rate_alternatives) == set(s.workload.hit_rate_alternatives)
    # everything else is untouched
    assert moved.workload.input_tokens == s.workload.input_tokens
    assert moved.datacenters == s.datacenters


def test_price_cases_scale_only_their_prices(catalog, default):
    cheap = with_gpu_prices(default, 0.8)
    for dc, dc2 in zip(default.datacenters, cheap.datacenters, strict=True):
        for o, o2 in zip(dc.gpus, dc2.gpus, strict=True):
            assert o2.price_usd_per_gpu_hour == pytest.approx(0.8 * o.price_usd_per_gpu_hour)
    assert cheap.wan == default.wan
    dear = with_line_prices(default, 2.0, catalog)
    for t in default.wan.tiers:
        base = default.wan.tier_price_usd_per_month.get(t, catalog.lines[t].price_usd_per_month)
        assert dear.wan.tier_price_usd_per_month[t] == pytest.approx(2 * base)
    assert dear.datacenters == default.datacenters


# --- rendering alone (from the golden result: no solve) ------------------------------


@pytest.fixture
def golden_data(catalog, default):
    result = json.loads((GOLDEN / "default.json").read_text())
    infeasible = {"architecture": "colocated", "status": "infeasible", "plan": None,
                  "metrics": None, "reason": "nothing fits"}  # fmt: skip
    data = {
        "version": "test",
        "architecture": "pdd",
        "summary": report_summary(default, catalog),
        "result": result,
        "compare": {"scenario": "default", "architectures": [result, infeasible]},
        "sensitivity": {
            "hit_rate_rule": api.HIT_RATE_RULE,
            "cases": [
                {"case": "GPU x1.2", "change": "every GPU price x1.2", "status": "optimal",
                 "plan": copy.deepcopy(result["plan"]), "metrics": result["metrics"]},
                {"case": "hit rate 0.7", "change": "mean 0.7", "status": "infeasible",
                 "plan": None, "metrics": None, "reason": "no candidate can serve prefill"},
            ],
        },
        "explanation": None,
        "bom_header": header_facts(default, catalog, "pdd"),
        "bom": bill(result["plan"], default, catalog),
    }  # fmt: skip
    data["compare"]["architectures"][0] = {**result, "architecture": "pdd"}
    return data


def test_rendering_without_explain_leaves_a_note(default, golden_data):
    text = render_report(default, golden_data)
    explain = section(text, "6. Explain")
    assert "`pdd-plan explain`" in explain and "From `pdd-plan explain`" not in explain
    assert "the weights do not fit in HBM" in explain  # pruned candidates, with the reason
    assert "infeasible: nothing fits" in section(text, "5. Architectures compared")
    cases = table_rows(section(text, "7. Other hit rates and prices"))
    assert cases[2][-1] == "same plan" and cases[3][-1] == "no candidate can serve prefill"


def test_the_explain_hook_output_goes_in_the_explain_section(default, golden_data):
    golden_data["explanation"] = "Prefill binds: one more H100 node would add 8 req/s."
    text = render_report(default, golden_data)
    explain = section(text, "6. Explain")
    assert "### From `pdd-plan explain`" in explain
    assert "one more H100 node would add 8 req/s" in explain


def test_explains_binding_limits_and_relaxations_are_tabled(default, golden_data):
    golden_data["explanation"] = {
        "constraints": [
            {"constraint": "prefill_capacity_covers_its_demand", "family": "capacity",
             "slack": 0.0, "unit": "req/s", "binding": True},
            {"constraint": "lines_within_the_allowed_count", "family": "lines",
             "slack": 15.0, "unit": "lines", "binding": False},
        ],
        "relaxations": [
            {"constraint": "sla", "relaxation": "TTFT and TPOT limits x1.2",
             "metric": "bcr_rps_per_usd_hour", "before": 0.0988, "status": "optimal",
             "after": 0.0990, "change": 0.0002, "cost_change_usd_per_hour": -95.76,
             "plan_changes": ["relay_decode dc_a h100_sxm x24: 1 -> 0"]},
        ],
        "milp": {"reproduced": True},
    }  # fmt: skip
    explain = section(render_report(default, golden_data), "6. Explain")
    rows = table_rows(explain.split("### From `pdd-plan explain`")[1])
    assert ["`prefill_capacity_covers_its_demand`", "capacity", "0 req/s"] in rows
    assert not any("lines_within_the_allowed_count" in r[0] for r in rows)
    relaxed = next(r for r in rows if r[0] == "TTFT and TPOT limits x1.2")
    assert relaxed[1:] == ["0.0988", "0.099", "+0.0002", "-$95.76/h",
                           "relay_decode dc_a h100_sxm x24: 1 -> 0"]  # fmt: skip


def test_composition_names_every_instance_and_line(golden_data):
    text = composition(golden_data["result"]["plan"])
    for g in golden_data["result"]["plan"]["instances"]:
        assert f"{g['count']} x {g['gpus_per_instance']} {g['gpu']} ({g['datacenter']})" in text
    assert composition(None) == "-"


def test_rendering_refuses_an_unsolved_result(default, golden_data):
    golden_data["result"] = {**golden_data["result"], "plan": None, "metrics": None}
    with pytest.raises(ValueError):
        render_report(default, golden_data)


# --- files only on success ----------------------------------------------------------


@pytest.mark.slow
def test_an_infeasible_scenario_exits_3_and_writes_nothing(run_cli, tmp_path):
    text = fast_scenario_text().replace("max_gpus: 512", "max_gpus: 4")
    (tmp_path / "tiny.yaml").write_text(text)
    result = run_cli("solve", "tiny.yaml", "--report", "r.md", "--out", "out", "--bom", "b.csv")
    assert result.returncode == 3, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]


def test_a_failing_report_writes_no_file_at_all(monkeypatch, tmp_path, golden_data):
    """The report is computed before the first file is written: if it fails, neither the
    BOM nor the LP nor the --out folder appears."""
    from pdd_plan.cli.app import main

    files = api.SolveFiles("\\ lp\n", "bom\n", {"name": "default"})
    monkeypatch.setattr(api, "solve_scenario", lambda *a, **k: (golden_data["result"], files))

    def broken(*args, **kwargs):
        raise RuntimeError("report failed")

    monkeypatch.setattr(api, "sizing_report", broken)
    monkeypatch.chdir(tmp_path)
    args = ["solve", "--report", "r.md", "--out", "out", "--bom", "b.csv", "--dump-lp", "p.lp"]
    with pytest.raises(RuntimeError, match="report failed"):
        main([*args, "--format", "json"])
    assert list(tmp_path.iterdir()) == []
