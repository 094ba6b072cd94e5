"""Golden files: `pdd-plan solve SCENARIO --format json` and its `--bom` CSV for every
scenario in scenarios/, compared value by value (numbers to a relative 1e-6).

`PDD_PLAN_UPDATE_GOLDEN=1 python -m pytest tests/golden` rewrites them instead of
comparing (tests/golden/README.md says when that is right).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent
SCENARIOS = sorted((GOLDEN.parent.parent / "scenarios").glob("*.yaml"))
UPDATE = os.environ.get("PDD_PLAN_UPDATE_GOLDEN", "") not in ("", "0")
REL_TOL = 1e-6
ABS_TOL = 1e-12  # numbers that should be 0 (an unused line) may come out as 1e-17
VOLATILE = (("solver", "wall_s"),)  # differs run to run: left out of the golden files
# BOM comment rows that differ run to run (the date) or with any catalog edit (the digest,
# checked in tests/unit/test_bom_complete.py): not compared
VOLATILE_BOM_ROWS = ("# generated_utc", "# catalog_sha256")


def without_volatile(result: dict) -> dict:
    result = copy.deepcopy(result)
    for *parents, key in VOLATILE:
        node = result
        for p in parents:
            node = node.get(p) or {}
        node.pop(key, None)
    return result


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def differences(expected, actual, path: str = "$") -> list[str]:
    """Every place where `actual` differs from `expected`, one line each (empty: equal)."""
    if _is_number(expected) and _is_number(actual):
        if math.isclose(expected, actual, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return []
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{path}.{k}: missing" for k in expected if k not in actual]
        out += [f"{path}.{k}: not in the golden file" for k in actual if k not in expected]
        for k in expected:
            if k in actual:
                out += differences(expected[k], actual[k], f"{path}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, got {len(actual)}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out += differences(e, a, f"{path}[{i}]")
        return out
    if type(expected) is not type(actual) or expected != actual:
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []


def _cell(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _compared_rows(text: str) -> list[list[str]]:
    return [r for r in csv.reader(io.StringIO(text)) if r and r[0] not in VOLATILE_BOM_ROWS]


def csv_differences(expected: str, actual: str) -> list[str]:
    """The CSVs cell by cell: numbers to REL_TOL, text exactly."""
    rows_e, rows_a = _compared_rows(expected), _compared_rows(actual)
    if len(rows_e) != len(rows_a):
        return [f"expected {len(rows_e)} rows, got {len(rows_a)}"]
    header = next((r for r in rows_e if not r[0].startswith("#")), [])
    out = []
    for i, (re_, ra) in enumerate(zip(rows_e, rows_a, strict=True)):
        if len(re_) != len(ra):
            out.append(f"row {i}: expected {len(re_)} cells, got {len(ra)}")
            continue
        for j, (e, a) in enumerate(zip(re_, ra, strict=True)):
            name = header[j] if j < len(header) else str(j)
            out += differences(_cell(e), _cell(a), f"row {i} {name}")
    return out


def _solve(run_cli, scenario: Path, tmp_path: Path) -> tuple[dict, str]:
    result = run_cli("solve", str(scenario), "--format", "json", "--bom", "bom.csv")
    assert result.returncode == 0, result.stderr
    return without_volatile(json.loads(result.stdout)), (tmp_path / "bom.csv").read_text()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_solve_matches_its_golden_files(run_cli, tmp_path, scenario):
    result, bom = _solve(run_cli, scenario, tmp_path)
    json_file = GOLDEN / f"{scenario.stem}.json"
    bom_file = GOLDEN / f"{scenario.stem}.bom.csv"
    if UPDATE:
        json_file.write_text(json.dumps(result, indent=2) + "\n")
        bom_file.write_text(bom)
        return
    assert json_file.exists() and bom_file.exists(), (
        f"no golden files for {scenario.name}: run PDD_PLAN_UPDATE_GOLDEN=1 pytest tests/golden"
    )
    found = differences(json.loads(json_file.read_text()), result)
    found += [f"bom.csv {d}" for d in csv_differences(bom_file.read_text(), bom)]
    assert not found, f"{scenario.stem} differs from its golden files:\n" + "\n".join(found)


# --- the comparison itself fails on a perturbed golden file ---------------------------


@pytest.fixture
def golden_default() -> dict:
    return json.loads((GOLDEN / "default.json").read_text())


def test_a_perturbed_number_is_reported(golden_default):
    perturbed = copy.deepcopy(golden_default)
    perturbed["metrics"]["cost_usd_per_hour"] *= 1 + 1e-5
    assert differences(golden_default, golden_default) == []
    found = differences(golden_default, perturbed)
    assert len(found) == 1 and found[0].startswith("$.metrics.cost_usd_per_hour:")


def test_a_change_within_the_tolerance_is_not(golden_default):
    close = copy.deepcopy(golden_default)
    close["metrics"]["ttft_s"]["p99"] *= 1 + 1e-8
    assert differences(golden_default, close) == []


def test_a_changed_plan_or_key_is_reported(golden_default):
    changed = copy.deepcopy(golden_default)
    changed["plan"]["instances"][0]["count"] += 1
    changed["plan"]["instances"][0]["gpu"] = "b200"
    del changed["metrics"]["sla_met"]
    changed["metrics"]["new_figure"] = 1.0
    found = differences(golden_default, changed)
    assert "$.plan.instances[0].count: expected" in "\n".join(found)
    assert any(f.startswith("$.plan.instances[0].gpu:") for f in found)
    assert "$.metrics.sla_met: missing" in found
    assert "$.metrics.new_figure: not in the golden file" in found
    changed = copy.deepcopy(golden_default)
    changed["metrics"]["sla_met"] = 1  # a bool is not the number 1
    assert differences(golden_default, changed) == ["$.metrics.sla_met: expected True, got 1"]


def test_a_perturbed_bom_cell_is_reported():
    text = (GOLDEN / "default.bom.csv").read_text()
    rows = list(csv.reader(io.StringIO(text)))
    column = next(r for r in rows if not r[0].startswith("#")).index("cost_usd_per_month")
    i = next(k for k, r in enumerate(rows) if r[2] == "total_hourly")
    rows[i][column] = f"{float(rows[i][column]) * 1.001:.2f}"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    assert csv_differences(text, text) == []
    found = csv_differences(text, out.getvalue())
    shown = i - len(VOLATILE_BOM_ROWS)  # the run-to-run rows above it are not compared
    assert len(found) == 1 and f"row {shown} cost_usd_per_month" in found[0]
