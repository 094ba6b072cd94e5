"""Issue #15 item 6: `report` solves each distinct scenario variant once. Its sensitivity
table's hit-rate cases are also bathtub points: one task solves such a variant for both
(report_cases.point_and_case, solve_memo.py). The report built so must show what separate
solves of the same variants show."""

from __future__ import annotations

import re
from concurrent.futures import Executor, Future
from pathlib import Path

import pytest

from pdd_plan import api
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario
from pdd_plan.loaders.strict import load_yaml
from pdd_plan.plan import solve as sv
from pdd_plan.plan.scenario_edit import HIT_MEAN_KEY, edited
from pdd_plan.plan.variants import HIT_RATE_MEANS
from pdd_plan.report.markdown import render_report
from pdd_plan.stages import fork_pool
from pdd_plan.stages.reporting import report_build, report_pool

pytestmark = pytest.mark.slow  # every test here is slow (pyproject.toml: markers)

TINY = Path(__file__).parent.parent / "sweep" / "tiny.yaml"
COARSE = (2, 3, 8)  # a coarse workload grid: each solve a fraction of a second
ARCH = "idc_pd"  # no baseline architecture, no lines: the fewest variants there are


class InProcess(Executor):
    """A pool that runs each task as it is submitted, here (a spy sees every solve)."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def shutdown(self, wait=True, *, cancel_futures=False):
        pass


def solve_spy(monkeypatch) -> list[tuple]:
    """(scenario, architecture, resolution, time limit) of every `plan.solve.solve` call."""
    calls: list[tuple] = []
    real = sv.solve

    def counted(s, model, gpus, tiers, architecture="pdd", resolution=None, *args, **kwargs):
        limit = args[0] if args else kwargs.get("time_limit_s")
        calls.append((s, architecture, resolution, limit))
        return real(s, model, gpus, tiers, architecture, resolution, *args, **kwargs)

    monkeypatch.setattr(sv, "solve", counted)
    return calls


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """tiny.yaml for IDC-PD alone, its report built in this process with the hit means of
    the sensitivity table (both shared with it), every solve counted."""
    path = tmp_path_factory.mktemp("fast") / "tiny_idc.yaml"
    path.write_text(TINY.read_text().replace("name: tiny", "name: tiny_idc") +
                    f"architectures: [{ARCH}]\n")  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report_pool, "solvers", lambda jobs: InProcess())
        mp.setattr(report_pool, "drawer", lambda: None)
        mp.setattr(fork_pool, "cpu_count", lambda: 1)
        mp.setattr(report_build, "report_figures", lambda *a: [])  # drawing: not this test's
        calls = solve_spy(mp)
        report = report_build.build(str(path), ARCH, jobs=2, resolution=COARSE,
                                    hit_means=HIT_RATE_MEANS)  # fmt: skip
    return path, report, calls


def test_each_distinct_variant_is_solved_once(built):
    path, report, calls = built
    repeated = [c for i, c in enumerate(calls) if c in calls[:i]]
    assert repeated == []
    # the hit-rate cases are points: without the sharing their variants are solved twice
    base = load_scenario(path, Catalog())
    for m in HIT_RATE_MEANS:
        variant = api.with_hit_rate_mean(base, m)
        assert sum(c == (variant, ARCH, COARSE, 30.0) for c in calls) == 1, m
        assert any(r["values"] == {HIT_MEAN_KEY: m} for r in report.rows)
    # the plan reported on: solved once (explain and compare start from that solve)
    assert sum(c[0] == base and c[1] == ARCH for c in calls) == 1


def without_wall(value):
    if isinstance(value, dict):
        return {k: without_wall(v) for k, v in value.items() if k != "wall_s"}
    if isinstance(value, list):
        return [without_wall(v) for v in value]
    return value


def undated(markdown: str) -> str:
    return re.sub(r"generated \S+ \(UTC\)", "generated - (UTC)", markdown)


def test_the_reports_figures_equal_separate_solves(built):
    path, report, _ = built
    catalog = Catalog()
    data = load_yaml(path, "a pdd-plan scenario")
    # the hit means (IDC-PD has no baseline) and each of the two GPU offers at x0.8, x1.2
    assert len(report.rows) == len(HIT_RATE_MEANS) + 2 * 2
    for row in report.rows:  # each plot point: its variant solved alone, afresh
        s, _ = edited(data, row["values"], str(path), catalog)
        alone, _ = api.solve_loaded(s, ARCH, catalog, COARSE, 30.0)
        assert row["status"] == alone["status"]
        assert without_wall(row["plan"]) == without_wall(alone["plan"])
        assert without_wall(row["metrics"]) == without_wall(alone["metrics"])
    # the sensitivity table and the rest of the Markdown report: as the report's data
    # computed without the pool (each case solved on its own, in this process)
    s, rdata = api.sizing_report_data(path, ARCH, catalog, COARSE, 30.0)
    cases = rdata["sensitivity"]["cases"]
    assert [c["case"] for c in cases][:2] == [f"hit rate {m:g}" for m in HIT_RATE_MEANS]
    assert all(c["status"] == "optimal" for c in cases[:2])
    assert undated(report.markdown) == undated(render_report(s, rdata))
