"""The CSV bill of materials and the --out folder."""

import csv
import io
import json

import pytest

from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.report.bom import bom_csv, spreadsheet_safe

PLAN = {
    "architecture": "pdd",
    "instances": [
        {"role": "prefill", "datacenter": "dc_a", "gpu": "h100_sxm", "gpus_per_instance": 24,
         "count": 2},
        {"role": "main_decode", "datacenter": "dc_b", "gpu": "h200_sxm", "gpus_per_instance": 8,
         "count": 3},
    ],
    "lines": [{"tier": "wave_10g", "capacity_gbit_per_s": 10, "count": 2}],
}  # fmt: skip


@pytest.mark.parametrize("cell", ["=1+2", "+SUM(A1)", "-3", "@cmd", "\tx"])
def test_formula_cells_are_quoted(cell):
    assert spreadsheet_safe(cell) == "'" + cell
    assert spreadsheet_safe("h100_sxm") == "h100_sxm"


def item_rows(text: str) -> list[dict]:
    """The rows after the `#` comment rows and the header."""
    return list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))


def test_bom_rows_and_totals_by_hand(catalog):
    """48 H100 at $3.99 + 24 H200 at $3.99 per GPU-hour; 2 lines at $724 a month."""
    scenario = load_scenario(resolve_scenario_path("default"), catalog)
    rows = item_rows(bom_csv(PLAN, scenario, catalog))
    hourly_rows = [r for r in rows if r["counts_in"] == "total_hourly"]
    assert [r["item"] for r in hourly_rows] == ["h100_sxm", "h200_sxm", "wave_10g"]
    assert float(rows[0]["cost_usd_per_hour"]) == pytest.approx(48 * 3.99)
    assert float(rows[2]["cost_usd_per_month"]) == pytest.approx(2 * 724)
    hourly = 48 * 3.99 + 24 * 3.99 + 2 * 724 / 730
    total = next(r for r in rows if r["item"] == "total_hourly")
    assert total["kind"] == "total"
    assert float(total["cost_usd_per_hour"]) == pytest.approx(hourly, abs=0.01)
    assert float(total["cost_usd_per_year"]) == pytest.approx(hourly * 8760, rel=1e-4)
    nodes = {r["item"]: (int(r["nodes"]), int(r["spare_gpus"])) for r in rows
             if r["kind"] == "nodes"}  # fmt: skip
    assert nodes == {"h100_sxm": (6, 0), "h200_sxm": (3, 0)}  # 48 and 24 GPUs, 8 a node
    assert all(not v.startswith(("=", "+", "-", "@")) for r in rows for v in r.values())


@pytest.mark.slow
def test_solve_out_folder_and_bom_match_the_plan(run_cli, tmp_path):
    result = run_cli("solve", "--out", "out", "--bom", "bom.csv", "--format", "json")
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "out"
    assert sorted(p.name for p in folder.iterdir()) == [
        "bom.csv",
        "plan.json",
        "report.md",
        "run.json",
        "scenario.json",
    ]
    plan = json.loads((folder / "plan.json").read_text())
    rows = item_rows((tmp_path / "bom.csv").read_text())
    total = float(next(r for r in rows if r["item"] == "total_hourly")["cost_usd_per_hour"])
    assert total == pytest.approx(plan["metrics"]["cost_usd_per_hour"], abs=0.01)
    run = json.loads((folder / "run.json").read_text())
    assert run["status"] == "optimal" and run["solver"].startswith("HiGHS")
    resolved = json.loads((folder / "scenario.json").read_text())
    assert resolved["policy"]["utilization_cap_frac"] == 0.85  # a default, filled in
    assert not [p for p in tmp_path.rglob("*.tmp")]  # no half-written leftovers
