"""`solve default` at every arrival rate from 5 to 500 req/s (issue #15: each answers in
<= 5 s; each infeasible one names the binding limit, proven, or says it is unproven).

Through the API (`solve_choosing`, the default --time-limit, every architecture the
scenario allows, as `pdd-plan solve` runs them) at each rate, and one subprocess figure
(`pdd-plan solve SCENARIO --format json`, start-up included) at --subprocess-rate.
Prints per rate: wall time, status (optimal / feasible / infeasible proven / unproven),
and the binding limit named (the winner's architecture and cost when there is a plan).
Run: python benchmarks/rates.py [--rates 5,10,...] [--time-limit 30] [--subprocess-rate 100]
[--jobs 1] [--count] (prints figures; asserts nothing). `--count` (implies --jobs 1, every
architecture in this process): the exact search's plan evaluations and heap steps, summed
over the architectures, as two more columns. The CPU column is this process's and its
reaped children's (the fork pool's workers), the steadier figure on a shared machine.
The load average printed first says how shared the machine was.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from pdd_plan.api import solve_choosing
from pdd_plan.loaders.catalog import Catalog
from pdd_plan.loaders.scenario import load_scenario, resolve_scenario_path
from pdd_plan.model.workload.workload import DEFAULT_RESOLUTION
from pdd_plan.stages.solving import unproven
from pdd_plan.stages.solving.infeasible import answer

RATES = (5, 10, 25, 50, 75, 100, 150, 200, 250, 300, 400, 500)
DEFAULT_TIME_LIMIT_S = 30.0  # cli/bounds.py time_limit_option's default


def at_rate(scenario, rate: float):
    return dataclasses.replace(
        scenario, workload=dataclasses.replace(scenario.workload, arrival_rate_per_s=rate)
    )


def status_of(result: dict) -> str:
    if result["status"] == "infeasible":
        return "infeasible proven"
    return result["status"]


def binding(result: dict, files, s, catalog, time_limit_s: float) -> str:
    """The limit the answer names: the reason when there is no plan, else the plan."""
    each = files.solved_each if files is not None else ()
    if result["status"] == "unproven":
        return unproven.answer(s.name, result, each)["reason"]
    if result.get("plan") is None:
        return answer(s, None, result, each, catalog, DEFAULT_RESOLUTION, time_limit_s)["reason"]
    plan, m = result["plan"], result["metrics"]
    bcr = m["bcr_rps_per_usd_hour"]
    return f"{plan['architecture']} ${m['cost_usd_per_hour']:,.0f}/h, BCR {bcr:.3g}"


def cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the fork pool's workers)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class SearchCounts:
    """Plan evaluations and heap steps of every exact search run in this process."""

    def __init__(self):
        from pdd_plan.plan import search

        self.evaluations = self.steps = 0
        run = search.Search.run

        def counted(walk, *args, **kwargs):
            out = run(walk, *args, **kwargs)
            self.evaluations += out.evaluations
            self.steps += out.steps
            return out

        search.Search.run = counted

    def take(self) -> tuple[int, int]:
        got = (self.evaluations, self.steps)
        self.evaluations = self.steps = 0
        return got


def one(scenario, rate: float, catalog, time_limit_s: float, jobs=None):
    """(wall s, CPU s, status, binding limit or plan) of the solve at `rate`."""
    s = at_rate(scenario, rate)
    cpu, start = cpu_s(), time.perf_counter()
    result, files = solve_choosing(s, catalog, time_limit_s=time_limit_s, jobs=jobs)
    wall, cpu = time.perf_counter() - start, cpu_s() - cpu
    return wall, cpu, status_of(result), binding(result, files, s, catalog, time_limit_s)


def subprocess_figure(rate: float, time_limit_s: float) -> tuple[float, int, str]:
    """`pdd-plan solve` on the default at `rate` as a fresh process: wall, exit, status."""
    text = resolve_scenario_path(None).read_text()
    data = yaml.safe_load(text)
    data["workload"]["arrival_rate_per_s"] = rate
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"default_{rate:g}.yaml"
        path.write_text(yaml.safe_dump(data))
        exe = Path(sys.executable).with_name("pdd-plan")
        cmd = [str(exe), "solve", str(path), "--format", "json", "--no-progress"]
        cmd += ["--time-limit", f"{time_limit_s:g}"]
        start = time.perf_counter()
        run = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - start
    try:
        status = json.loads(run.stdout)["status"]
    except (json.JSONDecodeError, KeyError):
        status = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "?"
    return wall, run.returncode, status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default=",".join(map(str, RATES)))
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT_S)
    ap.add_argument("--subprocess-rate", type=float, default=100.0)
    ap.add_argument("--jobs", type=int, default=None, help="1: the architectures in turn")
    ap.add_argument("--count", action="store_true", help="evaluations and steps (--jobs 1)")
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (1 min)", flush=True)
    catalog = Catalog()
    scenario = load_scenario(resolve_scenario_path(None), catalog)
    counts = SearchCounts() if args.count else None
    jobs = 1 if args.count else args.jobs
    more = f"  {'evals':>6}  {'steps':>7}" if counts else ""
    print(f"{'rate':>6}  {'wall s':>7}  {'CPU s':>7}{more}  {'status':<18} binding limit / plan")
    for rate in (float(r) for r in args.rates.split(",")):
        wall, cpu, status, what = one(scenario, rate, catalog, args.time_limit, jobs)
        more = "  {:6d}  {:7d}".format(*counts.take()) if counts else ""
        print(f"{rate:6g}  {wall:7.2f}  {cpu:7.2f}{more}  {status:<18} {what}", flush=True)
    if args.subprocess_rate > 0:
        wall, code, status = subprocess_figure(args.subprocess_rate, args.time_limit)
        print(f"subprocess `pdd-plan solve` at {args.subprocess_rate:g} req/s: {wall:.2f} s, "
              f"exit {code}, status {status}")  # fmt: skip


if __name__ == "__main__":
    main()
