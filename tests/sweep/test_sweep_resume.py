"""`pdd-plan sweep --out DIR` journals each finished point; `--resume` runs only the rest.

A sweep killed with SIGKILL (no clean-up at all) after some points have finished is
resumed: its final rows equal an uninterrupted run's, and the points in the journal were
not computed again (their wall times, unique to each computation, come back unchanged).
A journal of another sweep, a damaged one, or one another sweep holds is refused in one
line, exit 2, before any point runs.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdd_plan.loaders.catalog import Catalog
from pdd_plan.stages.sweeping import sweep as sw
from pdd_plan.stages.sweeping.sweep_journal import JOURNAL_NAME, open_journal, sweep_key

TINY = Path(__file__).with_name("tiny.yaml").resolve()
AXIS = "workload.arrival_rate_per_s=0.5:4:0.5"  # 8 points, each one plan evaluation
POINTS = 8
# two colocated single-H100 instances in tiny.yaml's dc_a: a plan every point evaluates
PLAN = """plan:
  architecture: colocated
  instances:
    - {role: colocated, datacenter: dc_a, gpu: h100_sxm, gpus_per_instance: 1, count: 2}
  lines: []
  policy: {rld_hit_threshold: 0.9, handoff: catch_up, short_output_cutoff: false}
"""


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("pdd-plan")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]


def _args(plan: Path, out: Path, axis: str = AXIS, *extra: str) -> list[str]:
    return [*_cli(), "sweep", str(TINY), "--plan", str(plan), "--vary", axis, "--jobs", "1",
            "--out", str(out), "--format", "json", *extra]  # fmt: skip


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def _journal_lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def _kill_after(args: list[str], journal: Path, lines: int) -> None:
    """Start the sweep and SIGKILL it once its journal holds `lines` whole lines."""
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while len(_journal_lines(journal)) < lines:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "the journal never grew"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def _without_wall(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


def _csv_without_wall(path: Path) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert rows and "wall_s" in rows[0]
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An uninterrupted sweep, and the same sweep killed after 2 points and resumed
    (a torn line, as a kill mid-write leaves, appended to its journal first)."""
    base = tmp_path_factory.mktemp("resume")
    plan = base / "plan.yaml"
    plan.write_text(PLAN)
    whole = _run(_args(plan, base / "whole"))
    assert whole.returncode == 0, whole.stderr
    out = base / "resumed"
    journal = out / JOURNAL_NAME
    _kill_after(_args(plan, out), journal, lines=3)  # the header and 2 points
    kept = [json.loads(line) for line in _journal_lines(journal)[1:]]
    with open(journal, "a") as handle:
        handle.write('{"index": 7, "values": {"workload.arr')  # cut short: no newline
    resumed = _run(_args(plan, out, AXIS, "--resume"))
    return base, whole, resumed, kept


@pytest.mark.slow
def test_resumed_sweep_has_the_uninterrupted_rows(runs):
    base, whole, resumed, kept = runs
    assert resumed.returncode == 0, resumed.stderr
    assert 2 <= len(kept) < POINTS
    full = json.loads(whole.stdout)["points"]
    again = json.loads(resumed.stdout)["points"]
    assert len(full) == len(again) == POINTS
    assert all(r["metrics"] for r in again)  # every point evaluated (SLA met or not)
    assert _without_wall(again) == _without_wall(full)
    # the files too, written once the journal is done with (it leaves with the old folder)
    assert sorted(p.name for p in (base / "resumed").iterdir()) == sorted(
        p.name for p in (base / "whole").iterdir()
    )
    assert not (base / "resumed" / JOURNAL_NAME).exists()
    stored = json.loads((base / "resumed" / "sweep.json").read_text())["points"]
    assert stored == again
    assert _csv_without_wall(base / "resumed" / "sweep.csv") == _csv_without_wall(
        base / "whole" / "sweep.csv"
    )


@pytest.mark.slow
def test_journalled_points_are_not_computed_again(runs):
    base, _, resumed, kept = runs
    again = json.loads(resumed.stdout)["points"]
    for row in kept:  # a recomputed point would have a new wall time
        assert again[row["index"]] == row
    run = json.loads((base / "resumed" / "run.json").read_text())
    assert run["points_resumed"] == len(kept)
    assert run["points_total"] == POINTS
    assert f"resuming: {len(kept)} of {POINTS} points already done" in resumed.stderr


# --- refusals ---------------------------------------------------------------------------


def _one_line_error(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def _journal_of(out: Path, plan: Path, axis: str = AXIS) -> Path:
    """The journal an interrupted sweep with `axis` leaves (header only) in `out`."""
    spec = sw.prepare(TINY, [axis], plan=str(plan))
    journal, done, _ = open_journal(out, sweep_key(spec, Catalog().root), spec.points, False)
    journal.close()
    assert done == {}
    return out / JOURNAL_NAME


@pytest.fixture
def plan(tmp_path) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    return path


@pytest.mark.slow
def test_resume_of_another_sweep_is_refused(tmp_path, plan):
    out = tmp_path / "out"
    journal = _journal_of(out, plan, "workload.arrival_rate_per_s=1,2")
    before = journal.read_bytes()
    done = _run(_args(plan, out, "workload.arrival_rate_per_s=1,3", "--resume"))
    _one_line_error(done, JOURNAL_NAME, "--resume", "a different sweep")
    assert journal.read_bytes() == before  # left for the sweep it belongs to
    plan.write_text(PLAN.replace("count: 2", "count: 3"))  # the same axes, another plan
    done = _run(_args(plan, out, "workload.arrival_rate_per_s=1,2", "--resume"))
    _one_line_error(done, "a different sweep")


@pytest.mark.slow
def test_a_damaged_journal_is_refused(tmp_path, plan):
    out = tmp_path / "out"
    journal = _journal_of(out, plan)
    with open(journal, "a") as handle:
        handle.write("not a row\n")
    _one_line_error(_run(_args(plan, out, AXIS, "--resume")), "line 2", "not a row of")
    journal.write_text("hello\n")
    _one_line_error(_run(_args(plan, out, AXIS, "--resume")), "not a sweep journal")


@pytest.mark.slow
def test_a_journal_another_sweep_is_writing_is_refused(tmp_path, plan):
    out = tmp_path / "out"
    spec = sw.prepare(TINY, [AXIS], plan=str(plan))
    held, _, _ = open_journal(out, sweep_key(spec, Catalog().root), spec.points, False)
    try:
        done = _run(_args(plan, out))
    finally:
        held.close()
    _one_line_error(done, JOURNAL_NAME, "another sweep is writing")


def test_resume_needs_out(tmp_path, plan):
    args = _args(plan, tmp_path / "x", AXIS, "--resume")
    at = args.index("--out")
    done = _run(args[:at] + args[at + 2 :])
    _one_line_error(done, "--resume", "--out")
    assert not (tmp_path / "x").exists()
