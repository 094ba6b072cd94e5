"""Issue #15 items 1 and 6: the architectures solved side by side in forked processes give
the answers of solving them one after another, and the sizing report never solves the plan
it reports on a second time (explain starts from that solve)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdd_plan import api
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.plan import solve as sv
from pdd_plan.stages import fork_pool

TINY = Path(__file__).resolve().parents[1] / "sweep" / "tiny.yaml"
COARSE = (4, 6, 10)  # a coarse workload grid: each solve well under a second


def two_architectures(tmp_path: Path) -> Path:
    """tests/sweep/tiny.yaml with two architectures: the smallest choice there is."""
    text = TINY.read_text().replace("name: tiny", "name: tinier")
    path = tmp_path / "tinier.yaml"
    path.write_text(text + "architectures: [idc_pd, colocated]\n")
    return path


def without_wall_times(value):
    """The answer less its wall times (the one field two equal runs differ in)."""
    if isinstance(value, dict):
        return {k: without_wall_times(v) for k, v in value.items() if k != "wall_s"}
    if isinstance(value, list):
        return [without_wall_times(v) for v in value]
    return value


def test_jobs_for_runs_here_when_a_pool_cannot_help(monkeypatch):
    assert fork_pool.jobs_for(1) == 1  # one task: nothing to overlap
    assert fork_pool.jobs_for(4, jobs=1) == 1  # asked for one process
    monkeypatch.setattr(fork_pool, "cpu_count", lambda: 1)
    assert fork_pool.jobs_for(4) == 1  # one CPU: the processes would only take turns
    monkeypatch.setattr(fork_pool, "cpu_count", lambda: 2)
    assert fork_pool.jobs_for(4) == 2  # one a CPU
    assert fork_pool.jobs_for(4, jobs=3) == 3
    monkeypatch.setattr(fork_pool.sys, "platform", "darwin")
    assert fork_pool.jobs_for(4) == 1  # no fork off Linux


def _square_or_raise(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative {x}")
    return x * x


def test_each_keeps_the_order_and_raises_a_childs_error_here():
    assert fork_pool.each(_square_or_raise, [3, 1, 2], jobs=2) == [9, 1, 4]
    seen = []
    fork_pool.each(_square_or_raise, [1, 2, 3], jobs=2, on_done=lambda n, i: seen.append((n, i)))
    assert [n for n, _ in seen] == [1, 2, 3]  # how many have ended, each time one does
    assert sorted(i for _, i in seen) == [0, 1, 2]  # and which
    # the child's error is raised again by the call made here, as the serial loop would
    with pytest.raises(ValueError, match="negative -1"):
        fork_pool.each(_square_or_raise, [2, -1], jobs=2)


def test_architectures_side_by_side_answer_as_one_after_another(tmp_path):
    catalog = Catalog()
    s = load_scenario(two_architectures(tmp_path), catalog)
    serial, serial_files = api.solve_choosing(s, catalog, COARSE, jobs=1)
    pooled, pooled_files = api.solve_choosing(s, catalog, COARSE, jobs=2)
    assert pooled["status"] == "optimal"
    assert json.dumps(without_wall_times(pooled)) == json.dumps(without_wall_times(serial))
    assert [without_wall_times(r) for r in pooled_files.solved_each] == [
        without_wall_times(r) for r in serial_files.solved_each
    ]

    def bom(files) -> list[str]:  # less the time it was written
        return [r for r in files.bom_csv.splitlines() if not r.startswith("# generated_utc")]

    assert bom(pooled_files) == bom(serial_files) and len(bom(serial_files)) > 3
    # the winner's own solve travels back with it (explain starts from it)
    assert pooled_files.run.architecture == pooled["plan"]["architecture"]


def count_solves(monkeypatch, path: Path, catalog: Catalog) -> list[str]:
    """The architectures `plan.solve.solve` is asked for on the scenario at `path` itself
    (its cases and relaxations are other scenarios), counted in this process: forking is
    off, so every solve is made here."""
    monkeypatch.setattr(fork_pool, "cpu_count", lambda: 1)
    base = load_scenario(path, catalog)
    calls: list[str] = []
    real = sv.solve

    def counted(scenario, model, gpus, tiers, architecture="pdd", *args, **kwargs):
        if scenario == base:
            calls.append(architecture)
        return real(scenario, model, gpus, tiers, architecture, *args, **kwargs)

    monkeypatch.setattr(sv, "solve", counted)
    return calls


def test_the_report_solves_the_plan_it_reports_on_once(tmp_path, monkeypatch):
    path = two_architectures(tmp_path)
    catalog = Catalog()
    base = load_scenario(path, catalog)
    calls = count_solves(monkeypatch, path, catalog)
    s, data = api.sizing_report_data(path, None, catalog, COARSE, 30.0)
    chosen = data["architecture"]
    assert data["explanation"]["architecture"] == chosen
    # each architecture once: the choice; explain and compare reuse those solves
    assert sorted(calls) == sorted(base.architectures)
    assert calls.count(chosen) == 1


def test_explain_of_the_recommended_plan_solves_it_once(tmp_path, monkeypatch):
    path = two_architectures(tmp_path)
    catalog = Catalog()
    calls = count_solves(monkeypatch, path, catalog)
    out = api.explain_scenario(path, None, catalog, COARSE, 30.0)
    assert out["architecture"] == out["architecture_choice"]["winner"]
    assert sorted(calls) == ["colocated", "idc_pd"]  # the choice's solves, no other
