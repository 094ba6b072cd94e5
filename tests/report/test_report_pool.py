"""report_pool.py and what it relies on (issue #15, `report` <= 8 s): the report's tasks
in forked workers, given longest first, plans evaluated as soon as known, figures drawn
as soon as their data is in. None of it may change the report: built with the forked
pools it must equal the report built the plain way (every task run in this process as
it is submitted, every figure drawn here)."""

from __future__ import annotations

import os
import sys
from concurrent.futures import Executor, Future
from pathlib import Path

import pytest
from test_report_fast import InProcess as RunsHere
from test_report_fast import undated, without_wall

from pdd_plan.plan.scenario_edit import ARCH_KEY, HIT_MEAN_KEY
from pdd_plan.report import plots
from pdd_plan.report.html_figures import _drawn
from pdd_plan.stages import fork_pool
from pdd_plan.stages.reporting import report_build, report_pool
from pdd_plan.stages.reporting.report_plans import Evaluator, evaluate_plan

TINY = Path(__file__).parent.parent / "sweep" / "tiny.yaml"
COARSE = (2, 3, 8)
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


class InProcess(RunsHere):
    """Runs each task here as it is submitted (test_report_fast's pool); records what was
    submitted."""

    def __init__(self):
        self.calls: list[tuple] = []

    def submit(self, fn, /, *args, **kwargs):
        self.calls.append((fn, args))
        return super().submit(fn, *args, **kwargs)


# --- the order of the tasks ----------------------------------------------------------


def test_hit_rate_points_go_first_lowest_mean_first_then_the_prices_in_order():
    price_a, price_b = {"wan.tier_prices_usd_per_month.x": 1.0}, {"datacenters.0.x": 2.0}
    points = (
        {HIT_MEAN_KEY: 0.9}, price_a, {HIT_MEAN_KEY: 0.3}, {HIT_MEAN_KEY: 0.9, ARCH_KEY: "b"},
        price_b, {HIT_MEAN_KEY: 0.3, ARCH_KEY: "b"}, {HIT_MEAN_KEY: 0.5},
    )  # fmt: skip
    order = report_pool.submission_order(points, HIT_MEAN_KEY)
    assert sorted(order) == list(range(len(points)))  # each point once
    # by mean, the planned architecture's point before the baseline's at the same mean
    assert order == [2, 5, 6, 0, 3, 1, 4]


# --- fork_pool.sharing ---------------------------------------------------------------


def _square_where(x: int) -> tuple[int, int]:
    if x < 0:
        raise ValueError(f"negative {x}")
    return x * x, os.getpid()


@LINUX
def test_each_inside_sharing_runs_in_the_lent_pool_and_answers_as_here(monkeypatch):
    monkeypatch.setattr(fork_pool, "cpu_count", lambda: 2)
    pool = fork_pool.executor(2)
    try:
        workers = set(pool._processes)  # forked at once: before this process solves
        assert len(workers) == 2
        with fork_pool.sharing(pool):
            answers = fork_pool.each(_square_where, [3, 1, 2])
            with pytest.raises(ValueError, match="negative -2"):  # raised here, as itself
                fork_pool.each(_square_where, [1, -2])
        assert [a for a, _ in answers] == [9, 1, 4]
        assert {pid for _, pid in answers} <= workers  # run there, not in children of their own
        # outside the scope: children forked for the call alone
        outside = fork_pool.each(_square_where, [3, 1])
        assert not {pid for _, pid in outside} & (workers | {os.getpid()})
    finally:
        pool.shutdown()


# --- plans evaluated as soon as known ------------------------------------------------


def _plan(count: int) -> dict:
    return {"architecture": "pdd", "instances": [{"role": "prefill", "count": count}]}


class Recording(InProcess):
    """Records each task and answers it with made-up metrics, running nothing."""

    def submit(self, fn, /, *args, **kwargs):
        self.calls.append((fn, args))
        future = Future()
        future.set_result({"cost_usd_per_hour": 1.0})
        return future


def test_a_prefetched_plan_is_evaluated_once_and_labelled_in_the_plots_order():
    pool = Recording()
    spy = Evaluator(pool, {}, "x", COARSE)
    spy.add_known("this plan", {"plan": _plan(1), "metrics": {"cost_usd_per_hour": 2.0}})
    spy.prefetch(_plan(3))
    spy.prefetch(_plan(2))
    spy.prefetch(_plan(3))  # started already
    spy.prefetch(_plan(1))  # known: never evaluated
    assert [args[2] for fn, args in pool.calls] == [_plan(3), _plan(2)]
    assert all(fn is evaluate_plan for fn, _ in pool.calls)
    spy.submit("P +1", _plan(2))
    spy.submit("a price case", _plan(3))
    spy.submit("another price case", _plan(2))  # the first label stays
    spy.submit("new", _plan(4))  # not prefetched: evaluated now
    assert len(pool.calls) == 3
    labels = [e["label"] for e in spy.results()]
    assert labels == ["this plan", "P +1", "a price case", "new"]


# --- figures drawn early -------------------------------------------------------------


class Sentinel(Executor):
    def submit(self, fn, *args):
        raise AssertionError("drawn again")


def test_a_figure_started_early_is_used_only_for_the_same_arguments():
    args = ({"PDD": [(0.3, 1.0), (0.7, 0.8)]}, 0.9, None)
    early = Future()
    early.set_result(("<svg>early</svg>", None))
    assert _drawn([("bathtub", args)], False, Sentinel(), {"bathtub": (args, early)}) == [
        ("<svg>early</svg>", None)
    ]
    moved = ({"PDD": [(0.3, 1.0), (0.7, 0.9)]}, 0.9, None)  # a point has moved since
    pool = InProcess()
    drawn = _drawn([("bathtub", moved)], False, pool, {"bathtub": (args, early)})
    assert drawn == [plots.draw("bathtub", moved, False)] and len(pool.calls) == 1


# --- the report itself ---------------------------------------------------------------


def without_future(plans: list[dict]) -> list[dict]:
    return [{k: v for k, v in p.items() if k != "future"} for p in plans]


@pytest.mark.slow
@LINUX
def test_the_report_built_in_forked_pools_equals_the_plain_build(monkeypatch, tmp_path):
    """tiny.yaml with two architectures, the one planned chosen (both solved in the shared
    pool), built with the drawer and two forked solvers, then with every task run here."""
    path = tmp_path / "tiny_two.yaml"
    path.write_text(TINY.read_text() + "architectures: [idc_pd, colocated]\n")
    monkeypatch.setattr(fork_pool, "cpu_count", lambda: 2)
    run = dict(jobs=2, resolution=COARSE, hit_means=(0.5,), png=False)
    forked = report_build.build(str(path), **run)
    with pytest.MonkeyPatch.context() as mp:
        spy = InProcess()
        mp.setattr(report_pool, "solvers", lambda jobs: spy)
        mp.setattr(report_pool, "drawer", lambda: None)
        mp.setattr(fork_pool, "cpu_count", lambda: 1)  # the architectures solved here too
        plain = report_build.build(str(path), **run)
    assert spy.calls  # the plain build's tasks went through the spy, one after another
    assert undated(forked.html) == undated(plain.html)
    assert undated(forked.markdown) == undated(plain.markdown)
    assert without_wall(forked.rows) == without_wall(plain.rows)
    # (an entry keeps the future it was evaluated by: a different object in each build)
    assert without_future(forked.plans) == without_future(plain.plans)
    assert forked.figures == plain.figures


# --- the hit-rate figures, submitted when the last hit-rate point ends ----------------


def test_when_all_done_calls_once_after_the_last_future_and_sets_the_event():
    futures = [Future() for _ in range(3)]
    calls: list[list[bool]] = []
    ended = report_pool.when_all_done(futures, lambda: calls.append([f.done() for f in futures]))
    futures[2].set_result(1)
    futures[0].set_exception(RuntimeError("a worker died"))  # ended too
    assert calls == [] and not ended.is_set()
    futures[1].set_result(2)
    assert calls == [[True, True, True]] and ended.is_set()


def test_when_all_done_sets_the_event_when_the_call_fails_or_nothing_is_awaited():
    future = Future()

    def fails() -> None:
        raise ValueError("a spec that could not be made")

    ended = report_pool.when_all_done([future], fails)
    future.set_result(None)
    assert ended.is_set()  # the error dropped: the caller draws the figures itself
    assert report_pool.when_all_done([], fails).is_set()
