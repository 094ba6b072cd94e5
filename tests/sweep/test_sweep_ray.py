"""`pdd-plan sweep --executor ray`: the points as Ray tasks on a local Ray instance.

Its rows (failed points included) must equal the process pool's, compared as parsed CSV and
JSON rows without the wall times; a Ctrl-C stops the tasks and the local instance and keeps
the journal. Ray starts slowly on a loaded machine, so each Ray test starts it once. Without
Ray installed, `--executor ray` is one line saying how to get it, and no other command (not
even `--help`) imports Ray.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

TINY = Path(__file__).with_name("tiny.yaml").resolve()
AXIS = "workload.arrival_rate_per_s=1,2,-1"  # two solved points, one refused (bad_value)
HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (pip install '.[ray]')")


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("pdd-plan")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pdd_plan"]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "COLUMNS": "200", **extra}


def _sweep(out: Path, *extra: str, **env: str) -> subprocess.CompletedProcess:
    args = [*_cli(), "sweep", str(TINY), "--vary", AXIS, "--jobs", "2", "--out", str(out),
            "--format", "json", *extra]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=400, env=_env(**env),
                          stdin=subprocess.DEVNULL)  # fmt: skip


def _rows(folder: Path) -> tuple[list[dict], list[dict]]:
    """sweep.json's points and sweep.csv's rows, without the wall times."""
    points = json.loads((folder / "sweep.json").read_text())["points"]
    table = list(csv.DictReader(io.StringIO((folder / "sweep.csv").read_text())))
    assert points and table and "wall_s" in points[0] and "wall_s" in table[0]
    strip = [{k: v for k, v in r.items() if k != "wall_s"} for r in points]
    return strip, [{k: v for k, v in r.items() if k != "wall_s"} for r in table]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The same sweep with the process pool and on a local Ray instance of 2 CPUs."""
    base = tmp_path_factory.mktemp("ray")
    local = _sweep(base / "local")
    assert local.returncode == 0, local.stderr
    start = time.monotonic()
    ray = _sweep(base / "ray", "--executor", "ray", "--progress")  # a pipe: forced
    print(f"ray sweep: {time.monotonic() - start:.1f} s")
    assert ray.returncode == 0, ray.stderr
    return base, local, ray


@pytest.mark.slow
@needs_ray
def test_ray_rows_equal_the_process_pools(both):
    base, local, ray = both
    on_ray, on_pool = _rows(base / "ray"), _rows(base / "local")
    assert on_ray == on_pool
    statuses = [r["status"] for r in on_ray[0]]
    assert statuses[:2] in (["optimal", "optimal"], ["feasible", "feasible"]), statuses
    assert statuses[2] == "bad_value" and on_ray[0][2]["error"]  # the failed point's record
    printed = json.loads(ray.stdout)
    assert printed["executor"] == "ray" and printed["points_failed"] == 1
    assert json.loads(local.stdout)["executor"] == "local"


@pytest.mark.slow
@needs_ray
def test_ray_sweep_shows_the_progress_bar(both):
    _, _, ray = both
    assert "sweep (local Ray, 2 CPUs)" in ray.stderr
    assert "3/3" in ray.stderr and "1 failed" in ray.stderr
    assert "Traceback" not in ray.stderr


# --- Ctrl-C -----------------------------------------------------------------------------


def _children_of() -> dict[int, int]:
    """pid -> parent pid of every process (read from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text() if entry.isdigit() else ""
        except OSError:
            continue
        if stat:
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def _descendants(pid: int) -> set[int]:
    parents, found, frontier = _children_of(), set(), {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


@pytest.mark.slow
@needs_ray
def test_ctrl_c_stops_the_ray_tasks_and_keeps_the_journal(tmp_path):
    out = tmp_path / "out"
    journal = out / ".sweep-journal.jsonl"
    args = [*_cli(), "sweep", str(TINY), "--vary", "workload.arrival_rate_per_s=1:6:1",
            "--jobs", "2", "--executor", "ray", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(args, env=_env(), text=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not (journal.exists() and len(journal.read_text().splitlines()) >= 2):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no point finished"
            time.sleep(0.1)
        before = _descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    said = [line for line in err.splitlines() if line.strip()]
    # One line: interrupted, and that the sweep's outputs were not written (the journal stays).
    assert len(said) == 1 and said[0].startswith("error: interrupted (SIGINT)"), err
    assert "not written" in said[0], err
    assert len(before) >= 3, before  # the Ray instance's processes were there to stop
    deadline = time.monotonic() + 20
    while _alive(before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _alive(before) == set()
    kept = journal.read_text().splitlines()  # the finished points stay for --resume
    assert len(kept) >= 2 and all(json.loads(line) for line in kept)
    assert sorted(p.name for p in out.iterdir()) == [".sweep-journal.jsonl"]


# --- without Ray ------------------------------------------------------------------------


def test_without_ray_the_executor_says_how_to_get_it(tmp_path):
    hidden = tmp_path / "hide"
    (hidden / "ray").mkdir(parents=True)
    (hidden / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    path = os.pathsep.join(p for p in (str(hidden), os.environ.get("PYTHONPATH", "")) if p)
    done = _sweep(tmp_path / "out", "--executor", "ray", PYTHONPATH=path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "pip install 'pdd-plan[ray]'" in lines[0] and "--executor" in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_bad_executor_options_are_one_line(tmp_path):
    for extra, words in ((["--executor", "dask"], "local or ray"),
                         (["--ray-address", "127.0.0.1:6379"], "--executor ray")):  # fmt: skip
        done = _sweep(tmp_path / "out", *extra)
        assert done.returncode == 2, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and words in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@needs_ray
def test_an_unreachable_cluster_is_one_line_at_once(tmp_path):
    with socket.socket() as sock:  # a port nothing listens on once this closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    done = _sweep(tmp_path / "out", "--executor", "ray", "--ray-address", f"127.0.0.1:{port}")
    assert time.monotonic() - start < 60  # Ray alone retries for minutes
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "--ray-address" in lines[0] and "running Ray cluster" in lines[0]
    assert not (tmp_path / "out").exists()  # refused before the journal


@pytest.mark.parametrize("argv", [["--help"], ["sweep", "--help"]])
def test_help_does_not_import_ray(argv):
    code = (
        "import sys\nfrom pdd_plan.cli.app import main\nsys.argv = ['pdd-plan', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('RAY', 'ray' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=60, env=_env(), stdin=subprocess.DEVNULL)  # fmt: skip
    assert "RAY False" in done.stderr, done.stderr
