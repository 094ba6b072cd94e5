"""A search that stops before its proof says so (issue #15 item 3): "unproven", exit 5,
what stopped it and the cost below which every plan was ruled out; a proof keeps
"infeasible" and exit 3; set-up counts against --time-limit."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from pdd_plan.cli import app
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.plan import bounds as bd
from pdd_plan.plan import milp_seeds as ms
from pdd_plan.plan import search as sr
from pdd_plan.plan import solve as sv
from pdd_plan.plan import space as sp


def cross_dc(rate: float = 2.0, pool: int = 64) -> dict:
    """CDC-PD of Llama-3.1-70B, fixed lengths: a few candidates, solved in a moment."""
    return {
        "name": "cross",
        "model": "llama_3_1_70b",
        "datacenters": [
            {"id": "dc_a", "roles": ["prefill"], "gpus": [{"gpu": "h100_sxm", "max_gpus": 64}]},
            {"id": "dc_b", "roles": ["main_decode"], "gpus": [{"gpu": "h200_sxm", "max_gpus": 64}]},
        ],
        "wan": {"rtt_ms": 10, "tiers": ["wave_10g"], "per_connection_gbit_per_s": 1.0,
                "connection_pool_size": pool, "max_lines": 4},
        "workload": {
            "arrival_rate_per_s": rate,
            "input_tokens": {"kind": "fixed", "value": 4000},
            "output_tokens": {"kind": "fixed", "value": 100},
            "prefix_hit_rate": {"kind": "fixed", "value": 0.0},
        },
        "sla": {"ttft_p90_s": 60, "tpot_p90_ms": 100},
        "architectures": ["cdc_pd"],
    }  # fmt: skip


def run(tmp_path, capsys, data: dict, *extra: str) -> tuple[int, str, str]:
    """`pdd-plan solve s.yaml --format json` in this process (monkeypatches hold)."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    args = ["solve", str(path), "--format", "json", "--no-progress", *extra]
    code = 0  # main returns on success, exits otherwise
    try:
        app.main(args)
    except SystemExit as done:
        code = done.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def stopped_at_once(monkeypatch):
    """Every MILP ends as HiGHS does at its time limit without a solution (PuLP: "Not
    Solved"), and the walk stops at its first plan as at the evaluation cap: no plan is
    found and nothing is proven."""
    monkeypatch.setattr(ms, "solve_milp", lambda form, limit: "Not Solved")
    monkeypatch.setattr(sr, "_stop_reason", lambda *_: sr.STOP_EVALUATIONS)


def test_a_search_stopped_early_answers_unproven_with_exit_5(tmp_path, capsys, stopped_at_once):
    code, out, err = run(tmp_path, capsys, cross_dc())
    assert code == 5, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no plan found, not proven infeasible")
    answer = json.loads(out)  # one JSON document, nothing else on stdout
    assert answer["status"] == "unproven" and answer["plan"] is None
    assert answer["reason"] in lines[0]
    assert "evaluation cap" in answer["reason"]
    (stop,) = answer["stopped"]
    assert stop["proven"] is False and stop["stopped_by"] == sr.STOP_EVALUATIONS
    assert stop["architecture"] == "cdc_pd" and stop["status"] == "unproven"


def test_the_milp_stopped_at_its_limit_is_not_named_infeasible(catalog, tmp_path, stopped_at_once):
    s = load_scenario_data(cross_dc(), catalog, tmp_path)
    result = sv.solve(s, catalog.model_for(s), catalog.gpus, catalog.lines, "cdc_pd", (2, 2, 2))
    assert result.status == "unproven" and not result.proven
    assert result.attempts and all("time limit" in a.outcome for a in result.attempts)
    assert all("infeasible" not in a.outcome.replace("not proven infeasible", "")
               for a in result.attempts)  # fmt: skip


def test_the_cost_reached_is_a_lower_bound_on_any_plan(catalog, tmp_path, monkeypatch):
    """Stopped at the 2nd entry popped (the group's cheapest plan, not yet evaluated): the
    answer's floor is its cost, and the cheapest plan that meets the SLA (the full
    solve's) costs at least as much (the walk pops in cost order)."""
    s = load_scenario_data(cross_dc(), catalog, tmp_path)
    args = (s, catalog.model_for(s), catalog.gpus, catalog.lines, "cdc_pd", (2, 2, 2))
    full = sv.solve(*args)
    assert full.status == "optimal"
    monkeypatch.setattr(ms, "solve_milp", lambda form, limit: "Not Solved")
    monkeypatch.setattr(sr, "_stop_reason", lambda steps, *_: sr.STOP_TIME if steps > 1 else "")
    early = sv.solve(*args)
    assert early.status == "unproven" and early.stopped_by == sr.STOP_TIME
    floor = early.walked_below_usd_per_hour
    assert 0 < floor <= full.metrics.cost_usd_per_hour * (1 + 1e-9)


def test_a_proven_infeasible_answer_keeps_exit_3(tmp_path, capsys):
    # 2 req/s x 4000 tokens x 327,680 B x 8 = 21 Gbit/s of KV; 4 connections x 1 Gbit/s
    code, out, err = run(tmp_path, capsys, cross_dc(pool=4))
    assert code == 3, err
    answer = json.loads(out)
    assert answer["status"] == "infeasible" and "connection pool" in answer["reason"]


def test_a_walk_that_finishes_is_proven(catalog, tmp_path):
    s = load_scenario_data(cross_dc(), catalog, tmp_path)
    result = sv.solve(s, catalog.model_for(s), catalog.gpus, catalog.lines, "cdc_pd", (2, 2, 2))
    assert result.proven and result.stopped_by == ""
    assert sr._stop_reason(1, 0, 10, math.inf) == ""
    assert sr._stop_reason(sr.MAX_STEPS + 1, 0, 10, math.inf) == sr.STOP_STEPS
    assert sr._stop_reason(1, 10, 10, math.inf) == sr.STOP_EVALUATIONS


class Clock:
    """A clock that moves only when a candidate is bounded: STEP_S each."""

    STEP_S = 0.3

    def __init__(self):
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


def test_set_up_counts_against_the_time_limit(catalog, monkeypatch):
    """Bounding each candidate takes 0.3 s (a stub over the real bound): with a 1 s limit
    the solve stops within one candidate of it, unproven, instead of bounding them all
    (the default's PDD has far more than 1 / 0.3 + 1 candidate bounds to make)."""
    clock, calls = Clock(), []
    real = bd.role_bound

    def slow(*args, **kw):
        calls.append(1)
        clock.now += Clock.STEP_S
        return real(*args, **kw)

    for module in (sv, sr, sp):
        monkeypatch.setattr(module, "time", clock)
    monkeypatch.setattr(bd, "role_bound", slow)
    s = load_scenario(resolve_scenario_path(None), catalog)
    result = sv.solve(s, catalog.model_for(s), catalog.gpus, catalog.lines, "pdd", (2, 2, 2),
                      time_limit_s=1.0)  # fmt: skip
    assert result.status == "unproven" and result.stopped_by.startswith(sr.STOP_TIME)
    # the deadline is checked before each candidate: at most one bound runs past it
    assert result.wall_s <= 1.0 + Clock.STEP_S + 1e-9
    assert len(calls) <= math.floor(1.0 / Clock.STEP_S) + 1


def load_scenario_data(data: dict, catalog, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path, catalog)


def test_architectures_share_the_command_s_deadline(catalog, tmp_path):
    """solve_each with a deadline already passed: every architecture stops at once,
    unproven (not infeasible), however long its own time limit."""
    import time

    from pdd_plan.api import solve_each

    s = load_scenario_data(cross_dc(), catalog, tmp_path)
    start = time.perf_counter()
    ((result, files),) = solve_each(s, ["cdc_pd"], catalog, (2, 2, 2), 30.0, jobs=1,
                                    deadline=time.perf_counter())  # fmt: skip
    assert result["status"] == "unproven" and result["plan"] is None
    assert result["solver"]["stopped"]["stopped_by"].startswith(sr.STOP_TIME)
    assert "try a longer --time-limit" in result["reason"]
    assert time.perf_counter() - start < 5.0  # nothing but loading: no search ran


def test_a_sweep_whose_every_point_stopped_unproven_exits_5():
    from pdd_plan.stages.sweeping.sweep import all_failed_error

    rows = [{"index": i, "status": "unproven", "error": "no plan found, not proven infeasible"}
            for i in range(2)]  # fmt: skip
    error = all_failed_error(rows, "s.yaml")
    assert error.exit_code == 5 and "2 unproven" in str(error)
    rows.append({"index": 2, "status": "infeasible", "error": "proven"})
    assert all_failed_error(rows, "s.yaml").exit_code == 3  # the lowest code, as before


def test_a_plan_found_before_the_stop_is_feasible_and_says_not_proven(
    tmp_path, capsys, monkeypatch
):
    """The MILP's verified seed is a plan; the walk stops at once: exit 0, status
    feasible, and the table says the plan is not proven optimal."""
    monkeypatch.setattr(sr, "_stop_reason", lambda *_: sr.STOP_EVALUATIONS)
    code, out, err = run(tmp_path, capsys, cross_dc())
    assert code == 0, err
    answer = json.loads(out)
    assert answer["status"] == "feasible" and answer["plan"] is not None
    stop = answer["solver"]["stopped"]
    assert stop["stopped_by"] == sr.STOP_EVALUATIONS
    assert stop["cost_at_least_usd_per_hour"] is None  # a plan exists: no floor to state
    app.main(["solve", str(tmp_path / "s.yaml"), "--no-progress"])  # returns: exit 0
    assert "not proven optimal" in " ".join(capsys.readouterr().out.split())


def test_compare_shows_an_unproven_architecture_as_unproven(tmp_path, capsys, stopped_at_once):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(cross_dc()))
    with pytest.raises(SystemExit) as stopped:  # no architecture has a plan: 5, as solve
        app.main(["compare", str(path)])
    assert stopped.value.code == 5
    out = capsys.readouterr().out
    assert "unproven" in out and "infeasible" not in out
