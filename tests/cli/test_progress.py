"""Issue #14 item 13: progress bars on stderr for `solve --report`, `report` and `simulate`,
only where a person watches (a terminal, or forced), never on stdout."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from pdd_plan.cli import progress as pg
from tests.cli.test_friction import PLAN, TINY
from tests.conftest import cli_command

BAR_END = "━"  # rich's bar glyph: seen on stderr only when bars are drawn


def run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The real CLI, stdout and stderr each a pipe (never a terminal)."""
    full = {k: v for k, v in os.environ.items() if k not in ("PDD_PLAN_DEBUG", pg.PROGRESS_ENV)}
    full.update(COLUMNS="100", **env)
    return subprocess.run([*cli_command(), *args], cwd=tmp_path, env=full,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def without_wall_time(text: str) -> str:
    """The one figure that differs between two runs: the solve's wall time."""
    return re.sub(r"solved in \d+\.\d s", "solved in X s", text)


@pytest.mark.slow
def test_solve_report_shows_each_stage_and_leaves_stdout_alone(tmp_path):
    quiet = run(tmp_path, "solve", str(TINY), "--report", "a.md")
    shown = run(tmp_path, "solve", str(TINY), "--report", "b.md", PDD_PLAN_PROGRESS="1")
    assert quiet.returncode == shown.returncode == 0, shown.stderr
    assert BAR_END not in quiet.stderr  # a pipe: no bar unless forced
    for stage in ("solving each architecture", "report: sensitivity cases",
                  "report: explain", "writing the files"):  # fmt: skip
        assert stage in shown.stderr, stage
    assert BAR_END in shown.stderr
    # tiny allows 4 architectures: the solve bar ends at 4/4
    assert "4/4" in shown.stderr
    assert without_wall_time(shown.stdout) == without_wall_time(quiet.stdout)
    assert (tmp_path / "b.md").read_text().startswith("# Sizing report")


@pytest.mark.slow
def test_no_progress_wins_over_the_environment(tmp_path):
    done = run(tmp_path, "solve", str(TINY), "--architecture", "idc_pd", "--no-progress",
               PDD_PLAN_PROGRESS="1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert BAR_END not in done.stderr and "solving" not in done.stderr


@pytest.mark.slow
def test_simulate_shows_a_bar_over_requests_with_the_same_stdout(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"plan": PLAN}))
    args = ("simulate", str(TINY), str(plan), "--requests", "2222")
    quiet = run(tmp_path, *args)
    shown = run(tmp_path, *args, "--progress")
    assert quiet.returncode == shown.returncode == 0, shown.stderr
    assert BAR_END not in quiet.stderr
    assert "simulate: requests through decode" in shown.stderr
    assert "2222/2222" in shown.stderr  # the bar counts requests and ends at all of them
    assert shown.stdout == quiet.stdout  # the same run, byte for byte


@pytest.mark.parametrize(
    ("option", "env", "json_output", "tty", "expected"),
    [
        (None, "", False, True, True),  # a terminal: bars
        (None, "", False, False, False),  # a pipe: none
        (None, "", True, True, False),  # JSON output: none
        (None, "1", True, False, True),  # forced by the environment
        (None, "0", False, True, False),  # refused by the environment
        (False, "1", False, True, False),  # --no-progress wins
        (True, "0", False, False, True),  # --progress wins
    ],
)
def test_when_bars_are_drawn(monkeypatch, option, env, json_output, tty, expected):
    monkeypatch.setenv(pg.PROGRESS_ENV, env)
    monkeypatch.setattr(pg.sys.stderr, "isatty", lambda: tty, raising=False)
    assert pg.wanted(option, json_output) is expected


def test_the_reports_worker_cases_move_their_bar_as_each_ends():
    from concurrent.futures import ThreadPoolExecutor

    from pdd_plan.stages.reporting.report_build import _count_done

    heard = []
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(lambda: None) for _ in range(5)]
        _count_done(lambda *a: heard.append(a), "cases", futures)
    assert heard[0] == ("cases", 0, 5)
    assert sorted(done for _, done, _ in heard) == [0, 1, 2, 3, 4, 5]


def test_report_draws_the_stages_build_reports(tmp_path, monkeypatch, capsys):
    """The `report` command's wiring, with the build replaced by one that reports two
    stages (the real build's stages are the solve --report ones above, plus the pool's)."""
    from pdd_plan.cli.report_cmd import report
    from pdd_plan.stages.reporting import report_build

    def fake_build(*args, progress=None, say=None, **kwargs):
        assert progress is not None  # bars asked for: the build hears a callback
        for stage, total in (("report: plot cases (2 processes)", 3), ("solving each x", 2)):
            for done in range(total + 1):
                progress(stage, done, total)
        return report_build.Report("<html></html>", "# md\n", {}, [], [])

    monkeypatch.setattr(report_build, "build", fake_build)
    out = tmp_path / "r.html"
    report(None, str(out), None, None, 30.0, None, None, None, None, True)
    captured = capsys.readouterr()
    assert "report: plot cases (2 processes)" in captured.err and "3/3" in captured.err
    assert "writing the files" in captured.err
    assert captured.out.startswith("wrote ") and BAR_END not in captured.out
    assert out.read_text() == "<html></html>"
