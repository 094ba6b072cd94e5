"""Issue #10 items 6 and 18: bounded worker processes, and a sweep's exit code.

Workers: one a CPU by default; an explicit `--jobs` above the CPU count is honoured with
a note on stderr (it oversubscribes) up to 4 a CPU, and capped there with a note; never
more than there are points. `report` takes the same rule (`sweep.job_plan`).

Exit codes: a sweep whose every point failed exits non-zero with one `error:` line: the
lowest code among its points (1 a bug, 2 bad values, 3 infeasible or saturated, 4 a solver
failure). A sweep with some points failed exits 0 and counts them in its summary line.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pdd_plan.errors import InfeasibleError, InputError, PddPlanError, SolverError
from pdd_plan.stages.sweeping import sweep as sw
from tests.hardening.conftest import TINY, assert_no_traceback, cli_command, cli_env

RATE = "workload.arrival_rate_per_s"


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(TINY))
    return path


def error_lines(result) -> list[str]:
    return [x for x in result.stderr.splitlines() if x.startswith("error:")]


def notes(result) -> list[str]:
    return [x for x in result.stderr.splitlines() if x.startswith("note:")]


# --- item 6: how many workers ---------------------------------------------------------


@pytest.mark.parametrize(
    "jobs, points, cpus, count, note",
    [
        (None, 100, 2, 2, ""),  # default: one a CPU
        (None, 1, 2, 1, ""),  # never more than the points
        (1, 100, 2, 1, ""),
        (2, 100, 2, 2, ""),
        (3, 100, 2, 3, "oversubscribed"),  # asked for: honoured, said
        (8, 100, 2, 8, "oversubscribed"),  # 4 a CPU: still honoured
        (9, 100, 2, 8, "capped at 8"),
        (64, 100, 2, 8, "capped at 8"),  # the case
        (64, 5, 2, 5, "oversubscribed"),  # the points bound it, not the cap
        (64, 1, 2, 1, ""),
        (64, 1000, 16, 64, "oversubscribed"),  # 4 a CPU on 16: not capped, said
    ],
)
def test_job_plan(jobs, points, cpus, count, note):
    got, said = sw.job_plan(jobs, points, cpus)
    assert got == count
    assert (note in said) if note else said == ""
    if said:
        assert f"--jobs {jobs}" in said and f"{cpus} CPU" in said


def test_job_plan_bounds_hold_everywhere():
    for cpus in (1, 2, 3, 8):
        for points in (1, 2, 5, 40):
            for jobs in (None, 1, 2, 3, 7, 12, 33, 64, 1000):
                count, note = sw.job_plan(jobs, points, cpus)
                assert 1 <= count <= min(points, 4 * cpus)
                assert count <= (jobs or cpus)
                assert bool(note) == (count > cpus or (jobs or 0) > 4 * cpus < points)
    assert sw.job_count(None, 10**6) == min(sw.cpu_count(), 10**6)


def test_cpu_count_is_the_affinity():
    if hasattr(os, "sched_getaffinity"):
        assert sw.cpu_count() == len(os.sched_getaffinity(0))
    assert sw.cpu_count() >= 1


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("taskset"), reason="taskset (util-linux) is not installed")
def test_sweep_caps_jobs_64_on_one_cpu_and_says_so(tiny):
    # pinned to one CPU with taskset, so that the cap is 4 whatever this machine has; the
    # five points all fail fast (negative rates): every point bad is exit 2 (item 18)
    args = ["sweep", tiny.name, "--vary", f"{RATE}=-1,-2,-3,-4,-5", "--jobs", "64"]
    result = subprocess.run(["taskset", "-c", "0", *cli_command(), *args], cwd=tiny.parent,
                            env=cli_env(), capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    assert_no_traceback(result)
    assert notes(result) == ["note: --jobs 64 capped at 4 processes (4 a CPU, 1 CPU)"]
    assert "with 4 processes" in result.stdout
    assert result.returncode == 2 and len(error_lines(result)) == 1


# --- item 18: what a sweep returns ----------------------------------------------------


def rows(*statuses: str) -> list[dict]:
    return [{"index": i, "status": s, "error": f"why {i}"} for i, s in enumerate(statuses)]


def test_a_sweep_with_one_point_that_ran_is_not_an_error():
    assert sw.all_failed_error(rows("bad_value", "optimal", "infeasible"), "s.yaml") is None
    assert sw.all_failed_error(rows("evaluated"), "s.yaml") is None
    assert sw.all_failed_error(rows("feasible", "error"), "s.yaml") is None


@pytest.mark.parametrize(
    "statuses, code, kind",
    [
        (("infeasible", "saturated", "infeasible"), 3, InfeasibleError),
        (("bad_value", "bad_value"), 2, InputError),
        (("solver_error",), 4, SolverError),
        (("solver_error", "infeasible"), 3, InfeasibleError),  # the lowest code wins
        (("infeasible", "bad_value", "solver_error"), 2, InputError),
        (("error", "bad_value"), 1, PddPlanError),  # a bug is never hidden
    ],
)
def test_a_sweep_whose_every_point_failed_is_an_error(statuses, code, kind):
    err = sw.all_failed_error(rows(*statuses), "s.yaml")
    assert isinstance(err, kind) and err.exit_code == code
    text = str(err)
    assert "\n" not in text and "s.yaml" in text
    assert f"all {len(statuses)} points failed" in text
    first = statuses.index(
        next(
            s for s in statuses if {"error": 1, "bad_value": 2, "solver_error": 4}.get(s, 3) == code
        )
    )
    assert f"point {first}: why {first}" in text


@pytest.mark.slow
def test_every_point_bad_exits_2_with_one_error_line(cli, tiny):
    result = cli("sweep", tiny.name, "--vary", f"{RATE}=-1,-2", "--jobs", "1")
    assert_no_traceback(result)
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = error_lines(result)
    assert "all 2 points failed (2 bad_value)" in line and "tiny.yaml" in line
    assert "2 points (2 failed)" in result.stdout  # the table is still printed


@pytest.mark.slow
def test_every_point_infeasible_exits_3_with_one_error_line(cli, tiny):
    # 100,000 req/s needs thousands of instances where 64 GPUs are offered
    result = cli("sweep", tiny.name, "--vary", f"{RATE}=100000,200000", "--jobs", "1",
                 "--time-limit", "2", "--format", "json")  # fmt: skip
    assert_no_traceback(result)
    assert result.returncode == 3, (result.stdout, result.stderr)
    (line,) = error_lines(result)
    assert "all 2 points failed (2 infeasible)" in line
    assert '"points_failed": 2' in result.stdout  # the JSON is still printed


@pytest.mark.slow
def test_a_partly_failed_sweep_exits_0_and_counts_the_failures(cli, tiny):
    result = cli("sweep", tiny.name, "--vary", f"{RATE}=2,-1", "--jobs", "1",
                 "--time-limit", "5")  # fmt: skip
    assert_no_traceback(result)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert error_lines(result) == []
    assert "2 points (1 failed)" in result.stdout


def test_sweep_csv_guards_formulas_and_keeps_one_record_a_point(cli, tiny):
    # a swept text value that a spreadsheet would run, and one with a line break in it
    result = cli("sweep", tiny.name, "--vary", "description==1+1,x\n@SUM(1)", "--jobs", "1",
                 "--time-limit", "5", "--out", "o")  # fmt: skip
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr
    with open(tiny.parent / "o" / "sweep.csv", newline="") as handle:
        records = list(csv.reader(handle))
    assert len(records) == 3  # the header and one record a point
    column = records[0].index("description")
    assert [r[column] for r in records[1:]] == ["'=1+1", "x\n@SUM(1)"]
    assert all(not c.startswith(("=", "+", "-", "@")) for r in records for c in r)
