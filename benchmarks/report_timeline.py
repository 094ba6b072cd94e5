"""Where `pdd-plan report`'s time goes: a timeline of the parent and of every pool task.

Run: python benchmarks/report_timeline.py [scenario] [--repeats N] [--jobs J] [--cli N]
(prints figures; asserts nothing). --cli N instead runs `pdd-plan report` N times as a
fresh process (issue #15: <= 8 s on an idle 2-core machine) and prints each run's wall
and CPU (user + system of it and its reaped children: every worker, all forked from it),
then the median and the maximum wall. Each repeat builds the report in this process (as the
CLI does, less the file writing) with every task submitted to a process pool (the report
pool's fork-server workers, fork_pool.py's forked children) wrapped to log its start, end
and CPU (`time.process_time`, its own process) to a file; the parent logs each stage it
announces. Printed: the parent's stages (wall offset from the start, CPU), each task
(worker pid, start, end, CPU) and, per repeat, the wall and the parent's CPU. On a shared
machine the CPU figures are the steady ones; the wall says how the tasks were laid out.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import timed_task  # noqa: E402 (the wrapper, importable by the workers)


def _patch_submit(log_path: str) -> None:
    original = concurrent.futures.ProcessPoolExecutor.submit

    def submit(self, fn, /, *args, **kwargs):
        return original(self, timed_task.Timed(fn, log_path), *args, **kwargs)

    concurrent.futures.ProcessPoolExecutor.submit = submit


def _label(entry: dict) -> str:
    return entry["task"] + (f"[{entry['arg']}]" if entry.get("arg") is not None else "")


def _start_early() -> None:
    """What `pdd-plan report` starts before it imports the solver (cli/report_cmd.py)."""
    try:
        from pdd_plan.stages.reporting.report_pool import start_drawer
    except ImportError:  # before report_pool.py: the fork server, loading matplotlib too
        from pdd_plan.stages.sweeping.sweep import warm_pool_server

        warm_pool_server(("matplotlib.pyplot",))
        return
    start_drawer()


def one(scenario: str | None, jobs: int | None) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    _start_early()
    from pdd_plan.stages.reporting import report_build

    fd, log_path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    os.environ[timed_task.ENV] = log_path
    _patch_submit(log_path)
    stages = [(time.perf_counter() - t0, time.process_time() - c0, "imported")]

    def say(text: str) -> None:
        stages.append((time.perf_counter() - t0, time.process_time() - c0, text))

    report_build.build(scenario, jobs=jobs, say=say, png=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    stages.append((wall, cpu, "done"))
    with open(log_path) as f:
        tasks = [json.loads(line) for line in f]
    os.unlink(log_path)
    print(f"{'t s':>6} {'cpu s':>6}  parent stage")
    for t, c, text in stages:
        print(f"{t:6.2f} {c:6.2f}  {text}")
    print(f"{'start':>6} {'end':>6} {'cpu s':>6} {'pid':>7}  task")
    for e in sorted(tasks, key=lambda e: e["start"]):
        # perf_counter is CLOCK_MONOTONIC on Linux: one clock for every process
        print(f"{e['start'] - t0:6.2f} {e['end'] - t0:6.2f} {e['cpu_s']:6.2f} {e['pid']:7d}  "
              f"{_label(e)}")  # fmt: skip
    total = sum(e["cpu_s"] for e in tasks)
    print(f"wall {wall:.2f} s, parent CPU {cpu:.2f} s, tasks CPU {total:.2f} s")
    return wall, cpu + total


def cli_runs(scenario: str | None, runs: int) -> None:
    print(f"load average {os.getloadavg()[0]:.2f}")
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(runs):
            before = os.times()
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pdd_plan", "report", scenario or "default",
                            "-o", os.path.join(tmp, "r.html"), "--no-progress"],
                           check=True, capture_output=True)  # fmt: skip
            walls.append(time.perf_counter() - start)
            after = os.times()
            cpu = (after.children_user - before.children_user
                   + after.children_system - before.children_system)  # fmt: skip
            print(f"run {k + 1}: wall {walls[-1]:.2f} s, CPU {cpu:.2f} s, "
                  f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"wall median {statistics.median(walls):.2f} s, max {max(walls):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--cli", type=int, default=0, help="time N fresh `pdd-plan report` runs")
    a = ap.parse_args()
    if a.cli:
        cli_runs(a.scenario, a.cli)
        return
    print(f"load average {os.getloadavg()[0]:.2f}")
    walls, cpus = [], []
    for _ in range(a.repeats):
        w, c = one(a.scenario, a.jobs)
        walls.append(w)
        cpus.append(c)
    print(f"median wall {statistics.median(walls):.2f} s (max {max(walls):.2f}), "
          f"median CPU of all processes {statistics.median(cpus):.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
