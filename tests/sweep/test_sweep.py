"""The sweep engine: axes, the grid, failed points recorded, monotone cost in demand,
spreadsheet-safe CSV, and the process pool giving what one process gives."""

from __future__ import annotations

import csv
import io
import itertools
from pathlib import Path

import pytest

from pdd_plan.errors import InputError
from pdd_plan.report.sweep_files import METRIC_COLUMNS, csv_text
from pdd_plan.stages.sweeping import sweep as sw

TINY = Path(__file__).with_name("tiny.yaml")
RES = (2, 3, 8)  # a coarse request-class grid: each idc_pd point solves in ~0.2 s
# the unit at the end of each metric header (sla_met is a yes/no)
UNIT_SUFFIXES = ("_rps", "_usd_per_hour", "_per_usd_hour", "_s", "_frac", "_gbit_per_s",
                 "_met", "_output_tokens")  # fmt: skip


def prepared(*specs: str, arch: str = "idc_pd", **kw) -> sw.Sweep:
    return sw.prepare(TINY, list(specs), architecture=arch, resolution=RES, **kw)


# --- axes and the grid ---------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, values",
    [
        ("k=1:2:0.25", (1.0, 1.25, 1.5, 1.75, 2.0)),
        ("k=0.1:0.3:0.1", (0.1, 0.2, 0.3)),  # 0.1 + 2 * 0.1 is 0.30000000000000004
        ("k=2:10:4", (2, 6, 10)),
        ("k=1:2:5", (1,)),
        ("k=1,2.5,one_shot", (1, 2.5, "one_shot")),
        ("k=7", (7,)),
        ("k=1e-3,no,true", (1e-3, "no", True)),
    ],
)
def test_axis_values(spec, values):
    axis = sw.parse_axis(spec)
    assert axis.key == "k"
    assert axis.values == values
    assert [type(v) for v in axis.values] == [type(v) for v in values]


@pytest.mark.parametrize(
    "spec",
    [
        "k",
        "=1,2",
        "k=",
        "k=2:1:1",
        "k=1:2:0",
        "k=1:2:-1",
        "k=a:2:1",
        "k=1,,2",
        "k=1:1000000:1",
        "k=nan:2:1",
    ],  # fmt: skip
)
def test_bad_axes_are_input_errors(spec):
    with pytest.raises(InputError) as err:
        sw.parse_axis(spec)
    assert str(err.value).startswith("command line: --vary: found ")


def test_grid_is_the_product_of_the_axes_last_axis_fastest():
    axes = [sw.Axis("a", (1, 2)), sw.Axis("b", ("x", "y", "z")), sw.Axis("c", (0.1, 0.2, 0.3, 0.4))]
    points = sw.grid(axes)
    assert len(points) == 2 * 3 * 4
    assert len({tuple(p.items()) for p in points}) == 24
    assert points[0] == {"a": 1, "b": "x", "c": 0.1}
    assert points[1] == {"a": 1, "b": "x", "c": 0.2}
    assert points[-1] == {"a": 2, "b": "z", "c": 0.4}
    expected = [dict(zip("abc", combo, strict=True))
                for combo in itertools.product(*[a.values for a in axes])]  # fmt: skip
    assert list(points) == expected


def test_prepare_checks_keys_and_sizes_before_any_point():
    spec = prepared("workload.arrival_rate_per_s=1:3:1", "workload.prefix_hit_rate.mean=0.5,0.9")
    assert len(spec.points) == 3 * 2
    with pytest.raises(InputError, match="did you mean 'arrival_rate_per_s'"):
        prepared("workload.arival_rate_per_s=1,2")
    with pytest.raises(InputError, match="each key once"):
        prepared("workload.arrival_rate_per_s=1", "workload.arrival_rate_per_s=2")
    with pytest.raises(InputError, match="at least one --vary"):
        prepared()
    with pytest.raises(InputError, match="one of max_bcr, min_cost, max_goodput"):
        prepared("workload.arrival_rate_per_s=1", objective="max_profit")


def test_max_goodput_without_a_budget_fails_the_sweep_not_a_point():
    with pytest.raises(InputError, match="budget"):
        prepared("workload.arrival_rate_per_s=1", objective="max_goodput")


# --- running -------------------------------------------------------------------------


def test_failed_points_are_recorded_and_the_sweep_goes_on():
    spec = prepared("workload.arrival_rate_per_s=-1,1,100000", "policy.handoff=catch_up,teleport")
    rows = sw.run(spec, jobs=1)
    assert [r["index"] for r in rows] == list(range(6))
    by = {(r["values"]["workload.arrival_rate_per_s"], r["values"]["policy.handoff"]): r
          for r in rows}  # fmt: skip
    assert by[(-1, "catch_up")]["status"] == "bad_value"
    assert "arrival_rate_per_s: found -1" in by[(-1, "catch_up")]["error"]
    assert by[(1, "teleport")]["status"] == "bad_value"
    assert (
        "did you mean" in by[(1, "teleport")]["error"] or "one of" in by[(1, "teleport")]["error"]
    )
    ok = by[(1, "catch_up")]
    assert ok["status"] == "optimal" and ok["error"] is None and ok["metrics"]["sla_met"]
    big = by[(100000, "catch_up")]
    assert big["status"] == "infeasible" and big["plan"] is None and big["error"]
    for r in rows:
        assert r["wall_s"] >= 0


@pytest.mark.slow
def test_min_cost_never_falls_as_demand_rises():
    """More demand never gives a cheaper optimum (design.md §8), here along a sweep."""
    spec = prepared("workload.arrival_rate_per_s=0.5:6:0.5", objective="min_cost")
    rows = sw.run(spec, jobs=1)
    costs = [r["metrics"]["cost_usd_per_hour"] for r in rows if r["status"] == "optimal"]
    assert len(costs) == 12
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(costs)), costs
    assert costs[-1] > costs[0]  # the sweep does move the answer


@pytest.mark.slow
def test_min_cost_monotone_for_pdd_too():
    spec = prepared("workload.arrival_rate_per_s=0.5,1.5,3", arch="pdd", objective="min_cost")
    costs = [r["metrics"]["cost_usd_per_hour"] for r in sw.run(spec, jobs=1)]
    assert costs == sorted(costs) and costs[-1] > costs[0]


@pytest.mark.slow
def test_pool_results_equal_serial_results():
    spec = prepared("workload.arrival_rate_per_s=1,2,-3", "workload.prefix_hit_rate.mean=0.5,0.9")
    seen = []
    pooled = sw.run(spec, jobs=2, on_done=seen.append)
    serial = sw.run(spec, jobs=1)

    def strip(rows):
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]

    assert strip(pooled) == strip(serial)
    assert sorted(r["index"] for r in seen) == list(range(6))
    assert sum(r["status"] == "bad_value" for r in pooled) == 2


# --- the CSV -------------------------------------------------------------------------


def test_csv_is_safe_for_spreadsheets_and_headers_carry_units():
    spec = prepared("name==1+1,-cmd,@SUM(A1),+x,plain")
    rows = sw.run(spec, jobs=1)
    assert all(r["status"] == "optimal" for r in rows)
    table = list(csv.reader(io.StringIO(csv_text(rows, ["name"]))))
    header, body = table[0], table[1:]
    names = [row[header.index("name")] for row in body]
    assert names == ["'=1+1", "'-cmd", "'@SUM(A1)", "'+x", "plain"]
    for cell in itertools.chain.from_iterable(body):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    for h, _ in METRIC_COLUMNS:
        assert h in header and h.endswith(UNIT_SUFFIXES), h
    cost = [float(row[header.index("cost_usd_per_hour")]) for row in body]
    assert cost == [r["metrics"]["cost_usd_per_hour"] for r in rows]
    gpus = [int(row[header.index("gpus_total")]) for row in body]
    assert all(g >= 2 for g in gpus)  # a prefill and a decode instance at least
