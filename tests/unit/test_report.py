"""The sizing report: every section, the plan's numbers as in the JSON, the assumptions as
in docs/assumptions.md, the sensitivity cases, and `--report` / `--out` writing only on success."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pdd_plan import api
from pdd_plan.api import (
    HIT_RATE_MEANS,
    report_summary,
    solve_loaded,
    with_gpu_prices,
    with_hit_rate_mean,
    with_line_prices,
)
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.plan import variants
from pdd_plan.report.assumptions import ASSUMPTIONS
from pdd_plan.report.bom import COLUMNS, header_facts
from pdd_plan.report.bom_items import bill
from pdd_plan.report.markdown import SECTIONS, composition, render_report
from pdd_plan.report.md_format import dur

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"


def fast_scenario_text() -> str:
    """The default scenario with its routing policy fixed (one policy to search instead of
    six) and three architectures: the whole report in about 10 s on 2 cores."""
    text = resolve_scenario_path("default").read_text()
    text = text.replace("rld_hit_threshold: auto", "rld_hit_threshold: 0.9")
    text = text.replace("handoff: auto", "handoff: catch_up").replace("name: default", "name: fast")
    assert "name: fast" in text and "handoff: catch_up" in text
    return text + "architectures: [pdd, idc_pd, cdc_pd]\n"


@pytest.fixture(scope="module")
def solved_with_report(tmp_path_factory):
    """One CLI run: solve --report --out --format json (the report's extra solves run once)."""
    folder = tmp_path_factory.mktemp("report")
    (folder / "fast.yaml").write_text(fast_scenario_text())
    args = [
        "solve",
        "fast.yaml",
        "--report",
        "report.md",
        "--out",
        "out",
        "--format",
        "json",
        "--architecture",
        "pdd",
    ]  # the report of a PDD plan (solve would choose another)
    exe = Path(sys.executable).with_name("pdd-plan")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]
    env = {k: v for k, v in os.environ.items() if k != "PDD_PLAN_DEBUG"}
    result = subprocess.run(
        [*command, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), (folder / "report.md").read_text(), folder


def section(text: str, title: str) -> str:
    body = text.split(f"\n## {title}\n", 1)[1]
    return body.split("\n## ", 1)[0]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of every Markdown table in `text`, cells stripped."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


# --- the report of a real solve -----------------------------------------------------


@pytest.mark.slow
def test_the_report_has_every_section_in_order(solved_with_report):
    _, text, _ = solved_with_report
    positions = [text.index(f"\n## {title}\n") for title in SECTIONS]
    assert positions == sorted(positions)
    assert text.startswith("# Sizing report: fast\n")


@pytest.mark.slow
def test_the_plan_table_matches_the_json(solved_with_report):
    result, text, _ = solved_with_report
    rows = table_rows(section(text, "2. The plan"))[1:]  # header first
    plan, metrics = result["plan"], result["metrics"]
    gpu_rows = [r for r in rows if r[0] not in ("WAN line", "**total**")]
    assert len(gpu_rows) == len(plan["instances"])
    for g, row in zip(plan["instances"], gpu_rows, strict=True):
        assert row[:5] == [
            g["role"],
            g["datacenter"],
            g["gpu"],
            str(g["gpus_per_instance"]),
            str(g["count"]),
        ]
        assert row[5] == f"{g['gpus_per_instance'] * g['count']:,} GPUs"
    line_rows = [r for r in rows if r[0] == "WAN line"]
    assert [(r[2], r[5].split()[0]) for r in line_rows] == [
        (line["tier"], str(line["count"])) for line in plan["lines"]
    ]
    total = rows[-1]
    assert total[0] == "**total**"
    assert total[7] == f"${metrics['cost_usd_per_hour']:,.2f}"
    assert f"${metrics['cost_usd_per_hour']:,.2f}/h" in section(text, "Summary")
    policy = plan["policy"]
    assert f"at a {policy['rld_hit_threshold']:g} hit" in section(text, "2. The plan")


@pytest.mark.slow
def test_the_bom_and_the_report_agree(solved_with_report):
    _, text, folder = solved_with_report
    bom = (folder / "out" / "bom.csv").read_text().splitlines()
    total_row = next(line.split(",") for line in bom if ",total_hourly,total," in line)
    total_per_hour = float(total_row[COLUMNS.index("cost_usd_per_hour")])
    assert "| **total** |" in text and f"${total_per_hour:,.2f}" in section(text, "2. The plan")


@pytest.mark.slow
def test_the_arithmetic_and_sla_sections_carry_the_json_figures(solved_with_report):
    result, text, _ = solved_with_report
    arithmetic = section(text, "3. What each role carries")
    for role in result["role_arithmetic"]:
        row = next(r for r in table_rows(arithmetic) if r[0] == role["role"])
        assert row[1] == f"{role['instances']} x {role['gpus_per_instance']} {role['gpu']}"
        if role["stage"] == "prefill":
            assert row[4] == dur(role["mean_prefill_s"])
        else:
            assert row[9] == dur(role["step_s"])
    rows = table_rows(section(text, "4. SLA check"))[1:]
    checks = result["metrics"]["sla_checks"]
    assert len(rows) == len(checks)
    for (key, check), row in zip(checks.items(), rows, strict=True):
        metric, pct, _ = key.split("_")
        assert row == [
            f"{metric.upper()} {pct.upper()}",
            dur(check["limit"]),
            dur(check["value"]),
            "yes" if check["value"] <= check["limit"] else "**no**",
        ]


@pytest.mark.slow
def test_the_role_arithmetic_is_evaluates_own(solved_with_report, catalog):
    """The utilisations the API adds per role are those of the metrics, for every
    architecture (the arithmetic retraces evaluate's snapshot)."""
    result, _, _ = solved_with_report
    results = [result]
    s = load_scenario(resolve_scenario_path("default"), catalog)
    for arch in ("idc_pd", "colocated"):
        results.append(solve_loaded(s, arch, catalog, (4, 6, 10), 10.0)[0])
    for r in results:
        util = r["metrics"]["role_utilization_frac"]
        roles = r["role_arithmetic"]
        for role in roles:
            if role["role"] != "colocated":
                key = role["role"] if role["stage"] == "decode" else "prefill"
                assert role["utilization_frac"] == pytest.approx(util[key], rel=1e-9)
        if r["plan"]["architecture"] == "colocated":  # one pool: the busier of its two uses
            assert max(role["utilization_frac"] for role in roles) == pytest.approx(
                util["colocated"], rel=1e-9
            )
            assert roles[0]["utilization_frac"] == pytest.approx(util["prefill"], rel=1e-9)
        json.dumps(r, allow_nan=False)


@pytest.mark.slow
def test_compare_and_sensitivity_tables(solved_with_report):
    result, text, _ = solved_with_report
    compare = table_rows(section(text, "5. Architectures compared"))[1:]
    assert [r[0] for r in compare] == ["**PDD** (this plan)", "IDC-PD", "CDC-PD"]
    assert compare[0][1] == f"${result['metrics']['cost_usd_per_hour']:,.2f}"
    assert compare[1][4] == "1.000"  # IDC-PD against itself
    # the first table of the section (the decode KV layout's follows it: issue #23)
    cases = table_rows(section(text, "7. Other hit rates and prices").split("\nDecode KV")[0])[1:]
    assert [r[0] for r in cases] == [
        "this plan",
        "hit rate 0.7",
        "hit rate 0.95",
        "GPU x0.8",
        "GPU x1.2",
        "line x2",
    ]
    assert all(r[2] in ("optimal", "infeasible") for r in cases)
    gpu_cheaper = next(r for r in cases if r[0] == "GPU x0.8")
    assert (
        float(gpu_cheaper[3].strip("$").replace(",", "")) < result["metrics"]["cost_usd_per_hour"]
    )


@pytest.mark.slow
def test_out_holds_the_same_report(solved_with_report):
    _, text, folder = solved_with_report
    out = folder / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "bom.csv",
        "plan.json",
        "report.md",
        "run.json",
        "scenario.json",
    ]
    assert (out / "report.md").read_text() == text
    assert not [p.name for p in folder.rglob("*.tmp")]


# --- assumptions --------------------------------------------------------------------


def test_the_docs_page_shows_the_packages_assumptions_table_whole():
    """One source (issue #24): the docs page includes the table the report reads."""
    page = (REPO / "docs" / "assumptions.md").read_text()
    assert '--8<-- "pdd_plan/report/assumptions.md"' in page
    table = table_rows((REPO / "pdd_plan" / "report" / "assumptions.md").read_text())
    assert table[0] == ["assumption", "bias"]
    assert [tuple(r) for r in table[1:]] == [tuple(a) for a in ASSUMPTIONS]
    assert len(ASSUMPTIONS) >= 70 and all(a and b for a, b in ASSUMPTIONS)


@pytest.mark.slow
def test_the_report_lists_the_assumptions_that_apply_to_its_plan(solved_with_report):
    _, text, _ = solved_with_report
    body = section(text, "8. Assumptions and the direction of their bias")
    shown = [tuple(r) for r in table_rows(body)[1:]]
    assert shown == [tuple(a) for a in ASSUMPTIONS if tuple(a) in shown]  # the table's order
    # a DeepSeek-V4 PDD plan: its own rows, none about linear attention or MiniMax
    assert any(a.startswith("DeepSeek-V4 indexer") for a, _ in shown)
    assert any(a.startswith("Relay overflow") for a, _ in shown)
    assert not any(a.startswith(("Linear-attention", "MiniMax-M1")) for a, _ in shown)


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


@pytest.mark.slow
def test_the_solved_report_includes_explain_when_it_exists(solved_with_report):
    _, text, _ = solved_with_report
    explain = section(text, "6. Explain")
    assert "### From `pdd-plan explain`" in explain and "re-solved" in explain


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
