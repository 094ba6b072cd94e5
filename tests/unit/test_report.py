"""The sizing report: every section, the plan's numbers as in the JSON, the assumptions as
in docs/assumptions.md, the sensitivity cases, and `--report` / `--out` writing only on success."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from report_scenarios import fast_scenario_text, section, table_rows

from pdd_plan.api import (
    solve_loaded,
)
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.report.assumptions import ASSUMPTIONS
from pdd_plan.report.bom import COLUMNS
from pdd_plan.report.markdown import SECTIONS
from pdd_plan.report.md_format import dur

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"


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


@pytest.mark.slow
def test_the_solved_report_includes_explain_when_it_exists(solved_with_report):
    _, text, _ = solved_with_report
    explain = section(text, "6. Explain")
    assert "### From `pdd-plan explain`" in explain and "re-solved" in explain
